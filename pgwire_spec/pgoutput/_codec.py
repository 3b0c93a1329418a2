"""The generated pgoutput codec: one decoder and encoder per layout of ``grammar``.

Decoding uses the C decoders generated from the same grammar (:mod:`pgwire_spec._cgen`)
when the extension is built and current, unless ``PGWIRE_SPEC_PURE_PYTHON=1``; the Python
codec stays the reference and explains every failure. :data:`BACKEND` says which is used.
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import Any

from .._codegen import Family
from . import grammar, messages

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
    from .. import _cgen

    _speedups = importlib.import_module("pgwire_spec._speedups")

    expected = _cgen.source_digest(_cgen.pgoutput_source())
    if _speedups.SOURCE_DIGEST != expected:
        raise ImportError(
            "pgwire_spec._speedups was built from another grammar: rebuild it "
            "(python -m pgwire_spec._cgen && pip install -e . --no-deps)"
        )
    classes: dict[str, type] = dict(messages.MESSAGE_TYPES)
    classes["RelationColumn"] = messages.RelationColumn
    _speedups.setup(classes, messages.UNCHANGED)
    return {tag: getattr(_speedups, f"decode_{codec.name}") for tag, codec in FAMILY.by_tag.items()}


#: "c" (generated C decoders) or "python" (generated Python decoders).
BACKEND = "python"
_DECODERS = PY_DECODERS
if os.environ.get("PGWIRE_SPEC_PURE_PYTHON", "") in ("", "0"):
    try:
        _DECODERS = load_c_decoders()
        BACKEND = "c"
    except ModuleNotFoundError:
        pass  # not built (no compiler at install time): the Python codec
    except (ImportError, TypeError) as exc:
        warnings.warn(f"pgoutput C decoders not used: {exc}", RuntimeWarning, stacklevel=2)


def decode_payload(
    data: bytes, in_stream: bool, abort_tail: bool, binary_ok: bool = True
) -> messages.PgOutputMessage:
    """Decode one pgoutput message; any failure becomes a precise DecodeError."""
    if BACKEND == "c":
        try:
            return _DECODERS[data[0]](data, in_stream, abort_tail, binary_ok)  # type: ignore[no-any-return]
        except Exception:
            pass  # the Python codec decodes or explains it
    return FAMILY.decode(data, in_stream, abort_tail, binary_ok)  # type: ignore[no-any-return]


def encode(message: Any) -> bytes:
    """Encode a pgoutput message object to its payload bytes."""
    return FAMILY.encode(message)
