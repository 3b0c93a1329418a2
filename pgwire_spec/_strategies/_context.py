"""The protocol context a stream is generated for: the options of START_REPLICATION."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st

from ..errors import OptionError
from ..pgoutput import _catalogue
from ..pgoutput.decoder import _check_options, decoder_options, normalize_streaming

__all__ = ["ProtocolContext", "contexts", "Streaming", "Origin"]

Streaming = Literal["off", "on", "parallel"]
Origin = Literal["any", "none"]


@dataclass(frozen=True, slots=True)
class ProtocolContext:
    """What the client asked for in START_REPLICATION, so what the server may send.

    ``origin`` is the pgoutput ``origin`` option (servers >= 16): ``None`` when not sent,
    ``"any"`` or ``"none"``; with ``"none"`` changes that came from another origin are not
    published, so no Origin message appears.
    """

    protocol_version: int = 1
    streaming: Streaming = "off"
    two_phase: bool = False
    binary: bool = False
    messages: bool = False
    origin: Origin | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "streaming", normalize_streaming(self.streaming))
        _check_options(self.protocol_version, self.streaming, self.two_phase)
        if self.origin not in (None, "any", "none"):
            raise OptionError(f"origin must be 'any' or 'none', found {self.origin!r}")

    @property
    def decoder_options(self) -> dict[str, Any]:
        """The keyword arguments of :class:`~pgwire_spec.PgOutputDecoder` for this context."""
        return decoder_options(self)

    @property
    def abort_tail(self) -> bool:
        """Stream Abort carries its LSN and time only with streaming = parallel."""
        return self.streaming == "parallel"

    @property
    def tags(self) -> frozenset[str]:
        """The pgoutput message tags a server may send in this context."""
        tags = set(_catalogue.tags_sent(self.protocol_version, self.streaming, self.two_phase, self.messages))
        if self.origin == "none":
            tags.discard("O")
        return frozenset(tags)

    @property
    def tuple_kinds(self) -> frozenset[str]:
        """The TupleData kinds a server may send in this context."""
        return frozenset("ntub" if self.binary else "ntu")


def contexts(
    *,
    protocol_version: int | None = None,
    streaming: Streaming | bool | None = None,
    two_phase: bool | None = None,
    binary: bool | None = None,
    messages: bool | None = None,
    origin: Origin | None = None,
) -> st.SearchStrategy[ProtocolContext]:
    """Protocol contexts a server accepts; every argument left as ``None`` is drawn.

    ``origin`` is drawn among "not sent" (``None``), ``'any'`` and ``'none'``; for a context
    without the option, build a :class:`ProtocolContext` yourself.
    """
    fixed_streaming = None if streaming is None else normalize_streaming(streaming)
    if protocol_version is not None or fixed_streaming is not None or two_phase is not None:
        # Fail when the strategy is made, not when a value is drawn, for impossible fixed sets.
        _check_options(
            protocol_version if protocol_version is not None else 4,
            fixed_streaming or "off",
            bool(two_phase),
        )

    @st.composite
    def draw_context(draw: st.DrawFn) -> ProtocolContext:
        low = 1
        if fixed_streaming == "on":
            low = 2
        if fixed_streaming == "parallel":
            low = 4
        if two_phase:
            low = max(low, 3)
        pv = protocol_version if protocol_version is not None else draw(st.integers(low, 4))
        if fixed_streaming is not None:
            mode = fixed_streaming
        else:
            choices: list[str] = ["off"]
            if pv >= 2:
                choices.append("on")
            if pv >= 4:
                choices.append("parallel")
            mode = draw(st.sampled_from(choices))
        tp = two_phase if two_phase is not None else (pv >= 3 and draw(st.booleans()))
        b = binary if binary is not None else draw(st.booleans())
        msgs = messages if messages is not None else draw(st.booleans())
        org = origin if origin is not None else draw(st.sampled_from([None, "any", "none"]))
        return ProtocolContext(pv, mode, tp, b, msgs, org)  # type: ignore[arg-type]

    return draw_context()
