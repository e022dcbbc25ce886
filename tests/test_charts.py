"""Every Helm release: how its CRDs follow a version bump, what it waits for, and values that would break the
cluster."""

from __future__ import annotations

import pytest

from components import versions
from components.tools.preview.inventory import Inventory, Recorded
from components.versions import CrdUpgrade

from .conftest import REPO

RELEASE = "kubernetes:helm.sh/v3:Release"


def releases(inventory: Inventory) -> dict[str, Recorded]:
    return {r.inputs["name"]: r for r in inventory.of_type(RELEASE)}


def test_every_chart_says_how_its_crds_follow_a_version_bump():
    by_name = {chart.name: chart.crds for chart in versions.charts()}
    assert by_name == {
        "karpenter": CrdUpgrade.OWN_RELEASE,
        "karpenter-crd": CrdUpgrade.TEMPLATES,
        "gpu-operator": CrdUpgrade.CHART_HOOK,
        "aws-fsx-csi-driver": CrdUpgrade.NONE,
        "aws-load-balancer-controller": CrdUpgrade.MANUAL,
        "kube-prometheus-stack": CrdUpgrade.CHART_HOOK,
        "neuron-helm-chart": CrdUpgrade.NONE,  # its DRA and UltraServer CRDs are templates, off here
        "aws-efa-k8s-device-plugin": CrdUpgrade.NONE,
        "prometheus-adapter": CrdUpgrade.NONE,
        "cert-manager": CrdUpgrade.TEMPLATES,
        "kserve": CrdUpgrade.OWN_RELEASE,
        "kserve-crd": CrdUpgrade.TEMPLATES,
        "kueue": CrdUpgrade.TEMPLATES,  # templates/crd/ of the chart, rendered with every upgrade
    }


def test_the_versions_page_states_the_crd_upgrade_of_every_chart():
    page = (REPO / "docs" / "versions.md").read_text()
    for chart in versions.charts():
        assert f"| `{chart.name}` | {chart.crds.value} |" in page, chart.name


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_what_each_chart_needs_for_its_crd_answer_is_set(stack, request):
    deployed = releases(request.getfixturevalue(stack))
    assert deployed["karpenter"].inputs["skipCrds"] is True  # the karpenter-crd release owns them
    assert deployed["karpenter-crd"].inputs.get("skipCrds", False) is False
    operator = deployed["gpu-operator"].inputs
    assert operator["values"]["operator"]["upgradeCRD"] is True
    # the hook's new custom resources would be validated against the old CRDs otherwise (chart values.yaml)
    assert operator["disableOpenapiValidation"] is True
    job = deployed["kube-prometheus-stack"].inputs["values"]["crds"]["upgradeJob"]
    assert job["enabled"] is True
    # never the chart's `latest`; the digest rides in the tag (the template honours `busybox.sha` only behind an
    # undeclared key), which tests/test_image_pins.py shows rendered
    assert job["image"]["busybox"]["tag"] == f"{versions.BUSYBOX.version}@{versions.BUSYBOX.digest}"
    assert job["nodeSelector"] == {"eksml.io/node-role": "system"}
    assert deployed["kueue"].inputs.get("skipCrds", False) is False  # its CRDs are templates of its chart


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_release_waits_for_cluster_dns_and_is_deleted_before_it(stack, request):
    inventory = request.getfixturevalue(stack)
    coredns = next(r for r in inventory.of_type("aws:eks/addon:Addon") if r.inputs["addonName"] == "coredns")
    for release in inventory.of_type(RELEASE):
        assert inventory.depends_on(release, coredns), release.inputs["name"]


def test_the_load_balancer_controller_mutates_no_service_so_its_downtime_blocks_no_service_create(dev):
    values = releases(dev)["aws-load-balancer-controller"].inputs["values"]
    assert values["enableServiceMutatorWebhook"] is False


def test_monitors_of_control_plane_parts_eks_does_not_expose_are_off(dev):
    """Otherwise KubeControllerManagerDown and KubeSchedulerDown (critical) would fire forever on EKS."""
    values = releases(dev)["kube-prometheus-stack"].inputs["values"]
    for part in ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy"):
        assert values[part] == {"enabled": False}, part
