"""The generated pgoutput codec: one decoder and encoder per layout of ``grammar``.

Decoding uses the C decoders generated from the same grammar (:mod:`pgwire_spec._cgen`)
when the extension is built and current, unless ``PGWIRE_SPEC_PURE_PYTHON=1``; the Python
codec stays the reference and explains every failure. :data:`BACKEND` says which is used.

A payload is decoded once by the fast path (C or Python); only when that fails does the
Python tracing pass run, once, to return the message or raise the precise DecodeError, so
errors are the same whichever backend decoded.
"""

from __future__ import annotations

import importlib
import os
import struct
import warnings
from types import ModuleType
from typing import Any

from .. import _cgen
from .._codegen import Fail, Family
from . import _cbuild, grammar, messages

FAMILY = Family(
    "pgoutput message",
    grammar.LAYOUTS,
    dict(messages.MESSAGE_TYPES),
    {id(grammar.RelationColumn): messages.RelationColumn},
)
CODECS = FAMILY.codecs
#: The generated Python decoders by tag byte (the reference).
PY_DECODERS = FAMILY.decoders


def load_c_decoders() -> dict[int, Any]:
    """The C decoders by tag byte; ImportError if the extension is missing or was built
    from another grammar than today's."""
    _speedups = importlib.import_module("pgwire_spec._speedups")

    expected = _cgen.source_digest(_cbuild.source())
    if _speedups.SOURCE_DIGEST != expected:
        raise ImportError(
            "pgwire_spec._speedups was built from another grammar: rebuild it "
            "(python -m pgwire_spec.pgoutput._cbuild && pip install -e . --no-deps)"
        )
    classes: dict[str, type] = dict(messages.MESSAGE_TYPES)
    classes["RelationColumn"] = messages.RelationColumn
    _speedups.setup(classes, messages.UNCHANGED)
    return {tag: getattr(_speedups, f"decode_{codec.name}") for tag, codec in FAMILY.by_tag.items()}


#: "c" (generated C decoders) or "python" (generated Python decoders).
BACKEND = "python"
#: With the C backend, the extension, whose writers the fake walsender uses too (a run of
#: text rows' TupleData, XLogData frames: see :mod:`pgwire_spec._cgen`), else None.
SPEEDUPS: ModuleType | None = None
_DECODERS = PY_DECODERS
#: The decoders that decode TupleData values at once (the C ones always do; the Python
#: ones otherwise on first access: TupleValues)
_EAGER_DECODERS = FAMILY.eager_decoders
if os.environ.get("PGWIRE_SPEC_PURE_PYTHON", "") in ("", "0"):
    try:
        _DECODERS = _EAGER_DECODERS = load_c_decoders()
        BACKEND = "c"
        SPEEDUPS = importlib.import_module("pgwire_spec._speedups")
    except ModuleNotFoundError:
        pass  # not built (no compiler at install time): the Python codec
    except (ImportError, TypeError) as exc:
        warnings.warn(f"pgoutput C decoders not used: {exc}", RuntimeWarning, stacklevel=2)


#: What a fast decoder (C or generated Python) raises on bad input: the generated code's Fail,
#: struct's and bounds errors, ValueError (the C module's Invalid, text that is not UTF-8).
#: Anything else is a bug of that decoder and must surface, not be explained away.
BAD_INPUT: tuple[type[BaseException], ...] = (Fail, struct.error, ValueError, TypeError, IndexError, KeyError)


def decode_payload(
    data: bytes, in_stream: bool, abort_tail: bool, binary_ok: bool = True
) -> messages.PgOutputMessage:
    """Decode one pgoutput message; any failure becomes a precise DecodeError."""
    fn = _DECODERS.get(data[0]) if data else None
    if fn is not None:
        try:
            return fn(data, in_stream, abort_tail, binary_ok)  # type: ignore[no-any-return]
        except BAD_INPUT:
            pass  # the tracing pass decodes or explains it
    return explain_payload(data, in_stream, abort_tail, binary_ok)


def explain_payload(
    data: bytes, in_stream: bool, abort_tail: bool, binary_ok: bool = True
) -> messages.PgOutputMessage:
    """After the fast path failed on *data*: the tracing pass, once (the message, or the
    precise DecodeError)."""
    return FAMILY.explain(bytes(data), in_stream, abort_tail, binary_ok)  # type: ignore[no-any-return]


def encode(message: Any) -> bytes:
    """Encode a pgoutput message object to its payload bytes."""
    return FAMILY.encode(message)
