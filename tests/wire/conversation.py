"""A realistic walsender conversation, after transcripts/pg_recvlogical-pg16.log (second
connection): SSLRequest refused, trust auth, pg_recvlogical's queries, IDENTIFY_SYSTEM,
START_REPLICATION in CopyBoth with keepalives, status updates and XLogData carrying
pgoutput Begin / Relation / Insert / Insert / Commit, then CopyDone both ways.

Also a SCRAM-shaped authentication (transcripts/subscriber-pg16.log: Auth 10, p, Auth 11,
p, Auth 12, Auth 0) for the 'p' context. Values are those of the transcript where it shows
them; the SCRAM payloads are made up (the transcript shows lengths only)."""

from __future__ import annotations

from pgwire_spec import (
    Begin,
    Commit,
    Insert,
    PrimaryKeepalive,
    Relation,
    RelationColumn,
    StandbyStatusUpdate,
    XLogData,
    encode,
)
from pgwire_spec.wire import (
    AuthenticationOk,
    AuthenticationSASL,
    AuthenticationSASLContinue,
    AuthenticationSASLFinal,
    BackendKeyData,
    CommandComplete,
    CopyBothResponse,
    CopyData,
    CopyDone,
    DataRow,
    FieldDescription,
    ParameterStatus,
    Query,
    ReadyForQuery,
    RowDescription,
    SASLInitialResponse,
    SASLResponse,
    SSLRequest,
    SSLResponse,
    StartupMessage,
    Terminate,
    WireMessage,
    encode_message,
)

_PARAMS = [
    ("in_hot_standby", "off"), ("integer_datetimes", "on"), ("TimeZone", "Etc/UTC"),
    ("IntervalStyle", "postgres"), ("is_superuser", "on"), ("application_name", "pg_recvlogical"),
    ("default_transaction_read_only", "off"), ("scram_iterations", "4096"), ("DateStyle", "ISO, MDY"),
    ("standard_conforming_strings", "on"), ("session_authorization", "postgres"),
    ("client_encoding", "UTF8"), ("server_version", "16.14"), ("server_encoding", "UTF8"),
]


def _text_row(*values: str | None) -> DataRow:
    return DataRow(tuple(None if v is None else v.encode() for v in values))


def _fields(*spec: tuple[str, int]) -> RowDescription:
    return RowDescription(tuple(
        FieldDescription(name, 0, 0, oid, 8 if oid == 20 else -1, -1, 0) for name, oid in spec))


def _w(start: int, message: object, send_time: int) -> CopyData:
    return CopyData(encode(XLogData(start, start, send_time, encode(message))))


_T0 = 848632890837554
_REL = Relation(None, 16384, "public", "accounts", "d", (
    RelationColumn(1, "id", 23, -1), RelationColumn(0, "owner", 25, -1), RelationColumn(0, "balance", 1700, -1)))

#: (sender, message) in the order they cross the wire.
CONVERSATION: list[tuple[str, WireMessage]] = [
    ("F", SSLRequest()),
    ("B", SSLResponse(False)),
    ("F", StartupMessage(parameters=(("user", "postgres"), ("database", "postgres"),
                                     ("replication", "database"), ("application_name", "pg_recvlogical")))),
    ("B", AuthenticationOk()),
    *[("B", ParameterStatus(n, v)) for n, v in _PARAMS],
    ("B", BackendKeyData(2817, b"\x5c\x1e\x0f\x93")),
    ("B", ReadyForQuery("I")),
    ("F", Query("SELECT pg_catalog.set_config('search_path', '', false);")),
    ("B", _fields(("set_config", 25))),
    ("B", _text_row("")),
    ("B", CommandComplete("SELECT 1")),
    ("B", ReadyForQuery("I")),
    ("F", Query("SHOW data_directory_mode")),
    ("B", _fields(("data_directory_mode", 25))),
    ("B", _text_row("0700")),
    ("B", CommandComplete("SHOW")),
    ("B", ReadyForQuery("I")),
    ("F", Query("IDENTIFY_SYSTEM")),
    ("B", _fields(("systemid", 25), ("timeline", 20), ("xlogpos", 25), ("dbname", 25))),
    ("B", _text_row("7710830759764053181", "1", "0/1506150", "postgres")),
    ("B", CommandComplete("IDENTIFY_SYSTEM")),
    ("B", ReadyForQuery("I")),
    ("F", Query('START_REPLICATION SLOT "rl" LOGICAL 0/0 ("proto_version" \'1\', "publication_names" \'pub\')')),
    ("B", CopyBothResponse(0, ())),
    ("B", CopyData(encode(PrimaryKeepalive(22044584, _T0, False)))),
    ("F", CopyData(encode(StandbyStatusUpdate(0, 0, 0, _T0 + 88, False)))),
    ("B", _w(0x1505FA8, Begin(0x1506150, _T0 - 1000, 741), _T0 + 300)),
    ("B", _w(0, _REL, _T0 + 301)),
    ("B", _w(0x1505FA8, Insert(None, 16384, ("4", "dave", "12.50")), _T0 + 302)),
    ("B", _w(0x15060A0, Insert(None, 16384, ("5", None, "0")), _T0 + 303)),
    ("B", _w(0x1506150, Commit(0, 0x1506150, 0x1506180, _T0 - 1000), _T0 + 304)),
    ("B", CopyData(encode(PrimaryKeepalive(22045008, _T0 + 481, False)))),
    ("F", CopyData(encode(StandbyStatusUpdate(22045008, 22045008, 0, _T0 + 688, False)))),
    ("F", CopyDone()),
    ("B", CopyDone()),
    ("B", CommandComplete("COPY 0")),
    ("B", CommandComplete("START_REPLICATION")),
    ("B", ReadyForQuery("I")),
    ("F", Terminate()),
]

#: What a server reads from this client, and what this client reads from the server.
FRONTEND_MESSAGES = [m for who, m in CONVERSATION if who == "F"]
BACKEND_MESSAGES = [m for who, m in CONVERSATION if who == "B"]
FRONTEND_BYTES = b"".join(encode_message(m) for m in FRONTEND_MESSAGES)
BACKEND_BYTES = b"".join(encode_message(m) for m in BACKEND_MESSAGES)

#: SCRAM-shaped authentication: the server must announce each 'p' before reading it.
SCRAM_FRONTEND = [
    StartupMessage(parameters=(("user", "replicator"), ("database", "postgres"), ("replication", "database"))),
    SASLInitialResponse("SCRAM-SHA-256", b"n,,n=,r=" + b"A" * 24),
    SASLResponse(b"c=biws,r=" + b"A" * 24 + b"B" * 24 + b",p=" + b"C" * 44),
    Query("IDENTIFY_SYSTEM"),
    Terminate(),
]
SCRAM_BACKEND = [
    AuthenticationSASL(("SCRAM-SHA-256",)),
    AuthenticationSASLContinue(b"r=" + b"A" * 24 + b"B" * 24 + b",s=c2FsdHNhbHRzYWx0,i=4096"),
    AuthenticationSASLFinal(b"v=" + b"D" * 44),
    AuthenticationOk(),
    ReadyForQuery("I"),
]
