"""Campaign definition files (YAML), as kept in ``fuzz/campaigns/`` of the repository.

A file holds the fields of :class:`~pgwire_spec.fuzz.shards.Campaign`::

    name: smoke
    engines: [mutate, generate]
    corpus: [builtin, fixtures]
    budget: 60
"""

from __future__ import annotations

from pathlib import Path

from .. import _resources
from ..errors import PgWireError
from .shards import Campaign

__all__ = ["CampaignError", "campaigns_dir", "load_campaign"]


class CampaignError(PgWireError):
    """A campaign definition that is missing or not valid."""


def campaigns_dir() -> Path:
    """The shipped campaign definitions (``fuzz/campaigns/`` of a checkout, or the installed
    package's copy)."""
    try:
        return _resources.campaigns_dir()
    except _resources.ResourceError as exc:
        raise CampaignError(str(exc)) from None


def load_campaign(name_or_path: str | Path) -> Campaign:
    """A campaign from a YAML file, or by name from :func:`campaigns_dir`."""
    import yaml

    path = Path(name_or_path)
    if not path.is_file():
        cand = campaigns_dir() / f"{name_or_path}.yaml"
        if not cand.is_file():
            known = sorted(p.stem for p in campaigns_dir().glob("*.yaml")) if campaigns_dir().is_dir() else []
            raise CampaignError(f"no campaign file {str(name_or_path)!r} (known campaigns: {', '.join(known) or 'none'})")
        path = cand
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CampaignError(f"{path}: cannot read the campaign: {exc}") from None
    if not isinstance(data, dict):
        raise CampaignError(f"{path}: expected a mapping of campaign fields, found {type(data).__name__}")
    data.setdefault("name", path.stem)
    try:
        return Campaign.from_mapping(data)
    except (TypeError, ValueError) as exc:
        raise CampaignError(f"{path}: {exc}") from None
