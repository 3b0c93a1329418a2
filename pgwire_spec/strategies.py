"""Hypothesis strategies for pgoutput streams (being written; see issue 5).

The hypothesis entry point of this package (pyproject.toml) calls
``_hypothesis_setup_hook`` when hypothesis is imported.
"""

from __future__ import annotations

__all__: list[str] = []


def _hypothesis_setup_hook() -> None:
    """Register this package's strategies with hypothesis (filled in by issue 5)."""
