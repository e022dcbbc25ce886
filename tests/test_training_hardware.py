"""Training hardware used: the training node class puts containerd's images and pods' scratch on
the instances' NVMe RAID0, and a team pool on an EFA node class gets the label the EFA device plugin's DaemonSet
selects, so the plugin (rendered from its pinned chart) runs there."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.gpu.efa import efa_values
from components.karpenter.config import KarpenterConfig
from components.karpenter.render import render_nodeclass, render_nodepool
from components.scheduling import EFA_LABEL, GPU_TAINT
from components.team.offer import offered_pool
from components.team.plan import plan_team
from components.tools.cluster_model import helm
from components.tools.cluster_model.landing import why_not
from components.tools.cluster_model.nodes import from_node_pool
from components.tools.cluster_model.workloads import from_pod_template
from components.versions import EFA_DEVICE_PLUGIN

from .karpenter_support import node_class
from .test_karpenter_nodeclasses import CONTEXT
from .test_platform_model import CHARTS
from .test_team import PLATFORM, offer, team


def test_the_training_node_class_keeps_images_and_scratch_on_the_nvme_raid0():
    spec = render_nodeclass("gpu-training", node_class(preset="gpu-training"), CONTEXT)["spec"]
    assert spec["instanceStorePolicy"] == "RAID0"
    # The root volume holds the OS only, so it is no longer sized for images.
    (root,) = spec["blockDeviceMappings"]
    assert root["ebs"]["volumeSize"] == "200Gi"


def efa_offer() -> Any:
    """The prod platform with its training pool's node class attaching EFA (as the platform exports it)."""
    outputs = copy.deepcopy(PLATFORM)
    outputs["nodePools"]["training"]["efa"] = True
    return offer(nodePools=outputs["nodePools"])


def team_training_pool(platform: Any) -> dict[str, Any]:
    plan = plan_team(team(nodePool={"preset": "gpu-training", "limits": {"nvidia.com/gpu": "8"}}), platform)
    assert plan.node_pool_manifest is not None
    return plan.node_pool_manifest


def test_the_platform_exports_whether_a_pools_node_class_attaches_efa():
    config = KarpenterConfig.model_validate(
        {
            "nodeClasses": {"efa": {"preset": "gpu-training", "efaLayout": "p5.48xlarge"}},
            "nodePools": {"train": {"preset": "gpu-training", "nodeClass": "efa"}},
        }
    )
    assert offered_pool(config.node_pools["train"], efa=True)["efa"] is True
    # A platform from before the output says nothing, which the team stack reads as no EFA.
    assert offer().node_pools["training"].efa is False


def test_a_team_pool_on_an_efa_class_is_labelled_for_the_efa_device_plugin():
    labels = team_training_pool(efa_offer())["spec"]["template"]["metadata"]["labels"]
    assert labels[EFA_LABEL] == "true"
    assert EFA_LABEL not in team_training_pool(offer())["spec"]["template"]["metadata"]["labels"]


@pytest.mark.subprocess
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
def test_the_efa_device_plugin_daemonset_schedules_on_a_team_pool_of_an_efa_class():
    release = {
        "name": EFA_DEVICE_PLUGIN.name,
        "namespace": "kube-system",
        "chart": EFA_DEVICE_PLUGIN.name,
        "version": EFA_DEVICE_PLUGIN.version,
        "values": efa_values([GPU_TAINT]),
    }
    try:
        objects = helm.render(release, CHARTS, "1.35")
    except helm.HelmUnavailable as error:
        pytest.skip(str(error))
    (daemonset,) = [o for o in objects if o["kind"] == "DaemonSet"]
    plugin = from_pod_template("helm", "DaemonSet", "kube-system", "efa", None, daemonset["spec"]["template"])
    assert why_not(plugin, from_node_pool(team_training_pool(efa_offer()))) is None
    # Without the label (a platform that does not say its class attaches EFA) the plugin would not run there.
    assert why_not(plugin, from_node_pool(team_training_pool(offer()))) is not None
    # The platform's own EFA pools get it the same way.
    config = KarpenterConfig.model_validate(
        {
            "nodeClasses": {"efa": {"preset": "gpu-training", "efaLayout": "p5.48xlarge"}},
            "nodePools": {"train": {"preset": "gpu-training", "nodeClass": "efa"}},
        }
    )
    platform_pool = render_nodepool("train", config.node_pools["train"], efa=True)
    assert why_not(plugin, from_node_pool(platform_pool)) is None
