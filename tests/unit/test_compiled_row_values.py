"""The compiled DATETIME, TIMESTAMP and DECIMAL readers give exactly what their Python twins give.

The twins are the readers the decoder used before (``compiled._datetime2``, ``compiled._timestamp2``,
``packed_decimal.packed_decimal_reader``), themselves checked against mysql-replication and a real
MySQL by ``test_the_compiled_decoder_gives_the_library_values_for_every_type``. Here the compiled
ones meet them over random bytes (anything a corrupt or unusual event could hold), MySQL's own
encodings of random values, and the edges: zero dates, the zero TIMESTAMP, negative fractions,
negative zero, every precision and scale.
"""

from __future__ import annotations

import datetime
import decimal
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.binlog.decoding import native
from airflow_mysql_cdc.engine.binlog.decoding.compiled import _datetime2, _timestamp2
from airflow_mysql_cdc.engine.binlog.decoding.packed_decimal import decimal_size, packed_decimal_reader

compiled = native.ROW_VALUES
pytestmark = pytest.mark.skipif(compiled is None, reason="the compiled row values module is not built here")

fsps = st.integers(0, 6)


def same(left: object, right: object) -> bool:
    """Equal values of the same type; Decimals also with the same exponent and sign (``-0.00``)."""
    if isinstance(left, decimal.Decimal) and isinstance(right, decimal.Decimal):
        return left.as_tuple() == right.as_tuple()
    return type(left) is type(right) and left == right


def alike(compiled_call, python_call) -> bool:
    """The same value, or the same kind of error (a ValueError sends the event to the library)."""
    outcomes = []
    for call in (compiled_call, python_call):
        try:
            outcomes.append(("value", call()))
        except ValueError as error:
            outcomes.append(("error", type(error)))
    (left_kind, left), (right_kind, right) = outcomes
    return left_kind == right_kind and (same(left, right) if left_kind == "value" else left is right)


@settings(max_examples=500, deadline=None)
@given(fsp=fsps, prefix=st.binary(max_size=3), body=st.binary(min_size=8, max_size=8))
def test_datetimes_from_any_bytes_read_alike(fsp: int, prefix: bytes, body: bytes) -> None:
    data = prefix + body
    assert same(compiled.datetime2(data, len(prefix), fsp), _datetime2(fsp)(data, len(prefix)))


@settings(max_examples=500, deadline=None)
@given(fsp=fsps, body=st.binary(min_size=7, max_size=7))
def test_timestamps_from_any_bytes_read_alike(fsp: int, body: bytes) -> None:
    assert alike(lambda: compiled.timestamp2(body, 0, fsp), lambda: _timestamp2(fsp)(body, 0))


def datetime2_bytes(value: datetime.datetime, fsp: int) -> bytes:
    """MySQL's DATETIME2 encoding (``my_datetime_packed_to_binary``)."""
    year_month = value.year * 13 + value.month
    packed = (year_month << 22) | (value.day << 17) | (value.hour << 12) | (value.minute << 6) | value.second
    fraction = value.microsecond // 10 ** (6 - fsp) * (10 if fsp % 2 else 1)
    return (packed | 1 << 39).to_bytes(5, "big") + fraction.to_bytes((fsp + 1) // 2, "big")


@settings(max_examples=300, deadline=None)
@given(value=st.datetimes(min_value=datetime.datetime(1000, 1, 1)), fsp=fsps)
def test_mysqls_own_datetimes_read_alike(value: datetime.datetime, fsp: int) -> None:
    data = datetime2_bytes(value, fsp)
    read = compiled.datetime2(data, 0, fsp)
    assert same(read, _datetime2(fsp)(data, 0))
    assert read == value.replace(microsecond=value.microsecond // 10 ** (6 - fsp) * 10 ** (6 - fsp))


@pytest.mark.parametrize(
    "data, fsp",
    [
        (bytes(5), 0),  # the zero DATETIME
        ((1 << 39).to_bytes(5, "big"), 0),  # 0000-00-00 00:00:00 with the sign bit
        (((2024 * 13 + 2) << 22 | 30 << 17 | 1 << 39).to_bytes(5, "big"), 0),  # February 30th
        (datetime2_bytes(datetime.datetime(9999, 12, 31, 23, 59, 59, 999999), 6), 6),
        (datetime2_bytes(datetime.datetime(2024, 1, 2), 3)[:5] + (0xF000).to_bytes(2, "big"), 3),  # negative
    ],
)
def test_zero_invalid_and_extreme_datetimes_read_alike(data: bytes, fsp: int) -> None:
    assert same(compiled.datetime2(data, 0, fsp), _datetime2(fsp)(data, 0))


@pytest.mark.parametrize("seconds", [0, 1, 86399, 86400, 1_700_000_000, 2**31 - 1, -1, -86401])
@pytest.mark.parametrize("fraction", [b"", b"\x00", b"\x00\x01", b"\x0f\x42\x3f", b"\xff\xff\xff"])
def test_the_zero_timestamp_and_edges_read_alike(seconds: int, fraction: bytes) -> None:
    fsp = {0: 0, 1: 2, 2: 4, 3: 6}[len(fraction)]
    data = seconds.to_bytes(4, "big", signed=True) + fraction
    assert alike(lambda: compiled.timestamp2(data, 0, fsp), lambda: _timestamp2(fsp)(data, 0))


def decimal_bytes(value: decimal.Decimal, precision: int, scale: int) -> bytes:
    """MySQL's packed DECIMAL (``decimal2bin``) of ``value``, which fits ``DECIMAL(precision, scale)``."""
    with decimal.localcontext(prec=100):
        sign, digits, _ = value.quantize(decimal.Decimal(1).scaleb(-scale)).as_tuple()
    text = "".join(map(str, digits)).rjust(precision, "0")
    integral, fraction = text[: precision - scale], text[precision - scale :]
    groups = [integral[: len(integral) % 9]] if len(integral) % 9 else []
    groups += [integral[i : i + 9] for i in range(len(integral) % 9, len(integral), 9)]
    groups += [fraction[i : i + 9] for i in range(0, len(fraction) - len(fraction) % 9, 9)]
    if len(fraction) % 9:
        groups.append(fraction[len(fraction) - len(fraction) % 9 :])
    sizes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    packed = b"".join(int(group).to_bytes(sizes[len(group)], "big") for group in groups)
    packed = bytes([packed[0] ^ 0x80]) + packed[1:]
    return bytes(byte ^ 0xFF for byte in packed) if sign else packed


precisions = st.integers(1, 65).flatmap(lambda p: st.tuples(st.just(p), st.integers(0, min(p, 30))))


@settings(max_examples=500, deadline=None)
@given(shape=precisions, data=st.data())
def test_mysqls_own_decimals_read_alike_with_their_exponent(
    shape: tuple[int, int], data: st.DataObject
) -> None:
    precision, scale = shape
    digits = data.draw(st.text("0123456789", min_size=precision, max_size=precision))
    negative = data.draw(st.booleans())
    value = decimal.Decimal(
        f"{'-' if negative else ''}{digits[: precision - scale] or '0'}.{digits[precision - scale :]}"
    )
    packed = decimal_bytes(value, precision, scale)
    assert len(packed) == decimal_size(precision, scale)
    read = compiled.decimal(b"xy" + packed, 2, precision, scale)
    assert same(read, packed_decimal_reader(precision, scale)(b"xy" + packed, 2))
    assert read == value


@settings(max_examples=500, deadline=None)
@given(shape=precisions, data=st.data())
def test_decimals_from_any_bytes_read_alike(shape: tuple[int, int], data: st.DataObject) -> None:
    precision, scale = shape
    packed = data.draw(
        st.binary(min_size=decimal_size(precision, scale), max_size=decimal_size(precision, scale))
    )
    assert same(
        compiled.decimal(packed, 0, precision, scale), packed_decimal_reader(precision, scale)(packed, 0)
    )


@pytest.mark.parametrize(
    "text, precision, scale", [("-0.00", 5, 2), ("0", 1, 0), ("-0", 10, 0), ("0.5", 30, 30)]
)
def test_negative_zero_and_all_fraction_decimals_read_alike(text: str, precision: int, scale: int) -> None:
    packed = decimal_bytes(decimal.Decimal(text), precision, scale)
    assert same(
        compiled.decimal(packed, 0, precision, scale), packed_decimal_reader(precision, scale)(packed, 0)
    )


def test_a_value_past_the_end_of_its_event_is_a_value_error_the_decoder_falls_back_on() -> None:
    for call in (
        lambda: compiled.datetime2(bytes(6), 2, 0),
        lambda: compiled.timestamp2(bytes(4), 1, 0),
        lambda: compiled.decimal(bytes(3), 0, 10, 2),
    ):
        with pytest.raises(ValueError, match="past the end of its event"):
            call()


def test_the_pure_python_switch_turns_the_compiled_readers_off() -> None:
    probe = "from airflow_mysql_cdc.engine.binlog.decoding import native; print(native.ROW_VALUES is None)"
    environment = {**os.environ, native.PURE_PYTHON_VARIABLE: "1"}
    result = subprocess.run(
        [sys.executable, "-c", probe], env=environment, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "True"
