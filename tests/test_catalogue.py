"""The protocol catalogue against the grammars, the message classes, the decoder and the
golden fixtures: one entry per layout and class, and its facts hold on real streams."""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest

from pgwire_spec import PgOutputDecoder, catalogue, encode
from pgwire_spec.conformance.cases import fixture_streams
from pgwire_spec.errors import DecodeError
from pgwire_spec.pgoutput import _catalogue as pg_catalogue
from pgwire_spec.pgoutput import grammar as pg_grammar
from pgwire_spec.pgoutput import messages as pg_messages
from pgwire_spec.replication import grammar as repl_grammar
from pgwire_spec.replication import messages as repl_messages
from pgwire_spec.wire import grammar as wire_grammar
from pgwire_spec.wire import messages as wire_messages
from tests.pgoutput.vectors import VECTORS

_LAYERS = {
    "pgoutput": (pg_grammar.LAYOUTS, pg_messages.MESSAGE_TYPES),
    "replication": (repl_grammar.LAYOUTS, repl_messages.MESSAGE_TYPES),
    "wire": (wire_grammar.LAYOUTS, wire_messages.MESSAGE_TYPES),
}


@pytest.mark.parametrize("layer", list(_LAYERS))
def test_one_entry_per_grammar_layout_and_per_class(layer: str) -> None:
    layouts, classes = _LAYERS[layer]
    entries = catalogue.entries(layer)  # type: ignore[arg-type]
    assert [e.name for e in entries][:len(layouts)] == list(layouts), "every layout, in the grammar's order"
    assert {e.cls for e in entries} == set(classes.values()), "every message class, and no other"
    for e in entries:
        assert e.layer == layer and e.cls is classes.get(e.name, e.cls)
        assert e.tag == getattr(e.cls, "tag", None), e.name
        assert catalogue.by_class(e.cls) is e


def test_every_pgoutput_layout_has_its_facts_and_no_facts_are_stale() -> None:
    # A new pgoutput message kind needs its layout, its class and this entry: the protocol
    # version and options that make a server send it cannot be read from the layout.
    assert list(pg_catalogue.FACTS) == list(pg_grammar.LAYOUTS)
    for e in catalogue.entries("pgoutput"):
        assert e.facts.docs and e.servers[-1] == catalogue.MAJORS[-1], e.name
        for path in e.facts.values:
            head = path.split(".")[0]
            assert head in {f.name for f in e.fields}, (e.name, path)


def test_streamed_xid_is_the_grammars_in_stream_condition() -> None:
    for e in catalogue.entries("pgoutput"):
        xid = [f for f in e.fields if f.when == "in_stream"]
        assert e.streamed_xid == bool(xid), e.name
        assert all(f.name == "xid" for f in xid)
    assert pg_catalogue.STREAMED_XID >= frozenset("RYIUDTM")
    assert not pg_catalogue.STREAMED_XID & frozenset("BCOSEcAbPKrp")


def test_errata_cited_by_the_catalogue_exist() -> None:
    from pgwire_spec import _spec

    ids = {e["id"] for e in _spec.load("errata.yaml")["errata"]}
    for e in catalogue.CATALOGUE:
        assert set(e.facts.errata) <= ids, e.name


_CONTEXTS = [
    dict(protocol_version=pv, streaming=st, two_phase=tp, messages=ms)
    for pv, st, tp, ms in itertools.product((1, 2, 3, 4), ("off", "on", "parallel"), (False, True), (False, True))
    if not (st == "on" and pv < 2) and not (st == "parallel" and pv < 4) and not (tp and pv < 3)
]


def _opening(tag: str, parallel: bool) -> pg_messages.PgOutputMessage:
    """A message of *tag* that is legal first in a stream (between transactions)."""
    m = pg_messages
    return {
        "M": m.LogicalMessage(None, 0, 1, "p", b"x"),
        "S": m.StreamStart(7, True),
        "c": m.StreamCommit(7, 0, 1, 2, 3),
        "A": m.StreamAbort(7, 7, 1, 2) if parallel else m.StreamAbort(7, 7),
        "b": m.BeginPrepare(1, 2, 3, 7, "g"),
        "K": m.CommitPrepared(0, 1, 2, 3, 7, "g"),
        "r": m.RollbackPrepared(0, 1, 2, 3, 4, 7, "g"),
        "p": m.StreamPrepare(0, 1, 2, 3, 7, "g"),
    }[tag]


@pytest.mark.parametrize("ctx", _CONTEXTS, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_the_decoder_accepts_exactly_the_tags_the_catalogue_says_are_sent(ctx: dict[str, object]) -> None:
    """From outside the decoder: a message the catalogue says this context carries is not
    reported as not negotiated, and every other one is."""
    sent = pg_catalogue.tags_sent(**ctx)  # type: ignore[arg-type]
    assert set("BCORYIUDT") <= sent
    for tag in "MScAbKrp":
        if tag == "A" and ctx["streaming"] == "off":
            continue  # erratum E-PG18-STRAY-STREAM-ABORT: a warning, not an error
        dec = PgOutputDecoder(**ctx, strict=True)  # type: ignore[arg-type]
        payload = encode(_opening(tag, ctx["streaming"] == "parallel"))
        try:
            dec.decode(payload)
            rule = None
        except DecodeError as err:
            rule = err.rule
        assert (rule == "message-not-negotiated") == (tag not in sent), (tag, rule)


def test_every_fixture_message_is_sent_by_its_server_and_context() -> None:
    """The golden fixtures (captured from PostgreSQL 10-18) hold the catalogue's facts: each
    message appears only from its first server major on, and only in a context whose
    protocol version and options make a server send it (Stream Abort aside, erratum
    E-PG18-STRAY-STREAM-ABORT)."""
    checked = 0
    for stream in fixture_streams():
        major = int(re.match(r"pg(\d+)", stream.name).group(1))  # type: ignore[union-attr]
        opts = stream.options
        sent = pg_catalogue.tags_sent(
            opts.get("protocol_version", 1), opts.get("streaming", "off") or "off",
            bool(opts.get("two_phase")), bool(opts.get("messages")),
        )
        for payload in stream.payloads:
            tag = chr(payload[0])
            entry = pg_catalogue.BY_TAG[tag]
            assert major in entry.servers, (stream.name, entry.name)
            if not (tag == "A" and major >= 18):
                assert tag in sent, (stream.name, entry.name, opts)
            checked += 1
    assert checked > 1000


def test_every_vector_encodes_with_its_entrys_fields() -> None:
    for v in VECTORS:
        entry = catalogue.by_class(type(v.message))
        names = [f.name for f in entry.fields if f.const is None and not f.derived]
        assert names == [f.name for f in dataclasses.fields(v.message)], entry.name
        assert encode(v.message)[:1].decode("latin-1") == entry.tag


def test_not_negotiated_message_names_the_missing_option() -> None:
    dec = PgOutputDecoder(protocol_version=3, two_phase=True, streaming="off")
    payload = encode(pg_messages.StreamPrepare(0, 1, 2, 3, 4, "g"))
    with pytest.raises(DecodeError) as err:
        dec.decode(payload)
    assert err.value.rule == "message-not-negotiated"
    assert "streaming" in err.value.expected


def test_wire_senders_agree_with_the_classes() -> None:
    words = {"F": "frontend", "B": "backend", "FB": "both"}
    for e in catalogue.entries("wire"):
        assert words[e.cls.sender] == e.facts.sender, e.name  # type: ignore[attr-defined]
