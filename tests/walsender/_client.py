"""Test helpers: a sans-IO client driving a fake walsender Connection, and a reader of the
reference transcripts (tests/walsender/data/transcripts)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgwire_spec.replication.messages import StandbyStatusUpdate, decode_copy_data, encode_copy_data
from pgwire_spec.walsender import Close, Compute, Send, ServerState, Wait
from pgwire_spec.wire import (
    PROTOCOL_3_0,
    BackendReader,
    CopyData,
    CopyDone,
    PasswordMessage,
    Query,
    ReadyForQuery,
    StartupMessage,
    Terminate,
    encode_message,
)

TRANSCRIPTS = Path(__file__).parent / "data" / "transcripts"


class Client:
    """Feeds a Connection frontend messages and collects what it answers, without sockets.

    ``clock`` is the time passed to ``next_action`` (advance it to reach keepalives and
    time-triggered faults); *peer* and *port* the client's address as a driver passes it
    (port None: not over TCP)."""

    def __init__(self, state: ServerState, clock: float = 1000.0, peer: str = "127.0.0.1",
                 port: int | None = None) -> None:
        self.state = state
        self.conn = state.connect(peer, port)
        self.reader = BackendReader()
        self.clock = clock
        self.closed: Close | None = None
        self.waits: list[Wait] = []
        self.computes: list[Compute] = []
        self.raw = b""

    def send(self, *messages: Any) -> None:
        for m in messages:
            self.conn.receive_data(m if isinstance(m, bytes) else encode_message(m))

    def pump(self, max_actions: int = 100000) -> list[Any]:
        """Run the connection until it waits or closes; return the messages it sent."""
        out: list[Any] = []
        for _ in range(max_actions):
            action = self.conn.next_action(self.clock)
            if isinstance(action, Send):
                self.raw += action.data
                if self.expect_byte_answer and action.data[:1] in (b"N", b"S", b"G") and len(action.data) == 1:
                    out.append(action.data.decode())
                    self.expect_byte_answer = False
                    continue
                self.reader.feed(action.data)
                out.extend(self.reader)
            elif isinstance(action, Wait):
                self.waits.append(action)
                return out
            elif isinstance(action, Compute):
                # Run inline, as a shell without threads may; ``computes`` counts them.
                self.computes.append(action)
                self.conn.computed(action.work(lambda: self.timed_out))
            else:
                assert isinstance(action, Close)
                self.closed = action
                return out
        raise AssertionError("the connection never waited")

    expect_byte_answer = False
    #: What a Compute's work is told when it asks whether its time is up.
    timed_out = False

    def startup(self, user: str = "postgres", *, replication: str | None = "database", database: str = "postgres",
                password: str | None = None, protocol: int = PROTOCOL_3_0, **params: str) -> list[Any]:
        p = {"user": user, "database": database, **params}
        if replication is not None:
            p["replication"] = replication
        self.send(StartupMessage(protocol, tuple(p.items())))
        out = self.pump()
        if password is not None:
            self.send(PasswordMessage(password.encode() + b"\x00"))
            out += self.pump()
        return out

    def query(self, sql: str) -> list[Any]:
        self.send(Query(sql))
        return self.pump()

    def status(self, write: int, flush: int, apply: int = 0, reply: bool = False) -> list[Any]:
        self.send(CopyData(encode_copy_data(StandbyStatusUpdate(write, flush, apply, 0, reply))))
        return self.pump()

    def copy_done(self) -> list[Any]:
        self.send(CopyDone())
        return self.pump()

    def terminate(self) -> list[Any]:
        self.send(Terminate())
        return self.pump()


def xlog(messages: list[Any]) -> list[Any]:
    """The decoded replication payloads of the CopyData among *messages*."""
    return [decode_copy_data(m.data) for m in messages if isinstance(m, CopyData)]


def ready(messages: list[Any]) -> bool:
    return any(isinstance(m, ReadyForQuery) for m in messages)


# ------------------------------------------------------------------------------------------
# Reference transcripts
# ------------------------------------------------------------------------------------------

_LINE = re.compile(r"^\[(\d+)\] ([FB]) (\S+)(?: (.*))?$")
#: The sql of an Exchange that stands for the client's Terminate.
CLOSE = "<Terminate>"


@dataclass
class Exchange:
    """One Query of a transcript and the server's answer up to ReadyForQuery."""

    connection: int
    sql: str
    answer: list[tuple[str, Any]] = field(default_factory=list)


def transcript_exchanges(name: str) -> list[Exchange]:
    """Every Query of a transcript file with the backend messages that answered it, in the
    transcript's notation: ('RowDescription', ['set_config:25']), ('DataRow', ['']),
    ('CommandComplete', 'SELECT 1'), ('ReadyForQuery', 'I') …"""
    open_q: dict[int, Exchange] = {}
    out: list[Exchange] = []
    for line in (TRANSCRIPTS / name).read_text().splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        conn, direction, kind, rest = int(m.group(1)), m.group(2), m.group(3), m.group(4) or ""
        if direction == "F" and kind == "X":
            out.append(Exchange(conn, CLOSE))
            continue
        if direction == "F" and kind == "Query":
            ex = Exchange(conn, ast.literal_eval(rest))
            open_q[conn] = ex
            out.append(ex)
            continue
        ex = open_q.get(conn)
        if ex is None or direction != "B":
            continue
        if kind in ("RowDescription", "DataRow"):
            ex.answer.append((kind, ast.literal_eval(rest)))
        elif kind == "CommandComplete":
            ex.answer.append((kind, ast.literal_eval(rest)))
        elif kind == "ReadyForQuery":
            ex.answer.append((kind, rest))
            del open_q[conn]
        elif kind == "ParameterStatus":
            ex.answer.append((kind, rest))
        elif kind in ("W", "H", "c"):
            ex.answer.append((kind, None))
    return out


def notation(messages: list[Any]) -> list[tuple[str, Any]]:
    """Our messages in the transcripts' notation (CopyData left out)."""
    out: list[tuple[str, Any]] = []
    for m in messages:
        name = type(m).__name__
        if name == "RowDescription":
            out.append((name, [f"{f.name}:{f.type_oid}" for f in m.fields]))
        elif name == "DataRow":
            out.append((name, [None if v is None else v.decode() for v in m.values]))
        elif name == "CommandComplete":
            out.append((name, m.command_tag))
        elif name == "ReadyForQuery":
            out.append((name, m.status))
        elif name == "ParameterStatus":
            out.append((name, f"{m.name}={m.value}"))
        elif name == "CopyBothResponse":
            out.append(("W", None))
        elif name == "CopyOutResponse":
            out.append(("H", None))
        elif name == "CopyDone":
            out.append(("c", None))
        elif name == "ErrorResponse":
            out.append((name, f"{m.code} {m.message}"))
    return out
