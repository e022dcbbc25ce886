"""The system node group hosts every controller with room to lose a node; config refuses one that cannot."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.cluster.capacity import ADDON_SOURCE, Requests, SystemCapacity, node_capacity
from components.config.errors import ConfigError
from components.platform.parse import parse_config
from components.tools.preview import main

from .conftest import PROJECT, REPO, stack_config

CHARTS = REPO.parent / "shared" / "reference" / "charts"


def test_node_room_follows_the_eks_ami_reservations():
    # m7i.large: 2 vCPU, 8 GiB, 29 pods. CPU reserved 60m + 10m; memory 255 + 11 x 29 MiB and 100 MiB eviction.
    assert node_capacity("m7i.large") == Requests(2000 - 70, 8192 - (255 + 319) - 100)
    # m6i.xlarge: 4 vCPU, 16 GiB, 58 pods. CPU 60 + 10 + 5 + 5.
    assert node_capacity("m6i.xlarge") == Requests(4000 - 80, 16384 - (255 + 638) - 100)
    # r7i.2xlarge: 8 vCPU, 64 GiB; CPU 60 + 10 + 10 + 4 x 2.5.
    assert node_capacity("r7i.2xlarge") == Requests(8000 - 90, 65536 - (255 + 638) - 100)
    assert node_capacity("t3.large") is None  # not in the tables: the preview says so instead of guessing


def test_the_dev_stack_load_is_summed_from_every_controller_pinned_to_the_system_nodes():
    config = parse_config(stack_config("dev"), project=PROJECT, stack="dev")
    # Deployments: Karpenter 2 x 1000m, CoreDNS 2 x 100m, EBS CSI controller 2 x 60m, load balancer controller
    # 2 x 100m, FSx CSI controller 2 x 40m, GPU Operator 200m with NFD's master 100m and gc 10m, bin-packing
    # scheduler 2 x 100m, Prometheus 500m, Alertmanager 20m, Prometheus operator 100m, kube-state-metrics 10m,
    # Grafana 100m with two 50m sidecars, prometheus-adapter 2 x 50m, cert-manager (Kubeflow is on) 2 x (20m + 10m
    # + 10m), Kueue (a GPU pool) 2 x 35m. DaemonSets on 3 nodes: aws-node 25m, kube-proxy 100m, EBS CSI node 30m,
    # node monitoring agent 10m, FSx CSI node 30m, node-exporter 100m, Istio CNI (Kubeflow) 100m.
    deployments_cpu = 2000 + 200 + 120 + 200 + 80 + 310 + 200 + 500 + 20 + 100 + 10 + 200 + 2 * 50 + 2 * 40
    deployments_cpu += 2 * 35  # Kueue
    deployments_cpu += 2 * 100  # metrics-server
    deployments_memory = 2048 + 140 + 480 + 256 + 272 + 356 + 256 + 2048 + 400 + 100 + 32 + 228 + 256 + 2 * 240
    deployments_memory += 2 * 512  # Kueue
    deployments_memory += 2 * 200  # metrics-server
    daemons_cpu, daemons_memory = 25 + 100 + 30 + 10 + 30 + 100 + 100, 0 + 0 + 120 + 30 + 104 + 30 + 100
    capacity = config.system_capacity
    assert capacity.nodes == 3
    assert capacity.requests == Requests(deployments_cpu + 3 * daemons_cpu, deployments_memory + 3 * daemons_memory)
    assert capacity.requests == Requests(5575, 9928)
    # dev keeps room for its controllers with a node lost: two of its three nodes hold them, one would not.
    two, one = capacity.room(2), capacity.room(1)
    assert two is not None  # m7i.xlarge is in the sizing tables
    assert one is not None
    assert capacity.requests.fits_in(two)
    assert not capacity.requests.fits_in(one)
    assert capacity.problem() is None
    assert capacity.warning() is None


def with_group(stack: str, **group) -> dict[str, Any]:
    cluster = json.loads(stack_config(stack)[f"{PROJECT}:cluster"])
    cluster["systemNodeGroup"] = {**cluster["systemNodeGroup"], **group}
    return {"cluster": cluster}


def test_a_group_too_small_for_its_controllers_is_refused_before_anything_is_created():
    overrides = with_group("dev", instanceTypes=["m7i.large"], minSize=1, desiredSize=1)
    with pytest.raises(
        ConfigError,
        match=r"cluster.systemNodeGroup: the controllers pinned to the system nodes request "
        r"4.79 vCPU, 8.9 GiB, more than 1 x m7i.large allocate \(1.93 vCPU, 7.3 GiB\)",
    ):
        parse_config(stack_config("dev", overrides), project=PROJECT, stack="dev")


def test_the_smallest_type_the_group_may_launch_decides(tmp_path):
    config = parse_config(
        stack_config("dev", with_group("dev", instanceTypes=["m7i.xlarge", "m7i.large"], desiredSize=3)),
        project=PROJECT,
        stack="dev",
    )
    assert config.system_capacity.instance_type == "m7i.large"


@pytest.mark.stack
def test_the_preview_prints_the_figure_and_warns_when_a_lost_node_would_leave_controllers_pending(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text((REPO / "Pulumi.yaml").read_text())
    stack_file = (
        (REPO / "Pulumi.dev.yaml")
        .read_text()
        .replace("instanceTypes: [m7i.xlarge, m6i.xlarge]", "instanceTypes: [m7i.large]")
        .replace("desiredSize: 2", "desiredSize: 3")
    )
    (tmp_path / "Pulumi.dev.yaml").write_text(stack_file)
    assert main(["--stack", "dev", "--out", str(tmp_path / "out"), "--project-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "system nodes: requests 5.58 vCPU, 9.7 GiB of 5.79 vCPU, 22.0 GiB allocatable on 3 x m7i.large" in printed
    assert "warning: cluster.systemNodeGroup: with one of the 3 system nodes lost, 3.86 vCPU" in printed


@pytest.mark.subprocess  # renders every chart with the pinned Helm
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
def test_the_sizing_counts_exactly_what_the_rendered_controllers_on_the_system_nodes_request(dev):
    from components.tools.cluster_model.rules import system_pods, system_pods_are_sized, with_operator_labels
    from components.tools.preview import platform_model

    platform, _ = platform_model(dev, CHARTS)
    assert platform.unrendered == {}
    nodes = with_operator_labels(platform)
    assert system_pods_are_sized(platform, nodes) == []  # every one requests CPU and memory and limits memory
    capacity = parse_config(stack_config("dev"), project=PROJECT, stack="dev").system_capacity
    rendered = Requests(0, 0)
    for pod in system_pods(platform, nodes):
        one = Requests(int(pod.requests["cpu"] * 1000), int(pod.requests["memory"] / 2**20))
        rendered = rendered + one * (capacity.nodes if pod.replicas is None else pod.replicas)
    # The add-ons' pods are not rendered: their figures are the sizing's own.
    counted = SystemCapacity(
        tuple(w for w in capacity.workloads if w.source != ADDON_SOURCE), capacity.nodes, None, ""
    ).requests
    assert rendered == counted
    names = {pod.name for pod in system_pods(platform, nodes)}
    assert {"aws-load-balancer-controller", "kube-prometheus-stack-grafana", "kube-prometheus-stack-operator"} <= names
