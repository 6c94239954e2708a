import datetime
from collections.abc import Callable
from decimal import Decimal

def datetime2(data: bytes, at: int, fsp: int, /) -> datetime.datetime | None:
    """DATETIME(fsp) at ``at``: a naive datetime, None for zero and invalid dates."""

def timestamp2(data: bytes, at: int, fsp: int, /) -> datetime.datetime | None:
    """TIMESTAMP(fsp) at ``at``: a naive UTC datetime, None for the zero TIMESTAMP."""

def decimal(data: bytes, at: int, precision: int, scale: int, /) -> Decimal:
    """Packed DECIMAL(precision, scale) at ``at``."""

def use_decimal_fallback(reader: Callable[[bytes, int, int, int], Decimal], /) -> None:
    """The Python reader of DECIMAL bytes MySQL does not write."""
