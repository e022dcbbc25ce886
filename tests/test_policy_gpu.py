"""The GPU best practices (components/policy/gpu.py): how GPU pools are recognised, and each rule with a violating
and a compliant case."""

from __future__ import annotations

import json

import pytest

from components.policy import gpu as policy_gpu
from components.policy.rules import Resource
from tests.policy_support import RELEASE, broken, pool, pool_choosing, req, res, template_spec


@pytest.mark.parametrize(
    ("requirement", "gpu"),
    [
        (req("node.kubernetes.io/instance-type", "In", "g5.2xlarge", "g5.4xlarge"), True),
        (req("node.kubernetes.io/instance-type", "In", "p5.48xlarge"), True),
        (req("karpenter.k8s.aws/instance-category", "In", "g"), True),
        (req("karpenter.k8s.aws/instance-category", "In", "p"), True),
        (req("karpenter.k8s.aws/instance-gpu-manufacturer", "In", "nvidia"), True),
        (req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0"), True),
        (req("karpenter.k8s.aws/instance-gpu-count", "In", "1", "4"), True),
        (req("karpenter.k8s.aws/instance-gpu-name", "Exists"), True),
        (req("node.kubernetes.io/instance-type", "In", "m7i.xlarge", "c7i.2xlarge"), False),
        (req("karpenter.k8s.aws/instance-category", "In", "c", "m", "r"), False),
        (req("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist"), False),
        (req("karpenter.k8s.aws/instance-category", "NotIn", "g", "p"), False),
    ],
)
def test_gpu_pools_are_recognised_however_they_choose_gpus(requirement, gpu):
    chosen = pool_choosing(requirement)
    assert policy_gpu.is_gpu_pool(chosen) is gpu
    assert broken("gpu-nodepool-tainted", [chosen]) == (
        ["GPU NodePool p has no nvidia.com/gpu:NoSchedule taint"] if gpu else []
    )


def test_gpu_pools_are_tainted():
    assert broken("gpu-nodepool-tainted", [pool(taint=False)]) == [
        "GPU NodePool p has no nvidia.com/gpu:NoSchedule taint"
    ]
    assert broken("gpu-nodepool-tainted", [pool()]) == []
    assert broken("gpu-nodepool-tainted", [pool(gpu=False, taint=False, limit=False)]) == []


def test_gpu_pools_are_capped():
    assert broken("gpu-nodepool-capped", [pool(gpu=True, limit=False)]) == [
        "GPU NodePool p has no nvidia.com/gpu limit"
    ]
    assert broken("gpu-nodepool-capped", [pool()]) == []


def test_training_pools_are_on_demand_consolidate_only_when_empty_and_have_budgets():
    bad = pool(
        workload="training", disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"}
    )
    assert len(broken("training-pool-protected", [bad])) == 3
    assert broken("training-pool-protected", [pool(workload="training", capacity=("on-demand",))]) == []


def test_training_pools_never_expire_their_nodes():
    """Expiry drains a node mid-job whatever its pods' do-not-disrupt says; Karpenter's default lifetime is 720h."""
    assert broken(
        "training-pool-protected", [pool(workload="training", capacity=("on-demand",), expire_after="720h")]
    ) == ["training NodePool p expires its nodes after 720h, mid-job; use expireAfter Never"]
    defaulted = pool(workload="training", capacity=("on-demand",))
    del template_spec(defaulted.props)["expireAfter"]
    assert broken("training-pool-protected", [defaulted]) != []
    assert broken("training-pool-protected", [pool(workload="inference", expire_after="720h")]) == []


@pytest.mark.parametrize(
    ("capacity", "bad"),
    [
        (None, False),
        (("NotIn", "spot"), False),
        (("In", "on-demand", "reserved"), False),
        (("NotIn", "on-demand"), True),
        (("Exists",), True),
    ],
)
def test_training_pools_may_use_any_capacity_but_spot(capacity, bad):
    """No capacity-type requirement means on-demand (Karpenter's default); reserved capacity is not interrupted."""
    training = pool(workload="training")
    template_spec(training.props)["requirements"] = [req("karpenter.sh/capacity-type", *capacity)] if capacity else []
    assert bool(broken("training-pool-protected", [training])) is bad


def test_inference_pools_allow_more_than_one_instance_type():
    assert broken("inference-pool-flexible", [pool(workload="inference", types=["g5.xlarge"])]) != []
    assert broken("inference-pool-flexible", [pool(workload="inference", types=["g5.xlarge", "g5.2xlarge"])]) == []
    assert broken("inference-pool-flexible", [pool(workload="inference")]) == []


def test_every_pool_sets_its_disruption():
    assert broken("nodepool-disruption-set", [pool(disruption={"consolidationPolicy": "WhenEmpty"})]) == [
        "NodePool p does not set disruption ['consolidateAfter', 'budgets']"
    ]
    assert broken("nodepool-disruption-set", [pool()]) == []


def karpenter_with_queue(chart: str = "oci://public.ecr.aws/karpenter/karpenter") -> list[Resource]:
    return [
        res("aws:sqs/queue:Queue", "q"),
        res(
            "aws:cloudwatch/eventRule:EventRule",
            "spot",
            eventPattern=json.dumps({"detail-type": ["EC2 Spot Instance Interruption Warning"]}),
        ),
        res(RELEASE, "autoscaler", name="autoscaler", chart=chart, values={"settings": {"interruptionQueue": "q"}}),
    ]


def test_spot_pools_need_the_interruption_queue():
    assert broken("spot-needs-interruption-queue", [pool()]) == [
        "NodePool p allows spot but the stack has no interruption queue wired to Karpenter"
    ]
    assert broken("spot-needs-interruption-queue", [pool(), *karpenter_with_queue()]) == []
    assert broken("spot-needs-interruption-queue", [pool(capacity=("on-demand",))]) == []


def test_karpenter_is_recognised_by_its_chart_not_its_release_name():
    assert broken("spot-needs-interruption-queue", [pool(), *karpenter_with_queue("karpenter")]) == []
    assert broken("spot-needs-interruption-queue", [pool(), *karpenter_with_queue("karpenter-crd")]) != []


def test_a_pool_without_a_capacity_type_requirement_is_on_demand():
    """Karpenter launches on-demand capacity when a NodePool does not ask for a capacity type."""
    unspecified = pool_choosing(req("karpenter.k8s.aws/instance-category", "In", "c", "m"))
    assert broken("spot-needs-interruption-queue", [unspecified]) == []
    no_spot = pool_choosing(req("karpenter.sh/capacity-type", "NotIn", "spot"))
    assert broken("spot-needs-interruption-queue", [no_spot]) == []
    assert (
        broken(
            "spot-needs-interruption-queue", [pool_choosing(req("karpenter.sh/capacity-type", "NotIn", "on-demand"))]
        )
        != []
    )


def test_gpu_pools_need_the_operator_and_dcgm():
    operator = Resource(urn="urn:op", type=RELEASE, name="gpu-operator", props={"chart": "gpu-operator", "values": {}})
    no_dcgm = Resource(
        urn="urn:op",
        type=RELEASE,
        name="gpu-operator",
        props={"chart": "gpu-operator", "values": {"dcgmExporter": {"enabled": False}}},
    )
    assert len(broken("gpu-pools-need-operator-and-dcgm", [pool()])) == 2
    assert broken("gpu-pools-need-operator-and-dcgm", [pool(), no_dcgm]) == [
        "GPU NodePool p but no DCGM exporter: GPU use would be invisible"
    ]
    assert broken("gpu-pools-need-operator-and-dcgm", [pool(), operator]) == []
