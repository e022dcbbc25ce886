"""Kueue's CRDs at the pinned version, as its chart renders them (the chart's CRDs are templates), for the tests that
check the platform's and team stacks' queue objects with refcheck (its reference data has no copy of them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.kueue.values import NAMESPACE, chart_values
from components.scheduling import SYSTEM_PLACEMENT
from components.versions import KUEUE
from tests.conftest import REPO

CHARTS = REPO.parent / "shared" / "reference" / "charts"
CHART = CHARTS / f"kueue-{KUEUE.version}"


def kueue_crds() -> list[dict[str, Any]]:
    from components.tools.cluster_model import helm

    release = {
        "name": KUEUE.name,
        "namespace": NAMESPACE,
        "chart": KUEUE.name,
        "version": KUEUE.version,
        "values": chart_values(placement=SYSTEM_PLACEMENT),
    }
    return helm.crds(release, CHARTS, "1.35.0")


def kueue_crds_file(folder: Path) -> tuple[Path, int]:
    """The CRDs written to one file in `folder`, and how many there are."""
    crds = kueue_crds()
    path = folder / "kueue-crds.yaml"
    path.write_text(yaml.safe_dump_all(crds))
    return path, len(crds)
