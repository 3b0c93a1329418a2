"""LSNs and timestamps as PostgreSQL writes them.

The one place that formats and parses the ``X/X`` LSN text form and converts the
protocol's timestamps (microseconds since 2000-01-01 UTC) to and from ``datetime``.
"""

from __future__ import annotations

import datetime as _dt

__all__ = [
    "PG_EPOCH",
    "format_lsn",
    "parse_lsn",
    "timestamp_to_datetime",
    "datetime_to_timestamp",
]

#: The PostgreSQL epoch, the zero of every TimestampTz on the wire.
PG_EPOCH = _dt.datetime(2000, 1, 1, tzinfo=_dt.UTC)

_MAX_LSN = (1 << 64) - 1


def format_lsn(lsn: int, *, pad: bool = False) -> str:
    """``0x16B3748`` -> ``'0/16B3748'`` (``pad=True``: the low half zero-padded to 8 digits,
    as psycopg2 writes it in START_REPLICATION)."""
    if not 0 <= lsn <= _MAX_LSN:
        raise ValueError(f"LSN out of range: {lsn}")
    hi, lo = lsn >> 32, lsn & 0xFFFFFFFF
    return f"{hi:X}/{lo:08X}" if pad else f"{hi:X}/{lo:X}"


def parse_lsn(text: str) -> int:
    """``'0/16B3748'`` -> ``0x16B3748``. Raises ValueError naming the bad text."""
    hi, sep, lo = text.strip().partition("/")
    if not sep or not hi or not lo or len(hi) > 8 or len(lo) > 8:
        raise ValueError(f"expected an LSN like '0/16B3748', found {text!r}")
    try:
        return (int(hi, 16) << 32) | int(lo, 16)
    except ValueError:
        raise ValueError(f"expected an LSN like '0/16B3748', found {text!r}") from None


def timestamp_to_datetime(micros: int) -> _dt.datetime:
    """Protocol TimestampTz (µs since 2000-01-01 UTC) -> aware ``datetime``."""
    return PG_EPOCH + _dt.timedelta(microseconds=micros)


def datetime_to_timestamp(value: _dt.datetime) -> int:
    """Aware ``datetime`` -> protocol TimestampTz (µs since 2000-01-01 UTC)."""
    if value.tzinfo is None:
        raise ValueError("expected an aware datetime, found a naive one")
    delta = value - PG_EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
