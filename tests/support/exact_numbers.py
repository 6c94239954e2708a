"""FLOAT, DOUBLE and DECIMAL values chosen to catch any rounding between the server and the lake.

Random bit patterns cover every exponent (subnormals included) and full mantissas, which MySQL's
6-digit FLOAT text cannot hold; the edges are the extremes of each type. Values are compared by
bit pattern (``float32_bits``, ``float64_bits``), so ``-0.0`` differs from ``0.0``.
"""

from __future__ import annotations

import decimal
import random
import struct

_FLOAT32 = struct.Struct("<f")
_FLOAT64 = struct.Struct("<d")

FLOAT32_EDGE_BITS = (
    0x0000_0000,  # 0.0
    0x8000_0000,  # -0.0
    0x0000_0001,  # smallest subnormal
    0x8000_0001,
    0x007F_FFFF,  # largest subnormal
    0x807F_FFFF,
    0x0080_0000,  # FLT_MIN
    0x8080_0000,
    0x7F7F_FFFF,  # FLT_MAX
    0xFF7F_FFFF,
    0x4B80_0001,  # 16777218: past 2**24, where integers stop being exact
)
FLOAT64_EDGE_BITS = (
    0x0000_0000_0000_0000,
    0x8000_0000_0000_0000,
    0x0000_0000_0000_0001,  # 5e-324
    0x8000_0000_0000_0001,
    0x000F_FFFF_FFFF_FFFF,  # largest subnormal
    0x800F_FFFF_FFFF_FFFF,
    0x0010_0000_0000_0000,  # DBL_MIN
    0x8010_0000_0000_0000,
    0x7FEF_FFFF_FFFF_FFFF,  # DBL_MAX
    0xFFEF_FFFF_FFFF_FFFF,
)
FLOAT32_EDGES = tuple(_FLOAT32.unpack(struct.pack("<I", bits))[0] for bits in FLOAT32_EDGE_BITS) + (
    568054.875,  # MySQL prints this FLOAT as 568055
)
FLOAT64_EDGES = tuple(_FLOAT64.unpack(struct.pack("<Q", bits))[0] for bits in FLOAT64_EDGE_BITS)


def float32_bits(value: float) -> int:
    """The float32 bit pattern of ``value``, which must be a float32 value (no rounding here)."""
    bits = struct.unpack("<I", _FLOAT32.pack(value))[0]
    if _FLOAT32.unpack(_FLOAT32.pack(value))[0] != value:
        raise ValueError(f"{value!r} is not a float32 value")
    return bits


def float64_bits(value: float) -> int:
    return struct.unpack("<Q", _FLOAT64.pack(value))[0]


def random_float32(rng: random.Random) -> float:
    """A finite float32 of a random bit pattern; one in eight is subnormal."""
    while True:
        bits = rng.getrandbits(32)
        if rng.random() < 0.125:
            bits &= 0x807F_FFFF  # exponent 0: subnormal (or zero)
        if (bits >> 23) & 0xFF != 0xFF:  # not inf or NaN, which MySQL cannot store
            return _FLOAT32.unpack(struct.pack("<I", bits))[0]


def random_float64(rng: random.Random) -> float:
    """A finite double of a random bit pattern; one in eight is subnormal."""
    while True:
        bits = rng.getrandbits(64)
        if rng.random() < 0.125:
            bits &= 0x800F_FFFF_FFFF_FFFF
        if (bits >> 52) & 0x7FF != 0x7FF:
            return _FLOAT64.unpack(struct.pack("<Q", bits))[0]


def random_decimal(rng: random.Random, precision: int, scale: int) -> decimal.Decimal:
    """A DECIMAL(precision, scale) value with every digit random (so all ``precision`` are used)."""
    digits = "".join(rng.choice("0123456789") for _ in range(precision))
    sign = rng.choice(("", "-"))
    integer, fraction = digits[: precision - scale] or "0", digits[precision - scale :]
    return decimal.Decimal(f"{sign}{integer}.{fraction}" if scale else f"{sign}{integer}")


def decimal_edges(precision: int, scale: int) -> tuple[decimal.Decimal, ...]:
    """The largest magnitude, the smallest non-zero magnitude and zero, both signs."""
    # from text: arithmetic would round to the context's 28 digits
    largest = decimal.Decimal("9" * (precision - scale) + "." + "9" * scale)
    smallest = decimal.Decimal(f"1E-{scale}")
    return (largest, largest.copy_negate(), smallest, smallest.copy_negate(), decimal.Decimal(0))
