"""Server personas: a PostgreSQL walsender of each major (10 … 18) as the fake plays it.

What each major accepts and answers is its entry of the per-major table
(:mod:`pgwire_spec.majors`); a persona reads it to validate pgoutput's options
(pgoutput.c, parse_output_parameters) and to answer with the SQLSTATE and the message text a
real server gives.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .. import majors
from ..errors import OptionError, PgWireError
from ..majors import Major
from ..replication.commands import downcase_identifier, truncate_identifier
from ._settings import SETTINGS, show_text

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
    """A server of one major as the fake walsender plays it: its entry of the per-major
    table (:mod:`pgwire_spec.majors`) and the answers built from it."""

    table: Major

    @property
    def major(self) -> int:
        return self.table.major

    @property
    def max_proto(self) -> int:
        """Highest pgoutput protocol version (LOGICALREP_PROTO_MAX_VERSION_NUM)."""
        return self.table.max_proto

    @property
    def options(self) -> frozenset[str]:
        """pgoutput options accepted."""
        return frozenset(self.table.pgoutput_options)

    @property
    def commands(self) -> frozenset[str]:
        """Commands this major's replication grammar knows."""
        return self.table.commands

    @property
    def timeline_type(self) -> int:
        """IDENTIFY_SYSTEM timeline column type: 23 int4 (< 16) or 20 int8."""
        return self.table.timeline_type

    @property
    def sends_empty_transactions(self) -> bool:
        return self.table.sends_empty_transactions

    @property
    def missing_publication_is_error(self) -> bool:
        return self.table.missing_publication_is_error

    @property
    def truncate(self) -> bool:
        return self.table.truncate

    def parameter_status(self, *, version: str, user: str, application_name: str,
                         client_encoding: str, server_encoding: str) -> list[tuple[str, str]]:
        """The ParameterStatus messages after AuthenticationOk, in the server's order."""
        # the fake's settings (walsender/_settings.py), but what the session says
        values = {s.name: show_text(s, s.value if s.value is not None else s.boot or "") for s in SETTINGS}
        values.update({"application_name": application_name, "client_encoding": client_encoding,
                       "server_encoding": server_encoding, "server_version": version,
                       "session_authorization": user})
        return [(name, values[name]) for name in self.table.parameter_status]

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
                if (value or "").lower() == "parallel" and "parallel" in self.table.streaming_values:
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
                text = f'option "{required}" missing' if self.table.quoted_missing_option else f"{required} option missing"
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
            name = downcase_identifier(text[j:i])  # ASCII letters only, as scansup.c
            if not name:
                return None
        out.append(truncate_identifier(name))  # varlena.c SplitIdentifierString: silently
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return out
        if text[i] != ",":
            return None
        i += 1


def persona(major: int) -> Persona:
    """The persona of server *major*; ValueError for a major the per-major table lacks."""
    try:
        return Persona(majors.major(major))
    except OptionError as exc:
        raise ValueError(str(exc)) from None


class _Personas(Mapping[int, Persona]):
    """The persona of every major of the per-major table (a view: an entry added to the
    table has its persona)."""

    def __getitem__(self, key: int) -> Persona:
        if key not in majors.MAJORS:
            raise KeyError(key)
        return Persona(majors.MAJORS[key])

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(majors.MAJORS))

    def __len__(self) -> int:
        return len(majors.MAJORS)


#: The persona of every major (10 … 18).
PERSONAS: Mapping[int, Persona] = _Personas()
