"""MySQL statement text as tokens: identifiers, strings, numbers and punctuation, comments removed.

Invariant: a token's ``value`` is what MySQL reads: a backquoted identifier unquoted (doubled
backquotes undone), a string literal unescaped (backslash escapes and doubled quotes), so names and
literals compare exactly. Comments are dropped, except versioned comments ``/*!NNNNN ... */``, whose
content MySQL executes and which therefore stay part of the statement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PATTERN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<versioned>/\*!\d*)
    | (?P<comment>/\*.*?\*/|--(?:[ \t][^\n]*)?(?=\n|$)|\#[^\n]*)
    | (?P<end_versioned>\*/)
    | (?P<qident>`(?:[^`]|``)*`)
    | (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
    | (?P<bits>[bB]'[01]*')
    | (?P<hex>[xX]'[0-9a-fA-F]*'|0x[0-9a-fA-F]+)
    | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![A-Za-z_$]))
    | (?P<word>[A-Za-z0-9_$]+)
    | (?P<punct>[(),.;=+\-*/<>!@:])
    """,
    re.S | re.X,
)
_ESCAPES = {
    "0": "\0",
    "'": "'",
    '"': '"',
    "b": "\b",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "Z": "\x1a",
    "\\": "\\",
}


@dataclass(frozen=True)
class Token:
    kind: str  # word, qident, string, bits, hex, number, punct
    text: str
    value: str

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.value.upper() in words

    def identifier(self) -> str:
        if self.kind not in ("word", "qident"):
            raise ValueError(f"expected a name, found {self.text!r}")
        return self.value


def tokenize(statement: str) -> list[Token]:
    tokens: list[Token] = []
    position, versioned = 0, 0
    while position < len(statement):
        match = _PATTERN.match(statement, position)
        if match is None:
            raise ValueError(f"unexpected character {statement[position]!r}")
        position = match.end()
        kind = match.lastgroup
        text = match.group()
        if kind in ("space", "comment"):
            continue
        if kind == "versioned":
            versioned += 1
            continue
        if kind == "end_versioned":
            if not versioned:
                raise ValueError("'*/' outside a comment")
            versioned -= 1
            continue
        tokens.append(Token(str(kind), text, _value(str(kind), text)))
    return tokens


def _value(kind: str, text: str) -> str:
    if kind == "qident":
        return text[1:-1].replace("``", "`")
    if kind == "string":
        quote = text[0]
        body = text[1:-1].replace(quote * 2, quote)
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.S)
    return text


def split_top_level(tokens: list[Token]) -> list[list[Token]]:
    """``tokens`` split at commas outside parentheses (an ALTER TABLE's clauses)."""
    clauses: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.text == "(":
            depth += 1
        elif token.text == ")":
            depth -= 1
        if token.text == "," and depth == 0 and token.kind == "punct":
            clauses.append([])
            continue
        clauses[-1].append(token)
    return clauses
