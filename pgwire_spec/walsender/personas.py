"""Server personas: what a PostgreSQL walsender of each major (10 … 18) accepts and answers.

One table per major, in one place: the replication commands and their options, the pgoutput
options and protocol versions (pgoutput.c, parse_output_parameters), the shapes of results (IDENTIFY_SYSTEM's
timeline is int4 before 16 and int8 from 16), the ParameterStatus set sent at startup, and
the errors — with the SQLSTATE and the message text a real server gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import PgWireError

__all__ = ["Persona", "persona", "PERSONAS", "ServerError", "StreamOptions"]


class ServerError(PgWireError):
    """An error the fake server reports to its client as an ErrorResponse (or a
    NoticeResponse when ``severity`` is WARNING/NOTICE)."""

    def __init__(self, sqlstate: str, message: str, *, severity: str = "ERROR",
                 detail: str | None = None, hint: str | None = None) -> None:
        self.sqlstate = sqlstate
        self.message = message
        self.severity = severity
        self.detail = detail
        self.hint = hint
        super().__init__(f"{severity} {sqlstate}: {message}")

    def fields(self) -> tuple[tuple[str, str], ...]:
        """ErrorResponse/NoticeResponse fields in the order a real server writes them."""
        out = [("S", self.severity), ("V", self.severity), ("C", self.sqlstate), ("M", self.message)]
        if self.detail:
            out.append(("D", self.detail))
        if self.hint:
            out.append(("H", self.hint))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """The pgoutput options a client negotiated with START_REPLICATION."""

    proto_version: int
    publication_names: tuple[str, ...]
    streaming: str = "off"  # off | on | parallel
    two_phase: bool = False
    binary: bool = False
    messages: bool = False
    origin: str = "any"  # any | none

    def decoder_options(self) -> dict[str, Any]:
        """Keyword arguments for :class:`pgwire_spec.PgOutputDecoder` reading this stream."""
        return {"protocol_version": self.proto_version, "streaming": self.streaming,
                "two_phase": self.two_phase, "binary": self.binary, "messages": self.messages}


@dataclass(frozen=True, slots=True)
class Persona:
    major: int
    #: Highest pgoutput protocol version (LOGICALREP_PROTO_MAX_VERSION_NUM).
    max_proto: int
    #: pgoutput options accepted.
    options: frozenset[str]
    #: CREATE_REPLICATION_SLOT … (options) syntax (15+); older: keywords.
    new_slot_syntax: bool
    #: Commands this major's replication grammar knows.
    commands: frozenset[str]
    #: IDENTIFY_SYSTEM timeline column type: 23 int4 (< 16) or 20 int8.
    timeline_type: int
    #: Begin/Commit of transactions with nothing published are sent (< 15).
    sends_empty_transactions: bool
    #: A missing publication is an ERROR (< 18) or a WARNING (18).
    missing_publication_is_error: bool
    #: pgoutput has a Truncate callback (11+).
    truncate: bool
    #: Error text of a missing required option: 'proto_version option missing' (< 17) or
    #: 'option "proto_version" missing' (17+).
    new_missing_option_text: bool
    #: CREATE_REPLICATION_SLOT options: TWO_PHASE (14+), FAILOVER (17+).
    slot_options: frozenset[str]

    def parameter_status(self, *, version: str, user: str, application_name: str,
                         client_encoding: str, server_encoding: str) -> list[tuple[str, str]]:
        """The ParameterStatus messages after AuthenticationOk, in the server's order."""
        values = {
            "application_name": application_name,
            "client_encoding": client_encoding,
            "DateStyle": "ISO, MDY",
            "default_transaction_read_only": "off",
            "in_hot_standby": "off",
            "integer_datetimes": "on",
            "IntervalStyle": "postgres",
            "is_superuser": "on",
            "scram_iterations": "4096",
            "search_path": '"$user", public',
            "server_encoding": server_encoding,
            "server_version": version,
            "session_authorization": user,
            "standard_conforming_strings": "on",
            "TimeZone": "Etc/UTC",
        }
        return [(name, values[name]) for name in _PARAMETER_ORDER[self._order_key]]

    @property
    def _order_key(self) -> int:
        return 18 if self.major >= 18 else 16 if self.major >= 16 else 14 if self.major >= 14 else 10

    # -- pgoutput options ------------------------------------------------------------------
    def parse_options(self, options: list[tuple[str, str | None]]) -> StreamOptions:
        """Validate START_REPLICATION's options as this major's pgoutput does (its
        parse_output_parameters and pgoutput_startup), raising ServerError as it would."""
        seen: set[str] = set()
        proto: int | None = None
        pubs: tuple[str, ...] | None = None
        streaming, two_phase, binary, messages, origin = "off", False, False, False, "any"
        for name, value in options:
            if name not in self.options:
                # elog(ERROR): no SQLSTATE of its own, so XX000.
                raise ServerError("XX000", f"unrecognized pgoutput option: {name}")
            if name in seen:
                raise ServerError("42601", "conflicting or redundant options")
            seen.add(name)
            if name == "proto_version":
                text = value or ""
                if not text.isdigit():
                    raise ServerError("22023", "invalid proto_version")
                if int(text) > 0xFFFFFFFF:
                    raise ServerError("22023", f'proto_version "{text}" out of range')
                proto = int(text)
            elif name == "publication_names":
                parsed = split_identifiers(value or "")
                if parsed is None:
                    raise ServerError("42602", "invalid publication_names syntax")
                pubs = tuple(parsed)
            elif name == "streaming":
                if self.major >= 16 and (value or "").lower() == "parallel":
                    streaming = "parallel"
                else:
                    streaming = "on" if _bool_option(name, value) else "off"
            elif name == "two_phase":
                two_phase = _bool_option(name, value)
            elif name == "binary":
                binary = _bool_option(name, value)
            elif name == "messages":
                messages = _bool_option(name, value)
            elif name == "origin":
                low = (value or "").lower()
                if low not in ("none", "any"):
                    raise ServerError("22023", f'unrecognized origin value: "{value}"')
                origin = low
        for required, have in (("proto_version", proto is not None), ("publication_names", pubs is not None)):
            if not have:
                text = f'option "{required}" missing' if self.new_missing_option_text else f"{required} option missing"
                raise ServerError("22023", text)
        assert proto is not None and pubs is not None
        if proto > self.max_proto:
            raise ServerError("0A000", f"client sent proto_version={proto} but server only supports "
                                       f"protocol {self.max_proto} or lower")
        if proto < 1:
            raise ServerError("0A000", f"client sent proto_version={proto} but server only supports "
                                       "protocol 1 or higher")
        if streaming == "on" and proto < 2:
            raise ServerError("22023", f"requested proto_version={proto} does not support streaming, need 2 or higher")
        if streaming == "parallel" and proto < 4:
            raise ServerError("22023", f"requested proto_version={proto} does not support parallel streaming, "
                                       "need 4 or higher")
        if two_phase and proto < 3:
            raise ServerError("22023", f"requested proto_version={proto} does not support two-phase commit, "
                                       "need 3 or higher")
        return StreamOptions(proto, pubs, streaming, two_phase, binary, messages, origin)


def _bool_option(name: str, value: str | None) -> bool:
    """defGetBoolean: true/false/on/off/1/0 (and a missing value means true)."""
    if value is None:
        return True
    low = value.lower()
    if low in ("true", "on", "1", "t", "yes", "y"):
        return True
    if low in ("false", "off", "0", "f", "no", "n"):
        return False
    raise ServerError("42601", f"{name} requires a Boolean value")


def split_identifiers(text: str) -> list[str] | None:
    """SplitIdentifierString(text, ','): comma-separated identifiers, double quotes keep
    case and commas, unquoted ones are lower-cased; None when the syntax is wrong."""
    out: list[str] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i < n and text[i] == '"':
            j = i + 1
            buf = []
            while True:
                k = text.find('"', j)
                if k < 0:
                    return None
                buf.append(text[j:k])
                if k + 1 < n and text[k + 1] == '"':
                    buf.append('"')
                    j = k + 2
                    continue
                i = k + 1
                break
            name = "".join(buf)
            if not name:
                return None
        else:
            j = i
            while i < n and text[i] != "," and not text[i].isspace():
                i += 1
            name = text[j:i].lower()
            if not name:
                return None
        out.append(name)
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return out
        if text[i] != ",":
            return None
        i += 1


_PARAMETER_ORDER: dict[int, tuple[str, ...]] = {
    # 10-13: alphabetical (the GUC_REPORT variables in guc.c order), seen on 10-13.
    10: ("application_name", "client_encoding", "DateStyle", "integer_datetimes", "IntervalStyle",
         "is_superuser", "server_encoding", "server_version", "session_authorization",
         "standard_conforming_strings", "TimeZone"),
    # 14-15: + default_transaction_read_only, in_hot_standby (seen: transcripts 14, 15).
    14: ("application_name", "client_encoding", "DateStyle", "default_transaction_read_only",
         "in_hot_standby", "integer_datetimes", "IntervalStyle", "is_superuser", "server_encoding",
         "server_version", "session_authorization", "standard_conforming_strings", "TimeZone"),
    # 16-17: hash order, + scram_iterations (seen: transcripts 16, 17).
    16: ("in_hot_standby", "integer_datetimes", "TimeZone", "IntervalStyle", "is_superuser",
         "application_name", "default_transaction_read_only", "scram_iterations", "DateStyle",
         "standard_conforming_strings", "session_authorization", "client_encoding", "server_version",
         "server_encoding"),
    # 18: + search_path (seen: transcript 18).
    18: ("in_hot_standby", "integer_datetimes", "TimeZone", "IntervalStyle", "search_path", "is_superuser",
         "application_name", "default_transaction_read_only", "scram_iterations", "DateStyle",
         "standard_conforming_strings", "session_authorization", "client_encoding", "server_version",
         "server_encoding"),
}

_BASE_COMMANDS = frozenset({"IDENTIFY_SYSTEM", "SHOW", "TIMELINE_HISTORY", "CREATE_REPLICATION_SLOT",
                            "DROP_REPLICATION_SLOT", "START_REPLICATION", "BASE_BACKUP"})


def _make(major: int) -> Persona:
    options = {"proto_version", "publication_names"}
    if major >= 14:
        options |= {"binary", "messages", "streaming"}
    if major >= 15:
        options.add("two_phase")
    if major >= 16:
        options.add("origin")
    commands = set(_BASE_COMMANDS)
    if major >= 15:
        commands.add("READ_REPLICATION_SLOT")
    if major >= 17:
        commands.add("ALTER_REPLICATION_SLOT")
    slot_options = {"TEMPORARY", "SNAPSHOT", "RESERVE_WAL"}
    if major >= 14:
        slot_options.add("TWO_PHASE")
    if major >= 17:
        slot_options.add("FAILOVER")
    return Persona(
        major=major,
        max_proto=1 if major < 14 else 2 if major == 14 else 3 if major == 15 else 4,
        options=frozenset(options),
        new_slot_syntax=major >= 15,
        commands=frozenset(commands),
        timeline_type=20 if major >= 16 else 23,
        sends_empty_transactions=major < 15,
        missing_publication_is_error=major < 18,
        truncate=major >= 11,
        new_missing_option_text=major >= 17,
        slot_options=frozenset(slot_options),
    )


#: The persona of every major 10 … 18.
PERSONAS: dict[int, Persona] = {major: _make(major) for major in range(10, 19)}


def persona(major: int) -> Persona:
    """The persona of server *major*; ValueError outside 10 … 18."""
    try:
        return PERSONAS[major]
    except KeyError:
        raise ValueError(f"expected a PostgreSQL major from 10 to 18, found {major!r}") from None
