"""Properties over generated NodePools (hypothesis): any pool the config accepts renders objects the pinned CRDs
accept (schemas and CEL rules), and any pool that can launch GPU or Neuron instances is tainted, capped, and has the
device plugin that makes its accelerators schedulable."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from components.config.errors import ConfigError
from components.gpu.neuron import neuron_values
from components.instances import accelerators
from components.karpenter.render import render_nodeclass, render_nodepool
from components.karpenter.specs import NODE_POOL_PRESETS
from components.platform.parse import parse_config
from components.scheduling import (
    CSI_STARTUP_TAINTS,
    GPU_RESOURCE,
    GPU_TAINT,
    NEURON_CORE_RESOURCE,
    NEURON_RESOURCE,
    NEURON_TAINT,
)
from tests.karpenter_support import CONTEXT, crd_findings, raw, req

#: A sample of instance types with the labels Karpenter gives them (karpenter-provider-aws instancetype/types.go),
#: written out here rather than derived from the facts table, so the property checks the code against facts.
GPU_LABELS = {f"karpenter.k8s.aws/instance-gpu-{k}" for k in ("name", "manufacturer", "count", "memory")}
NEURON_LABELS = {f"karpenter.k8s.aws/instance-accelerator-{k}" for k in ("name", "manufacturer", "count")}


def _instance(
    name: str,
    category: str,
    generation: str,
    arch: str = "amd64",
    gpu: tuple[str, ...] = (),
    neuron: tuple[str, ...] = (),
):
    family, size = name.split(".")
    labels = {
        "node.kubernetes.io/instance-type": name,
        "kubernetes.io/arch": arch,
        "kubernetes.io/os": "linux",
        "karpenter.k8s.aws/instance-category": category,
        "karpenter.k8s.aws/instance-family": family,
        "karpenter.k8s.aws/instance-generation": generation,
        "karpenter.k8s.aws/instance-size": size,
    }
    labels.update(zip(sorted(GPU_LABELS), gpu, strict=False))  # count, manufacturer, memory, name; () without GPUs
    labels.update(zip(sorted(NEURON_LABELS), neuron, strict=False))  # count, manufacturer, name; () without
    return labels


CATALOGUE = [
    _instance("m7i.xlarge", "m", "7"),
    _instance("c7g.2xlarge", "c", "7", arch="arm64"),
    _instance("r6i.large", "r", "6"),
    _instance("c5.large", "c", "5"),
    _instance("t3.medium", "t", "3"),
    _instance("g4dn.12xlarge", "g", "4", gpu=("4", "nvidia", "16384", "t4")),
    _instance("g5.xlarge", "g", "5", gpu=("1", "nvidia", "24576", "a10g")),
    _instance("g5g.xlarge", "g", "5", arch="arm64", gpu=("1", "nvidia", "16384", "t4g")),
    _instance("g6.2xlarge", "g", "6", gpu=("1", "nvidia", "24576", "l4")),
    _instance("g6e.xlarge", "g", "6", gpu=("1", "nvidia", "49152", "l40s")),
    _instance("g7e.2xlarge", "g", "7", gpu=("1", "nvidia", "98304", "rtx-pro-6000")),
    _instance("p4d.24xlarge", "p", "4", gpu=("8", "nvidia", "40960", "a100")),
    _instance("p5.48xlarge", "p", "5", gpu=("8", "nvidia", "81920", "h100")),
    _instance("p6-b200.48xlarge", "p", "6", gpu=("8", "nvidia", "183359", "b200")),
    _instance("inf2.xlarge", "inf", "2", neuron=("1", "aws", "inferentia2")),
    _instance("trn1.32xlarge", "trn", "1", neuron=("16", "aws", "trainium")),
    _instance("trn2.48xlarge", "trn", "2", neuron=("16", "aws", "trainium2")),
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
    """The catalogue's instances the rendered NodePool may launch, in any capacity type."""
    pool_requirements = rendered["spec"]["template"]["spec"]["requirements"]
    return [
        labels
        for labels in CATALOGUE
        for capacity in ("spot", "on-demand", "reserved")
        if all(_admits(r, {**labels, "karpenter.sh/capacity-type": capacity}) for r in pool_requirements)
    ]


REQUIREMENT_CHOICES = [
    req("karpenter.k8s.aws/instance-family", "In", "p5"),
    req("node.kubernetes.io/instance-type", "In", "m7i.xlarge", "g6.2xlarge"),
    req("karpenter.k8s.aws/instance-category", "In", "g"),
    req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0"),
    req("karpenter.k8s.aws/instance-gpu-name", "Exists"),
    req("karpenter.k8s.aws/instance-accelerator-count", "Exists"),
    req("karpenter.k8s.aws/instance-family", "In", "inf2", "trn2", minValues=2),
    req("karpenter.k8s.aws/instance-category", "NotIn", "c"),
    req("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist"),
    req("karpenter.k8s.aws/instance-gpu-name", "NotIn", "t4"),
    req("karpenter.k8s.aws/instance-generation", "Gt", "3"),
    req("kubernetes.io/arch", "In", "amd64"),
    req("karpenter.k8s.aws/capacity-reservation-type", "In", "capacity-block"),
    req("eksml.io/team", "In", "vision"),
]
ACCELERATED = sorted({*accelerators.ACCELERATED_FAMILIES, "g7e", "p6e-gb200"})
overrides = st.fixed_dictionaries(
    {},
    optional={
        "capacityTypes": st.lists(
            st.sampled_from(["spot", "on-demand", "reserved"]), min_size=1, max_size=3, unique=True
        ),
        "architectures": st.sampled_from([["amd64"], ["arm64"], ["amd64", "arm64"]]),
        "limits": st.dictionaries(
            st.sampled_from(["cpu", GPU_RESOURCE, NEURON_RESOURCE, NEURON_CORE_RESOURCE]),
            st.integers(1, 512).map(str),
            max_size=2,
        ),
        "weight": st.integers(1, 100),
        "gpuNames": st.lists(st.sampled_from(sorted(accelerators.nvidia_gpu_names())), max_size=3, unique=True),
        "taints": st.sampled_from(
            [
                [],
                [GPU_TAINT.as_dict()],
                [NEURON_TAINT.as_dict()],
                [NEURON_TAINT.as_dict(), {"key": "eksml.io/team", "value": "a", "effect": "NoSchedule"}],
            ]
        ),
        "instanceCategories": st.sampled_from([[], ["c", "m", "r"], ["g"], ["p"], ["inf", "trn"]]),
        "instanceFamilies": st.lists(st.sampled_from([*ACCELERATED, "m7i", "c7g"]), max_size=2, unique=True),
        "generationAbove": st.sampled_from([None, 3, 5]),
        "requirements": st.lists(st.sampled_from(REQUIREMENT_CHOICES), max_size=2, unique_by=json.dumps),
        "disruption": st.sampled_from(
            [
                {},
                {"budgets": [{"nodes": "0"}]},
                {"consolidationPolicy": "Balanced"},
                {"budgets": [{"nodes": "0", "schedule": "@daily", "duration": "8h"}, {"nodes": "1"}]},
            ]
        ),
    },
)
NODE_CLASSES = {
    "default": {"preset": "default"},
    "gpu": {"preset": "gpu", "capacityReservationSelectorTerms": [{"tags": {"purpose": "ml"}}]},
    "gpu-training": {
        "preset": "gpu-training",
        "instanceStorePolicy": "RAID0",
        "userData": {"parallelImagePull": True},
        "capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0"}],
        "placementGroupSelector": {"name": "ml"},
    },
}


def accepted(preset: str, override: dict[str, Any]):
    """The stack config with this one pool, or None when config refuses it (with messages, tested elsewhere)."""
    karpenter = {
        "acceleratorFamilies": {"g7e": {"gpuName": "rtx-pro-6000", "memoryGib": 96, "devices": {"2xlarge": 1}}},
        "nodeClasses": NODE_CLASSES,
        "nodePools": {"p": {"preset": preset, **override}},
    }
    try:
        return parse_config(raw(karpenter), project="eks-ml-platform", stack="prod")
    except ConfigError:
        return None


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from(sorted(NODE_POOL_PRESETS)), overrides)
@example(
    "cpu-general", {"instanceCategories": [], "requirements": [req("karpenter.k8s.aws/instance-category", "In", "g")]}
)
@example("cpu-general", {"instanceCategories": []})
@example("neuron", {"instanceFamilies": ["trn2"], "limits": {NEURON_CORE_RESOURCE: "64"}})
def test_every_accepted_pool_that_can_launch_accelerators_is_tainted_capped_and_has_its_device_plugin(preset, override):
    config = accepted(preset, override)
    if config is None:
        return
    spec = config.karpenter.node_pools["p"]
    rendered = render_nodepool("p", spec)
    taints, limits = rendered["spec"]["template"]["spec"].get("taints", []), rendered["spec"]["limits"]
    pool_requirements = rendered["spec"]["template"]["spec"]["requirements"]
    reachable = launchable(rendered)
    if any(GPU_LABELS & labels.keys() for labels in reachable):
        assert GPU_TAINT.as_dict() in taints
        assert int(limits[GPU_RESOURCE]) >= 1
        assert config.gpu_node_image is not None  # the GPU Operator (and its device plugin) is installed
    if any(NEURON_LABELS & labels.keys() for labels in reachable):
        assert NEURON_TAINT.as_dict() in taints
        assert any(int(limits.get(r, 0)) >= 1 for r in (NEURON_RESOURCE, NEURON_CORE_RESOURCE))
        tolerated = {
            (t["key"], t.get("effect"))
            for t in neuron_values(config.karpenter.neuron_taints() or ())["devicePlugin"]["tolerations"]
        }
        assert {(t["key"], t["effect"]) for t in taints} <= tolerated  # the Neuron device plugin lands on its nodes
    # An untainted pool excludes every accelerated instance, not only the catalogue's.
    if GPU_TAINT.as_dict() not in taints:
        assert any(r["key"] in GPU_LABELS and r["operator"] == "DoesNotExist" for r in pool_requirements)
    if NEURON_TAINT.as_dict() not in taints:
        assert any(r["key"] in NEURON_LABELS and r["operator"] == "DoesNotExist" for r in pool_requirements)
    assert rendered["spec"]["disruption"]["budgets"]


REQUIRES_RESERVATION_EXAMPLE = [req("karpenter.k8s.aws/instance-family", "In", "p5", "p5e", minValues=2)]


@pytest.mark.refcheck
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from(sorted(NODE_POOL_PRESETS)), overrides)
@example(
    "gpu-training",
    {"capacityTypes": ["reserved"], "gpuNames": ["h100", "h200"], "requirements": REQUIRES_RESERVATION_EXAMPLE},
)
def test_every_accepted_pool_and_its_class_pass_the_pinned_crds(preset, override):
    config = accepted(preset, override)
    if config is None:
        assert override.get("requirements") != REQUIRES_RESERVATION_EXAMPLE  # the example below must be accepted
        return
    spec = config.karpenter.node_pools["p"]
    objects = [
        render_nodeclass(spec.node_class, config.karpenter.node_classes[spec.node_class], CONTEXT),
        render_nodepool("p", spec, startup_taints=[CSI_STARTUP_TAINTS["ebs"]]),
    ]
    assert crd_findings(objects) == []
