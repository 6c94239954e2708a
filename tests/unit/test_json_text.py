"""The compiled JSON printer gives the Python reference's text for every payload, or defers to it.

Reference: ``canonical_json(binary_json_value(payload))``. The compiled ``_json_text.json_text``
either returns that exact text or None (the Python pair decides); it never returns other text.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.binlog.decoding import native
from airflow_mysql_cdc.engine.binlog.decoding.compiled import _json_reader
from airflow_mysql_cdc.engine.binlog.decoding.json_text import compiled_json_text, json_text, python_json_text
from tests.unit.binary_json_encoding import (
    DATE,
    DATETIME,
    TIME,
    Encoding,
    Opaque,
    encode,
    length_bytes,
    packed_decimal,
    packed_temporal,
)

needs_extension = pytest.mark.skipif(
    compiled_json_text is None,
    reason="the optional C extension _json_text is not built (pip install -e . builds it with a compiler)",
)

INT64_MIN, INT64_MAX, UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1

json_documents = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(INT64_MIN, UINT64_MAX)
    | st.floats()  # NaN and the infinities too: the printers agree on them
    | st.text(),
    lambda children: (
        st.lists(children, max_size=8) | st.dictionaries(st.text(max_size=12), children, max_size=8)
    ),
    max_leaves=40,
)
encodings = st.builds(Encoding, large=st.booleans(), unsigned=st.booleans())


def compiled(payload: bytes) -> str | None:
    assert compiled_json_text is not None
    return compiled_json_text(payload)


def outcome(function: Any, payload: bytes) -> tuple[str, Any]:
    try:
        return "text", function(payload)
    except Exception as error:  # the kind of error is what the paths must share
        return "error", type(error)


@needs_extension
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=json_documents, encoding=encodings)
def test_compiled_text_equals_the_python_reference_for_generated_documents(document: Any, encoding: Encoding):
    payload = encode(document, encoding)
    assert compiled(payload) == python_json_text(payload)
    assert json_text(payload) == python_json_text(payload)


@needs_extension
def test_large_containers_print_as_the_reference():
    # over 64 KiB: MySQL (and the encoder) must use 4-byte counts and offsets
    document = {f"key{index}": [index, -index, f"value {index}", index / 7, None] for index in range(3000)}
    payload = encode(document)
    assert payload[0] == 0x1  # a large object
    assert compiled(payload) == python_json_text(payload)


EDGE_VALUES: list[Any] = [
    {},
    [],
    [{}, [], {"": []}],
    None,
    True,
    False,
    0,
    -1,
    -32768,
    32767,
    65535,
    65536,
    -(1 << 31),
    (1 << 31) - 1,
    (1 << 32) - 1,
    1 << 32,
    INT64_MIN,
    INT64_MAX,
    INT64_MAX + 1,
    UINT64_MAX,
    5e-324,
    -5e-324,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    0.0,
    -0.0,
    0.1,
    1e16,
    1e15,
    123456789012345680.0,
    1.5e-7,
    float("nan"),
    float("inf"),
    float("-inf"),
    "",
    "plain",
    "".join(chr(code) for code in range(0x20)) + "\x7f",
    'quote " backslash \\ slash / tab \t',
    "é ß 中文 \u2028 \u2029 \ufeff \uffff",
    "astral 😀 𝄞 \U0010ffff",
    {"b": 1, "a": 2, "": 3, "aa": 4, "B": 5, "é": 6, "😀": 7, "\uffff": 8, "\ue000": 9},
    {"nested": {"z": [1, {"y": [True, None, "x"]}], "a": {"b": {"c": {}}}}},
    {'k\n"\\': "v\x00\x1f"},
    [[[[[[[[[[1]]]]]]]]]],
]


@needs_extension
@pytest.mark.parametrize("value", EDGE_VALUES, ids=repr)
@pytest.mark.parametrize(
    "encoding", [Encoding(), Encoding(large=True, unsigned=True)], ids=["small", "large"]
)
def test_compiled_text_equals_the_reference_for_edge_values(value: Any, encoding: Encoding):
    payload = encode(value, encoding)
    text = compiled(payload)
    assert text is not None, "the compiled path handles every non-OPAQUE well-formed document"
    assert text == python_json_text(payload)


def nested(depth: int) -> Any:
    document: Any = "leaf"
    for level in range(depth):
        document = [document] if level % 2 else {"k": document}
    return document


@needs_extension
def test_documents_as_deep_as_mysql_allows_print_in_c():
    payload = encode(nested(100))
    assert compiled(payload) == python_json_text(payload)


@needs_extension
def test_documents_deeper_than_128_levels_are_left_to_the_python_path():
    payload = encode(nested(200))
    assert compiled(payload) is None
    assert json_text(payload) == python_json_text(payload)


DECIMAL_TYPES = st.integers(1, 65).flatmap(
    lambda precision: st.integers(0, min(precision, 30)).flatmap(
        lambda scale: st.builds(
            packed_decimal,
            # exact: Decimal arithmetic would round to the context's 28 digits
            st.integers(-(10**precision) + 1, 10**precision - 1).map(
                lambda unscaled: Decimal(f"{unscaled}E-{scale}")
            ),
            st.just(precision),
            st.just(scale),
        )
    )
)
opaque_values = st.one_of(
    DECIMAL_TYPES,
    st.builds(packed_temporal, st.sampled_from([DATE, 14]), st.dates()),
    st.builds(packed_temporal, st.sampled_from([DATETIME, 7, 17, 18]), st.datetimes()),
    st.builds(
        packed_temporal,
        st.sampled_from([TIME, 19]),
        st.timedeltas(
            min_value=-timedelta(hours=838, minutes=59, seconds=59), max_value=timedelta(hours=838)
        ),
    ),
    st.builds(Opaque, st.sampled_from([15, 16, 249, 250, 251, 252, 253, 254, 255]), st.binary(max_size=40)),
)


opaque_documents = st.one_of(
    opaque_values,
    st.lists(opaque_values, max_size=5),
    st.dictionaries(
        st.text(max_size=5), opaque_values | st.integers(INT64_MIN, UINT64_MAX) | st.text(), max_size=5
    ),
)


@needs_extension
@settings(max_examples=300, deadline=None)
@given(
    document=opaque_documents,
    encoding=encodings,
)
def test_opaque_decimals_dates_times_and_binary_values_print_as_the_reference(
    document: Any, encoding: Encoding
):
    payload = encode(document, encoding)
    text = compiled(payload)
    assert text is not None, "the compiled path prints every OPAQUE value MySQL writes"
    assert text == python_json_text(payload)


@needs_extension
@pytest.mark.parametrize(
    "document",
    [
        packed_decimal(Decimal("123.45"), 5, 2),
        packed_decimal(Decimal("-0.00"), 5, 2),  # a negative zero prints as -0.0, as float(Decimal) does
        packed_decimal(Decimal("0.1"), 1, 1),
        packed_decimal(Decimal("99999999999999999999999999999999999.999999999999999999999999999999"), 65, 30),
        packed_temporal(DATE, date(2024, 1, 2)),
        packed_temporal(DATETIME, datetime(2024, 1, 2, 3, 4, 5, 500000)),
        packed_temporal(TIME, -timedelta(hours=1, seconds=1, microseconds=250000)),
        packed_temporal(TIME, timedelta(hours=838, minutes=59, seconds=59)),
        Opaque(252, b""),
        Opaque(252, b"\x00\xffbinary"),
    ],
    ids=repr,
)
def test_opaque_edge_values_print_as_the_reference(document: Any):
    payload = encode([document])
    assert compiled(payload) == python_json_text(payload)


@needs_extension
@pytest.mark.parametrize(
    "opaque",
    [
        Opaque(246, b"\x05"),  # no scale byte
        Opaque(246, b"\x00\x00"),  # precision 0: the Python reader fails on a negative shift
        Opaque(246, b"\x02\x03\x80"),  # scale over precision
        Opaque(246, b"\x05\x02\x80\x7b"),  # the packed digits cut short: Python reads fewer bytes
        Opaque(246, b"\x02\x00\xe4"),  # a digit group over its digits (100 in two digits)
        Opaque(10, b"\x00\x00\x00\x00"),  # a temporal value under 8 bytes: Python reads fewer bytes
        Opaque(12, (-(1 << 63)).to_bytes(8, "little", signed=True)),  # no magnitude in 64 bits
    ],
    ids=repr,
)
def test_opaque_values_mysql_never_writes_are_left_to_the_python_path(opaque: Opaque):
    payload = encode({"v": opaque})
    assert compiled(payload) is None
    assert outcome(json_text, payload) == outcome(python_json_text, payload)


@needs_extension
def test_duplicate_keys_are_left_to_the_python_path_which_keeps_the_last_value():
    payload = bytearray(encode({"a": 1, "b": 2}))
    key_b = payload.index(b"ab") + 1  # the keys are stored together after the entries
    payload[key_b] = ord("a")
    assert compiled(bytes(payload)) is None
    assert json_text(bytes(payload)) == python_json_text(bytes(payload)) == '{"a":2}'


@needs_extension
@pytest.mark.parametrize(
    "payload",
    [
        b"\x0c" + length_bytes(2) + b"\xc3\x28",  # an invalid continuation byte
        b"\x0c" + length_bytes(1) + b"\xc3",  # a sequence cut short
        b"\x0c" + length_bytes(3) + b"\xed\xa0\x80",  # a UTF-16 surrogate
        b"\x02\x01\x00\x0a\x00\x0c\x07\x00\x02\xff\xfe",  # the same inside an array
    ],
    ids=["bad-continuation", "cut-sequence", "surrogate", "in-array"],
)
def test_text_that_is_not_utf8_raises_the_same_error_on_both_paths(payload: bytes):
    assert compiled(payload) is None
    assert outcome(json_text, payload) == outcome(python_json_text, payload) == ("error", UnicodeDecodeError)


MALFORMED = [
    b"",
    b"\x04\x03",  # a literal byte that is neither null, true nor false
    b"\x0d\x00",  # not a binary JSON type
    b"\x10",
    b"\x04",  # literal without its byte
    b"\x09\x01\x02",  # INT64 cut short
    b"\x0b\x00\x00\x00",  # DOUBLE cut short
    b"\x0c\x05ab",  # a string longer than the payload (Python slices it short without an error)
    b"\x0c\x80\x80\x80\x80\x80\x01",  # a length of more than five 7-bit groups
    b"\x00\x05\x00",  # object header cut short
    b"\x02\x02\x00\x0a\x00\x05\x01\x00",  # array entries cut short
    b"\x02\x01\x00\x07\x00\x04\x07\x00",  # inline literal 7 in an array
    b"\x00\x01\x00\x0b\x00\x40\x00\x01\x00\x05\x01\x00",  # key offset past the end
]


@needs_extension
@pytest.mark.parametrize("payload", MALFORMED, ids=lambda payload: payload.hex() or "empty")
def test_malformed_payloads_fall_back_and_give_the_reference_outcome(payload: bytes):
    assert compiled(payload) is None
    assert outcome(json_text, payload) == outcome(python_json_text, payload)


@needs_extension
@pytest.mark.parametrize(
    "document", [{"a": [1, "two", 3.0, None], "bb": {"c": 1 << 40}}, ["x" * 300, -5, 1 << 33]], ids=repr
)
@pytest.mark.parametrize("encoding", [Encoding(), Encoding(large=True)], ids=["small", "large"])
def test_every_truncation_of_a_document_falls_back_or_gives_the_reference_text(
    document: Any, encoding: Encoding
):
    payload = encode(document, encoding)
    for end in range(len(payload)):
        cut = payload[:end]
        text = compiled(cut)
        if text is not None:
            assert ("text", text) == outcome(python_json_text, cut)
        assert outcome(json_text, cut) == outcome(python_json_text, cut)


@needs_extension
@settings(max_examples=300, deadline=None)
@given(
    document=json_documents | opaque_documents,
    encoding=encodings,
    data=st.data(),
)
def test_a_corrupted_payload_never_gets_text_other_than_the_reference(
    document: Any, encoding: Encoding, data: st.DataObject
):
    payload = bytearray(encode(document, encoding))
    for _ in range(data.draw(st.integers(1, 3))):
        payload[data.draw(st.integers(0, len(payload) - 1))] = data.draw(st.integers(0, 255))
    text = compiled(bytes(payload))
    # Only when C answers is the reference run: a corrupted element count can make the Python parser
    # build a struct format of billions of characters, and None hands the payload to it by contract.
    if text is not None:
        assert ("text", text) == outcome(python_json_text, bytes(payload))


@needs_extension
@pytest.mark.parametrize(
    "payload",
    [bytearray(encode([1, "x"])), memoryview(encode({"a": 1})), "\x04\x01", None],
    ids=["bytearray", "memoryview", "str", "None"],  # stable across xdist workers (repr has addresses)
)
def test_payloads_that_are_not_bytes_are_left_to_the_python_path(payload: Any):
    assert compiled(payload) is None
    assert outcome(json_text, payload) == outcome(python_json_text, payload)


def test_the_binlog_reader_prints_json_columns_as_the_reference_and_reuses_the_last_text():
    read = _json_reader()
    payload = encode({"b": [1, 2.5], "a": "x"})
    first = read(payload)
    assert first == python_json_text(payload) == '{"a":"x","b":[1,2.5]}'
    assert read(bytes(payload)) is first


def test_the_pure_python_variable_forces_the_python_path():
    probe = (
        "from airflow_mysql_cdc.engine.binlog.decoding import json_text as m;"
        "print(m.json_text is m.python_json_text)"
    )
    env = {**os.environ, native.PURE_PYTHON_VARIABLE: "1"}
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "True"


@needs_extension
def test_the_compiled_path_is_used_when_built_and_not_turned_off():
    if native.pure_python_requested():
        pytest.skip(f"{native.PURE_PYTHON_VARIABLE} is set in this run")
    assert json_text is not python_json_text
