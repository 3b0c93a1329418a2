"""The pgoutput option sets captured per server major (pgoutput.c, parse_output_parameters).

What each major accepts is the per-major table's (:mod:`pgwire_spec.majors`). The option sets are built from it: per protocol
version a plain set, each option alone, and everything at once; capture then drops a set
whose bytes equal an earlier one's (it does not change the bytes) and records it as
equivalent. Sets reading another publication (partition root, row filters, generated
columns) come from the workload.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import majors
from ..pgoutput.decoder import decoder_options

__all__ = ["OptionSet", "SERVER_OPTIONS", "max_protocol", "option_sets"]

class _ServerOptions(Mapping[int, tuple[int, tuple[str, ...], tuple[str, ...]]]):
    """Per major: (max proto_version, options pgoutput accepts besides proto_version and
    publication_names, streaming values), read from the per-major table
    (:mod:`pgwire_spec.majors`; docs: "Logical Streaming Replication Parameters")."""

    def __getitem__(self, major: int) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
        e = majors.MAJORS[major]
        extra = tuple(o for o in e.pgoutput_options if o not in ("proto_version", "publication_names"))
        return e.max_proto, extra, e.streaming_values

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(majors.MAJORS))

    def __len__(self) -> int:
        return len(majors.MAJORS)


SERVER_OPTIONS: Mapping[int, tuple[int, tuple[str, ...], tuple[str, ...]]] = _ServerOptions()


def max_protocol(major: int) -> int:
    return majors.major(major).max_proto


@dataclass(frozen=True, slots=True)
class OptionSet:
    """The options of one ``pg_logical_slot_peek_binary_changes`` call."""

    name: str
    protocol_version: int
    publication: str
    streaming: str = "off"
    two_phase: bool = False
    binary: bool = False
    messages: bool = False
    #: ``None``: not sent (the server's default, ``any``).
    origin: str | None = None
    extra: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    #: Keep this set even when its bytes equal an earlier set's: the decoding context
    #: differs in a way decoders get wrong (protocol 4 with streaming = on: no Stream Abort
    #: tail, erratum E-STREAM-ABORT-TAIL).
    keep: bool = False

    def pgoutput_options(self) -> dict[str, str]:
        """The options as pgoutput receives them (names and text values), in the order a
        subscriber sends them."""
        out = {"proto_version": str(self.protocol_version)}
        if self.streaming != "off":
            out["streaming"] = "on" if self.streaming == "on" else "parallel"
        if self.two_phase:
            out["two_phase"] = "on"
        if self.origin is not None:
            out["origin"] = self.origin
        out["publication_names"] = self.publication
        if self.binary:
            out["binary"] = "on"
        if self.messages:
            out["messages"] = "on"
        out.update(self.extra)
        return out

    def context(self) -> dict[str, Any]:
        """The decoder's options for this set (``PgOutputDecoder(**context)``)."""
        return decoder_options(self)


def option_sets(major: int, publication: str, extra_publications: tuple[str, ...] = (),
                *, exhaustive: bool = False) -> list[OptionSet]:
    """The candidate option sets for *major*, most basic first.

    By default: per protocol version the plain set, each option alone and all of them; with
    *exhaustive*, every combination the server accepts (the cross product).
    """
    majors.major(major)  # OptionError for a major the table lacks
    top, accepted, streaming_values = SERVER_OPTIONS[major]
    if exhaustive:
        return _cross_product(major, publication) + [
            OptionSet(f"p{top}-{extra}", top, extra) for extra in extra_publications]
    pub = publication
    sets = [OptionSet("p1", 1, pub)]
    if "binary" in accepted:
        sets.append(OptionSet("p1-binary", 1, pub, binary=True))
        sets.append(OptionSet("p1-messages", 1, pub, messages=True))
    for proto in range(2, top + 1):
        p = f"p{proto}"
        sets.append(OptionSet(p, proto, pub))
        sets.append(OptionSet(f"{p}-streaming", proto, pub, streaming="on", keep=proto >= 4))
        if proto >= 4 and "parallel" in streaming_values:
            sets.append(OptionSet(f"{p}-parallel", proto, pub, streaming="parallel"))
        if proto >= 3 and "two_phase" in accepted:
            sets.append(OptionSet(f"{p}-two_phase", proto, pub, two_phase=True))
            sets.append(OptionSet(f"{p}-streaming-two_phase", proto, pub, streaming="on", two_phase=True))
        if proto >= 4 and "origin" in accepted:
            sets.append(OptionSet(f"{p}-origin_none", proto, pub, origin="none"))
            sets.append(OptionSet(f"{p}-origin_any", proto, pub, origin="any"))
        streaming = "parallel" if proto >= 4 and "parallel" in streaming_values else "on"
        sets.append(OptionSet(
            f"{p}-all", proto, pub, streaming=streaming, two_phase=proto >= 3 and "two_phase" in accepted,
            binary=True, messages=True, origin="any" if proto >= 4 and "origin" in accepted else None,
        ))
    for extra in extra_publications:
        sets.append(OptionSet(f"p{top}-{extra}", top, extra))
    return sets


def _cross_product(major: int, pub: str) -> list[OptionSet]:
    top, accepted, streaming_values = SERVER_OPTIONS[major]
    out = []
    for proto in range(1, top + 1):
        for streaming in ("off", *streaming_values):
            if (streaming == "on" and proto < 2) or (streaming == "parallel" and proto < 4):
                continue
            for two_phase in (False, True) if "two_phase" in accepted and proto >= 3 else (False,):
                for binary in (False, True) if "binary" in accepted else (False,):
                    for messages in (False, True) if "messages" in accepted else (False,):
                        for origin in (None, "any", "none") if "origin" in accepted else (None,):
                            parts = [f"p{proto}"]
                            parts += [streaming if streaming == "parallel" else "streaming"] if streaming != "off" else []
                            parts += ["two_phase"] if two_phase else []
                            parts += ["binary"] if binary else []
                            parts += ["messages"] if messages else []
                            parts += [f"origin_{origin}"] if origin else []
                            out.append(OptionSet("-".join(parts), proto, pub, streaming=streaming,
                                                 two_phase=two_phase, binary=binary, messages=messages,
                                                 origin=origin, keep=proto >= 4 and streaming == "on"))
    return out
