"""The protocol's field types as construct objects, named as the docs name them.

Every grammar module builds its layouts from these, and the code generator
(:mod:`pgwire_spec._codegen`) knows each of them by identity, so a layout written with
them compiles to a fast specialised codec.
"""

from __future__ import annotations

from typing import Any

from construct import (
    Adapter,
    Bytes,
    FormatField,
    GreedyBytes,
    Int8ub,
    Int32sb,
    NullTerminated,
    Prefixed,
    ValidationError,
    Validator,
)
from construct.core import (
    Construct,
    ListContainer,
    SizeofError,
    Subconstruct,
    stream_read,
    stream_seek,
    stream_write,
)

__all__ = [
    "Int8",
    "Int16",
    "UInt16",
    "Int32",
    "UInt32",
    "Int64",
    "Oid",
    "TransactionId",
    "XLogRecPtr",
    "TimestampTz",
    "Char",
    "CharIn",
    "Bool8",
    "String",
    "Byten32",
    "RestBytes",
    "StringBytes",
    "NullableByten32",
    "TerminatedList",
    "UNCHANGED",
    "Unchanged",
    "ENCODING",
    "ERRORS",
]

#: Text is carried in the connection's client_encoding; we decode UTF-8 and keep any other
#: byte through surrogateescape, so every input re-encodes to the same bytes.
ENCODING = "utf-8"
ERRORS = "surrogateescape"

# Each named type is its own object (not an alias of construct's Int32ub …) so that the
# spec/ check, the JSON form and the code generator can tell an Oid from an xid or an LSN.
Int8 = FormatField(">", "B")
Int16 = FormatField(">", "h")
UInt16 = FormatField(">", "H")
Int32 = FormatField(">", "l")
UInt32 = FormatField(">", "L")
Int64 = FormatField(">", "q")
Oid = FormatField(">", "L")
TransactionId = FormatField(">", "L")
XLogRecPtr = FormatField(">", "Q")
TimestampTz = FormatField(">", "q")


class Unchanged:
    """The value of an unchanged TOASTed column (TupleData kind ``'u'``): not sent."""

    __slots__ = ()
    _instance: Unchanged | None = None

    def __new__(cls) -> Unchanged:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED"

    def __reduce__(self) -> str:
        return "UNCHANGED"


#: The single instance of :class:`Unchanged`.
UNCHANGED = Unchanged()


class _Char(Adapter):  # type: ignore[misc]
    """Byte1 read as a one-character str (``'K'``, ``'d'``); latin-1 so any byte round-trips."""

    def _decode(self, obj: bytes, context: Any, path: str) -> str:
        return obj.decode("latin-1")

    def _encode(self, obj: str, context: Any, path: str) -> bytes:
        return obj.encode("latin-1")


class _Bool8(Adapter):  # type: ignore[misc]
    """Int8 that the server only ever writes as 0 or 1."""

    def _decode(self, obj: int, context: Any, path: str) -> bool:
        if obj not in (0, 1):
            raise ValidationError(f"expected 0 or 1, found {obj}", path=path)
        return obj == 1

    def _encode(self, obj: bool, context: Any, path: str) -> int:
        return 1 if obj else 0


class _String(Adapter):  # type: ignore[misc]
    """String: NUL-terminated, in the client encoding."""

    def _decode(self, obj: bytes, context: Any, path: str) -> str:
        return obj.decode(ENCODING, ERRORS)

    def _encode(self, obj: str, context: Any, path: str) -> bytes:
        return obj.encode(ENCODING, ERRORS)


class CharIn(Validator):  # type: ignore[misc]
    """Byte1 that must be one of the given characters (``CharIn("KO")``)."""

    def __init__(self, valids: str) -> None:
        super().__init__(Char)
        self.valids = valids

    def _validate(self, obj: str, context: Any, path: str) -> bool:
        return obj in self.valids


Char = _Char(Bytes(1))
Bool8 = _Bool8(Int8ub)
String = _String(NullTerminated(GreedyBytes))
#: Int32 length followed by that many bytes (logical message content, column values).
Byten32 = Prefixed(Int32sb, GreedyBytes)
#: Everything up to the end of the message (XLogData's WAL data, CopyData's payload).
RestBytes = GreedyBytes

#: String kept as raw bytes: NUL-terminated, not decoded (PasswordMessage's password).
StringBytes = NullTerminated(GreedyBytes)


class _NullableByten32(Construct):  # type: ignore[misc]
    """Int32 length then that many bytes; length -1 means NULL (``None``) and no bytes
    follow (DataRow's column values, SASLInitialResponse's initial response)."""

    def _parse(self, stream: Any, context: Any, path: str) -> bytes | None:
        n = Int32sb._parsereport(stream, context, path)
        if n == -1:
            return None
        if n < -1:
            raise ValidationError(f"expected -1 or a length >= 0, found {n}", path=path)
        return stream_read(stream, n, path)  # type: ignore[no-any-return]

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            Int32sb._build(-1, stream, context, path)
            return obj
        data = bytes(obj)
        Int32sb._build(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError(path=path)


NullableByten32 = _NullableByten32()


class TupleValues(Adapter):  # type: ignore[misc]
    """pgoutput's TupleData as Python values: str ('t'), bytes ('b'), None ('n'), UNCHANGED
    ('u'). The layout of the columns is the pgoutput grammar's; this class only names the
    node, so the code generators recognise it without importing the grammar."""

    def _decode(self, obj: Any, context: Any, path: str) -> tuple[Any, ...]:
        return tuple(
            None if c.kind == "n" else UNCHANGED if c.kind == "u" else c.value for c in obj
        )

    def _encode(self, obj: Any, context: Any, path: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for value in obj:
            if value is None:
                out.append({"kind": "n", "value": None})
            elif value is UNCHANGED:
                out.append({"kind": "u", "value": None})
            elif isinstance(value, str):
                out.append({"kind": "t", "value": value})
            else:
                out.append({"kind": "b", "value": bytes(value)})
        return out


class TerminatedList(Subconstruct):  # type: ignore[misc]
    """Items of *subcon* one after another, ended by a zero byte where the next item would
    start: "A zero byte is required as terminator after the last ..." (StartupMessage's
    parameters, AuthenticationSASL's mechanisms, ErrorResponse's fields). An item whose
    first byte would be zero cannot be written (it would end the list)."""

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        items = ListContainer()
        while True:
            if stream_read(stream, 1, path) == b"\x00":
                return items
            stream_seek(stream, -1, 1, path)
            items.append(self.subcon._parsereport(stream, context, path))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        for item in obj:
            data = self.subcon.build(item)
            if data[:1] in (b"", b"\x00"):
                raise ValidationError(
                    f"an item of a zero-terminated list cannot start with a zero byte: {item!r}",
                    path=path,
                )
            stream_write(stream, data, len(data), path)
        stream_write(stream, b"\x00", 1, path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError(path=path)
