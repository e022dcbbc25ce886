"""What makes a pool an accelerator pool and what such a pool must carry (the exact taint, a ceiling, no mixing, no
budget that keeps idle nodes), and that every problem of a pool is reported at once, each with its full key path."""

from __future__ import annotations

import pytest

from components.karpenter.pool_checks import NEURONDEVICE_REASON
from components.karpenter.render import render_nodepool
from components.scheduling import GPU_RESOURCE, GPU_TAINT, NEURON_CORE_RESOURCE, NEURON_RESOURCE, NEURON_TAINT
from tests.karpenter_support import P, all_config_problems, karpenter_config, pool, problems, req, taints

GPU_TAINT_MISSING = (
    "a GPU pool must carry the nvidia.com/gpu=true:NoSchedule taint, or ordinary pods fill it and it never scales to "
    "zero (this is a GPU pool because of {})"
)
GPU_LIMIT_MISSING = (
    "a GPU pool must set a limit on nvidia.com/gpu: it is the ceiling on GPU spend (this is a GPU pool because of {})"
)
NEURON_TAINT_MISSING = (
    "a Neuron pool must carry the aws.amazon.com/neuron=true:NoSchedule taint, or ordinary pods fill it and it never "
    "scales to zero (this is a Neuron pool because of {})"
)
NEURON_LIMIT_MISSING = (
    "a Neuron pool must set a limit on aws.amazon.com/neuron or aws.amazon.com/neuroncore: it is the ceiling on Neuron "
    "spend (this is a Neuron pool because of {})"
)
IDLE_BUDGET = (
    'nodes "0" without a schedule blocks every voluntary disruption, even removing empty nodes, so idle {} nodes keep '
    "running (and billing) until expireAfter; give it a schedule and duration (e.g. {{nodes: '0', schedule: '0 8 * * "
    "mon-fri', duration: '10h'}}), or reasons without Empty"
)
DISRUPTION = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m", "budgets": [{"nodes": "1"}]}


def test_gpu_pool_without_taint_or_limit_is_refused():
    found = problems(
        nodeClass="gpu", capacityTypes=["spot"], gpuNames=["l4"], limits={"cpu": "100"}, disruption=DISRUPTION
    )
    assert found == {
        f"{P}.taints": GPU_TAINT_MISSING.format("gpuNames ['l4']"),
        f"{P}.limits": GPU_LIMIT_MISSING.format("gpuNames ['l4']"),
    }


def test_an_empty_limits_mapping_on_a_gpu_pool_gets_the_gpu_message():
    found = problems(nodeClass="gpu", gpuNames=["l4"], taints=[GPU_TAINT.as_dict()], limits={})
    assert found == {f"{P}.limits": GPU_LIMIT_MISSING.format("gpuNames ['l4']")}


def test_a_cpu_pool_without_any_limit_is_refused():
    assert problems(nodeClass="default", limits={}) == {
        f"{P}.limits": (
            "set at least one limit (cpu, memory, nodes): without one Karpenter launches whatever pending pods ask for"
        )
    }


def test_a_preset_gpu_taint_cannot_be_dropped_by_an_override():
    assert problems(preset="gpu-inference", taints=[]) == {
        f"{P}.taints": GPU_TAINT_MISSING.format("gpuNames ['t4', 'a10g', 'l4']")
    }


def test_pool_is_a_gpu_pool_when_it_names_gpu_families_even_without_gpu_names():
    assert problems(preset="cpu-general", instanceFamilies=["g6"], instanceCategories=[]) == {
        f"{P}.taints": GPU_TAINT_MISSING.format("instance family 'g6'"),
        f"{P}.limits": GPU_LIMIT_MISSING.format("instance family 'g6'"),
    }


@pytest.mark.parametrize(("category", "kind"), [("g", "GPU"), ("p", "GPU"), ("inf", "Neuron"), ("trn", "Neuron")])
def test_accelerated_instance_categories_are_accepted_and_make_an_accelerator_pool(category, kind):
    found = problems(nodeClass="gpu", instanceCategories=[category], limits={"cpu": "10"})
    message = GPU_TAINT_MISSING if kind == "GPU" else NEURON_TAINT_MISSING
    assert found[f"{P}.taints"] == message.format(f"instance category {category!r}")
    taint, limit = (GPU_TAINT, {GPU_RESOURCE: "8"}) if kind == "GPU" else (NEURON_TAINT, {NEURON_RESOURCE: "8"})
    spec = pool(nodeClass="gpu", instanceCategories=[category], taints=[taint.as_dict()], limits=limit)
    assert {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": [category]} in render_nodepool(
        "p", spec
    )["spec"]["template"]["spec"]["requirements"]


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
    shown = f"{requirement['key']} {requirement['operator']}" + (
        f" {requirement['values']}" if "values" in requirement else ""
    )
    assert problems(preset="cpu-general", instanceCategories=[], requirements=[requirement]) == {
        f"{P}.taints": GPU_TAINT_MISSING.format(f"the requirement {shown}"),
        f"{P}.limits": GPU_LIMIT_MISSING.format(f"the requirement {shown}"),
    }
    fixed = pool(
        preset="cpu-general",
        instanceCategories=[],
        requirements=[requirement],
        taints=[GPU_TAINT.as_dict()],
        limits={GPU_RESOURCE: "4"},
    )
    rendered = render_nodepool("p", fixed)
    assert taints(rendered) == [GPU_TAINT.as_dict()]
    assert rendered["spec"]["limits"][GPU_RESOURCE] == "4"
    assert {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"} not in rendered["spec"][
        "template"
    ]["spec"]["requirements"]


@pytest.mark.parametrize(
    "requirement",
    [
        req("karpenter.k8s.aws/instance-accelerator-count", "Gt", "0"),
        req("karpenter.k8s.aws/instance-family", "In", "trn2"),
    ],
)
def test_raw_requirements_that_admit_neuron_instances_make_a_neuron_pool(requirement):
    because = f"the requirement {requirement['key']} {requirement['operator']} {requirement['values']}"
    assert problems(preset="cpu-general", instanceCategories=[], generationAbove=None, requirements=[requirement]) == {
        f"{P}.taints": NEURON_TAINT_MISSING.format(because),
        f"{P}.limits": NEURON_LIMIT_MISSING.format(because),
    }


def test_a_neuron_pool_may_be_capped_on_neuron_cores_which_karpenter_counts():
    spec = pool(preset="neuron", limits={NEURON_CORE_RESOURCE: "64"})
    assert spec.accelerator_limits == {NEURON_RESOURCE: 16, NEURON_CORE_RESOURCE: 64}  # the preset's device limit stays
    cores_only = pool(
        nodeClass="gpu", instanceFamilies=["inf2"], taints=[NEURON_TAINT.as_dict()], limits={NEURON_CORE_RESOURCE: "8"}
    )
    assert cores_only.accelerator_limits == {NEURON_CORE_RESOURCE: 8}
    assert render_nodepool("p", cores_only)["spec"]["limits"] == {NEURON_CORE_RESOURCE: "8"}


def test_a_limit_on_neurondevice_is_refused_with_the_reason():
    assert problems(preset="neuron", limits={"aws.amazon.com/neurondevice": "4"}) == {
        f"{P}.limits.aws.amazon.com/neurondevice": NEURONDEVICE_REASON
    }
    assert "Karpenter does not count aws.amazon.com/neurondevice" in NEURONDEVICE_REASON


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
            "the nvidia.com/gpu taint must be exactly nvidia.com/gpu=true:NoSchedule (components/scheduling.py): GPU "
            f"pods tolerate that value and effect, and any other keeps them off the node; got {got}"
        )
    }


@pytest.mark.parametrize(("preset", "what"), [("gpu-inference", "GPU"), ("neuron", "Neuron")])
def test_a_budget_of_zero_without_a_schedule_is_refused_on_accelerator_pools(preset, what):
    found = problems(preset=preset, disruption={"budgets": [{"nodes": "0"}]})
    assert found == {f"{P}.disruption.budgets[0]": IDLE_BUDGET.format(what)}
    assert problems(preset=preset, disruption={"budgets": [{"nodes": "0%", "reasons": ["Empty"]}]}) == {
        f"{P}.disruption.budgets[0]": IDLE_BUDGET.format(what)
    }
    # What is allowed instead: a window, or zero for the reasons that spare idle nodes.
    pool(
        preset=preset,
        disruption={"budgets": [{"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "10h"}, {"nodes": "1"}]},
    )
    pool(preset=preset, disruption={"budgets": [{"nodes": "0", "reasons": ["Drifted", "Underutilized"]}]})


def test_a_budget_of_zero_without_a_schedule_on_a_cpu_pool_is_a_warning():
    config = karpenter_config(
        {"nodePools": {"batch": {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "0"}]}}}}
    )
    assert config.warnings() == [("karpenter.nodePools.batch.disruption.budgets[0]", IDLE_BUDGET.format("CPU"))]
    assert karpenter_config({}).warnings() == []


def test_every_problem_of_a_pool_is_reported_not_only_the_first():
    # Before: a refused family in a requirement hid the missing GPU limit and the wrong taint; a mistyped field
    # hid everything the pool as a whole is checked for.
    found = all_config_problems(
        {
            "nodePools": {
                "p": {
                    "nodeClass": "gpu",
                    "weight": 0,
                    "capacityTypes": ["spot", "preemptible"],
                    "requirements": [req("karpenter.k8s.aws/instance-family", "In", "p5", "g6ee")],
                    "taints": [{"key": GPU_RESOURCE, "value": "yes", "effect": "NoSchedule"}],
                    "limits": {"cpu": "lots"},
                }
            }
        }
    )
    assert [path for path, _ in found] == [
        f"{P}.capacityTypes[1]",
        f"{P}.limits",
        f"{P}.limits.cpu",
        f"{P}.requirements[0].values",
        f"{P}.taints[0]",
        f"{P}.weight",
    ]
    messages = dict(found)
    assert messages[f"{P}.limits"] == GPU_LIMIT_MISSING.format(
        "the requirement karpenter.k8s.aws/instance-family In ['p5', 'g6ee']"
    )
    assert messages[f"{P}.requirements[0].values"].startswith(
        "'g6ee' is not an instance family EC2 offers (components/instances/ec2_families.yaml, as of 2026-08-20); "
        "nearest known: g6e,"
    )
    assert messages[f"{P}.limits.cpu"] == "expected a Kubernetes quantity like '1000', '500m' or '4000Gi', got 'lots'"


def test_checks_that_read_a_field_that_failed_are_skipped_not_run_on_a_stand_in():
    # The taints did not validate: "must carry the GPU taint" would be wrong, so it is not said.
    found = problems(preset="gpu-inference", taints=[{"key": GPU_RESOURCE, "value": "true", "effect": "NoScheduled"}])
    assert list(found) == [f"{P}.taints[0].effect"]
