"""NodePool and EC2NodeClass specs: presets, validation messages (through the stack config parser, exact, with the
full key path), and properties of everything they render."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from components import versions
from components.config.errors import ConfigError
from components.config.platform import parse_config
from components.karpenter import accelerators as gpu_facts
from components.karpenter.render import NodeClassContext, render_nodeclass, render_nodepool, requirements
from components.karpenter.specs import NODE_CLASS_PRESETS, NODE_POOL_PRESETS, NodeClassSpec, NodePoolSpec
from components.scheduling import CSI_STARTUP_TAINTS, GPU_RESOURCE, GPU_TAINT, NEURON_RESOURCE, NEURON_TAINT
from tests.conftest import REPO

CONTEXT = NodeClassContext(cluster_name="ml", node_role_name="ml-node", tags={"team": "ml"})
P = "karpenter.nodePools.p"
REFCHECK = REPO.parent / "shared" / "tools" / "refcheck" / "refcheck.py"


def pool(**fields) -> NodePoolSpec:
    return NodePoolSpec.model_validate(fields)


def req(key: str, operator: str = "In", *values: str) -> dict[str, Any]:
    requirement: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


def _raw(karpenter: dict[str, Any]) -> dict[str, str]:
    return {
        "aws:region": "us-west-2",
        "eks-ml-platform:environment": "prod",
        "eks-ml-platform:owner": "ml",
        "eks-ml-platform:karpenter": json.dumps(karpenter),
    }


def problems(node_classes: dict[str, Any] | None = None, **fields) -> dict[str, str]:
    """Every problem stack config reports for one pool `p` with these fields (and these node classes)."""
    karpenter: dict[str, Any] = {"nodePools": {"p": fields}}
    if node_classes is not None:
        karpenter["nodeClasses"] = node_classes
    with pytest.raises(ConfigError) as caught:
        parse_config(_raw(karpenter), project="eks-ml-platform", stack="prod")
    return {issue.path: issue.message for issue in caught.value.issues}


def _taints(rendered):
    return rendered["spec"]["template"]["spec"].get("taints", [])


# --------------------------------------------------------------------------------------------------- presets


def test_preset_fields_can_be_overridden_one_by_one():
    spec = pool(preset="gpu-inference", limits={GPU_RESOURCE: 4}, capacityTypes=["spot"])
    assert spec.limits == {GPU_RESOURCE: "4"}
    assert spec.capacity_types == ("spot",)
    assert spec.gpu_names == ("t4", "a10g", "l4")  # kept from the preset
    assert spec.taints[0].key == GPU_TAINT.key


def test_spot_first_inference_tiers_fall_back_in_weight_order():
    tiers = {name: pool(preset=name) for name in NODE_POOL_PRESETS if name.startswith("gpu-inference-")}
    order = sorted(tiers, key=lambda name: -tiers[name].weight)
    assert order == ["gpu-inference-a10g-spot", "gpu-inference-t4-spot", "gpu-inference-a10g-on-demand"]
    assert [tiers[n].capacity_types for n in order] == [("spot",), ("spot",), ("on-demand",)]
    assert [tiers[n].instance_families for n in order] == [("g5",), ("g4dn",), ("g5",)]


def test_training_preset_is_on_demand_consolidates_only_when_empty_and_is_protected_by_budgets():
    spec = pool(preset="gpu-training")
    assert spec.capacity_types == ("on-demand",)
    assert spec.disruption.consolidation_policy == "WhenEmpty"
    assert spec.disruption.consolidate_after == "30m"
    assert spec.expire_after == "720h"
    assert spec.termination_grace_period == "2h"
    budgets = [b.model_dump(exclude_none=True) for b in spec.disruption.budgets]
    assert {"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "12h"} in budgets  # blocked while training
    assert {"nodes": "1"} in budgets  # one node at a time otherwise
    assert any(b.get("reasons") == ("Drifted",) for b in budgets)  # drift limited separately


def test_cpu_general_preset_is_multi_arch_recent_c_m_r_without_accelerators():
    rendered = requirements(pool(preset="cpu-general"))
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]} in rendered
    assert {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]} in rendered
    assert {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]} in rendered
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]} in rendered
    assert rendered[-2:] == [
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"},
        {"key": "karpenter.k8s.aws/instance-accelerator-count", "operator": "DoesNotExist"},
    ]


def test_neuron_preset_carries_the_neuron_taint_and_limit():
    spec = pool(preset="neuron")
    assert spec.accelerator == "neuron"
    assert [t.key for t in spec.taints] == [NEURON_TAINT.key]
    assert NEURON_RESOURCE in spec.limits


# ------------------------------------------------------------------------------------------------ validation

_GPU_TAINT_MISSING = (
    "a GPU pool must carry the nvidia.com/gpu=true:NoSchedule taint, or ordinary pods fill it and it never scales to "
    "zero (this is a GPU pool because of {})"
)
_GPU_LIMIT_MISSING = "a GPU pool must set a limit on nvidia.com/gpu: it is the ceiling on GPU spend (this is a GPU pool because of {})"
_GPU_NAMES = "a100, a10g, h100, h200, l4, l40s, t4"
_CATEGORIES = "a, c, d, g, gr, h, hpc, i, im, inf, is, m, p, r, t, trn, x, z"


def test_gpu_pool_without_taint_or_limit_is_refused():
    found = problems(
        nodeClass="gpu",
        capacityTypes=["spot"],
        gpuNames=["l4"],
        limits={"cpu": "100"},
        disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m", "budgets": [{"nodes": "1"}]},
    )
    assert found == {
        f"{P}.taints": _GPU_TAINT_MISSING.format("gpuNames ['l4']"),
        f"{P}.limits": _GPU_LIMIT_MISSING.format("gpuNames ['l4']"),
    }


def test_a_preset_gpu_taint_cannot_be_dropped_by_an_override():
    assert problems(preset="gpu-inference", taints=[]) == {
        f"{P}.taints": _GPU_TAINT_MISSING.format("gpuNames ['t4', 'a10g', 'l4']")
    }


def test_pool_is_a_gpu_pool_when_it_names_gpu_families_even_without_gpu_names():
    assert problems(preset="cpu-general", instanceFamilies=["g5"], instanceCategories=[]) == {
        f"{P}.taints": _GPU_TAINT_MISSING.format("instance family 'g5'"),
        f"{P}.limits": _GPU_LIMIT_MISSING.format("instance family 'g5'"),
    }


GPU_REQUIREMENTS = [
    req("karpenter.k8s.aws/instance-family", "In", "p5"),
    req("node.kubernetes.io/instance-type", "In", "g5.xlarge"),
    req("node.kubernetes.io/instance-type", "In", "m7i.xlarge", "g6.2xlarge"),
    req("karpenter.k8s.aws/instance-category", "In", "g"),
    req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0"),
    req("karpenter.k8s.aws/instance-gpu-name", "In", "a10g"),
    req("karpenter.k8s.aws/instance-gpu-name", "Exists"),
    req("karpenter.k8s.aws/instance-gpu-manufacturer", "In", "nvidia"),
]


@pytest.mark.parametrize("requirement", GPU_REQUIREMENTS, ids=lambda r: f"{r['key']}-{r['operator']}-{r.get('values')}")
def test_raw_requirements_that_admit_gpu_instances_make_a_gpu_pool(requirement):
    shown = f"{requirement['key']} {requirement['operator']}" + (f" {requirement['values']}" if "values" in requirement else "")
    because = f"the requirement {shown}"
    assert problems(preset="cpu-general", requirements=[requirement]) == {
        f"{P}.taints": _GPU_TAINT_MISSING.format(because),
        f"{P}.limits": _GPU_LIMIT_MISSING.format(because),
    }
    fixed = pool(preset="cpu-general", requirements=[requirement], taints=[GPU_TAINT.as_dict()], limits={GPU_RESOURCE: "4"})
    rendered = render_nodepool("p", fixed)
    assert _taints(rendered) == [GPU_TAINT.as_dict()] and rendered["spec"]["limits"][GPU_RESOURCE] == "4"
    assert {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"} not in rendered["spec"]["template"]["spec"]["requirements"]


@pytest.mark.parametrize(
    "requirement",
    [req("karpenter.k8s.aws/instance-accelerator-count", "Gt", "0"), req("karpenter.k8s.aws/instance-family", "In", "trn1")],
)
def test_raw_requirements_that_admit_neuron_instances_make_a_neuron_pool(requirement):
    because = f"the requirement {requirement['key']} {requirement['operator']} {requirement['values']}"
    assert problems(preset="cpu-general", requirements=[requirement]) == {
        f"{P}.taints": (
            "a Neuron pool must carry the aws.amazon.com/neuron=true:NoSchedule taint, or ordinary pods fill it and it "
            f"never scales to zero (this is a Neuron pool because of {because})"
        ),
        f"{P}.limits": (
            "a Neuron pool must set a limit on aws.amazon.com/neuron: it is the ceiling on Neuron spend (this is a "
            f"Neuron pool because of {because})"
        ),
    }


def test_a_gpu_pool_that_also_excludes_gpus_is_refused():
    found = problems(preset="gpu-inference", requirements=[req("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist")])
    assert found == {
        f"{P}.requirements[0]": "excludes GPU instances, but gpuNames ['t4', 'a10g', 'l4'] makes this a GPU pool"
    }


@pytest.mark.parametrize(
    ("taint", "got"),
    [
        ({"key": GPU_RESOURCE, "value": "present", "effect": "NoSchedule"}, "nvidia.com/gpu=present:NoSchedule"),
        ({"key": GPU_RESOURCE, "effect": "NoSchedule"}, "nvidia.com/gpu:NoSchedule"),
        ({"key": GPU_RESOURCE, "value": "true", "effect": "PreferNoSchedule"}, "nvidia.com/gpu=true:PreferNoSchedule"),
    ],
)
def test_the_gpu_taint_must_be_exactly_the_one_gpu_pods_tolerate(taint, got):
    assert problems(preset="gpu-inference", taints=[taint]) == {
        f"{P}.taints[0]": (
            "the nvidia.com/gpu taint must be exactly nvidia.com/gpu=true:NoSchedule (components/scheduling.py): GPU pods "
            f"tolerate that value and effect, and any other keeps them off the node; got {got}"
        )
    }


@pytest.mark.parametrize(
    ("fields", "path", "message"),
    [
        ({"preset": "gpu-inference", "gpuNames": ["a10"]}, "gpuNames", f"unknown value 'a10'; expected one of {_GPU_NAMES}"),
        ({"preset": "cpu-general", "instanceCategories": ["q"]}, "instanceCategories", "unknown value 'q'; expected one of a, c, d, h, hpc, i, im, is, m, r, t, x, z"),
        ({"preset": "cpu-general", "instanceFamilies": ["M7I"]}, "instanceFamilies", "'M7I' is not an instance family like 'g5' or 'm7i'"),
        ({"preset": "gpu-inference", "instanceFamilies": ["p5"]}, "instanceFamilies", "['p5'] have none of the GPUs in gpuNames ['t4', 'a10g', 'l4']"),
        (
            {"preset": "gpu-inference", "instanceFamilies": ["g5", "inf2"]},
            "instanceFamilies",
            "mixes Neuron devices (instance family 'inf2') with NVIDIA GPUs (gpuNames ['t4', 'a10g', 'l4']); use one pool for each",
        ),
        ({"preset": "gpu-inference", "limits": {GPU_RESOURCE: "1.5"}}, "limits.nvidia.com/gpu", "expected a whole number of devices, got '1.5'"),
        ({"preset": "cpu-general", "limits": {"gpus": "4"}}, "limits.gpus", "unknown resource; expected cpu, memory, nvidia.com/gpu or aws.amazon.com/neuron"),
        ({"preset": "cpu-general", "limits": {"memory": "4 TB"}}, "limits.memory", "expected a Kubernetes quantity like '1000', '500m' or '4000Gi', got '4 TB'"),
        ({"preset": "cpu-general", "taints": [GPU_TAINT.as_dict()]}, "taints", "carries the nvidia.com/gpu taint but launches no GPU instances"),
        ({"preset": "cpu-general", "taints": [NEURON_TAINT.as_dict()]}, "taints", "carries the aws.amazon.com/neuron taint but launches no Neuron instances"),
        ({"preset": "cpu-general", "weight": 0}, "weight", "Input should be greater than or equal to 1, got 0"),
        ({"preset": "cpu-general", "capacityTypes": ["preemptible"]}, "capacityTypes[0]", "Input should be 'spot', 'on-demand' or 'reserved', got 'preemptible'"),
        ({"preset": "cpu-general", "capacityTypes": []}, "capacityTypes", "expected at least one value"),
        ({"preset": "cpu-general", "expireAfter": "30d"}, "expireAfter", "expected a duration like '30s', '5m', '720h' or 'Never', got '30d'"),
        (
            {"preset": "gpu-training", "terminationGracePeriod": "Never"},
            "terminationGracePeriod",
            "expected a duration like '30s', '15m' or '2h' (there is no 'Never'), got 'Never'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"consolidateAfter": "2 minutes"}},
            "disruption.consolidateAfter",
            "expected a duration like '30s', '5m', '720h' or 'Never', got '2 minutes'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"consolidationPolicy": "WhenUnderutilized"}},
            "disruption.consolidationPolicy",
            "Input should be 'WhenEmpty' or 'WhenEmptyOrUnderutilized', got 'WhenUnderutilized'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": []}},
            "disruption.budgets",
            "needs at least one budget; without one Karpenter may disrupt 10% of the pool at once",
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "150%"}]}},
            "disruption.budgets[0].nodes",
            "expected a node count like '1' or a percentage like '10%', got '150%'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "1", "schedule": "0 9 * * *"}]}},
            "disruption.budgets[0].duration",
            "schedule and duration go together",
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "1", "schedule": "@daily", "duration": "30s"}]}},
            "disruption.budgets[0].duration",
            "expected a duration in hours and minutes like '8h' or '1h30m', got '30s'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "1", "reasons": ["Expired"]}]}},
            "disruption.budgets[0].reasons[0]",
            "Input should be 'Underutilized', 'Empty' or 'Drifted', got 'Expired'",
        ),
        (
            {"preset": "cpu-general", "requirements": [req("karpenter.k8s.aws/instance-gpu-nam", "In", "1")]},
            "requirements[0].key",
            "unknown requirement key 'karpenter.k8s.aws/instance-gpu-nam'; did you mean 'karpenter.k8s.aws/instance-gpu-name'?",
        ),
        ({"preset": "cpu-general", "requirements": [req("kubernetes.io/arch", "In")]}, "requirements[0].values", "operator In needs at least one value"),
        (
            {"preset": "cpu-general", "requirements": [req("kubernetes.io/arch", "Exists", "amd64")]},
            "requirements[0].values",
            "operator Exists takes no values",
        ),
        (
            {"preset": "cpu-general", "requirements": [req("karpenter.k8s.aws/instance-cpu", "Gt", "many")]},
            "requirements[0].values",
            "operator Gt takes exactly one whole number",
        ),
        (
            {"preset": "cpu-general", "requirements": [req("kubernetes.io/arch", "Like", "x")]},
            "requirements[0].operator",
            "Input should be 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt', 'Gte' or 'Lte', got 'Like'",
        ),
        (
            {"preset": "cpu-general", "requirements": [req("node.kubernetes.io/instance-type", "NotIn", "g5xlarge")]},
            "requirements[0].values",
            "'g5xlarge' is not an instance type like 'g5.xlarge'",
        ),
        (
            {"preset": "cpu-general", "requirements": [req("karpenter.k8s.aws/instance-category", "NotIn", "q")]},
            "requirements[0].values",
            f"unknown instance category 'q'; expected one of {_CATEGORIES}",
        ),
        (
            {"preset": "gpu-inference", "requirements": [req("karpenter.k8s.aws/instance-gpu-name", "In", "a10")]},
            "requirements[0].values",
            f"unknown GPU name 'a10'; expected one of {_GPU_NAMES}",
        ),
        (
            {"preset": "cpu-general", "taints": [{"key": "dedicated", "effect": "NoExecut"}]},
            "taints[0].effect",
            "Input should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute', got 'NoExecut'",
        ),
        (
            {"preset": "cpu-general", "labels": {"team": "a b"}},
            "labels.team",
            "expected a label value of at most 63 letters, digits, '-', '_' or '.', got 'a b'",
        ),
    ],
)
def test_mistake_in_a_pool_is_reported_with_its_key_path_and_expectation(fields, path, message):
    assert problems(**fields) == {f"{P}.{path}": message}


def test_unknown_preset_names_the_presets():
    expected = f"expected one of the presets {', '.join(sorted(NODE_POOL_PRESETS))}, got 'large'"
    assert problems(preset="large") == {f"{P}.preset": expected}


# --------------------------------------------------------------------------------------------- instance families


@pytest.mark.parametrize(
    ("family", "message"),
    [
        (
            "g99",
            "'g99' is an accelerated family missing from the GPU facts table; known: g4dn, g5, g6, g6e, inf2, p4d, "
            "p4de, p5, p5e, p5en, trn1, trn1n, trn2 (add new ones to components/karpenter/accelerators.py)",
        ),
        (
            "g6ee",
            "'g6ee' is an accelerated family missing from the GPU facts table; did you mean 'g6e'? known: g4dn, g5, "
            "g6, g6e, inf2, p4d, p4de, p5, p5e, p5en, trn1, trn1n, trn2 (add new ones to components/karpenter/accelerators.py)",
        ),
        ("zz9", f"'zz9' has the unknown instance category 'zz'; expected one of {_CATEGORIES}"),
        *(
            (
                family,
                f"'{family}' is not an instance family name: expected a category, a generation digit, at most one of "
                "a/g/i, each of b/d/e/n/z at most once, optionally '-flex' (e.g. 'm7i', 'c6gn', 'm7i-flex')",
            )
            for family in ("m7ii", "c7x", "r5dd", "m12i", "m7i-max")
        ),
    ],
)
def test_unknown_instance_families_are_refused_with_what_is_known(family, message):
    assert problems(preset="gpu-inference", instanceFamilies=[family])[f"{P}.instanceFamilies"] == message
    found = problems(preset="gpu-inference", requirements=[req("karpenter.k8s.aws/instance-family", "In", family)])
    assert found[f"{P}.requirements[0].values"] == message


def test_current_cpu_families_are_accepted_by_the_shape_of_their_names():
    families = ["m7i-flex", "c6gn", "x2iedn", "is4gen", "m8azn", "c8id", "r7iz", "t4g", "z1d", "hpc7g", "i7ie", "m5zn", "c5ad", "x8aedz"]
    spec = pool(preset="cpu-general", instanceCategories=[], instanceFamilies=families)
    assert spec.accelerator is None
    assert {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": families} in requirements(spec)


# -------------------------------------------------------------------------------------------------- schedules


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (
            "nine am",
            "expected a cron schedule of five fields (minute hour day-of-month month day-of-week) like '0 9 * * mon-fri', "
            "or one of @annually, @yearly, @monthly, @weekly, @daily, @midnight, @hourly; got 'nine am'",
        ),
        ("@every 1h", "unknown schedule macro '@every 1h'; expected one of @annually, @yearly, @monthly, @weekly, @daily, @midnight, @hourly"),
        ("99 99 * * *", "minute '99' is outside 0-59; hour '99' is outside 0-23"),
        (
            "a b c d e",
            "minute 'a' is not a value in 0-59; hour 'b' is not a value in 0-23; day-of-month 'c' is not a value in 1-31; "
            "month 'd' is not a value in 1-12 or jan-dec; day-of-week 'e' is not a value in 0-6 or sun-sat",
        ),
        ("0 9 0 * *", "day-of-month '0' is outside 1-31"),
        ("0 9 * 13 *", "month '13' is outside 1-12 or jan-dec"),
        ("0 9 * * 7", "day-of-week '7' is outside 0-6 or sun-sat"),
        ("0 9 * * fri-mon", "day-of-week 'fri-mon': the range 'fri-mon' ends before it starts"),
        ("0,61 9 * * *", "minute '0,61': '61' is outside 0-59"),
        ("*/0 9 * * *", "minute '*/0': the step '0' must be a whole number above 0"),
        ("0 9 * * mon-funday", "day-of-week 'mon-funday': 'funday' is not a value in 0-6 or sun-sat"),
    ],
)
def test_budget_schedules_are_parsed_field_by_field(schedule, message):
    budgets = [{"nodes": "0", "schedule": schedule, "duration": "8h"}]
    assert problems(preset="cpu-general", disruption={"budgets": budgets}) == {f"{P}.disruption.budgets[0].schedule": message}


@pytest.mark.parametrize(
    "schedule", ["0 9 * * mon-fri", "*/15 0-6,22-23 1,15 JAN-jun ?", "30 2 * * sun", "@daily", "@annually", "0 0 1 */3 *", "5/10 * * * *"]
)
def test_schedules_karpenter_accepts_are_accepted(schedule):
    spec = pool(preset="cpu-general", disruption={"budgets": [{"nodes": "0", "schedule": schedule, "duration": "1h30m"}]})
    assert spec.disruption.budgets[0].schedule == schedule


# ------------------------------------------------------------------------------------------------------ labels


@pytest.mark.parametrize(
    ("label", "message"),
    [
        ("karpenter.sh/nodepool", "'karpenter.sh/nodepool' is set on every node by Karpenter or the kubelet and cannot be set by a NodePool"),
        ("kubernetes.io/hostname", "'kubernetes.io/hostname' is set on every node by Karpenter or the kubelet and cannot be set by a NodePool"),
        ("karpenter.sh/team", "'karpenter.sh/team' is in the reserved domain karpenter.sh; use a domain of your own (e.g. 'eksml.io/...') or node.kubernetes.io"),
        ("node-role.kubernetes.io/gpu", "'node-role.kubernetes.io/gpu' is in the reserved domain kubernetes.io; use a domain of your own (e.g. 'eksml.io/...') or node.kubernetes.io"),
        ("team.k8s.io/name", "'team.k8s.io/name' is in the reserved domain k8s.io; use a domain of your own (e.g. 'eksml.io/...') or node.kubernetes.io"),
        ("karpenter.k8s.aws/team", "'karpenter.k8s.aws/team' is in the reserved domain karpenter.k8s.aws; use a domain of your own (e.g. 'eksml.io/...') or node.kubernetes.io"),
    ],
)
def test_labels_in_reserved_domains_are_refused(label, message):
    assert problems(preset="cpu-general", labels={label: "x"}) == {f"{P}.labels.{label}": message}


def test_labels_karpenter_allows_are_accepted():
    labels = {"team": "a", "eksml.io/owner": "b", "node.kubernetes.io/role": "c", "karpenter.sh/capacity-type": "spot", "kops.k8s.io/x": "d"}
    assert pool(preset="cpu-general", labels=labels).labels.items() >= labels.items()


# --------------------------------------------------------------------------------------------- node classes


def test_node_class_refuses_volumes_ec2_would_refuse_at_launch():
    classes = {"c": {"preset": "default", "rootVolumeGib": 20, "rootVolumeIops": 12000}}
    assert problems(node_classes=classes, preset="cpu-general", nodeClass="c") == {
        "karpenter.nodeClasses.c.rootVolumeIops": "12000 IOPS needs rootVolumeGib of at least 24 (gp3 allows 500 IOPS per GiB); rootVolumeGib is 20",
    }
    classes = {"c": {"preset": "default", "rootVolumeIops": 4000, "rootVolumeThroughputMibps": 1001}}
    assert problems(node_classes=classes, preset="cpu-general", nodeClass="c") == {
        "karpenter.nodeClasses.c.rootVolumeThroughputMibps": "1001 MiB/s needs rootVolumeIops of at least 4004 (gp3 allows 0.25 MiB/s per IOPS); rootVolumeIops is 4000",
    }
    classes = {"c": {"preset": "gpu", "rootVolumeIops": 90000, "rootVolumeGib": 60000, "rootVolumeThroughputMibps": 2001}}
    assert problems(node_classes=classes, preset="cpu-general", nodeClass="c") == {
        "karpenter.nodeClasses.c.rootVolumeIops": "Input should be less than or equal to 80000, got 90000",
        "karpenter.nodeClasses.c.rootVolumeGib": "Input should be less than or equal to 59000, got 60000",
        "karpenter.nodeClasses.c.rootVolumeThroughputMibps": "Input should be less than or equal to 2000, got 2001",
    }


def test_node_class_accepts_the_largest_gp3_volume_and_the_baseline_on_a_small_one():
    big = NodeClassSpec.model_validate({"rootVolumeGib": 160, "rootVolumeIops": 80000, "rootVolumeThroughputMibps": 2000})
    assert render_nodeclass("c", big, CONTEXT)["spec"]["blockDeviceMappings"][0]["ebs"]["iops"] == 80000
    assert NodeClassSpec.model_validate({"rootVolumeGib": 20, "rootVolumeIops": 3000, "rootVolumeThroughputMibps": 750})


def test_node_class_rejects_unknown_presets():
    assert problems(node_classes={"c": {"preset": "huge"}}, preset="cpu-general", nodeClass="c") == {
        "karpenter.nodeClasses.c.preset": "expected one of the presets default, gpu, gpu-training, got 'huge'"
    }


@given(st.sampled_from(sorted(NODE_CLASS_PRESETS)), st.sampled_from(["al2023", "bottlerocket"]), st.sampled_from([1, 2]))
def test_every_node_class_requires_imdsv2_and_encrypts_a_pinned_ami_root_volume(preset, family, hops):
    spec = NodeClassSpec.model_validate({"preset": preset, "amiFamily": family, "imdsHopLimit": hops})
    rendered = render_nodeclass("c", spec, CONTEXT)["spec"]
    assert rendered["metadataOptions"]["httpTokens"] == "required"
    assert rendered["metadataOptions"]["httpPutResponseHopLimit"] == hops
    assert all(d["ebs"]["encrypted"] is True for d in rendered["blockDeviceMappings"])
    (root,) = [d for d in rendered["blockDeviceMappings"] if d.get("rootVolume")]
    assert root["ebs"]["volumeSize"] == f"{spec.root_volume_gib}Gi"
    pin = versions.AL2023_AMI if family == "al2023" else versions.BOTTLEROCKET_AMI
    assert rendered["amiSelectorTerms"] == [{"alias": f"{family}@{pin.version}"}]
    assert "latest" not in rendered["amiSelectorTerms"][0]["alias"]


def test_node_class_finds_subnets_and_security_groups_by_the_discovery_tag():
    rendered = render_nodeclass("c", NodeClassSpec.model_validate({"preset": "default"}), CONTEXT)["spec"]
    assert rendered["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "ml"}}]
    assert rendered["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "ml"}}]
    assert rendered["role"] == "ml-node"
    assert rendered["tags"] == {"team": "ml"}


def test_bottlerocket_puts_the_configured_size_on_its_data_volume():
    spec = NodeClassSpec.model_validate({"preset": "gpu", "amiFamily": "bottlerocket"})
    devices = {d["deviceName"]: d for d in render_nodeclass("c", spec, CONTEXT)["spec"]["blockDeviceMappings"]}
    assert devices["/dev/xvdb"]["rootVolume"] is True and devices["/dev/xvdb"]["ebs"]["volumeSize"] == "200Gi"
    assert "rootVolume" not in devices["/dev/xvda"]


def test_csi_startup_taints_are_rendered_for_the_enabled_drivers():
    rendered = render_nodepool("p", pool(preset="cpu-general"), startup_taints=[CSI_STARTUP_TAINTS["ebs"]])
    assert rendered["spec"]["template"]["spec"]["startupTaints"] == [
        {"key": "ebs.csi.aws.com/agent-not-ready", "effect": "NoExecute"}
    ]


# ---------------------------------------------------------------------------------------- rendered properties

#: A sample of instance types with the labels Karpenter gives them (karpenter-provider-aws instancetype/types.go),
#: written out here rather than derived from gpu_facts, so the property below checks the code against facts.
GPU_LABELS = {f"karpenter.k8s.aws/instance-gpu-{k}" for k in ("name", "manufacturer", "count", "memory")}
NEURON_LABELS = {f"karpenter.k8s.aws/instance-accelerator-{k}" for k in ("name", "manufacturer", "count")}


def _instance(name: str, category: str, generation: str, arch: str = "amd64", gpu: tuple[str, ...] = (), neuron: tuple[str, ...] = ()):
    family, size = name.split(".")
    labels = {
        "node.kubernetes.io/instance-type": name, "kubernetes.io/arch": arch, "kubernetes.io/os": "linux",
        "karpenter.k8s.aws/instance-category": category, "karpenter.k8s.aws/instance-family": family,
        "karpenter.k8s.aws/instance-generation": generation, "karpenter.k8s.aws/instance-size": size,
    }
    labels.update(zip(sorted(GPU_LABELS), gpu))  # count, manufacturer, memory, name
    labels.update(zip(sorted(NEURON_LABELS), neuron))  # count, manufacturer, name
    return labels


CATALOGUE = [
    _instance("m7i.xlarge", "m", "7"),
    _instance("c7g.2xlarge", "c", "7", arch="arm64"),
    _instance("r6i.large", "r", "6"),
    _instance("c5.large", "c", "5"),
    _instance("t3.medium", "t", "3"),
    _instance("g4dn.12xlarge", "g", "4", gpu=("4", "nvidia", "16384", "t4")),
    _instance("g5.xlarge", "g", "5", gpu=("1", "nvidia", "24576", "a10g")),
    _instance("g6.2xlarge", "g", "6", gpu=("1", "nvidia", "24576", "l4")),
    _instance("g6e.xlarge", "g", "6", gpu=("1", "nvidia", "49152", "l40s")),
    _instance("p4d.24xlarge", "p", "4", gpu=("8", "nvidia", "40960", "a100")),
    _instance("p5.48xlarge", "p", "5", gpu=("8", "nvidia", "81920", "h100")),
    _instance("inf2.xlarge", "inf", "2", neuron=("1", "aws", "inferentia2")),
    _instance("trn1.32xlarge", "trn", "1", neuron=("16", "aws", "trainium")),
]


def _admits(requirement: dict[str, Any], labels: dict[str, str]) -> bool:
    """Kubernetes node selector semantics (Gt/Lt and friends need the label, like In)."""
    value, values = labels.get(requirement["key"]), requirement.get("values", [])
    operator = requirement["operator"]
    if operator in ("In", "NotIn"):
        return (value in values) == (operator == "In")
    if operator in ("Exists", "DoesNotExist"):
        return (value is not None) == (operator == "Exists")
    if value is None:
        return False
    number, bound = int(value), int(values[0])
    return {"Gt": number > bound, "Gte": number >= bound, "Lt": number < bound, "Lte": number <= bound}[operator]


def launchable(rendered: dict[str, Any]) -> list[dict[str, str]]:
    """The catalogue's instances the rendered NodePool may launch, in either capacity type."""
    pool_requirements = rendered["spec"]["template"]["spec"]["requirements"]
    return [
        labels
        for labels in CATALOGUE
        for capacity in ("spot", "on-demand")
        if all(_admits(r, {**labels, "karpenter.sh/capacity-type": capacity}) for r in pool_requirements)
    ]


REQUIREMENT_CHOICES = [
    *GPU_REQUIREMENTS,
    req("karpenter.k8s.aws/instance-accelerator-count", "Exists"),
    req("karpenter.k8s.aws/instance-family", "In", "inf2"),
    req("karpenter.k8s.aws/instance-category", "NotIn", "c"),
    req("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist"),
    req("karpenter.k8s.aws/instance-gpu-name", "NotIn", "t4"),
    req("karpenter.k8s.aws/instance-generation", "Gt", "3"),
    req("kubernetes.io/arch", "In", "amd64"),
]
pool_presets = st.sampled_from(sorted(NODE_POOL_PRESETS))
overrides = st.fixed_dictionaries(
    {},
    optional={
        "capacityTypes": st.lists(st.sampled_from(["spot", "on-demand"]), min_size=1, max_size=2, unique=True),
        "limits": st.dictionaries(st.sampled_from(["cpu", GPU_RESOURCE, NEURON_RESOURCE]), st.integers(1, 512).map(str), max_size=2),
        "weight": st.integers(1, 100),
        "gpuNames": st.lists(st.sampled_from(sorted(gpu_facts.NVIDIA_GPU_NAMES)), max_size=3, unique=True),
        "taints": st.sampled_from([[], [GPU_TAINT.as_dict()], [NEURON_TAINT.as_dict()]]),
        "instanceCategories": st.sampled_from([[], ["c", "m", "r"]]),
        "instanceFamilies": st.lists(st.sampled_from([*sorted(gpu_facts.ACCELERATED_FAMILIES), "m7i", "c7g"]), max_size=2, unique=True),
        "generationAbove": st.sampled_from([3, 5]),
        "requirements": st.lists(st.sampled_from(REQUIREMENT_CHOICES), max_size=2, unique_by=json.dumps),
    },
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(pool_presets, overrides)
@example("cpu-general", {"instanceCategories": [], "requirements": [req("karpenter.k8s.aws/instance-category", "In", "g")]})
@example("cpu-general", {"instanceCategories": []})
def test_every_pool_that_validates_taints_and_caps_whatever_accelerators_it_can_launch(preset, override):
    try:
        spec = pool(preset=preset, **override)
    except ValidationError:
        return  # refused with a message: tested above
    rendered = render_nodepool("p", spec)
    taints, limits = _taints(rendered), rendered["spec"]["limits"]
    pool_requirements = rendered["spec"]["template"]["spec"]["requirements"]
    reachable = launchable(rendered)
    if any(GPU_LABELS & labels.keys() for labels in reachable):
        assert GPU_TAINT.as_dict() in taints and int(limits[GPU_RESOURCE]) >= 1
    if any(NEURON_LABELS & labels.keys() for labels in reachable):
        assert NEURON_TAINT.as_dict() in taints and int(limits[NEURON_RESOURCE]) >= 1
    # An untainted pool excludes every accelerated instance, not only the catalogue's.
    if GPU_TAINT.as_dict() not in taints:
        assert any(r["key"] in GPU_LABELS and r["operator"] == "DoesNotExist" for r in pool_requirements)
    if NEURON_TAINT.as_dict() not in taints:
        assert any(r["key"] in NEURON_LABELS and r["operator"] == "DoesNotExist" for r in pool_requirements)
    assert rendered["spec"]["disruption"]["budgets"]


@given(pool_presets)
def test_every_preset_refers_to_a_node_class_preset(preset):
    assert pool(preset=preset).node_class in NODE_CLASS_PRESETS


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(NODE_POOL_PRESETS)), min_size=1, max_size=4, unique=True))
def test_every_node_class_ref_of_a_stack_resolves_to_a_rendered_node_class(presets):
    pools = {f"pool-{i}": {"preset": preset} for i, preset in enumerate(presets)}
    karpenter = parse_config(_raw({"nodePools": pools}), project="eks-ml-platform", stack="prod").karpenter
    classes = {render_nodeclass(n, c, CONTEXT)["metadata"]["name"] for n, c in karpenter.node_classes.items()}
    for name, spec in karpenter.node_pools.items():
        assert render_nodepool(name, spec)["spec"]["template"]["spec"]["nodeClassRef"]["name"] in classes


@pytest.mark.parametrize("name", ["GPU", "gpu_pool", "-gpu", "gpu-", "a" * 64])
def test_pool_names_that_are_not_dns_1123_labels_are_refused(name):
    raw = _raw({"nodePools": {name: {"preset": "cpu-general"}}})
    with pytest.raises(ConfigError, match=rf"karpenter\.nodePools\.{re.escape(name)}: the key"):
        parse_config(raw, project="eks-ml-platform", stack="prod")


@pytest.mark.skipif(not REFCHECK.exists(), reason="../shared/tools/refcheck is not beside the repository")
def test_rendered_pools_with_raw_requirements_and_exclusions_pass_the_nodepool_crd(tmp_path):
    specs = {name: pool(preset=name) for name in NODE_POOL_PRESETS}
    specs["raw-gpu"] = pool(
        preset="cpu-general", instanceCategories=[], requirements=[req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0")],
        taints=[GPU_TAINT.as_dict()], limits={GPU_RESOURCE: "4"}, labels={"node.kubernetes.io/role": "gpu"},
    )
    specs["own-exclusion"] = pool(preset="cpu-general", requirements=[req("karpenter.k8s.aws/instance-gpu-name", "DoesNotExist")])
    manifest = tmp_path / "pools.yaml"
    manifest.write_text(yaml.safe_dump_all([render_nodepool(name, spec) for name, spec in specs.items()]))
    result = subprocess.run([sys.executable, str(REFCHECK), str(manifest)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().splitlines()[-1] == f"refcheck: {len(specs)} objects, 0 errors"
