"""The seed corpus of fuzz campaigns and the conformance suite: streams with their context.

Sources, named in campaign definitions:

``builtin``
    :func:`pgwire_spec.corpus.seeds.builtin_streams` (always there);
``fixtures`` / ``fixtures:PATH``
    the golden fixtures (``$PGWIRE_SPEC_FIXTURES``, ``fixtures/`` of a source checkout, the
    installed package's copy, or PATH): one stream per fixture group (option set), in capture order;
``findings:PATH``
    regression fixtures written by earlier campaigns (same format).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from .._resources import ResourceError, fixtures_dir
from ..errors import PgWireError
from .seeds import SeedStream, builtin_streams

__all__ = ["fixtures_root", "load_fixture_streams", "load_corpus", "CorpusError"]


class CorpusError(PgWireError):
    """A corpus source that does not exist or cannot be read."""


def fixtures_root() -> Path | None:
    """Where the golden fixtures are (:func:`pgwire_spec._resources.fixtures_dir`:
    ``$PGWIRE_SPEC_FIXTURES``, the checkout, or the installed package); None if nowhere."""
    try:
        return fixtures_dir()
    except ResourceError:
        return None


def load_fixture_streams(root: Path | str | None = None) -> list[SeedStream]:
    """One stream per fixture group under *root* (default :func:`fixtures_root`), with each
    payload's expected JSON, flags and case id. None installed: an empty list."""
    from ..capture.fixture import FixtureError, find_fixture_files, read_fixture

    base = Path(root) if root is not None else fixtures_root()
    if base is None:
        return []
    if not base.exists():
        raise CorpusError(f"fixtures path {base} does not exist")
    out = []
    for path in find_fixture_files([base]):
        try:
            fx = read_fixture(path)
        except FixtureError:
            continue  # other formats living next to them (walsender sessions)
        stem = path.name.split(".json")[0]
        for g in fx.groups:
            if not g.cases:
                continue
            out.append(SeedStream(
                name=f"{stem}/{g.name}",
                options=dict(g.context),
                payloads=tuple(bytes.fromhex(c.hex) for c in g.cases),
                source=f"fixture:{path.name}",
                expected=tuple(c.expected for c in g.cases),
                flags=tuple(tuple(c.flags) for c in g.cases),
                ids=tuple(c.id for c in g.cases),
            ))
    return out


def load_corpus(sources: Sequence[str] | str = ("builtin", "fixtures")) -> list[SeedStream]:
    """The streams of every named source, in order (see the module docs)."""
    if isinstance(sources, str):
        sources = [s.strip() for s in sources.split(",") if s.strip()]
    out: list[SeedStream] = []
    for src in sources:
        name, _, arg = src.partition(":")
        if name == "builtin":
            out.extend(builtin_streams())
        elif name == "fixtures":
            out.extend(load_fixture_streams(arg or None))
        elif name == "findings":
            if not arg:
                raise CorpusError("findings: needs a path (findings:DIR)")
            out.extend(load_fixture_streams(arg))
        else:
            raise CorpusError(f"unknown corpus source {src!r}: expected builtin, fixtures[:PATH] or findings:PATH")
    return out


def describe(streams: Iterable[SeedStream]) -> str:
    """``N streams, M payloads`` for progress lines."""
    streams = list(streams)
    return f"{len(streams)} streams, {sum(len(s.payloads) for s in streams)} payloads"
