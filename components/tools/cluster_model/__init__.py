"""A model of the running platform, built from the offline preview's output: the pods every object, Helm release,
operator and managed add-on will run, the nodes each NodePool and node group brings up, and rules that must hold
between them (every pod lands on a node its images can run on; every node gets its device plugins and agents; every
pod's scheduler exists; what blocks pod creation survives node loss). `python -m components.tools.cluster_model` runs
it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ...images import architectures
from .platform import Platform, StackView, build, load
from .rules import Problem, check

__all__ = ["Platform", "Problem", "StackView", "check_previews", "check_views", "load"]


def check_previews(previews: Iterable[Path], charts: Path | None) -> tuple[Platform, list[Problem]]:
    """The model of what the preview folders put in one cluster, and every rule it breaks."""
    platform = load(previews, charts)
    return platform, check(platform, architectures)


def check_views(views: Iterable[StackView], charts: Path | None) -> tuple[Platform, list[Problem]]:
    """The same, from what a preview holds in memory (no folder read back)."""
    platform = build(views, charts)
    return platform, check(platform, architectures)
