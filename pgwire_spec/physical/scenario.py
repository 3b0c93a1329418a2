"""The ``physical`` section of a fake walsender scenario.

::

    server: {version: "15.20"}          # default: the recording's version, system id, timeline
    auth: {method: trust}
    physical:
      recording: fixtures/physical/pg15-timeline-switch.json.gz   # or just its file name
      split: caught-up                  # caught-up (default) | recorded
      slots: {archiver: 0/700000}       # physical slots and their restart_lsn (null: none)
      backup:                           # what BASE_BACKUP serves
        directory: path/to/datadir
        start_lsn: 0/80F8A8             # default: the first record of the newest timeline
        end_lsn: 0/817E38               # default: the end of its recorded WAL
        timeline: 2                     # default: the newest timeline

A recording or a backup directory given by a relative path is looked for in the current
directory, then in ``fixtures/physical/`` of the source tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._resources import fixtures_dir
from ..walsender.replay import _find, _read_json
from ..walsender.scenario import ScenarioError
from ..walsender.scenario import lsn_value as _lsn
from .backup import BackupSource
from .recording import PhysicalRecording, parse_recording
from .serve import PhysicalSource

__all__ = ["load_physical", "FIXTURES"]

#: The shipped physical recordings (the checkout's or the installed package's).
FIXTURES = fixtures_dir() / "physical"
_KEYS = ("recording", "split", "slots", "backup")


def _recording(path: str, value: Any, base: Path | None, roots: tuple[Path, ...] | None) -> PhysicalRecording:
    if isinstance(value, PhysicalRecording):
        return value
    if not isinstance(value, (str, Path)):
        raise ScenarioError(path, "the path of a physical recording (.json.gz)", repr(value))
    p = Path(value)
    if not p.is_absolute() and not p.exists() and not (base is not None and (base / p).exists()) \
            and (FIXTURES / p.name).exists():
        p = FIXTURES / p.name
    else:
        p = _find(p, base, roots, path)
    # The same bounds as a replay's file: a regular file, at most MAX_RECORDING_BYTES once
    # gunzipped, JSON of bounded nesting and size; then the recording's own structure.
    doc = _read_json(p, path)
    from ..capture.fixture import FixtureError  # the capture package imports psycopg: not at import time

    try:
        return parse_recording(doc, p)
    except FixtureError as exc:
        raise ScenarioError(path, "a physical recording (pgwire-spec capture --physical)", str(exc)) from None
    except (TypeError, AttributeError, KeyError, ValueError) as exc:  # a value of the wrong JSON type
        raise ScenarioError(path, "a physical recording (pgwire-spec capture --physical)",
                            f"{type(exc).__name__}: {exc}"[:200]) from None


def load_physical(data: Any, path: str = "physical", *, base: Path | None = None,
                  roots: tuple[Path, ...] | None = None) -> PhysicalSource:
    """A :class:`PhysicalSource` from the section's YAML/JSON form (or one given whole).

    Relative paths are looked up from the current directory, then *base* (the scenario
    file's folder), then the shipped recordings; with *roots*, a recording or backup
    directory must lie under one of them or the shipped corpus, as a replay's file must."""
    if isinstance(data, PhysicalSource):
        return data
    if isinstance(data, (str, Path, PhysicalRecording)):
        data = {"recording": data}
    if not isinstance(data, Mapping):
        raise ScenarioError(path, f"a mapping with keys {', '.join(_KEYS)}", repr(data))
    unknown = [k for k in data if k not in _KEYS]
    if unknown:
        raise ScenarioError(path, f"keys among {', '.join(_KEYS)}", f"unknown key {unknown[0]!r}")
    if "recording" not in data:
        raise ScenarioError(path, "the key 'recording'", "it missing")
    rec = _recording(f"{path}.recording", data["recording"], base, roots)
    split = data.get("split", "caught-up")
    if split not in ("caught-up", "recorded"):
        raise ScenarioError(f"{path}.split", "caught-up or recorded", repr(split))
    slots_data = data.get("slots") or {}
    if isinstance(slots_data, list):
        slots_data = {name: None for name in slots_data}
    if not isinstance(slots_data, Mapping):
        raise ScenarioError(f"{path}.slots", "a mapping of slot name to restart_lsn", repr(slots_data))
    slots = tuple((str(name), 0 if lsn is None else _lsn(f"{path}.slots.{name}", lsn))
                  for name, lsn in slots_data.items())
    backup = None
    if data.get("backup") is not None:
        b = data["backup"]
        if isinstance(b, (str, Path)):
            b = {"directory": b}
        if not isinstance(b, Mapping) or "directory" not in b:
            raise ScenarioError(f"{path}.backup", "a mapping with a directory (and start_lsn, end_lsn, timeline)",
                                repr(b))
        extra = [k for k in b if k not in ("directory", "start_lsn", "end_lsn", "timeline", "checkpoint_lsn")]
        if extra:
            raise ScenarioError(f"{path}.backup", "keys among directory, start_lsn, end_lsn, timeline, "
                                "checkpoint_lsn", f"unknown key {extra[0]!r}")
        directory = Path(str(b["directory"]))
        if not directory.is_dir() and not directory.is_absolute() and (FIXTURES / directory).is_dir():
            directory = FIXTURES / directory
        else:
            directory = _find(directory, base, roots, f"{path}.backup.directory")
        if not directory.is_dir():
            raise ScenarioError(f"{path}.backup.directory", "an existing directory", str(directory))
        timeline = b.get("timeline")
        if timeline is not None and (not isinstance(timeline, int) or timeline not in rec.history.timelines):
            raise ScenarioError(f"{path}.backup.timeline", f"a timeline of the recording "
                                f"({', '.join(map(str, rec.history.timelines))})", repr(timeline))
        backup = BackupSource(
            directory,
            _lsn(f"{path}.backup.start_lsn", b["start_lsn"]) if b.get("start_lsn") is not None else None,
            _lsn(f"{path}.backup.end_lsn", b["end_lsn"]) if b.get("end_lsn") is not None else None,
            timeline,
            _lsn(f"{path}.backup.checkpoint_lsn", b["checkpoint_lsn"]) if b.get("checkpoint_lsn") is not None
            else None,
        )
        tli = timeline or rec.timeline
        first, last = rec.store.range(tli)
        for key, value in (("start_lsn", backup.start_lsn), ("end_lsn", backup.end_lsn)):
            if value is not None and not first <= value <= last:
                raise ScenarioError(f"{path}.backup.{key}", f"a position in the recorded WAL of timeline {tli}",
                                    repr(b[key]))
    return PhysicalSource(rec, split, slots, backup)
