"""A column definition of ``ALTER TABLE ... ADD COLUMN``, read into the engine's column type.

Invariant: :func:`read_column_definition` gives the :class:`~..types.ColumnType` that
:meth:`~..types.ColumnType.from_column` and :meth:`~..types.ColumnType.from_binlog_column` give for
the column MySQL creates from that definition, or raises :class:`.lexer.UnrecognisedStatement`.
It never guesses: a type whose meaning depends on the DDL session (``REAL`` is ``FLOAT`` under
``REAL_AS_FLOAT``), a column whose existing rows get computed values (generated columns), a column
that changes the primary key, ``SERIAL``, and any attribute it does not know are refused, and
:mod:`.statements` turns the refusal into ``OtherChange`` (the engine re-snapshots the table).

The definition's ``DEFAULT`` stays as written here (:class:`DefaultClause`); what it means for
existing rows is :mod:`.defaults`, which needs the declared lengths kept in
:class:`DeclaredType` (``VARCHAR(3)`` and ``TEXT`` are both kind ``text``).
Guarded by the ``test_add_column_*`` tests in ``tests/unit/test_mysql_ddl_defaults.py`` and, against
MySQL itself, ``test_added_columns_have_the_type_and_existing_row_values_the_parser_reads``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from airflow_mysql_cdc.engine.mysql.ddl.lexer import Token, TokenCursor, UnrecognisedStatement
from airflow_mysql_cdc.engine.mysql.types import ColumnType

COLUMN_NAME_KEYWORDS = frozenset(
    ("INDEX", "KEY", "PRIMARY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CONSTRAINT", "CHECK")
    + ("COLUMN", "IF", "PARTITION", "FIRST", "AFTER")
)
"""Reserved words that, unquoted, are never a column's name (they start other clauses)."""


@dataclass(frozen=True)
class DeclaredType:
    """A column's type as declared: its :class:`ColumnType` plus what that type does not keep.

    ``base`` is the type's keyword in upper case after synonyms (``INTEGER`` is ``INT``, ``NCHAR`` is
    ``CHAR``); ``length`` the declared ``CHAR``/``VARCHAR`` characters or ``BINARY``/``VARBINARY``
    bytes; ``scaled`` is true for ``FLOAT(M,D)``/``DOUBLE(M,D)``, whose values MySQL rounds to D.
    """

    column_type: ColumnType
    base: str
    length: int | None = None
    scaled: bool = False


@dataclass(frozen=True)
class DefaultClause:
    """``DEFAULT ...`` as written. ``literal`` is the literal's token (a ``word`` for TRUE, FALSE,
    NULL), or None when the default is an expression; ``negative`` a leading minus; ``introducer``
    the character set of ``_utf8mb4'x'`` (``N'x'`` gives ``utf8mb3``), in lower case."""

    text: str
    literal: Token | None
    negative: bool = False
    introducer: str | None = None


@dataclass(frozen=True)
class ColumnDefinition:
    """One column of ``ADD COLUMN``. ``explicit_null`` is a written ``NULL`` attribute (it decides a
    ``TIMESTAMP``'s default); ``position`` is ``FIRST``, ``AFTER <name>`` or None; ``unique`` a
    column-level ``UNIQUE [KEY]``."""

    name: str
    declared: DeclaredType
    nullable: bool
    explicit_null: bool
    default: DefaultClause | None
    position: str | None
    on_update: bool
    auto_increment: bool
    unique: bool


_INTEGER_BITS = {
    **dict.fromkeys(("TINYINT", "INT1"), 8),
    **dict.fromkeys(("SMALLINT", "INT2"), 16),
    **dict.fromkeys(("MEDIUMINT", "INT3", "MIDDLEINT"), 24),
    **dict.fromkeys(("INT", "INTEGER", "INT4"), 32),
    **dict.fromkeys(("BIGINT", "INT8"), 64),
}
_INTEGER_BASES = {8: "TINYINT", 16: "SMALLINT", 24: "MEDIUMINT", 32: "INT", 64: "BIGINT"}
_TEMPORAL = {"DATETIME": "datetime", "TIMESTAMP": "timestamp", "TIME": "time"}
_TEXTS = ("TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT")
_BLOBS = ("TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB")
_GEOMETRIES: tuple[str, ...] = ("GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING")
_GEOMETRIES += ("MULTIPOLYGON", "GEOMETRYCOLLECTION", "GEOMCOLLECTION")
_CHARACTER_KINDS = frozenset(("text", "enum", "set"))


def read_column_definition(cursor: TokenCursor, statement: str, *, allow_position: bool) -> ColumnDefinition:
    """``name type attributes... [FIRST | AFTER name]`` up to the end of the cursor's tokens."""
    name = cursor.expect_identifier(refused=COLUMN_NAME_KEYWORDS)
    declared = _read_type(cursor, name)
    kind = declared.column_type.kind
    nullable, explicit_null, on_update, auto_increment, unique = True, False, False, False, False
    default: DefaultClause | None = None
    position: str | None = None
    while not cursor.at_end():
        if position is not None:
            raise UnrecognisedStatement(f"text after the column's position {cursor.describe_position()}")
        if cursor.accept_keywords("NOT", "NULL"):
            nullable, explicit_null = False, False
        elif cursor.accept_keyword("NULL"):
            nullable, explicit_null = True, True
        elif cursor.accept_keyword("DEFAULT"):
            default = _read_default(cursor, statement)
        elif cursor.accept_keywords("ON", "UPDATE"):
            _read_default(cursor, statement)
            on_update = True
        elif cursor.accept_keyword("AUTO_INCREMENT"):
            auto_increment = True
        elif cursor.accept_keyword("UNIQUE"):
            cursor.accept_keyword("KEY")
            unique = True
        elif cursor.accept_keyword("COMMENT"):
            _expect_string(cursor)
        elif kind in _CHARACTER_KINDS and _accept_character_set_or_collation(cursor):
            pass
        elif cursor.accept_keyword("COLUMN_FORMAT"):
            cursor.expect_keyword("FIXED", "DYNAMIC", "DEFAULT")
        elif cursor.accept_keyword("STORAGE"):
            cursor.expect_keyword("DISK", "MEMORY")
        elif cursor.accept_keyword("VISIBLE", "INVISIBLE"):
            pass
        elif cursor.accept_keyword("ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"):
            cursor.accept_punct("=")
            _expect_string(cursor)
        elif kind == "geometry" and cursor.accept_keyword("SRID"):
            if cursor.next().kind != "number":
                raise UnrecognisedStatement("SRID needs a number")
        elif allow_position and cursor.accept_keyword("FIRST"):
            position = "FIRST"
        elif allow_position and cursor.accept_keyword("AFTER"):
            position = f"AFTER {cursor.expect_identifier()}"
        elif cursor.accept_keyword("GENERATED", "AS"):
            raise UnrecognisedStatement(f"column {name!r} is generated: its values are computed")
        elif cursor.accept_keyword("PRIMARY", "KEY"):
            raise UnrecognisedStatement(f"column {name!r} is declared a primary key")
        else:
            raise UnrecognisedStatement(f"column {name!r}: unknown attribute {cursor.describe_position()}")
    return ColumnDefinition(
        name, declared, nullable, explicit_null, default, position, on_update, auto_increment, unique
    )


def _expect_string(cursor: TokenCursor) -> Token:
    token = cursor.next()
    if token.kind != "string":
        raise UnrecognisedStatement(f"expected a quoted text at offset {token.start}")
    return token


def _accept_character_set_or_collation(cursor: TokenCursor) -> bool:
    """``CHARACTER SET x``, ``CHARSET x``, ``COLLATE x``, ``BINARY`` (a ``_bin`` collation): the
    column stays text. The ``binary`` character set would make it a binary column: refused."""
    if cursor.accept_keywords("CHARACTER", "SET") or cursor.accept_keyword("CHARSET", "COLLATE"):
        cursor.accept_punct("=")
        token = cursor.next()
        if token.kind not in ("word", "name", "string"):
            raise UnrecognisedStatement(f"expected a character set or collation at offset {token.start}")
        if token.value.lower() == "binary":
            raise UnrecognisedStatement("the binary character set makes a text column binary")
        return True
    return cursor.accept_keyword("BINARY") is not None


def _read_default(cursor: TokenCursor, statement: str) -> DefaultClause:
    """A literal, or an expression: ``(...)`` or a function word (``CURRENT_TIMESTAMP(6)``)."""
    first = cursor.next()
    if first.is_punct("("):
        cursor.position -= 1
        _, closing = cursor.skip_parenthesised()
        return DefaultClause(statement[first.start : closing.end], None)
    if first.is_punct("-") or first.is_punct("+"):
        number = cursor.next()
        if number.kind != "number":
            raise UnrecognisedStatement(f"a sign before a non-number at offset {number.start}")
        return DefaultClause(statement[first.start : number.end], number, negative=first.value == "-")
    if first.kind in ("string", "number", "hex", "bits") or first.is_keyword("TRUE", "FALSE", "NULL"):
        return DefaultClause(statement[first.start : first.end], first)
    following = cursor.peek()
    if _is_introducer(first, following):
        assert following is not None
        cursor.next()
        introducer = "utf8mb3" if first.is_keyword("N") else first.value[1:].lower()
        return DefaultClause(statement[first.start : following.end], following, introducer=introducer)
    if first.kind != "word":
        raise UnrecognisedStatement(f"unexpected default at offset {first.start}")
    end = first.end
    if following is not None and following.is_punct("("):
        end = cursor.skip_parenthesised()[1].end
    return DefaultClause(statement[first.start : end], None)


def _is_introducer(word: Token, following: Token | None) -> bool:
    """``_charset'text'`` or ``N'text'``: a word written right against a string."""
    if word.kind != "word" or following is None or following.kind != "string" or following.start != word.end:
        return False
    return word.value.startswith("_") or word.is_keyword("N")


def _arguments(cursor: TokenCursor) -> list[int]:
    """``(n)`` or ``(m, d)`` after a type, as integers; [] when there are none."""
    if not cursor.accept_punct("("):
        return []
    numbers = []
    while True:
        token = cursor.next()
        if token.kind != "number" or not token.value.isdigit():
            raise UnrecognisedStatement(f"expected a whole number at offset {token.start}")
        numbers.append(int(token.value))
        if cursor.accept_punct(")"):
            return numbers
        cursor.expect_punct(",")


def _read_type(cursor: TokenCursor, name: str) -> DeclaredType:
    """The type after a column's name: its keyword picks the reader of its family (:data:`_TYPE_READERS`).

    A keyword without a reader is refused, so a type this module does not know is never guessed.
    """
    token = cursor.next()
    if token.kind != "word":
        raise UnrecognisedStatement(f"column {name!r}: expected a type at offset {token.start}")
    word = token.value.upper()
    reader = _TYPE_READERS.get(word)
    if reader is None:
        raise UnrecognisedStatement(f"column {name!r}: type {token.value} is not supported")
    return reader(cursor, name, word)


def _read_integer(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``INT[(width)] [UNSIGNED|ZEROFILL]`` and its sizes; the display width changes nothing."""
    _arguments(cursor)
    unsigned = _numeric_modifiers(cursor)
    bits = _INTEGER_BITS[word]
    return DeclaredType(ColumnType(name, "uint" if unsigned else "int", bits=bits), _INTEGER_BASES[bits])


def _read_boolean(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``BOOL``/``BOOLEAN`` is ``TINYINT(1)``."""
    return DeclaredType(ColumnType(name, "int", bits=8), "TINYINT")


def _read_decimal(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``DECIMAL[(M[,D])]``: M defaults to 10, D to 0; a size MySQL would refuse is refused."""
    arguments = _arguments(cursor) or [10]
    precision, scale = arguments[0], arguments[1] if len(arguments) > 1 else 0
    if len(arguments) > 2 or not 1 <= precision <= 65 or scale > min(precision, 30):
        raise UnrecognisedStatement(f"column {name!r}: DECIMAL{tuple(arguments)} is not a valid size")
    _numeric_modifiers(cursor)
    return DeclaredType(ColumnType(name, "decimal", precision=precision, scale=scale), "DECIMAL")


def _read_floating(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``FLOAT``/``DOUBLE [PRECISION]``; ``FLOAT(p)`` is a DOUBLE above 24 bits, ``(M,D)`` is ``scaled``."""
    if word == "DOUBLE":
        cursor.accept_keyword("PRECISION")
    arguments = _arguments(cursor)
    kind = word.lower()
    if word == "FLOAT" and len(arguments) == 1:
        if arguments[0] > 53:
            raise UnrecognisedStatement(f"column {name!r}: FLOAT({arguments[0]}) is not a valid size")
        kind = "float" if arguments[0] <= 24 else "double"
    elif len(arguments) not in (0, 2):
        raise UnrecognisedStatement(f"column {name!r}: {word}{tuple(arguments)} is not a valid size")
    _numeric_modifiers(cursor)
    return DeclaredType(ColumnType(name, kind), kind.upper(), scaled=len(arguments) == 2)


def _read_sizeless(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``DATE``, ``YEAR[(4)]``, ``JSON`` and the geometries: types without a size."""
    if word == "YEAR" and _arguments(cursor) not in ([], [4]):
        raise UnrecognisedStatement(f"column {name!r}: only YEAR and YEAR(4) exist")
    kind = "geometry" if word in _GEOMETRIES else word.lower()
    return DeclaredType(ColumnType(name, kind), word)


def _read_temporal(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``DATETIME``/``TIMESTAMP``/``TIME [(fsp)]``, fractional digits 0 to 6."""
    arguments = _arguments(cursor) or [0]
    if len(arguments) != 1 or arguments[0] > 6:
        raise UnrecognisedStatement(f"column {name!r}: {word}{tuple(arguments)} is not a valid precision")
    return DeclaredType(ColumnType(name, _TEMPORAL[word], fsp=arguments[0]), word)


def _read_text(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``TINYTEXT`` to ``LONGTEXT`` (``TEXT(n)`` picks one of them): text without a kept length."""
    _arguments(cursor)
    return DeclaredType(ColumnType(name, "text"), "TEXT")


def _read_binary(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``BINARY[(n)]`` (fixed, padded; n defaults to 1) or ``VARBINARY(n)``."""
    arguments = _arguments(cursor) or ([1] if word == "BINARY" else [])
    if len(arguments) != 1:
        raise UnrecognisedStatement(f"column {name!r}: {word} needs one length")
    fixed = arguments[0] if word == "BINARY" else 0
    return DeclaredType(ColumnType(name, "binary", fixed_length=fixed), word, length=arguments[0])


def _read_blob(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``TINYBLOB`` to ``LONGBLOB``: bytes without a kept length."""
    _arguments(cursor)
    return DeclaredType(ColumnType(name, "binary"), "BLOB")


def _read_bit(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``BIT[(1..64)]``."""
    arguments = _arguments(cursor) or [1]
    if len(arguments) != 1 or not 1 <= arguments[0] <= 64:
        raise UnrecognisedStatement(f"column {name!r}: BIT{tuple(arguments)} is not a valid width")
    return DeclaredType(ColumnType(name, "bit", bits=arguments[0]), "BIT")


def _refuse_real(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """``REAL`` depends on the DDL session's ``sql_mode``, which the binlog does not say."""
    raise UnrecognisedStatement(f"column {name!r}: REAL is DOUBLE, or FLOAT under sql_mode REAL_AS_FLOAT")


def _numeric_modifiers(cursor: TokenCursor) -> bool:
    """``SIGNED``/``UNSIGNED``/``ZEROFILL`` in any order; true when unsigned (ZEROFILL implies it)."""
    unsigned = False
    while keyword := cursor.accept_keyword("SIGNED", "UNSIGNED", "ZEROFILL"):
        unsigned = unsigned or keyword != "SIGNED"
    return unsigned


def _read_character_type(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    if word == "NATIONAL":
        word = cursor.expect_keyword("CHAR", "CHARACTER", "VARCHAR")
    varying = word in ("VARCHAR", "NVARCHAR") or cursor.accept_keyword("VARYING") is not None
    arguments = _arguments(cursor) or ([] if varying else [1])
    if len(arguments) != 1:
        raise UnrecognisedStatement(f"column {name!r}: {word} needs one length")
    return DeclaredType(ColumnType(name, "text"), "VARCHAR" if varying else "CHAR", length=arguments[0])


def _read_members(cursor: TokenCursor, name: str, word: str) -> DeclaredType:
    """The quoted members as the lexer reads any literal (``'..'`` or ``".."``, quotes doubled).

    Not :func:`..schema.parse_members`: that reads the one form ``COLUMN_TYPE`` prints, while a
    statement may quote members either way; a backslash (read two ways, see :mod:`.lexer`), an
    introducer or a comment inside the list is refused.
    """
    cursor.expect_punct("(")
    members: list[str] = []
    while True:
        token = cursor.next()
        if token.kind != "string" or token.has_backslash:
            raise UnrecognisedStatement(f"column {name!r}: expected a quoted member at offset {token.start}")
        if token.value != token.value.rstrip(" "):
            raise UnrecognisedStatement(f"column {name!r}: MySQL strips a member's trailing spaces")
        members.append(token.value)
        if cursor.accept_punct(")"):
            return DeclaredType(ColumnType(name, word.lower(), members=tuple(members)), word)
        cursor.expect_punct(",")


TypeReader = Callable[[TokenCursor, str, str], DeclaredType]
"""Reads a type's arguments and modifiers after its keyword: ``(cursor, column name, KEYWORD)``."""

_TYPE_READERS: dict[str, TypeReader] = {
    **dict.fromkeys(_INTEGER_BITS, _read_integer),
    **dict.fromkeys(("BOOL", "BOOLEAN"), _read_boolean),
    **dict.fromkeys(("DECIMAL", "DEC", "NUMERIC", "FIXED"), _read_decimal),
    **dict.fromkeys(("FLOAT", "DOUBLE"), _read_floating),
    **dict.fromkeys(("DATE", "YEAR", "JSON", *_GEOMETRIES), _read_sizeless),
    **dict.fromkeys(_TEMPORAL, _read_temporal),
    **dict.fromkeys(("CHAR", "CHARACTER", "NCHAR", "VARCHAR", "NVARCHAR", "NATIONAL"), _read_character_type),
    **dict.fromkeys(_TEXTS, _read_text),
    **dict.fromkeys(("BINARY", "VARBINARY"), _read_binary),
    **dict.fromkeys(_BLOBS, _read_blob),
    **dict.fromkeys(("ENUM", "SET"), _read_members),
    "BIT": _read_bit,
    "REAL": _refuse_real,
}
"""Every type keyword the reader knows, to the reader of its family; the families share no keyword."""
