"""The generate engine: valid and malformed streams drawn from :mod:`pgwire_spec.strategies`.

Draws are reproducible: hypothesis runs with a fixed ``@seed``, no example database, the
generate phase only and no deadline, so the same seed gives the same streams with the same
hypothesis version. Each drawn stream is one fuzz case judged by the stream oracle; a
malformed stream must also be rejected at its ``.index`` with its ``.expected_rule``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["strategies_available", "draw_examples", "each_example", "CONTEXTS", "stream_strategies"]

#: Decoding contexts the engine draws for, in turn (keyword arguments of the strategies).
CONTEXTS: tuple[dict[str, Any], ...] = (
    {"protocol_version": 1, "streaming": "off", "two_phase": False, "binary": False, "messages": False},
    {"protocol_version": 1, "streaming": "off", "two_phase": False, "binary": False, "messages": True},
    {"protocol_version": 2, "streaming": "on", "two_phase": False, "binary": True, "messages": True},
    {"protocol_version": 3, "streaming": "on", "two_phase": True, "binary": False, "messages": False},
    {"protocol_version": 4, "streaming": "parallel", "two_phase": True, "binary": True, "messages": True},
    {"protocol_version": 4, "streaming": "on", "two_phase": False, "binary": False, "messages": False},
)


def strategies_available(name: str = "streams") -> bool:
    """Whether ``pgwire_spec.strategies`` provides *name* (it is written in parallel)."""
    try:
        # hypothesis first: importing it runs the package's entry-point hook, which
        # imports pgwire_spec.strategies (importing them the other way round is circular)
        import hypothesis  # noqa: F401

        mod = importlib.import_module("pgwire_spec.strategies")
    except ImportError:  # pragma: no cover
        return False
    # Both stream strategy modules loaded before any draw: importing the malformed-stream
    # module changes what streams() draws afterwards (an import-order effect inside the
    # strategies), so the same seed must always see both loaded.
    for other in ("streams", "malformed_streams"):
        getattr(mod, other, None)
    return callable(getattr(mod, name, None))


def _settings(n: int, seed: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis import seed as hseed

    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        fn = settings(
            max_examples=n, database=None, deadline=None, phases=[Phase.generate],
            suppress_health_check=list(HealthCheck), print_blob=False,
        )(fn)
        return hseed(seed)(fn)

    return wrap


def each_example(strategy: Any, n: int, seed: int, body: Callable[[Any], None]) -> None:
    """Call *body* on up to *n* examples of *strategy*, drawn reproducibly from *seed*.

    *body* must not raise: an exception would make hypothesis shrink and re-raise it.
    """
    from hypothesis import given

    @_settings(n, seed)
    @given(strategy)
    def run(example: Any) -> None:
        body(example)

    run()


def draw_examples(strategy: Any, n: int, seed: int) -> list[Any]:
    """Up to *n* examples of *strategy*, the same ones for the same seed."""
    out: list[Any] = []
    each_example(strategy, n, seed, out.append)
    return out


def stream_strategies(context: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(``valid``|``malformed``, strategy) for one context, as far as the strategies exist."""
    from .. import strategies

    kwargs = dict(context)
    if strategies_available("streams"):
        yield "valid", strategies.streams(**kwargs)
    if strategies_available("malformed_streams"):
        yield "malformed", strategies.malformed_streams(**kwargs)
