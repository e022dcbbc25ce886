"""The catalogue of flows (`components.tools.cluster_model.flows`): its page never drifts from it, every entry names its
source, and the shipped stacks' previews judge every promised flow open through NetworkPolicy and Istio."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.tools.cluster_model import check_previews
from components.tools.cluster_model.flows import CATALOGUE, connections, judge, markdown
from components.tools.cluster_model.network import Cluster

from .test_platform_model import CHARTS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "flows.md"


def test_the_flows_page_is_the_catalogue_rendered():
    assert PAGE.read_text() == markdown(), "regenerate docs/flows.md as its first comment says"


def test_every_flow_names_where_upstream_says_so():
    for flow in CATALOGUE:
        assert "https://" in flow.citation or "pinned tree" in flow.citation, flow.feature


@pytest.mark.subprocess
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_shipped_stacks_judge_every_promised_flow_open_and_find_the_kubeflow_ones(stack, request, tmp_path):
    from components.tools.preview.folder import write_preview

    write_preview(request.getfixturevalue(stack), tmp_path / stack)
    platform, _ = check_previews([tmp_path / stack], CHARTS)
    cluster = Cluster([o for _, o in platform.objects], platform.workloads, platform.vpc, platform.pod_identity)
    judged = [(flow, c, judge(cluster, c)) for flow, c in connections(cluster)]
    assert [f"{c.what}: {why}" for flow, c, why in judged if flow.open and why is not None] == []
    found = {flow.feature for flow, _, _ in judged}
    # Both stacks run Kubeflow with a team: its flows are found, not vacuously open.
    for feature in ("Kubeflow apps", "notebook culling", "Kubeflow Pipelines, Katib", "metrics", "cluster DNS"):
        assert feature in found, feature
