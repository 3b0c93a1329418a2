"""Conformance cases: what a pgoutput decoder is given and what it must answer.

A case is a short stream of pgoutput payloads with the decoding context a client
negotiated (``protocol_version``, ``streaming``, ``two_phase``, ``binary``, ``messages``)
and either the expected JSON form of the payloads it checks, or the index of the first
payload the decoder must reject (and the rule it breaks, from ``spec/rules.yaml``).

Sources, each giving cases stable ids:

``fixture/…``
    every golden fixture message (``fixtures/``), placed in the smallest valid stream
    around it (its Relation, its Begin … Commit or Stream Start … Stop);
``stream/…``
    the built-in seed streams (:mod:`pgwire_spec.corpus.seeds`), every payload checked;
``generated/…``
    valid streams drawn with a fixed seed from :func:`pgwire_spec.strategies.streams`;
``malformed/…``
    malformed streams with their expected rule, from
    :func:`pgwire_spec.strategies.malformed_streams` when present, and derived
    deterministically from the seed streams (truncation at every field boundary, lengths
    past the end, unknown tags and tuple kinds, unterminated strings, sequence errors).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as dataclass_replace
from pathlib import Path
from typing import Any, Literal

from .._resources import spec_dir
from ..corpus._fields import field_map
from ..corpus.seeds import SeedStream, builtin_streams
from ..errors import DecodeError
from ..pgoutput import _catalogue as _pg_catalogue
from ..pgoutput import messages as m
from ..pgoutput._codec import FAMILY
from ..pgoutput._codec import encode as _pg_encode
from .adapters.reference import decode_case_kept as reference_results
from .profile import Needs

__all__ = [
    "Level",
    "Case",
    "ExpectedError",
    "Check",
    "DECODER_OPTIONS",
    "context_of",
    "context_label",
    "kind_of",
    "section_of",
    "level_of_rule",
    "layer_of_rule",
    "builtin_cases",
    "fixture_cases",
    "generated_cases",
    "malformed_cases",
    "collect_cases",
]

Level = Literal["MUST", "SHOULD"]

#: The decoding context keys a case carries (the options a client sends to pgoutput).
DECODER_OPTIONS = ("protocol_version", "streaming", "two_phase", "binary", "messages")

_DOCS = "Logical Replication Message Formats"
_FLOW = "Logical Streaming Replication Protocol"


@dataclass(frozen=True, slots=True)
class ExpectedError:
    """The first payload a decoder must reject (``index == len(payloads)``: the end of
    the stream) and the rule it breaks."""

    index: int
    rule: str
    #: Other rules a decoder may report there (spec/rules.yaml ``acceptable``).
    acceptable: tuple[str, ...] = ()

    def accepts(self, rule: str) -> bool:
        return rule == self.rule or rule in self.acceptable


@dataclass(frozen=True, slots=True)
class Check:
    """One payload a case judges: its index, message kind and protocol version (a cell of
    the report's matrix)."""

    index: int
    kind: str


@dataclass(frozen=True, slots=True)
class Case:
    """One conformance case. ``expected`` holds the JSON form of every payload before
    the error (or of all of them); ``checked`` the indices whose JSON is compared (the
    others only have to decode)."""

    id: str
    description: str
    section: str
    level: Level
    context: Mapping[str, Any]
    payloads: tuple[bytes, ...]
    expected: tuple[Mapping[str, Any], ...] = ()
    error: ExpectedError | None = None
    checked: tuple[int, ...] = ()
    flags: tuple[str, ...] = ()
    source: str = "builtin"
    #: what :attr:`needs` computed, kept (not part of the case's value)
    _needs: Needs | None = field(default=None, compare=False, repr=False)

    @property
    def protocol_version(self) -> int:
        return int(self.context.get("protocol_version", 1))

    @property
    def checks(self) -> tuple[Check, ...]:
        if self.error is not None:
            i = self.error.index
            kind = kind_of(self.payloads[i]) if i < len(self.payloads) else "end of stream"
            return (Check(i, kind),)
        payloads = self.payloads
        return tuple([_check(i, kind_of(payloads[i])) for i in self.checked])

    @property
    def needs(self) -> Needs:
        """The smallest capability profile this case belongs to (:mod:`.profile`): its
        context's options, the options its messages need in the protocol catalogue, binary
        values in its tuples, Origin messages, and for a malformed case the layer of its
        rule (``bytes``: message level, else stream level)."""
        if self._needs is None:
            object.__setattr__(self, "_needs", self._find_needs())  # computed once, kept
        assert self._needs is not None
        return self._needs

    def _find_needs(self) -> Needs:
        ctx = self.context
        streaming = str(ctx.get("streaming", "off"))
        two_phase = bool(ctx.get("two_phase", False))
        messages = bool(ctx.get("messages", False))
        tags = {p[0] for p in self.payloads if p}
        origin = _ORIGIN_BYTE in tags
        for tag in tags:
            for option in _OPTIONS_OF.get(tag, ()):
                if option == "streaming" and streaming == "off":
                    streaming = "on"
                elif option == "two_phase":
                    two_phase = True
                elif option == "messages":
                    messages = True
        binary = bool(ctx.get("binary", False)) or _has_binary_value(self.expected)
        stream_level = self.error is not None and (
            self.error.index >= len(self.payloads) or layer_of_rule(self.error.rule) != "bytes")
        key = (self.protocol_version, streaming, two_phase, binary, messages, origin,
               "stream" if stream_level else "message")
        needs = _NEEDS_MADE.get(key)
        if needs is None:  # a few hundred at most: one object each, shared by their cases
            needs = _NEEDS_MADE[key] = Needs(*key)
        return needs

    def request(self) -> dict[str, Any]:
        """The case as the adapter contract sends it (spec/adapter-contract.md)."""
        return {
            "id": self.id,
            "context": dict(self.context),
            "payloads": [p.hex() for p in self.payloads],
        }


#: tag -> (protocol version, options) of the messages a server sends only when asked.
_NEEDS = _pg_catalogue.NEEDS
#: The Origin message is sent whatever the options (pgoutput.c, pgoutput_begin_txn): a
#: decoder claims it as a capability of its own.
_ORIGIN_BYTE = ord(_pg_catalogue.ENTRIES["Origin"].tag)
_NEEDS_MADE: dict[tuple[Any, ...], Needs] = {}
#: tag byte -> the options its message needs (from _NEEDS)
_OPTIONS_OF = {ord(tag): options for tag, (_, options) in _NEEDS.items() if options}


def _has_binary_value(expected: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a tuple of these JSON forms holds a ``'b'`` value (``{"kind": "b", …}``)."""
    for msg in expected:
        for key in ("new_tuple", "old_tuple"):
            tup = msg.get(key)
            if tup:
                for v in tup:
                    if type(v) is dict and v.get("kind") == "b":
                        return True
    return False


# -- naming -----------------------------------------------------------------------------------


def kind_of(payload: bytes) -> str:
    """The message class name of a payload by its tag (``Insert``), or ``unknown tag``."""
    if not payload:
        return "empty payload"
    return _KINDS.get(payload[0], "unknown tag")


#: tag byte -> message class name
_KINDS = {tag: codec.name for tag, codec in FAMILY.by_tag.items()}


@functools.lru_cache(maxsize=4096)
def _check(index: int, kind: str) -> Check:
    """One :class:`Check`, shared by the cases judging the same cell (they are frozen)."""
    return Check(index, kind)


def section_of(kind: str) -> str:
    """The docs section a message kind is specified in."""
    entry = _pg_catalogue.ENTRIES.get(kind)
    return f"{_DOCS} › {entry.facts.docs}" if entry is not None else _DOCS


def context_of(options: Mapping[str, Any]) -> dict[str, Any]:
    """The decoding context of a case from decoder options (defaults filled in)."""
    streaming = options.get("streaming", "off")
    if streaming is True:
        streaming = "on"
    elif streaming in (False, None):
        streaming = "off"
    return {
        "protocol_version": int(options.get("protocol_version", 1)),
        "streaming": str(streaming),
        "two_phase": bool(options.get("two_phase", False)),
        "binary": bool(options.get("binary", False)),
        "messages": bool(options.get("messages", False)),
    }


def context_label(context: Mapping[str, Any]) -> str:
    """``proto2-streaming-on-binary``: a short stable name of a context."""
    parts = [f"proto{context.get('protocol_version', 1)}"]
    if context.get("streaming", "off") != "off":
        parts.append(f"streaming-{context['streaming']}")
    parts += [k.replace("_", "-") for k in ("two_phase", "binary", "messages") if context.get(k)]
    return "-".join(parts)


# Rules a decoder SHOULD enforce: a strict reader rejects them, a tolerant one may keep going
# without losing data. Everything else (bytes that are not a message, changes that cannot be
# applied) is a MUST. spec/adapter-contract.md explains the split.
_SHOULD_RULES = frozenset({
    "nonzero-flags",
    "commit-lsn-mismatch",
    "prepare-mismatch",
    "invalid-value",
    "trailing-bytes",
    "message-not-negotiated",
    "binary-not-negotiated",
    "old-tuple-without-full-identity",
    "stream-xid-already-open",
    "stream-xid-not-open",
    "transactional-message-outside-transaction",
    "unterminated-transaction",
})


def level_of_rule(rule: str) -> Level:
    """MUST or SHOULD for a malformed case breaking *rule* (``spec/rules.yaml`` may say)."""
    level = _rules_catalogue().get(rule, {}).get("level")
    if level in ("MUST", "SHOULD"):
        return level  # type: ignore[no-any-return]
    return "SHOULD" if rule in _SHOULD_RULES else "MUST"


def layer_of_rule(rule: str) -> str:
    """The layer of *rule* in ``spec/rules.yaml``: ``bytes`` (one payload is not a message:
    a stateless decoder can see it), ``sequence`` (a message that may not come here: only a
    consumer that tracks the stream can) or ``walsender``; a rule the catalogue does not
    know is taken as ``sequence``."""
    layer = _rules_catalogue().get(rule, {}).get("layer")
    return layer if isinstance(layer, str) else "sequence"


_CATALOGUE: dict[str, dict[str, Any]] | None = None


def _rules_catalogue() -> dict[str, dict[str, Any]]:
    """spec/rules.yaml (the rule catalogue of the strategies), when installed."""
    global _CATALOGUE
    if _CATALOGUE is None:
        _CATALOGUE = {}
        path = spec_dir() / "rules.yaml"
        if path.is_file():
            import yaml

            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            rules = data.get("rules", data) if isinstance(data, dict) else data
            if isinstance(rules, dict):
                rules = [dict(v, name=k) if isinstance(v, dict) else {"name": k} for k, v in rules.items()]
            for item in rules or []:
                if isinstance(item, dict) and "name" in item:
                    _CATALOGUE[str(item["name"])] = item
    return _CATALOGUE


def rule_section(rule: str, kind: str) -> str:
    """The docs section a rule comes from: the catalogue's, else the message's own section
    for byte-level rules and the protocol's message flow for sequence rules."""
    section = _rules_catalogue().get(rule, {}).get("section")
    if isinstance(section, str) and section:
        return section
    if rule in ("truncated", "unknown-message-tag", "unknown-tuple-kind", "length-out-of-range",
                "unexpected-byte", "trailing-bytes", "invalid-value", "missing-nul", "nonzero-flags"):
        return section_of(kind)
    return f"{_FLOW} › Message flow"


def _valid_case(
    case_id: str, description: str, context: Mapping[str, Any], payloads: Sequence[bytes],
    checked: Sequence[int] | None = None, *, source: str, flags: Sequence[str] = (),
    recorded: Mapping[int, Mapping[str, Any]] | None = None,
) -> Case | None:
    """A case whose payloads the reference accepts; ``None`` if it does not.

    The expected JSON is the reference's, except at the indices of *recorded* (a golden
    fixture's expected JSON), which win: a reference that disagrees fails the case.
    """
    results = reference_results(context, payloads)
    if len(results) != len(payloads) or any("error" in r for r in results):
        return None
    got = [r["message"] for r in results]
    for i, obj in (recorded or {}).items():
        got[i] = dict(obj)
    idx = tuple(range(len(payloads)) if checked is None else checked)
    kinds = sorted({kind_of(payloads[i]) for i in idx})
    section = section_of(kinds[0]) if len(kinds) == 1 else f"{_DOCS} ({', '.join(kinds)})"
    return Case(
        id=case_id, description=description, section=section, level="MUST",
        context=dict(context), payloads=tuple(payloads), expected=tuple(got), checked=idx,
        flags=tuple(flags), source=source,
    )


# -- built-in streams ---------------------------------------------------------------------------


def builtin_cases(streams: Iterable[SeedStream] | None = None) -> list[Case]:
    """One case per built-in seed stream; every payload is checked."""
    out = []
    for s in streams if streams is not None else builtin_streams():
        ctx = context_of(s.options)
        case = _valid_case(
            f"stream/{s.name}", f"valid stream {s.name.split('/')[-1]} ({len(s.payloads)} messages, "
            f"{context_label(ctx)})", ctx, s.payloads, source="builtin",
        )
        if case is None:  # pragma: no cover - tests/fuzz/test_seeds.py keeps them valid
            raise AssertionError(f"built-in stream {s.name} is not valid")
        out.append(case)
    return out


# -- golden fixtures ------------------------------------------------------------------------------


def fixture_streams(root: Path | str | None = None) -> list[SeedStream]:
    """The golden fixtures as streams (one per fixture file, in capture order), with each
    payload's expected JSON; see :mod:`pgwire_spec.corpus.load`."""
    from ..corpus.load import load_fixture_streams

    return load_fixture_streams(root)


_OPENERS = {"B": "C", "b": "P", "S": "E"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}


class _StreamView:
    """One stream read once for the cases made of it: its tags, which payloads sit inside a
    streamed block, each payload decoded (on demand) and the latest Relation of each OID."""

    def __init__(self, stream: SeedStream,
                 decoded: dict[tuple[bytes, bool, bool], m.PgOutputMessage | None] | None = None) -> None:
        self.stream = stream
        self._decoded = {} if decoded is None else decoded
        self.payloads = stream.payloads
        self.tags = [chr(p[0]) if p else "" for p in stream.payloads]
        self.in_stream = _stream_flags(stream)
        self.parallel = stream.options.get("streaming") == "parallel"
        self._msgs: dict[int, m.PgOutputMessage | None] = {}
        self._rels: dict[tuple[int, int | None], bytes] = {}
        self._prelude: dict[tuple[Any, ...], bytes] = {}
        #: the nearest block opener or closer before each payload (-1: none)
        self._mark_before: list[int] = []
        last = -1
        for j, t in enumerate(self.tags):
            self._mark_before.append(last)
            if t in _OPENERS or t in _CLOSERS:
                last = j
        self._closers: dict[int, int | None] = {}

    def _closer(self, opener: int) -> int | None:
        """The closer of the block *opener* opens (None: the stream or the block ends first)."""
        if opener not in self._closers:
            tags = self.tags
            want = _OPENERS[tags[opener]]
            found = None
            for j in range(opener + 1, len(tags)):
                if tags[j] == want:
                    found = j
                    break
                if tags[j] in _OPENERS:
                    break
            self._closers[opener] = found
        return self._closers[opener]

    def message(self, index: int) -> m.PgOutputMessage | None:
        msgs = self._msgs
        if index not in msgs:
            # a payload's message is a function of its bytes and the two flags alone: decoded
            # once per set of views sharing `decoded` (the option sets record the same ones)
            key = (self.payloads[index], self.in_stream[index], self.parallel)
            if key in self._decoded:
                msgs[index] = self._decoded[key]
            else:
                try:
                    msg: m.PgOutputMessage | None = FAMILY.decode(*key)
                except DecodeError:
                    msg = None
                msgs[index] = self._decoded[key] = msg
        return msgs[index]

    def relation(self, index: int, xid: int | None) -> bytes:
        """Relation *index* re-encoded for the block it lands in (with or without xid)."""
        key = (index, xid)
        if key not in self._rels:
            rel = self.message(index)
            assert isinstance(rel, m.Relation)
            self._rels[key] = _encode(dataclass_replace(rel, xid=xid))
        return self._rels[key]

    def latest_relation(self, index: int, rid: int) -> int | None:
        for j in range(index - 1, -1, -1):
            if self.tags[j] == "R":
                rel = self.message(j)
                if isinstance(rel, m.Relation) and rel.relation_id == rid:
                    return j
        return None

    def started_before(self, index: int, xid: int) -> bool:
        """Whether a Stream Start of *xid* comes before payload *index*."""
        key = xid.to_bytes(4, "big")
        return any(self.tags[j] == "S" and self.payloads[j][1:5] == key for j in range(index))

    def parts(self, index: int, relations: Mapping[int, int] | None = None) -> tuple[list[tuple[Any, ...]], int]:
        """The smallest valid stream around payload *index*: its block's opener and closer,
        the Relation messages it refers to (the latest before it, re-encoded for the block
        they land in), and a first Stream Start for streamed xids that need one. Each part is
        ``("at", j)`` (payload j as captured), ``("rel", j, xid)`` or ``("start", xid)`` /
        ``("stop",)``; *relations* (OID -> latest Relation index before *index*) saves the
        search. Returns the parts and the target's position in them."""
        payloads, tags = self.payloads, self.tags
        tag = tags[index]
        opener = closer = None
        if tag in _OPENERS:
            opener = index
        else:
            if tag in _CLOSERS:
                closer = index
            j = self._mark_before[index]
            if j >= 0 and tags[j] in _OPENERS:
                opener = j
        if opener is not None and closer is None:
            closer = self._closer(opener)
        msg = self.message(index) if tag in "IUDTcAp" else None
        # Relations the target refers to, placed inside its block
        stream_xid = None
        if opener is not None and tags[opener] == "S":
            stream_xid = int.from_bytes(payloads[opener][1:5], "big")
        needed: list[int] = []
        if isinstance(msg, (m.Insert, m.Update, m.Delete)):
            needed = [msg.relation_id]
        elif isinstance(msg, m.Truncate):
            needed = list(dict.fromkeys(msg.relation_ids))
        rels: list[tuple[Any, ...]] = []
        for rid in needed:
            j = relations.get(rid) if relations is not None else self.latest_relation(index, rid)
            if j is not None:
                rels.append(("rel", j, stream_xid))
        # a streamed xid must have been started (first segment) before a later segment,
        # Stream Commit, Stream Abort or Stream Prepare names it
        prelude: list[tuple[Any, ...]] = []
        first = payloads[opener] if opener is not None and tags[opener] == "S" else None
        xid = None
        if first is not None and first[5:6] == b"\x00":
            xid = int.from_bytes(first[1:5], "big")
        elif tag in ("c", "A", "p") and msg is not None:
            xid = msg.xid  # type: ignore[attr-defined]
            if tag == "A" and not self.started_before(index, xid):
                # PostgreSQL 18's stray Stream Abort of an xid it never streamed (erratum
                # E-PG18-STRAY-STREAM-ABORT): judged as it came, without a Stream Start
                xid = None
        if xid is not None:
            prelude = [("start", xid), ("stop",)]
        out = prelude + ([("at", opener)] if opener is not None and opener != index else []) + rels
        at = len(out)
        out.append(("at", index))
        if closer is not None and closer != index:
            out.append(("at", closer))
        return out, at

    def payload(self, part: tuple[Any, ...]) -> bytes:
        if part[0] == "at":
            return self.payloads[part[1]]
        if part[0] == "rel":
            return self.relation(part[1], part[2])
        if part not in self._prelude:
            self._prelude[part] = _encode(m.StreamStart(part[1], True) if part[0] == "start" else m.StreamStop())
        return self._prelude[part]


def _encode(message: m.PgOutputMessage) -> bytes:
    return _pg_encode(message)


def _stream_flags(stream: SeedStream) -> list[bool]:
    """For each payload: whether it sits between Stream Start and Stream Stop."""
    out = []
    inside = False
    for p in stream.payloads:
        out.append(inside and p[:1] != b"E")
        if p[:1] == b"S":
            inside = True
        elif p[:1] == b"E":
            inside = False
    return out


def stream_message_cases(
    stream: SeedStream, prefix: str, source: str,
    decoded: dict[tuple[bytes, bool, bool], m.PgOutputMessage | None] | None = None,
) -> Iterator[Case]:
    """One case per payload of *stream*, each in its smallest valid surrounding.

    The expected JSON is the reference's (each distinct surrounding decoded once per run:
    :func:`.adapters.reference.decode_case_kept`), except the target's when the stream
    records it (a golden fixture's expected JSON, which wins: a reference that disagrees
    fails the case). *decoded*: payloads decoded by other streams' views (see
    :meth:`_StreamView.message`)."""
    ctx = context_of(stream.options)
    view = _StreamView(stream, decoded)
    latest: dict[int, int] = {}
    label = context_label(ctx)
    for i, payload in enumerate(stream.payloads):
        parts, at = view.parts(i, latest)
        if view.tags[i] == "R":
            rel = view.message(i)
            if isinstance(rel, m.Relation):
                latest[rel.relation_id] = i
        kind = kind_of(payload)
        name = f"fixture/{stream.ids[i]}" if stream.ids else f"{prefix}/{i:05d}"
        want = stream.expected[i] if stream.expected is not None else None
        payloads = tuple([view.payload(p) for p in parts])
        answer = reference_results(ctx, payloads)
        # accepted: one message per payload (a rejection ends the answer; a stream ending
        # inside a transaction adds one)
        if len(answer) == len(payloads) and "message" in answer[-1]:
            expected = [r["message"] for r in answer]
            if want is not None:
                expected[at] = dict(want)
            yield Case(
                id=name, description=f"{kind} #{i} of {stream.name} ({label})", section=section_of(kind),
                level="MUST", context=ctx, payloads=payloads, expected=tuple(expected), checked=(at,),
                flags=stream.flags[i] if stream.flags else (), source=source,
            )
            continue
        # The surrounding is not valid for the reference: judge the payload on its own.
        results = reference_results(ctx, [payload])
        if want is not None and "message" in results[0]:
            yield Case(
                id=name, description=f"{kind} #{i} of {stream.name}, on its own ({label})",
                section=section_of(kind), level="MUST", context=ctx, payloads=(payload,),
                expected=(want,), checked=(0,), source=source,
            )


def fixture_cases(root: Path | str | None = None) -> list[Case]:
    """One case per golden fixture message (none if no fixtures are installed)."""
    out: list[Case] = []
    decoded: dict[tuple[bytes, bool, bool], m.PgOutputMessage | None] = {}
    for s in fixture_streams(root):
        out.extend(stream_message_cases(s, f"fixture/{s.name}", "fixture", decoded))
    return out


# -- generated streams ----------------------------------------------------------------------------

#: The contexts generated and malformed cases are drawn for.
CONTEXTS: tuple[dict[str, Any], ...] = (
    context_of({"protocol_version": 1}),
    context_of({"protocol_version": 1, "messages": True}),
    context_of({"protocol_version": 2, "streaming": "on", "binary": True, "messages": True}),
    context_of({"protocol_version": 3, "streaming": "on", "two_phase": True}),
    context_of({"protocol_version": 4, "streaming": "parallel", "two_phase": True, "binary": True,
                "messages": True}),
)


def generated_cases(per_context: int = 20, seed: int = 0) -> list[Case]:
    """Valid streams from ``pgwire_spec.strategies.streams`` drawn with a fixed seed; none
    when the strategies module does not provide ``streams`` yet."""
    from ..corpus.examples import draw_examples, strategies_available

    if not strategies_available():
        return []
    from .. import strategies

    out = []
    for ci, ctx in enumerate(CONTEXTS):
        strategy = strategies.streams(**_strategy_kwargs(ctx))
        for n, drawn in enumerate(draw_examples(strategy, per_context, seed + ci)):
            options = context_of(getattr(drawn, "options", ctx))
            payloads = tuple(bytes(p) for p in drawn.payloads)
            if not payloads:
                continue
            case = _valid_case(
                f"generated/{context_label(options)}/{n:03d}",
                f"generated valid stream of {len(payloads)} messages ({context_label(options)})",
                options, payloads, source="generated",
            )
            if case is not None:
                out.append(case)
    return out


def _strategy_kwargs(ctx: Mapping[str, Any]) -> dict[str, Any]:
    return {k: ctx[k] for k in DECODER_OPTIONS}


# -- malformed streams -----------------------------------------------------------------------------


def malformed_cases(per_context: int = 20, seed: int = 0, streams: Iterable[SeedStream] | None = None) -> list[Case]:
    """Malformed cases: from ``strategies.malformed_streams`` when available, plus the
    deterministic derivations of the seed streams."""
    out = list(_strategy_malformed(per_context, seed))
    out.extend(derived_malformed_cases(streams))
    return out


def _strategy_malformed(per_context: int, seed: int) -> Iterator[Case]:
    from ..corpus.examples import draw_examples, strategies_available

    if not strategies_available("malformed_streams"):
        return
    from .. import strategies

    for ci, ctx in enumerate(CONTEXTS):
        strategy = strategies.malformed_streams(**_strategy_kwargs(ctx))
        for n, drawn in enumerate(draw_examples(strategy, per_context, seed + 100 + ci)):
            options = context_of(getattr(drawn, "options", ctx))
            payloads = tuple(bytes(p) for p in drawn.payloads)
            rule, index = str(drawn.expected_rule), int(drawn.index)
            ref = reference_results(options, payloads)
            kind = kind_of(payloads[index]) if index < len(payloads) else "end of stream"
            yield Case(
                id=f"malformed/{getattr(drawn, 'violation', rule)}/{context_label(options)}/{n:03d}",
                description=f"{rule} at message #{index} ({kind}, {context_label(options)})",
                section=rule_section(rule, kind), level=level_of_rule(rule), context=options,
                payloads=payloads, expected=tuple(r.get("message", {}) for r in ref[:index]),
                error=ExpectedError(index, rule, tuple(sorted(getattr(drawn, "acceptable_rules", ()) or ()))),
                source="malformed", flags=(f"violation-{getattr(drawn, 'violation', rule)}",),
            )


def _malformed(
    stream_name: str, op: str, ctx: Mapping[str, Any], payloads: Sequence[bytes], index: int,
    rule: str, description: str,
) -> Case | None:
    """A malformed case if the reference rejects it at *index* with *rule*."""
    ref = reference_results(ctx, payloads)
    last = ref[-1] if ref else {}
    if "error" not in last or len(ref) - 1 != index or last["error"].get("rule") != rule:
        return None
    kind = kind_of(payloads[index]) if index < len(payloads) else "end of stream"
    return Case(
        id=f"malformed/derived/{rule}/{stream_name}/{op}",
        description=description, section=rule_section(rule, kind), level=level_of_rule(rule),
        context=dict(ctx), payloads=tuple(payloads),
        expected=tuple(r["message"] for r in ref[:index]), error=ExpectedError(index, rule),
        source="malformed",
    )


def derived_malformed_cases(streams: Iterable[SeedStream] | None = None) -> list[Case]:
    """Deterministic malformed cases made from the seed streams, one or more per rule and
    message kind: every truncation point of every message kind, lengths past the end,
    unknown tags and tuple kinds, unterminated strings, trailing bytes, and sequence
    errors (DML before its Relation, wrong arity, Commit without Begin, Stream Stop
    without Stream Start, a missing or unexpected xid prefix)."""
    out: list[Case] = []
    seen_kinds: set[tuple[str, str]] = set()
    for s in streams if streams is not None else builtin_streams():
        ctx = context_of(s.options)
        short = s.name.split("/")[-1]
        view = _StreamView(s)
        sflags = view.in_stream
        for i, payload in enumerate(s.payloads):
            parts, at = view.parts(i)
            payloads = [view.payload(p) for p in parts]
            kind = kind_of(payload)
            in_stream = sflags[i]
            fields = field_map(payload, in_stream, ctx["streaming"] == "parallel")
            # one set per (message kind, context family) keeps the suite small but complete
            key = (kind, f"{in_stream}-{ctx['streaming'] == 'parallel'}")
            if key in seen_kinds:
                continue
            seen_kinds.add(key)

            variants: list[tuple[str, bytes, str, str]] = []
            variant = variants.append

            for f in fields:
                if f.offset > 0:
                    variant((f"cut-{f.offset}", payload[:f.offset], "truncated",
                             f"cut before {f.path} at byte {f.offset}"))
            variant(("cut-last", payload[:-1], "truncated", "missing its last byte"))
            variant(("trailing", payload + b"\x00", "trailing-bytes", "followed by one extra byte"))
            for f in fields:
                if f.kind == "length":
                    left = len(payload) - f.offset - 4
                    bad = payload[:f.offset] + (left + 1).to_bytes(4, "big") + payload[f.offset + 4:]
                    variant((f"len-past-end-{f.offset}", bad, "length-out-of-range",
                             f"{f.path} one byte past the end"))
                    bad = payload[:f.offset] + b"\xff\xff\xff\xfe" + payload[f.offset + 4:]
                    variant((f"len-negative-{f.offset}", bad, "length-out-of-range",
                             f"{f.path} negative (-2)"))
                    break
            for f in fields:
                if f.kind == "kind-byte" and f.path.endswith(".kind"):
                    bad = payload[:f.offset] + b"x" + payload[f.offset + 1:]
                    variant((f"tuple-kind-{f.offset}", bad, "unknown-tuple-kind", f"{f.path} is 'x'"))
                    break
            for f in fields:
                if f.kind == "string" and f.size > 0 and payload[f.offset + f.size - 1] == 0:
                    bad = payload[:f.offset] + payload[f.offset:f.offset + f.size - 1]
                    variant((f"no-nul-{f.offset}", bad, "truncated",
                             f"{f.path} without its NUL terminator at the end of the message"))
                    break
            for op, bad, rule, what in variants:
                pl = list(payloads)
                pl[at] = bad
                case = _malformed(short, f"{kind}-{op}", ctx, pl, at, rule,
                                  f"{kind} {what} ({context_label(ctx)})")
                if case is not None:
                    out.append(case)
        # whole-stream sequence errors
        out.extend(_sequence_cases(s, ctx, short))
    # an unknown message tag
    ctx1 = context_of({"protocol_version": 1})
    case = _malformed("any", "tag-Z", ctx1, [b"Z\x00\x00\x00\x00"], 0, "unknown-message-tag",
                      "a message with the unknown tag 'Z'")
    if case is not None:
        out.append(case)
    case = _malformed("any", "empty", ctx1, [b""], 0, "truncated", "an empty payload")
    if case is not None:
        out.append(case)
    # ids are unique by construction; keep the first of any accidental duplicate
    uniq: dict[str, Case] = {}
    for c in out:
        uniq.setdefault(c.id, c)
    return list(uniq.values())


def _sequence_cases(s: SeedStream, ctx: Mapping[str, Any], short: str) -> list[Case]:
    out: list[Case] = []
    pl = list(s.payloads)
    tags = [chr(p[0]) for p in pl]
    sflags = _stream_flags(s)

    def add(op: str, payloads: list[bytes], index: int, rule: str, what: str) -> None:
        case = _malformed(short, op, ctx, payloads, index, rule, f"{what} ({context_label(ctx)})")
        if case is not None:
            out.append(case)

    if "I" in tags and "R" in tags:
        r = tags.index("R")
        i = tags.index("I", r)
        dropped = pl[:r] + pl[r + 1:]
        add("dml-before-relation", dropped, i - 1, "unknown-relation",
            "an Insert whose Relation was never sent")
        # arity: an Insert with one column less than its relation
        msg = FAMILY.decode(pl[i], sflags[i], ctx["streaming"] == "parallel")
        if isinstance(msg, m.Insert) and msg.new_tuple:
            fewer = _encode(m.Insert(msg.xid, msg.relation_id, msg.new_tuple[:-1]))
            add("column-count", pl[:i] + [fewer] + pl[i + 1:], i, "column-count-mismatch",
                "an Insert with one column less than its Relation")
    if "C" in tags:
        c = tags.index("C")
        b = max(j for j in range(c) if tags[j] == "B")
        add("commit-without-begin", pl[:b] + pl[b + 1:], c - 1, "unexpected-message",
            "a Commit without its Begin")
        add("unterminated", pl[:c], c, "unterminated-transaction",
            "a stream that ends inside a transaction")
    if "E" in tags:
        e = tags.index("E")
        start = max(j for j in range(e) if tags[j] == "S")
        # drop the whole first segment but its Stream Stop
        add("stop-without-start", pl[:start] + pl[e:], start, "unexpected-message",
            "Stream Stop without Stream Start")
    if "S" in tags and ctx["protocol_version"] >= 2:
        # an in-stream Insert without its xid prefix: the Relation before it parses as
        # something else or the Insert comes out one field short
        for j, t in enumerate(tags):
            if t == "I" and sflags[j]:
                bad = pl[j][:1] + pl[j][5:]
                case_pl = pl[:j] + [bad] + pl[j + 1:]
                ref = reference_results(ctx, case_pl)
                if len(ref) == j + 1 and "error" in ref[j]:
                    add("xid-prefix-missing", case_pl, j, ref[j]["error"]["rule"],
                        "an Insert inside a streamed block without its xid prefix")
                break
    return out


# -- everything -----------------------------------------------------------------------------------


def collect_cases(
    *,
    fixtures: Path | str | None = None,
    sources: Sequence[str] = ("fixture", "builtin", "generated", "malformed"),
    per_context: int = 20,
    seed: int = 0,
    cache: Path | str | None = None,
) -> list[Case]:
    """Every case of the suite, in a stable order. With *cache* (a folder), the cases drawn
    with hypothesis (generated and malformed streams: seconds of drawing, the same for the
    same seed) are kept there, keyed by everything that makes them (seed, count, the
    hypothesis and Python versions, this package's sources and ``spec/rules.yaml``)."""
    out: list[Case] = []
    if "fixture" in sources:
        out.extend(fixture_cases(fixtures))
    if "builtin" in sources:
        out.extend(builtin_cases())
    if "generated" in sources:
        out.extend(_cached("generated", per_context, seed, cache, lambda: generated_cases(per_context, seed)))
    if "malformed" in sources:
        out.extend(_cached("malformed", per_context, seed, cache,
                           lambda: list(_strategy_malformed(per_context, seed))))
        out.extend(derived_malformed_cases())
    return out


def _drawn_key(kind: str, per_context: int, seed: int) -> str:
    import hashlib
    import sys
    from importlib.metadata import version

    # hypothesis's version from its installed metadata: importing it (~0.2 s) is left to a
    # run that draws
    h = hashlib.sha256(f"{kind}/{per_context}/{seed}/{version('hypothesis')}/{sys.version_info[:2]}".encode())
    package = Path(__file__).resolve().parents[1]
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    rules = spec_dir() / "rules.yaml"
    if rules.is_file():
        h.update(rules.read_bytes())
    return h.hexdigest()[:32]


def _case_json(c: Case) -> dict[str, Any]:
    return {"id": c.id, "description": c.description, "section": c.section, "level": c.level,
            "context": dict(c.context), "payloads": [p.hex() for p in c.payloads],
            "expected": [dict(e) for e in c.expected], "checked": list(c.checked), "flags": list(c.flags),
            "source": c.source, "error": None if c.error is None else
            {"index": c.error.index, "rule": c.error.rule, "acceptable": list(c.error.acceptable)}}


def _case_from_json(d: Mapping[str, Any]) -> Case:
    err = d["error"]
    return Case(
        id=d["id"], description=d["description"], section=d["section"], level=d["level"],
        context=d["context"], payloads=tuple(bytes.fromhex(p) for p in d["payloads"]),
        expected=tuple(d["expected"]), checked=tuple(d["checked"]), flags=tuple(d["flags"]),
        source=d["source"],
        error=None if err is None else ExpectedError(err["index"], err["rule"], tuple(err["acceptable"])),
    )


def _cached(kind: str, per_context: int, seed: int, cache: Path | str | None,
            make: Callable[[], list[Case]]) -> list[Case]:
    """*make()*'s cases, read from or written to the *cache* folder (JSON, written
    atomically; an unreadable or unwritable cache is ignored)."""
    if cache is None:
        return make()
    import json
    import os
    import tempfile

    path = Path(cache) / f"conform-{kind}-{_drawn_key(kind, per_context, seed)}.json"
    try:
        return [_case_from_json(d) for d in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    cases = make()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".conform-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump([_case_json(c) for c in cases], f)
        os.replace(tmp, path)
        # keep the newest few per kind (other seeds and counts; older sources go)
        old = sorted(path.parent.glob(f"conform-{kind}-*.json"), key=lambda p: p.stat().st_mtime)[:-8]
        for stale in old:
            stale.unlink(missing_ok=True)
    except OSError:
        pass
    return cases
