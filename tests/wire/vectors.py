"""Hand-built v3 vectors: whole framed messages assembled with struct.pack straight from the
docs' "Message Formats" (not with our encoder), each with the message object it must
decode to, who sends it, and for 'p' how the server must read it."""

from __future__ import annotations

from dataclasses import dataclass

from pgwire_spec.wire import (
    AuthenticationCleartextPassword,
    AuthenticationMD5Password,
    AuthenticationOk,
    AuthenticationSASL,
    AuthenticationSASLContinue,
    AuthenticationSASLFinal,
    BackendKeyData,
    Bind,
    BindComplete,
    CancelRequest,
    Close,
    CloseComplete,
    CommandComplete,
    CopyBothResponse,
    CopyData,
    CopyDone,
    CopyFail,
    CopyInResponse,
    CopyOutResponse,
    DataRow,
    Describe,
    EmptyQueryResponse,
    ErrorResponse,
    Execute,
    FieldDescription,
    Flush,
    GSSENCRequest,
    NegotiateProtocolVersion,
    NoData,
    NoticeResponse,
    ParameterDescription,
    ParameterStatus,
    Parse,
    ParseComplete,
    PasswordMessage,
    PortalSuspended,
    Query,
    ReadyForQuery,
    RowDescription,
    SASLInitialResponse,
    SASLResponse,
    SSLRequest,
    StartupMessage,
    Sync,
    Terminate,
    WireMessage,
)
from tests._bytes import i8, i16, i32, s, u16, u32  # noqa: F401


def tagged(tag: str, body: bytes) -> bytes:
    """Byte1 tag, Int32 length counting itself, contents."""
    return tag.encode() + i32(len(body) + 4) + body


def untagged(body: bytes) -> bytes:
    return i32(len(body) + 4) + body


@dataclass(frozen=True)
class Vector:
    name: str
    message: WireMessage
    data: bytes
    sender: str  # "frontend" | "backend"
    password: str = "password"  # how a 'p' message is read
    #: True when the contents end with "the rest of the message" (a shorter body is valid).
    open_ended: bool = False

    @property
    def header(self) -> int:
        """Bytes of framing before the contents."""
        return 4 if self.message.tag is None else 5

    @property
    def body(self) -> bytes:
        return self.data[self.header:]


_ROW_FIELDS = (
    FieldDescription("systemid", 0, 0, 25, -1, -1, 0),
    FieldDescription("timeline", 0, 0, 20, 8, -1, 0),
    FieldDescription("xlogpos", 0, 0, 25, -1, -1, 0),
    FieldDescription("dbname", 0, 0, 25, -1, -1, 0),
)


def _field_bytes(f: FieldDescription) -> bytes:
    return (s(f.name) + u32(f.table_oid) + i16(f.column_number) + u32(f.type_oid) + i16(f.type_size)
            + i32(f.type_modifier) + i16(f.format))


VECTORS: list[Vector] = [
    # -- startup phase ----------------------------------------------------------------------
    Vector(
        "startup-replication",
        StartupMessage(196608, (("user", "postgres"), ("database", "postgres"),
                                ("replication", "database"), ("application_name", "pg_recvlogical"))),
        untagged(i32(196608) + s("user") + s("postgres") + s("database") + s("postgres")
                 + s("replication") + s("database") + s("application_name") + s("pg_recvlogical") + b"\x00"),
        "frontend",
    ),
    Vector("startup-3.2-empty", StartupMessage(196610, ()), untagged(i32(196610) + b"\x00"), "frontend"),
    Vector("ssl-request", SSLRequest(), untagged(i32(80877103)), "frontend"),
    Vector("gssenc-request", GSSENCRequest(), untagged(i32(80877104)), "frontend"),
    Vector("cancel-3.0", CancelRequest(4242, b"\x12\x34\x56\x78"),
           untagged(i32(80877102) + i32(4242) + b"\x12\x34\x56\x78"), "frontend", open_ended=True),
    Vector("cancel-3.2-long-key", CancelRequest(7, bytes(range(32))),
           untagged(i32(80877102) + i32(7) + bytes(range(32))), "frontend", open_ended=True),
    # -- frontend, tagged ---------------------------------------------------------------------
    Vector("password-md5", PasswordMessage(b"md5" + b"0123456789abcdef" * 2),
           tagged("p", s("md5" + "0123456789abcdef" * 2)), "frontend"),
    Vector("password-latin1", PasswordMessage(b"caf\xe9"), tagged("p", b"caf\xe9\x00"), "frontend"),
    Vector("sasl-initial", SASLInitialResponse("SCRAM-SHA-256", b"n,,n=,r=rOprNGfwEbeRWgbNEkqO"),
           tagged("p", s("SCRAM-SHA-256") + i32(28) + b"n,,n=,r=rOprNGfwEbeRWgbNEkqO"), "frontend",
           password="sasl-initial"),
    Vector("sasl-initial-none", SASLInitialResponse("SCRAM-SHA-256", None),
           tagged("p", s("SCRAM-SHA-256") + i32(-1)), "frontend", password="sasl-initial"),
    Vector("sasl-initial-empty", SASLInitialResponse("X", b""),
           tagged("p", s("X") + i32(0)), "frontend", password="sasl-initial"),
    Vector("sasl-response", SASLResponse(b"c=biws,r=abc,p=xyz="),
           tagged("p", b"c=biws,r=abc,p=xyz="), "frontend", password="sasl-response", open_ended=True),
    Vector("query", Query("IDENTIFY_SYSTEM"), tagged("Q", s("IDENTIFY_SYSTEM")), "frontend"),
    Vector("query-utf8", Query("SELECT 'é'"), tagged("Q", s("SELECT 'é'")), "frontend"),
    Vector("query-not-utf8", Query(b"SELECT '\xe9'".decode("utf-8", "surrogateescape")),
           tagged("Q", b"SELECT '\xe9'\x00"), "frontend"),
    Vector("copy-data-f", CopyData(b"r" + bytes(33)), tagged("d", b"r" + bytes(33)), "frontend",
           open_ended=True),
    Vector("copy-done-f", CopyDone(), tagged("c", b""), "frontend"),
    Vector("copy-fail", CopyFail("client gave up"), tagged("f", s("client gave up")), "frontend"),
    Vector("terminate", Terminate(), tagged("X", b""), "frontend"),
    # the extended query protocol (what pgjdbc sends for a PreparedStatement)
    Vector("parse", Parse("S_1", "SELECT $1::int4", (23,)), tagged("P", s("S_1") + s("SELECT $1::int4") + i16(1)
                                                                     + u32(23)), "frontend"),
    Vector("parse-unnamed-untyped", Parse("", "SELECT 1"), tagged("P", s("") + s("SELECT 1") + i16(0)), "frontend"),
    Vector("bind", Bind("", "S_1", (1,), (b"\x00\x00\x00\x07", None), (0, 1)),
           tagged("B", s("") + s("S_1") + i16(1) + i16(1) + i16(2) + i32(4) + b"\x00\x00\x00\x07" + i32(-1)
                  + i16(2) + i16(0) + i16(1)), "frontend"),
    Vector("describe-portal", Describe("P", ""), tagged("D", b"P" + s("")), "frontend"),
    Vector("describe-statement", Describe("S", "S_1"), tagged("D", b"S" + s("S_1")), "frontend"),
    Vector("execute", Execute("", 10), tagged("E", s("") + i32(10)), "frontend"),
    Vector("close-statement", Close("S", "S_1"), tagged("C", b"S" + s("S_1")), "frontend"),
    Vector("flush", Flush(), tagged("H", b""), "frontend"),
    Vector("sync", Sync(), tagged("S", b""), "frontend"),
    # -- backend -----------------------------------------------------------------------------
    Vector("auth-ok", AuthenticationOk(), tagged("R", i32(0)), "backend"),
    Vector("parse-complete", ParseComplete(), tagged("1", b""), "backend"),
    Vector("bind-complete", BindComplete(), tagged("2", b""), "backend"),
    Vector("close-complete", CloseComplete(), tagged("3", b""), "backend"),
    Vector("parameter-description", ParameterDescription((25, 23)), tagged("t", i16(2) + u32(25) + u32(23)), "backend"),
    Vector("no-data", NoData(), tagged("n", b""), "backend"),
    Vector("portal-suspended", PortalSuspended(), tagged("s", b""), "backend"),
    Vector("auth-cleartext", AuthenticationCleartextPassword(), tagged("R", i32(3)), "backend"),
    Vector("auth-md5", AuthenticationMD5Password(b"\x01\x02\xfe\xff"),
           tagged("R", i32(5) + b"\x01\x02\xfe\xff"), "backend"),
    Vector("auth-sasl", AuthenticationSASL(("SCRAM-SHA-256-PLUS", "SCRAM-SHA-256")),
           tagged("R", i32(10) + s("SCRAM-SHA-256-PLUS") + s("SCRAM-SHA-256") + b"\x00"), "backend"),
    Vector("auth-sasl-continue", AuthenticationSASLContinue(b"r=abc,s=c2FsdA==,i=4096"),
           tagged("R", i32(11) + b"r=abc,s=c2FsdA==,i=4096"), "backend", open_ended=True),
    Vector("auth-sasl-final", AuthenticationSASLFinal(b"v=c2lnbmF0dXJl"),
           tagged("R", i32(12) + b"v=c2lnbmF0dXJl"), "backend", open_ended=True),
    Vector("backend-key-3.0", BackendKeyData(31337, b"\xde\xad\xbe\xef"),
           tagged("K", i32(31337) + b"\xde\xad\xbe\xef"), "backend", open_ended=True),
    Vector("backend-key-3.2", BackendKeyData(1, bytes(range(32))),
           tagged("K", i32(1) + bytes(range(32))), "backend", open_ended=True),
    Vector("command-complete", CommandComplete("IDENTIFY_SYSTEM"), tagged("C", s("IDENTIFY_SYSTEM")), "backend"),
    Vector("copy-data-b", CopyData(b"k" + bytes(17)), tagged("d", b"k" + bytes(17)), "backend", open_ended=True),
    Vector("copy-done-b", CopyDone(), tagged("c", b""), "backend"),
    Vector("copy-in", CopyInResponse(1, (1, 1)), tagged("G", i8(1) + i16(2) + i16(1) + i16(1)), "backend"),
    Vector("copy-out", CopyOutResponse(0, (0, 0, 0)),
           tagged("H", i8(0) + i16(3) + i16(0) + i16(0) + i16(0)), "backend"),
    Vector("copy-both", CopyBothResponse(0, ()), tagged("W", i8(0) + i16(0)), "backend"),
    Vector("data-row", DataRow((b"7710830759764053181", b"1", b"0/1505F70", None, b"")),
           tagged("D", i16(5) + i32(19) + b"7710830759764053181" + i32(1) + b"1" + i32(9) + b"0/1505F70"
                  + i32(-1) + i32(0)), "backend"),
    Vector("data-row-empty", DataRow(()), tagged("D", i16(0)), "backend"),
    Vector("empty-query", EmptyQueryResponse(), tagged("I", b""), "backend"),
    Vector("error",
           ErrorResponse((("S", "ERROR"), ("V", "ERROR"), ("C", "42704"),
                          ("M", 'replication slot "rl" does not exist'), ("F", "slot.c"), ("L", "507"),
                          ("R", "ReplicationSlotAcquire"))),
           tagged("E", b"SERROR\x00VERROR\x00C42704\x00" + s('Mreplication slot "rl" does not exist')
                  + s("Fslot.c") + s("L507") + s("RReplicationSlotAcquire") + b"\x00"), "backend"),
    Vector("notice", NoticeResponse((("S", "WARNING"), ("C", "01000"), ("M", "skipped"))),
           tagged("N", s("SWARNING") + s("C01000") + s("Mskipped") + b"\x00"), "backend"),
    Vector("negotiate", NegotiateProtocolVersion(196608, ("_pq_.test",)),
           tagged("v", i32(196608) + i32(1) + s("_pq_.test")), "backend"),
    Vector("negotiate-3.2", NegotiateProtocolVersion(196610, ()), tagged("v", i32(196610) + i32(0)), "backend"),
    Vector("parameter-status", ParameterStatus("server_version", "15.8 (Debian 15.8-1)"),
           tagged("S", s("server_version") + s("15.8 (Debian 15.8-1)")), "backend"),
    Vector("ready-idle", ReadyForQuery("I"), tagged("Z", b"I"), "backend"),
    Vector("ready-failed", ReadyForQuery("E"), tagged("Z", b"E"), "backend"),
    Vector("row-description", RowDescription(_ROW_FIELDS),
           tagged("T", i16(4) + b"".join(_field_bytes(f) for f in _ROW_FIELDS)), "backend"),
    Vector("row-description-table-column",
           RowDescription((FieldDescription("a", 16384, -2, 23, 4, -1, 1),)),
           tagged("T", i16(1) + s("a") + u32(16384) + i16(-2) + u32(23) + i16(4) + i32(-1) + i16(1)),
           "backend"),
]
