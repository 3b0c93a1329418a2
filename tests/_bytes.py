"""Big-endian packing helpers for hand-built test vectors (written from the docs' layouts,
independently of the grammar): Int8/16/32/64 signed and unsigned, and String."""

from __future__ import annotations

import struct


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def u8(v: int) -> bytes:
    return struct.pack(">B", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def u32(v: int) -> bytes:
    return struct.pack(">I", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def u64(v: int) -> bytes:
    return struct.pack(">Q", v)


def s(text: str) -> bytes:
    """String: NUL-terminated."""
    return text.encode() + b"\x00"
