"""Capability profiles: what a decoder claims to support, and what each case needs.

A decoder declares a :class:`Profile` (in its hello line, as an attribute of its in-process
function, or with ``--claim`` on the command line): the protocol versions it negotiates,
streaming (off, on, parallel), two-phase, binary values, logical messages, Origin messages,
and its **level**: ``message`` (a stateless decoder of one payload) or ``stream`` (a
consumer that tracks relations and transactions, and so can check the sequence rules).

What a case needs (``Case.needs``, :mod:`.cases`) is derived, never typed a second time: the decoding
context the case was captured or drawn under, the options each of its messages needs in
the protocol catalogue (:mod:`pgwire_spec.pgoutput._catalogue`), ``'b'`` values in its
tuples, and for a malformed case the layer of its rule in ``spec/rules.yaml`` (``bytes``:
message level; ``sequence``: stream level). The suite runs only the cases inside the
declared profile; the rest are "not claimed", never failures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..errors import PgWireError

__all__ = [
    "DecoderLevel",
    "STREAMING_MODES",
    "LEVELS",
    "PROTOCOL_VERSIONS",
    "ProfileError",
    "Profile",
    "Needs",
    "CAPABILITIES",
]

DecoderLevel = Literal["message", "stream"]

#: Streaming modes in the order each includes the one before (docs: "Logical Streaming
#: Replication Parameters", streaming).
STREAMING_MODES: Final = ("off", "on", "parallel")
#: Decoder levels: a stream-level consumer also decodes every message on its own.
LEVELS: Final = ("message", "stream")
#: The protocol versions pgoutput knows (docs: proto_version).
PROTOCOL_VERSIONS: Final = (1, 2, 3, 4)
_FLAGS: Final = ("two_phase", "binary", "messages", "origin")

#: Capability names, as the reports' rows name them (the base rows are "protocol N").
CAPABILITIES: Final = ("streaming on", "streaming parallel", "two-phase", "binary", "logical messages",
                       "origin", "stream level")


class ProfileError(PgWireError):
    """A profile that cannot be read (from a hello line, an attribute or ``--claim``)."""


@dataclass(frozen=True, slots=True)
class Needs:
    """What one case needs of a decoder (the smallest profile that contains it)."""

    protocol_version: int
    streaming: str = "off"
    two_phase: bool = False
    binary: bool = False
    messages: bool = False
    origin: bool = False
    level: DecoderLevel = "message"

    def capabilities(self) -> tuple[str, ...]:
        """The capability rows this case counts in: each extra capability it needs, or
        ``protocol N`` when it needs nothing beyond its protocol version."""
        extra = []
        if self.streaming != "off":
            extra.append(f"streaming {self.streaming}")
        if self.two_phase:
            extra.append("two-phase")
        if self.binary:
            extra.append("binary")
        if self.messages:
            extra.append("logical messages")
        if self.origin:
            extra.append("origin")
        if self.level == "stream":
            extra.append("stream level")
        return tuple(extra) or (f"protocol {self.protocol_version}",)


@dataclass(frozen=True, slots=True)
class Profile:
    """A decoder's claimed capabilities. The default is everything, at stream level (what
    an adapter that declares no profile is judged on)."""

    protocol_versions: frozenset[int] = frozenset(PROTOCOL_VERSIONS)
    streaming: str = "parallel"
    two_phase: bool = True
    binary: bool = True
    messages: bool = True
    origin: bool = True
    level: DecoderLevel = "stream"

    def __post_init__(self) -> None:
        bad = sorted(set(self.protocol_versions) - set(PROTOCOL_VERSIONS))
        if bad or not self.protocol_versions:
            raise ProfileError(f"protocol versions: expected some of 1, 2, 3, 4, found {sorted(self.protocol_versions)}")
        if self.streaming not in STREAMING_MODES:
            raise ProfileError(f"streaming: expected off, on or parallel, found {self.streaming!r}")
        if self.level not in LEVELS:
            raise ProfileError(f"level: expected message or stream, found {self.level!r}")

    # -- reading ---------------------------------------------------------------------------------
    @classmethod
    def minimal(cls) -> Profile:
        """Protocol 1, text values, no optional message, message level."""
        return cls(frozenset({1}), "off", False, False, False, False, "message")

    @classmethod
    def from_json(cls, obj: Any) -> Profile:
        """A profile from its JSON form (a hello's ``profile``): keys it leaves out are not
        claimed (protocol 1, off, false, message level)."""
        if isinstance(obj, Profile):
            return obj
        if not isinstance(obj, Mapping):
            raise ProfileError(f"a profile is an object of capabilities, found {type(obj).__name__}")
        known = {"protocol_versions", "streaming", *_FLAGS, "level"}
        unknown = sorted(set(obj) - known)
        if unknown:
            raise ProfileError(f"unknown profile key {unknown[0]!r} (expected {', '.join(sorted(known))})")
        versions = obj.get("protocol_versions", [1])
        if isinstance(versions, int) or not isinstance(versions, Iterable) or isinstance(versions, str):
            raise ProfileError(f"protocol_versions: expected a list of integers, found {versions!r}")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in versions):
            raise ProfileError(f"protocol_versions: expected a list of integers, found {list(versions)!r}")
        flags = {}
        for key in _FLAGS:
            value = obj.get(key, False)
            if not isinstance(value, bool):
                raise ProfileError(f"{key}: expected true or false, found {value!r}")
            flags[key] = value
        return cls(frozenset(versions), str(obj.get("streaming", "off")), level=obj.get("level", "message"),
                   **flags)

    @classmethod
    def parse(cls, text: str) -> Profile:
        """A profile from its command-line form: ``all``, or ``KEY=VALUE`` words
        (``protocol=1,2 streaming=off two-phase=no binary=no messages=yes origin=yes
        level=message``); keys left out are not claimed."""
        text = text.strip()
        if text in ("all", "full"):
            return cls()
        obj: dict[str, Any] = {}
        for word in text.replace(";", " ").split():
            key, sep, value = word.partition("=")
            key = key.strip().lower().replace("-", "_")
            if not sep or not value:
                raise ProfileError(f"--claim: expected KEY=VALUE words or 'all', found {word!r}")
            if key in ("protocol", "protocol_version", "protocol_versions", "proto"):
                obj["protocol_versions"] = _versions(value)
            elif key == "streaming":
                obj["streaming"] = value
            elif key == "level":
                obj["level"] = value
            elif key in _FLAGS:
                obj[key] = _yes_no(key, value)
            else:
                raise ProfileError(f"--claim: unknown capability {key!r} (expected protocol, streaming, "
                                   f"two-phase, binary, messages, origin, level)")
        return cls.from_json(obj)

    # -- writing ---------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"protocol_versions": sorted(self.protocol_versions), "streaming": self.streaming,
                "two_phase": self.two_phase, "binary": self.binary, "messages": self.messages,
                "origin": self.origin, "level": self.level}

    def spec(self) -> str:
        """The command-line form (``--claim``), which :meth:`parse` reads back."""
        yn = {True: "yes", False: "no"}
        return (f"protocol={','.join(map(str, sorted(self.protocol_versions)))} streaming={self.streaming} "
                f"two-phase={yn[self.two_phase]} binary={yn[self.binary]} messages={yn[self.messages]} "
                f"origin={yn[self.origin]} level={self.level}")

    def label(self) -> str:
        """``protocol 1, text, message level``; ``protocol 1-4, streaming parallel, two-phase,
        binary, logical messages, origin, stream level``."""
        versions = sorted(self.protocol_versions)
        contiguous = versions == list(range(versions[0], versions[-1] + 1))
        proto = (f"protocol {versions[0]}" if len(versions) == 1 else
                 f"protocol {versions[0]}-{versions[-1]}" if contiguous else
                 f"protocols {', '.join(map(str, versions))}")
        parts = [proto]
        if self.streaming != "off":
            parts.append(f"streaming {self.streaming}")
        if self.two_phase:
            parts.append("two-phase")
        parts.append("binary" if self.binary else "text")
        if self.messages:
            parts.append("logical messages")
        if self.origin:
            parts.append("origin")
        parts.append(f"{self.level} level")
        return ", ".join(parts)

    # -- judging ---------------------------------------------------------------------------------
    def missing(self, needs: Needs) -> tuple[str, ...]:
        """What *needs* asks for that this profile does not claim (empty: the case is in)."""
        out = []
        if needs.protocol_version not in self.protocol_versions:
            out.append(f"protocol {needs.protocol_version}")
        if STREAMING_MODES.index(needs.streaming) > STREAMING_MODES.index(self.streaming):
            out.append(f"streaming {needs.streaming}")
        if needs.two_phase and not self.two_phase:
            out.append("two-phase")
        if needs.binary and not self.binary:
            out.append("binary")
        if needs.messages and not self.messages:
            out.append("logical messages")
        if needs.origin and not self.origin:
            out.append("origin")
        if needs.level == "stream" and self.level == "message":
            out.append("stream level")
        return tuple(out)

    def covers(self, needs: Needs) -> bool:
        return not self.missing(needs)

    def claims(self, capability: str) -> bool:
        """Whether a capability row (``protocol 2``, ``streaming on``, ``binary`` …) is claimed."""
        if capability.startswith("protocol "):
            return int(capability.split()[1]) in self.protocol_versions
        if capability.startswith("streaming "):
            return STREAMING_MODES.index(capability.split()[1]) <= STREAMING_MODES.index(self.streaming)
        return {"two-phase": self.two_phase, "binary": self.binary, "logical messages": self.messages,
                "origin": self.origin, "stream level": self.level == "stream"}[capability]

    def size(self) -> int:
        """How much it claims (to rank candidate profiles)."""
        return (len(self.protocol_versions) + STREAMING_MODES.index(self.streaming)
                + sum(getattr(self, f) for f in _FLAGS) + LEVELS.index(self.level))


def _versions(value: str) -> list[int]:
    out: list[int] = []
    for part in value.split(","):
        lo, dash, hi = part.partition("-")
        try:
            out.extend(range(int(lo), int(hi) + 1) if dash else [int(lo)])
        except ValueError:
            raise ProfileError(f"--claim: protocol versions like 1 or 1,2 or 1-4, found {value!r}") from None
    return out


def _yes_no(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("yes", "y", "true", "on", "1"):
        return True
    if v in ("no", "n", "false", "off", "0"):
        return False
    raise ProfileError(f"--claim: {key.replace('_', '-')}: expected yes or no, found {value!r}")
