"""Oracles: what must hold for every fuzz case.

For the reference decoder (:class:`ReferenceOracle`):

* an accepted payload re-encodes to exactly its bytes (``roundtrip``), and its JSON form
  reads back to the same message (``json``, checked on a sample of accepted cases);
* a rejection is a :class:`~pgwire_spec.DecodeError` with a catalogue rule, never the
  ``internal`` rule (the fast and the tracing decoders disagree);
* no other exception (``exception``), no hang (``timeout``, enforced by the shard runner
  with a per-case timer) and bounded memory (``memory``);
* a stream is decoded by ``PgOutputDecoder`` strict and lenient with the same guarantees.

For an adapter (:class:`DifferentialOracle`): the adapter's answer agrees with the
reference's — both accept with the same JSON form, or both reject at the same payload.

A violation is ``(signature, oracle, detail)``; the signature groups violations with one
cause (oracle, message tag, field path or code location), numbers stripped.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

from ..corpus._fields import field_map
from ..errors import DecodeError, PgWireError
from ..jsonform import from_json, to_json
from ..pgoutput._codec import FAMILY
from ..pgoutput.decoder import PgOutputDecoder

__all__ = ["Violation", "ReferenceOracle", "DifferentialOracle", "signature_path"]

Violation = tuple[str, str, str]

_DIGITS = re.compile(r"\[\d+\]")
_COUNTS = re.compile(r" \(\d+ items expected, \d+ found\)")


def signature_path(path: str | None) -> str:
    """A field path without element numbers: ``new_tuple[3].length`` -> ``new_tuple[].length``,
    ``new_tuple (2 items expected, 0 found)`` -> ``new_tuple (length)``."""
    return _COUNTS.sub(" (length)", _DIGITS.sub("[]", path or ""))


def _tag(data: bytes) -> str:
    if not data:
        return "empty"
    c = data[0]
    return chr(c) if 32 < c < 127 else f"0x{c:02x}"


def _where(exc: BaseException) -> str:
    """The innermost frame of this package in *exc*'s traceback: ``module:function``."""
    frames = traceback.extract_tb(exc.__traceback__)
    for fr in reversed(frames):
        if "pgwire_spec" in fr.filename or fr.filename.startswith("<pgwire_spec"):
            name = fr.filename.rsplit("/", 1)[-1]
            return f"{name}:{fr.name}"
    return frames[-1].name if frames else "?"


def _field_at(data: bytes, offset: int, in_stream: bool, abort_tail: bool) -> str:
    best = "tag"
    for f in field_map(data, in_stream, abort_tail):
        if f.offset <= offset:
            best = f.path
        else:
            break
    return best


class ReferenceOracle:
    """Judge the reference decoder on payloads and streams; counts what it saw.

    Payloads go through the generated Python codec (the reference) and, when the C
    decoders are built (``pgwire_spec._speedups``), through those too: both must accept
    the same payloads with equal messages (``backend``), since ``decode_message`` and
    ``PgOutputDecoder`` take the C path first.
    """

    def __init__(self, json_every: int = 32) -> None:
        from ..pgoutput import _codec

        self.accepted = 0
        self.rejected = 0
        self.json_every = json_every
        self._decode = FAMILY.decode
        self._encode = FAMILY.encode
        self._c = _codec._DECODERS if getattr(_codec, "BACKEND", "python") == "c" else None

    def check_payload(self, data: bytes, in_stream: bool, abort_tail: bool) -> Violation | None:
        """None if the reference behaved on this payload, else the violation."""
        cmsg = None
        if self._c is not None:
            try:
                cmsg = self._c[data[0]](data, in_stream, abort_tail, True)
            except Exception:  # noqa: BLE001 - the C path refuses; the Python path explains
                cmsg = None
        try:
            msg = self._decode(data, in_stream, abort_tail)
        except DecodeError as err:
            self.rejected += 1
            if err.rule == "internal":
                return (f"internal:{_tag(data)}:{signature_path(err.field)}", "internal", str(err))
            if cmsg is not None:
                return (f"backend:c-accepts:{_tag(data)}:{err.rule}", "backend",
                        f"the C decoder accepts what the Python codec rejects ({err})")
            return None
        except RecursionError as exc:
            return (f"exception:RecursionError:{_tag(data)}", "exception", f"RecursionError: {exc}")
        except Exception as exc:  # noqa: BLE001 - exactly what the oracle looks for
            return (f"exception:{type(exc).__name__}:{_tag(data)}:{_where(exc)}", "exception",
                    f"{type(exc).__name__}: {exc}")
        self.accepted += 1
        if self._c is not None and cmsg != msg:
            what = "rejects" if cmsg is None else "decodes differently"
            return (f"backend:c-{what.split()[0]}:{_tag(data)}", "backend",
                    f"the C decoder {what} what the Python codec accepts")
        return self._check_accepted(msg, data, in_stream, abort_tail)

    def _check_accepted(self, msg: Any, data: bytes, in_stream: bool, abort_tail: bool) -> Violation | None:
        try:
            enc = self._encode(msg)
        except PgWireError as exc:
            return (f"encode:{_tag(data)}:{type(exc).__name__}", "roundtrip",
                    f"accepted, but its message does not encode: {exc}")
        except Exception as exc:  # noqa: BLE001
            return (f"encode:{_tag(data)}:{type(exc).__name__}:{_where(exc)}", "exception",
                    f"encoding the decoded message raised {type(exc).__name__}: {exc}")
        if enc != data:
            off = next((i for i, (a, b) in enumerate(zip(enc, data)) if a != b), min(len(enc), len(data)))
            path = _field_at(data, off, in_stream, abort_tail)
            return (f"roundtrip:{_tag(data)}:{signature_path(path)}", "roundtrip",
                    f"accepted, re-encodes differently from byte {off} ({path}): "
                    f"{data[off:off + 8].hex()} became {enc[off:off + 8].hex()}")
        if self.json_every and self.accepted % self.json_every == 0:
            try:
                back = from_json(to_json(msg))
            except Exception as exc:  # noqa: BLE001
                return (f"json:{_tag(data)}:{type(exc).__name__}", "json",
                        f"JSON form does not read back: {type(exc).__name__}: {exc}")
            if back != msg:
                return (f"json:{_tag(data)}:differs", "json", "JSON form reads back to another message")
        return None

    def check_stream(self, options: Mapping[str, Any], payloads: Sequence[bytes],
                     lenient: bool = True) -> Violation | None:
        """Decode *payloads* strict (and lenient, with *lenient*); the same guarantees per
        payload, and ``finish`` raises nothing but DecodeError."""
        rejected = False
        for strict in (True, False) if lenient else (True,):
            try:
                dec = PgOutputDecoder(strict=strict, **options)
            except PgWireError:
                self.rejected += 1
                return None  # options no server accepts: rejected up front, as documented
            abort_tail = dec.streaming == "parallel"
            for i, p in enumerate(payloads):
                in_stream = dec.in_stream
                try:
                    msg = dec.decode(p)
                except DecodeError as err:
                    if err.rule == "internal":
                        return (f"internal:{_tag(p)}:{signature_path(err.field)}", "internal", str(err))
                    rejected = rejected or strict
                    break
                except Exception as exc:  # noqa: BLE001
                    mode = "strict" if strict else "lenient"
                    return (f"exception:{type(exc).__name__}:{_tag(p)}:{_where(exc)}:{mode}", "exception",
                            f"message #{i} ({mode}): {type(exc).__name__}: {exc}")
                bad = self._check_accepted(msg, p, in_stream, abort_tail)
                if bad is not None:
                    return bad
            else:
                try:
                    dec.finish()
                except DecodeError:
                    rejected = rejected or strict
                except Exception as exc:  # noqa: BLE001
                    return (f"exception:{type(exc).__name__}:finish:{_where(exc)}", "exception",
                            f"finish(): {type(exc).__name__}: {exc}")
        if rejected:
            self.rejected += 1
        else:
            self.accepted += 1
        return None


class DifferentialOracle:
    """Compare an adapter with the reference on streams: same accepts, same JSON, same
    first rejection."""

    def __init__(self, adapter: Any) -> None:
        from ..conformance.adapters.reference import decode_case

        self.adapter = adapter
        self.reference = decode_case
        self.accepted = 0
        self.rejected = 0

    def check_stream(self, options: Mapping[str, Any], payloads: Sequence[bytes]) -> Violation | None:
        from ..conformance.runner import first_difference
        from ..conformance.shapes import compare_only

        try:
            ref = self.reference(options, payloads)
        except PgWireError:
            self.rejected += 1
            return None  # a context no server negotiates
        answer = self.adapter.run({"id": "fuzz", "context": dict(options), "payloads": [p.hex() for p in payloads]})
        if answer.skip is not None:
            return None
        if answer.crash is not None:
            kind = "timeout" if answer.crash.startswith("timeout") else "crash"
            first = _tag(payloads[0]) if payloads else "empty"
            return (f"diff:{kind}:{first}", kind, answer.crash)
        got = list(answer.results)
        ref_err = next((i for i, r in enumerate(ref) if "error" in r), None)
        got_err = next((i for i, r in enumerate(got) if "error" in r), None)
        n = len(payloads)
        if ref_err is None:
            self.accepted += 1
        else:
            self.rejected += 1
        # compare message by message up to the first rejection of either
        stop = min(x for x in (ref_err, got_err, n) if x is not None)
        for i in range(min(stop, len(got))):
            want, have = ref[i].get("message"), got[i].get("message")
            if want is not None and answer.unreported:  # fields the decoder does not report
                want = compare_only(want, answer.unreported)
            if want != have:
                path = first_difference(want, have) or "(value)"
                return (f"diff:json:{_tag(payloads[i])}:{signature_path(path)}", "differential",
                        f"message #{i}: the adapter's JSON differs at {path}")
        if ref_err == got_err:
            return None
        if got_err is None or (ref_err is not None and got_err > ref_err):
            i = ref_err if ref_err is not None else n
            rule = ref[i]["error"].get("rule", "") if i < len(ref) else ""
            tag = _tag(payloads[i]) if i < n else "end"
            return (f"diff:accepts:{tag}:{rule}", "differential",
                    f"the adapter accepts message #{i}, which the reference rejects ({rule})")
        tag = _tag(payloads[got_err]) if got_err < n else "end"
        text = str(got[got_err]["error"].get("message", ""))[:120] if isinstance(got[got_err]["error"], Mapping) else ""
        return (f"diff:rejects:{tag}", "differential",
                f"the adapter rejects message #{got_err}, which the reference accepts: {text}")
