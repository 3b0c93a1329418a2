"""Frontend/backend protocol v3 messages as frozen, slotted dataclasses.

Each class names its Byte1 identifier in ``tag`` (``None`` for the untagged startup-phase
messages) and who sends it in ``sender`` (``"F"``, ``"B"`` or ``"FB"``). Fields are the
message contents after the framing (tag and length), as laid out in
:mod:`pgwire_spec.wire.grammar`. Text is decoded as UTF-8 with surrogateescape, so every
input re-encodes to the same bytes; values that the server compares or passes on as they
are (passwords, SASL data, column values, COPY data) stay bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Self

__all__ = [
    "WireMessage",
    "StartupMessage",
    "SSLRequest",
    "GSSENCRequest",
    "CancelRequest",
    "SSLResponse",
    "GSSENCResponse",
    "PasswordMessage",
    "SASLInitialResponse",
    "SASLResponse",
    "Query",
    "CopyData",
    "CopyDone",
    "CopyFail",
    "Terminate",
    "Parse",
    "Bind",
    "Describe",
    "Execute",
    "Close",
    "Flush",
    "Sync",
    "AuthenticationOk",
    "AuthenticationCleartextPassword",
    "AuthenticationMD5Password",
    "AuthenticationSASL",
    "AuthenticationSASLContinue",
    "AuthenticationSASLFinal",
    "ParameterStatus",
    "BackendKeyData",
    "NegotiateProtocolVersion",
    "ReadyForQuery",
    "FieldDescription",
    "RowDescription",
    "DataRow",
    "CommandComplete",
    "EmptyQueryResponse",
    "ErrorResponse",
    "NoticeResponse",
    "CopyInResponse",
    "CopyOutResponse",
    "CopyBothResponse",
    "ParseComplete",
    "BindComplete",
    "CloseComplete",
    "ParameterDescription",
    "NoData",
    "PortalSuspended",
    "PROTOCOL_3_0",
    "PROTOCOL_3_2",
    "ERROR_FIELD_CODES",
    "MESSAGE_TYPES",
]

#: StartupMessage protocol versions: major in the high 16 bits, minor in the low 16.
PROTOCOL_3_0 = 3 << 16
PROTOCOL_3_2 = (3 << 16) | 2


class WireMessage:
    """Base of every frontend/backend message."""

    __slots__ = ()
    #: The message's Byte1 identifier; ``None`` for startup-phase messages.
    tag: ClassVar[str | None]
    #: Who sends it: ``"F"`` frontend, ``"B"`` backend, ``"FB"`` both.
    sender: ClassVar[str]


# =========================================================================================
# Startup phase (F, untagged)
# =========================================================================================


@dataclass(frozen=True, slots=True)
class CancelRequest(WireMessage):
    """Sent on a new connection instead of a StartupMessage, to cancel a running query."""

    tag: ClassVar[str | None] = None
    sender: ClassVar[str] = "F"
    process_id: int
    #: 4 bytes in protocol 3.0; 4 to 256 bytes in 3.2.
    secret_key: bytes


@dataclass(frozen=True, slots=True)
class GSSENCRequest(WireMessage):
    """Asks for GSSAPI encryption; the server answers one byte, 'G' or 'N'."""

    tag: ClassVar[str | None] = None
    sender: ClassVar[str] = "F"


@dataclass(frozen=True, slots=True)
class SSLRequest(WireMessage):
    """Asks for TLS; the server answers one byte, 'S' or 'N'."""

    tag: ClassVar[str | None] = None
    sender: ClassVar[str] = "F"


@dataclass(frozen=True, slots=True)
class StartupMessage(WireMessage):
    """The first message of a session: protocol version and connection parameters
    (``user``, ``database``, ``replication`` …) in the order the client sent them."""

    tag: ClassVar[str | None] = None
    sender: ClassVar[str] = "F"
    protocol_version: int = PROTOCOL_3_0
    parameters: tuple[tuple[str, str], ...] = ()

    @property
    def params(self) -> dict[str, str]:
        """The parameters as a dict (a repeated name: the last value wins)."""
        return dict(self.parameters)

    @property
    def major(self) -> int:
        return self.protocol_version >> 16

    @property
    def minor(self) -> int:
        return self.protocol_version & 0xFFFF


@dataclass(frozen=True, slots=True)
class SSLResponse(WireMessage):
    """The server's single-byte answer to SSLRequest: 'S' (go ahead with TLS) or 'N'.
    Not a framed message: one byte, no tag, no length."""

    tag: ClassVar[str | None] = None
    sender: ClassVar[str] = "B"
    accepted: bool


@dataclass(frozen=True, slots=True)
class GSSENCResponse(WireMessage):
    """The server's single-byte answer to GSSENCRequest: 'G' or 'N'."""

    tag: ClassVar[str | None] = None
    sender: ClassVar[str] = "B"
    accepted: bool


# =========================================================================================
# Frontend, tagged
# =========================================================================================


@dataclass(frozen=True, slots=True)
class CopyData(WireMessage):
    """'d' (both directions): in CopyBoth mode, one replication message (XLogData,
    keepalive, status update …; see :func:`pgwire_spec.decode_copy_data`)."""

    tag: ClassVar[str | None] = "d"
    sender: ClassVar[str] = "FB"
    data: bytes


@dataclass(frozen=True, slots=True)
class CopyDone(WireMessage):
    """'c' (both directions)."""

    tag: ClassVar[str | None] = "c"
    sender: ClassVar[str] = "FB"


@dataclass(frozen=True, slots=True)
class CopyFail(WireMessage):
    """'f'."""

    tag: ClassVar[str | None] = "f"
    sender: ClassVar[str] = "F"
    message: str


@dataclass(frozen=True, slots=True)
class PasswordMessage(WireMessage):
    """'p' in answer to AuthenticationCleartextPassword or AuthenticationMD5Password."""

    tag: ClassVar[str | None] = "p"
    sender: ClassVar[str] = "F"
    password: bytes


@dataclass(frozen=True, slots=True)
class Query(WireMessage):
    """'Q': a simple query (in a walsender, also a replication command)."""

    tag: ClassVar[str | None] = "Q"
    sender: ClassVar[str] = "F"
    sql: str


@dataclass(frozen=True, slots=True)
class SASLInitialResponse(WireMessage):
    """'p' in answer to AuthenticationSASL. ``data`` is None when the client sent no
    initial response (length -1)."""

    tag: ClassVar[str | None] = "p"
    sender: ClassVar[str] = "F"
    mechanism: str
    data: bytes | None


@dataclass(frozen=True, slots=True)
class SASLResponse(WireMessage):
    """'p' in answer to AuthenticationSASLContinue."""

    tag: ClassVar[str | None] = "p"
    sender: ClassVar[str] = "F"
    data: bytes


@dataclass(frozen=True, slots=True)
class Terminate(WireMessage):
    """'X'."""

    tag: ClassVar[str | None] = "X"
    sender: ClassVar[str] = "F"


# -- the extended query protocol (docs: "Extended Query") ---------------------------------


@dataclass(frozen=True, slots=True)
class Parse(WireMessage):
    """'P': prepare *sql* as *statement* ("" the unnamed statement); a type OID of 0 leaves
    that parameter's type to the server."""

    tag: ClassVar[str | None] = "P"
    sender: ClassVar[str] = "F"
    statement: str
    sql: str
    parameter_types: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Bind(WireMessage):
    """'B': make *portal* from *statement* with these parameter values (None: NULL). A
    format list holds no code (all text), one code for all, or one per item."""

    tag: ClassVar[str | None] = "B"
    sender: ClassVar[str] = "F"
    portal: str
    statement: str
    parameter_formats: tuple[int, ...] = ()
    parameters: tuple[bytes | None, ...] = ()
    result_formats: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Describe(WireMessage):
    """'D': describe a prepared statement (*kind* 'S') or a portal ('P')."""

    tag: ClassVar[str | None] = "D"
    sender: ClassVar[str] = "F"
    kind: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class Execute(WireMessage):
    """'E': run *portal*, at most *max_rows* rows (0: all)."""

    tag: ClassVar[str | None] = "E"
    sender: ClassVar[str] = "F"
    portal: str = ""
    max_rows: int = 0


@dataclass(frozen=True, slots=True)
class Close(WireMessage):
    """'C' (frontend): close a prepared statement (*kind* 'S') or a portal ('P')."""

    tag: ClassVar[str | None] = "C"
    sender: ClassVar[str] = "F"
    kind: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class Flush(WireMessage):
    """'H': send what is pending, without ending the extended-query cycle."""

    tag: ClassVar[str | None] = "H"
    sender: ClassVar[str] = "F"


@dataclass(frozen=True, slots=True)
class Sync(WireMessage):
    """'S' (frontend): end an extended-query cycle; the server answers ReadyForQuery."""

    tag: ClassVar[str | None] = "S"
    sender: ClassVar[str] = "F"


# =========================================================================================
# Backend, tagged
# =========================================================================================


@dataclass(frozen=True, slots=True)
class AuthenticationOk(WireMessage):
    """'R' code 0."""

    tag: ClassVar[str | None] = "R"
    sender: ClassVar[str] = "B"


@dataclass(frozen=True, slots=True)
class AuthenticationCleartextPassword(WireMessage):
    """'R' code 3."""

    tag: ClassVar[str | None] = "R"
    sender: ClassVar[str] = "B"


@dataclass(frozen=True, slots=True)
class AuthenticationMD5Password(WireMessage):
    """'R' code 5: the client answers ``"md5" + md5hex(md5hex(password + user) + salt)``."""

    tag: ClassVar[str | None] = "R"
    sender: ClassVar[str] = "B"
    #: Exactly 4 bytes.
    salt: bytes


@dataclass(frozen=True, slots=True)
class AuthenticationSASL(WireMessage):
    """'R' code 10: the SASL mechanisms the server offers, in its order of preference."""

    tag: ClassVar[str | None] = "R"
    sender: ClassVar[str] = "B"
    mechanisms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AuthenticationSASLContinue(WireMessage):
    """'R' code 11: a SASL challenge."""

    tag: ClassVar[str | None] = "R"
    sender: ClassVar[str] = "B"
    data: bytes


@dataclass(frozen=True, slots=True)
class AuthenticationSASLFinal(WireMessage):
    """'R' code 12: SASL outcome "additional data"."""

    tag: ClassVar[str | None] = "R"
    sender: ClassVar[str] = "B"
    data: bytes


@dataclass(frozen=True, slots=True)
class BackendKeyData(WireMessage):
    """'K': what a CancelRequest must quote."""

    tag: ClassVar[str | None] = "K"
    sender: ClassVar[str] = "B"
    process_id: int
    #: 4 bytes in protocol 3.0; 4 to 256 bytes in 3.2.
    secret_key: bytes


@dataclass(frozen=True, slots=True)
class CommandComplete(WireMessage):
    """'C': ``command_tag`` is the docs' "command tag" (``SELECT 1``, ``COPY 0``,
    ``IDENTIFY_SYSTEM``); the field is not called ``tag`` because ``tag`` is the message's
    Byte1 on every message class."""

    tag: ClassVar[str | None] = "C"
    sender: ClassVar[str] = "B"
    command_tag: str


@dataclass(frozen=True, slots=True)
class CopyInResponse(WireMessage):
    """'G': format 0 text / 1 binary, then one format code per column."""

    tag: ClassVar[str | None] = "G"
    sender: ClassVar[str] = "B"
    format: int
    column_formats: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CopyOutResponse(WireMessage):
    """'H'."""

    tag: ClassVar[str | None] = "H"
    sender: ClassVar[str] = "B"
    format: int
    column_formats: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CopyBothResponse(WireMessage):
    """'W': a walsender sends format 0 and no columns."""

    tag: ClassVar[str | None] = "W"
    sender: ClassVar[str] = "B"
    format: int = 0
    column_formats: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class DataRow(WireMessage):
    """'D': one value per column, as sent (text or binary); None for NULL."""

    tag: ClassVar[str | None] = "D"
    sender: ClassVar[str] = "B"
    values: tuple[bytes | None, ...]


@dataclass(frozen=True, slots=True)
class EmptyQueryResponse(WireMessage):
    """'I'."""

    tag: ClassVar[str | None] = "I"
    sender: ClassVar[str] = "B"


#: The docs' "Error and Notice Message Fields": keyword -> field code.
ERROR_FIELD_CODES: dict[str, str] = {
    "severity": "S",
    "severity_nonlocalized": "V",
    "code": "C",
    "message": "M",
    "detail": "D",
    "hint": "H",
    "position": "P",
    "internal_position": "p",
    "internal_query": "q",
    "where": "W",
    "schema_name": "s",
    "table_name": "t",
    "column_name": "c",
    "data_type_name": "d",
    "constraint_name": "n",
    "file": "F",
    "line": "L",
    "routine": "R",
}


class _Fields:
    """Properties of ErrorResponse and NoticeResponse over their (code, value) fields."""

    __slots__ = ()
    fields: tuple[tuple[str, str], ...]

    def get(self, code: str) -> str | None:
        """The value of field *code* (``'S'``, ``'C'``, ``'M'`` …), or None if absent."""
        for c, value in self.fields:
            if c == code:
                return value
        return None

    @property
    def severity(self) -> str | None:
        """'S': ERROR, FATAL, PANIC (errors) or WARNING, NOTICE, DEBUG, INFO, LOG (notices),
        possibly localized."""
        return self.get("S")

    @property
    def code(self) -> str | None:
        """'C': the SQLSTATE code."""
        return self.get("C")

    @property
    def message(self) -> str | None:
        """'M': the primary human-readable message."""
        return self.get("M")

    @property
    def detail(self) -> str | None:
        return self.get("D")

    @property
    def hint(self) -> str | None:
        return self.get("H")

    @classmethod
    def build(
        cls,
        severity: str,
        code: str,
        message: str,
        *,
        fields: Iterable[tuple[str, str]] = (),
        **extra: str,
    ) -> Self:
        """A message with fields in the order PostgreSQL writes them: S, V (the same
        severity, not localized), C, M, then the keyword fields (``detail``, ``hint``,
        ``position``, ``where``, ``schema_name`` … see :data:`ERROR_FIELD_CODES`), then any
        raw ``fields`` given as (code, value)."""
        if not (len(code) == 5 and code.isascii() and code.isalnum() and code.upper() == code):
            raise ValueError(f"expected a SQLSTATE of 5 digits or capital letters, found {code!r}")
        out: list[tuple[str, str]] = [("S", severity), ("V", severity), ("C", code), ("M", message)]
        for name, value in extra.items():
            try:
                out.append((ERROR_FIELD_CODES[name], value))
            except KeyError:
                raise ValueError(
                    f"expected a field among {', '.join(ERROR_FIELD_CODES)}, found {name!r}"
                ) from None
        out.extend((c, v) for c, v in fields)
        return cls(tuple(out))  # type: ignore[call-arg]  # the dataclass subclasses take fields


@dataclass(frozen=True, slots=True)
class ErrorResponse(_Fields, WireMessage):
    """'E': (code, value) fields in the order sent; see :meth:`build`."""

    tag: ClassVar[str | None] = "E"
    sender: ClassVar[str] = "B"
    fields: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class NoticeResponse(_Fields, WireMessage):
    """'N': same fields as ErrorResponse."""

    tag: ClassVar[str | None] = "N"
    sender: ClassVar[str] = "B"
    fields: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class NegotiateProtocolVersion(WireMessage):
    """'v': the newest version of the protocol's major the server supports, as the whole
    version number (``PROTOCOL_3_0``, ``PROTOCOL_3_2``: what servers send, see erratum
    E-NEGOTIATE-VERSION), and the ``_pq_.`` options it did not recognize."""

    tag: ClassVar[str | None] = "v"
    sender: ClassVar[str] = "B"
    newest_version: int
    unrecognized: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ParameterStatus(WireMessage):
    """'S': a run-time parameter (``server_version``, ``client_encoding`` …)."""

    tag: ClassVar[str | None] = "S"
    sender: ClassVar[str] = "B"
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class ReadyForQuery(WireMessage):
    """'Z': transaction status 'I' idle, 'T' in a transaction block, 'E' failed block."""

    tag: ClassVar[str | None] = "Z"
    sender: ClassVar[str] = "B"
    status: str = "I"


@dataclass(frozen=True, slots=True)
class FieldDescription:
    """One column of a RowDescription. The defaults describe a text column that is not a
    table's column (what a walsender sends for its replication commands' results)."""

    name: str
    table_oid: int = 0
    column_number: int = 0
    type_oid: int = 25
    type_size: int = -1
    type_modifier: int = -1
    format: int = 0


@dataclass(frozen=True, slots=True)
class RowDescription(WireMessage):
    """'T'."""

    tag: ClassVar[str | None] = "T"
    sender: ClassVar[str] = "B"
    fields: tuple[FieldDescription, ...]


@dataclass(frozen=True, slots=True)
class ParseComplete(WireMessage):
    """'1'."""

    tag: ClassVar[str | None] = "1"
    sender: ClassVar[str] = "B"


@dataclass(frozen=True, slots=True)
class BindComplete(WireMessage):
    """'2'."""

    tag: ClassVar[str | None] = "2"
    sender: ClassVar[str] = "B"


@dataclass(frozen=True, slots=True)
class CloseComplete(WireMessage):
    """'3'."""

    tag: ClassVar[str | None] = "3"
    sender: ClassVar[str] = "B"


@dataclass(frozen=True, slots=True)
class ParameterDescription(WireMessage):
    """'t': the type OID of each parameter of a described statement."""

    tag: ClassVar[str | None] = "t"
    sender: ClassVar[str] = "B"
    parameter_types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class NoData(WireMessage):
    """'n': the described statement or portal returns no rows."""

    tag: ClassVar[str | None] = "n"
    sender: ClassVar[str] = "B"


@dataclass(frozen=True, slots=True)
class PortalSuspended(WireMessage):
    """'s': an Execute's row limit was reached before the portal's end."""

    tag: ClassVar[str | None] = "s"
    sender: ClassVar[str] = "B"


#: Every message class by its name (the names of :data:`grammar.LAYOUTS`, plus the
#: single-byte answers SSLResponse and GSSENCResponse, which have no layout).
MESSAGE_TYPES: dict[str, type[WireMessage]] = {
    c.__name__: c
    for c in (
        CancelRequest, GSSENCRequest, SSLRequest, StartupMessage,
        CopyData, CopyDone, CopyFail, PasswordMessage, Query, SASLInitialResponse,
        SASLResponse, Terminate, Parse, Bind, Describe, Execute, Close, Flush, Sync,
        AuthenticationOk, AuthenticationCleartextPassword, AuthenticationMD5Password,
        AuthenticationSASL, AuthenticationSASLContinue, AuthenticationSASLFinal,
        BackendKeyData, CommandComplete, CopyInResponse, CopyOutResponse, CopyBothResponse,
        DataRow, EmptyQueryResponse, ErrorResponse, NegotiateProtocolVersion, NoticeResponse,
        ParameterStatus, ReadyForQuery, RowDescription, ParseComplete, BindComplete, CloseComplete,
        ParameterDescription, NoData, PortalSuspended,
        SSLResponse, GSSENCResponse,
    )
}
