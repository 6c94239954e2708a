"""DDL text as MySQL's lexer sees it: tokens without comments, for :mod:`.statements` to parse.

Invariant: a statement either becomes the token list MySQL's own lexer would produce for it, or
:class:`UnrecognisedStatement` is raised. Nothing in between: a token list that *might* differ from
the server's (its session settings unknown here) is refused, so the parser never reads a statement
the server read otherwise. :mod:`.statements` turns the refusal into ``Unparsed`` (the engine then
re-snapshots the table, which is safe).

What the lexer cannot know, and how each unknown is made harmless:

* ``NO_BACKSLASH_ESCAPES`` (sql_mode of the DDL session): a backslash in a string either escapes the
  next character or is a character. Where the string *ends* differs only when a backslash precedes
  the closing quote character (``'a\\''``); that statement is refused. A string holding any other
  backslash keeps ``has_backslash`` so its value is never taken as certain
  (:mod:`.defaults` makes such a default an expression).
* Versioned comments ``/*!80013 ... */``: the server ran their content only if it is at least that
  version. Content for a version up to :data:`OLDEST_SUPPORTED_SERVER` (every server this project
  accepts ran it) is part of the statement; a later version is refused, because whether the source
  server ran it depends on its version.
* ``ANSI_QUOTES``: a double-quoted text is then an identifier. It stays a ``string`` token; the
  parser accepts a string only where a literal is expected, where an identifier would have been a
  syntax error the server would not have logged.

Guarded by the ``test_lexer_*`` tests in ``tests/unit/test_mysql_ddl.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from airflow_mysql_cdc.engine.errors import CdcError

OLDEST_SUPPORTED_SERVER = 80017
"""MySQL 8.0.17: the oldest source server the project supports (snapshots need ``CAST(... AS DOUBLE)``)."""


class UnrecognisedStatement(CdcError, ValueError):
    """The statement cannot be read with certainty; the message says why."""


@dataclass(frozen=True)
class Token:
    """One lexical token.

    ``kind`` is one of ``word`` (an unquoted identifier or keyword), ``name`` (a backquoted
    identifier), ``string``, ``number``, ``hex`` (``x'..'``/``0x..``), ``bits`` (``b'..'``/``0b..``)
    or ``punct`` (one character). ``value`` is the identifier or the string's content with escapes
    resolved, the digits of a hex or bit literal, the text otherwise. ``start``/``end`` index the
    original statement, so a clause's text can be cut out of it as written.
    """

    kind: str
    value: str
    start: int
    end: int
    has_backslash: bool = False

    def is_keyword(self, *keywords: str) -> bool:
        """An unquoted word equal to one of ``keywords`` (upper case), as MySQL compares keywords."""
        return self.kind == "word" and self.value.upper() in keywords

    def is_punct(self, character: str) -> bool:
        return self.kind == "punct" and self.value == character


_WORD_CHARACTER = r"[A-Za-z0-9_$\u0080-\uffff]"
_TOKEN = re.compile(
    r"(?P<space>\s+)"
    r"|(?P<versioned>/\*!(?P<version>\d{5})?)"
    r"|(?P<comment>/\*.*?\*/|--(?:[\s\x00-\x1f]|$)[^\n]*|#[^\n]*)"
    r"|(?P<open_comment>/\*)"
    r"|(?P<name>`(?:[^`]|``)*`)"
    r"|(?P<quote>['\"])"
    rf"|(?P<hex>[xX]'[0-9a-fA-F]*'|0x[0-9a-fA-F]+(?!{_WORD_CHARACTER}))"
    rf"|(?P<bits>[bB]'[01]*'|0b[01]+(?!{_WORD_CHARACTER}))"
    rf"|(?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?!{_WORD_CHARACTER}))"
    rf"|(?P<word>{_WORD_CHARACTER}+)"
    r"|(?P<end_versioned>\*/)"
    r"|(?P<punct>[(),.;=+\-*/<>!@:~^&|%?{}\[\]])",
    re.S,
)
_ESCAPES = {"0": "\0", "'": "'", '"': '"', "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def tokenize(statement: str) -> list[Token]:
    """The statement's tokens, comments dropped; raises :class:`UnrecognisedStatement`."""
    return list(_tokens(statement))


def _tokens(statement: str) -> Iterator[Token]:
    position, in_versioned_comment = 0, False
    while position < len(statement):
        match = _TOKEN.match(statement, position)
        if match is None:
            raise UnrecognisedStatement(f"unexpected character {statement[position]!r} at offset {position}")
        kind = match.lastgroup
        if kind == "quote":
            token = _string(statement, position)
            position = token.end
            yield token
            continue
        position = match.end()
        if kind == "open_comment":
            raise UnrecognisedStatement(f"a comment at offset {match.start()} that is not closed")
        if kind == "versioned":
            version = match.group("version")
            if in_versioned_comment:
                raise UnrecognisedStatement("a versioned comment inside a versioned comment")
            if version is not None and int(version) > OLDEST_SUPPORTED_SERVER:
                raise UnrecognisedStatement(
                    f"a versioned comment for MySQL {version}: whether the server ran its content"
                    " depends on the server's version"
                )
            if version is not None and statement[position : position + 1].isdigit():
                raise UnrecognisedStatement("a versioned comment with a version of more than 5 digits")
            in_versioned_comment = True
        elif kind == "end_versioned":
            if not in_versioned_comment:
                raise UnrecognisedStatement(f"'*/' outside a comment at offset {match.start()}")
            in_versioned_comment = False
        elif kind == "comment" and in_versioned_comment and match.group().startswith("/*"):
            raise UnrecognisedStatement("a comment inside a versioned comment")
        elif kind == "name":
            yield Token("name", match.group()[1:-1].replace("``", "`"), match.start(), position)
        elif kind == "hex":
            yield Token("hex", _literal_digits(match.group()), match.start(), position)
        elif kind == "bits":
            yield Token("bits", _literal_digits(match.group()), match.start(), position)
        elif kind in ("number", "word", "punct"):
            yield Token(kind, match.group(), match.start(), position)
    if in_versioned_comment:
        raise UnrecognisedStatement("a versioned comment that is not closed")


def _literal_digits(text: str) -> str:
    return text[2:-1] if text.endswith("'") else text[2:]


def _string(statement: str, start: int) -> Token:
    quote = statement[start]
    characters: list[str] = []
    position, has_backslash = start + 1, False
    while position < len(statement):
        character = statement[position]
        if character == "\\" and position + 1 < len(statement):
            escaped = statement[position + 1]
            if escaped == quote:
                # Without NO_BACKSLASH_ESCAPES this quote is data; with it the string ends here.
                raise UnrecognisedStatement(
                    f"the string at offset {start} ends in one place or another depending on the"
                    " session's NO_BACKSLASH_ESCAPES"
                )
            has_backslash = True
            # MySQL keeps the backslash of \% and \_ (they stay escapes for LIKE).
            characters.append(_ESCAPES.get(escaped, "\\" + escaped if escaped in "%_" else escaped))
            position += 2
        elif character == quote:
            if statement[position + 1 : position + 2] == quote:
                characters.append(quote)
                position += 2
            else:
                return Token("string", "".join(characters), start, position + 1, has_backslash)
        else:
            characters.append(character)
            position += 1
    raise UnrecognisedStatement(f"the string at offset {start} is not closed")


class TokenCursor:
    """Reads a token list front to back; every ``expect_*`` raises :class:`UnrecognisedStatement`."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.position = 0

    def peek(self, ahead: int = 0) -> Token | None:
        index = self.position + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.position >= len(self.tokens)

    def next(self) -> Token:
        token = self.peek()
        if token is None:
            raise UnrecognisedStatement("the statement ends too early")
        self.position += 1
        return token

    def accept_keyword(self, *keywords: str) -> str | None:
        """The keyword (upper case) if the next token is one of them, consumed; else None."""
        token = self.peek()
        if token is not None and token.is_keyword(*keywords):
            self.position += 1
            return token.value.upper()
        return None

    def accept_keywords(self, *keywords: str) -> bool:
        """Consumes the whole keyword sequence if it comes next; else consumes nothing."""
        for offset, keyword in enumerate(keywords):
            token = self.peek(offset)
            if token is None or not token.is_keyword(keyword):
                return False
        self.position += len(keywords)
        return True

    def accept_punct(self, character: str) -> bool:
        token = self.peek()
        if token is not None and token.is_punct(character):
            self.position += 1
            return True
        return False

    def expect_keyword(self, *keywords: str) -> str:
        keyword = self.accept_keyword(*keywords)
        if keyword is None:
            raise UnrecognisedStatement(f"expected {' or '.join(keywords)} {self.describe_position()}")
        return keyword

    def expect_punct(self, character: str) -> None:
        if not self.accept_punct(character):
            raise UnrecognisedStatement(f"expected {character!r} {self.describe_position()}")

    def expect_end(self) -> None:
        if not self.at_end():
            raise UnrecognisedStatement(f"unexpected text {self.describe_position()}")

    def expect_identifier(self, *, refused: frozenset[str] = frozenset()) -> str:
        """An identifier as written (backquotes removed); an unquoted word in ``refused`` is not one."""
        token = self.peek()
        if token is None or token.kind not in ("word", "name") or token.is_keyword(*refused):
            raise UnrecognisedStatement(f"expected a name {self.describe_position()}")
        self.position += 1
        return token.value

    def skip_parenthesised(self) -> tuple[Token, Token]:
        """Consumes ``( ... )`` with nested parentheses; returns the opening and closing tokens."""
        opening = self.next()
        if not opening.is_punct("("):
            raise UnrecognisedStatement(f"expected '(' at offset {opening.start}")
        depth = 1
        while True:
            token = self.next()
            if token.is_punct("("):
                depth += 1
            elif token.is_punct(")"):
                depth -= 1
                if depth == 0:
                    return opening, token

    def describe_position(self) -> str:
        """Where the cursor stands, for a message: ``at offset 12 ('FOO')`` or ``at the end``."""
        token = self.peek()
        return "at the end" if token is None else f"at offset {token.start} ({token.value!r})"


def split_top_level(tokens: list[Token], separator: str = ",") -> list[list[Token]]:
    """The token list cut at ``separator`` tokens outside parentheses (strings are single tokens)."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.is_punct("("):
            depth += 1
        elif token.is_punct(")"):
            depth -= 1
            if depth < 0:
                raise UnrecognisedStatement(f"unbalanced ')' at offset {token.start}")
        elif depth == 0 and token.is_punct(separator):
            parts.append([])
            continue
        parts[-1].append(token)
    if depth != 0:
        raise UnrecognisedStatement("unbalanced '('")
    return parts
