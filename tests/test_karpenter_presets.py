"""NodePool presets: what each one launches and how it is disrupted, field-by-field overrides, Karpenter's defaults
where a pool leaves a field out, and the references between pools and node classes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.config.errors import ConfigError
from components.karpenter.render import render_nodeclass, render_nodepool, requirements
from components.karpenter.specs import NODE_CLASS_PRESETS, NODE_POOL_PRESETS
from components.platform.parse import parse_config
from components.scheduling import CSI_STARTUP_TAINTS, GPU_RESOURCE, GPU_TAINT, NEURON_RESOURCE, NEURON_TAINT
from tests.karpenter_support import CONTEXT, karpenter_config, pool, raw


def test_preset_fields_can_be_overridden_one_by_one():
    spec = pool(preset="gpu-inference", limits={GPU_RESOURCE: 4}, capacityTypes=["spot"])
    assert spec.limits == {GPU_RESOURCE: "4"}
    assert spec.capacity_types == ("spot",)
    assert spec.gpu_names == ("t4", "a10g", "l4")  # kept from the preset
    assert spec.taints[0].key == GPU_TAINT.key


def test_spot_first_inference_tiers_fall_back_in_weight_order():
    tiers = {name: pool(preset=name) for name in NODE_POOL_PRESETS if name.startswith("gpu-inference-")}
    order = sorted(tiers, key=lambda name: -(tiers[name].weight or 0))
    assert order == ["gpu-inference-a10g-spot", "gpu-inference-t4-spot", "gpu-inference-a10g-on-demand"]
    assert [tiers[n].capacity_types for n in order] == [("spot",), ("spot",), ("on-demand",)]
    assert [tiers[n].instance_families for n in order] == [("g5",), ("g4dn",), ("g5",)]


def test_training_preset_is_on_demand_consolidates_only_when_empty_and_is_protected_by_budgets():
    spec = pool(preset="gpu-training")
    assert spec.capacity_types == ("on-demand",)
    assert spec.disruption.consolidation_policy == "WhenEmpty"
    assert spec.disruption.consolidate_after == "30m"
    assert spec.expire_after == "Never"  # expiry would drain a node mid-job, whatever its pods say
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
    assert spec.accelerator_limits == {NEURON_RESOURCE: 16}


def test_a_pool_without_preset_takes_karpenters_defaults_and_renders_them_in_full():
    spec = pool(nodeClass="default", limits={"cpu": "16"})
    assert (spec.capacity_types, spec.architectures, spec.expire_after) == (("on-demand",), ("amd64",), "720h")
    rendered = render_nodepool("p", spec)["spec"]
    assert rendered["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "10%"}],
    }
    assert rendered["template"]["spec"]["expireAfter"] == "720h"
    assert rendered["template"]["spec"]["terminationGracePeriod"] == "15m"  # the platform's bound, not Karpenter's


def test_a_partial_disruption_keeps_the_preset_values_it_leaves_out():
    spec = pool(preset="gpu-inference", disruption={"consolidateAfter": "15m"})
    assert spec.disruption.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert [b.nodes for b in spec.disruption.budgets] == ["20%"]
    assert (
        pool(preset="cpu-general", disruption={"consolidationPolicy": "Balanced"}).disruption.consolidation_policy
        == "Balanced"
    )


def test_csi_startup_taints_are_rendered_for_the_enabled_drivers():
    rendered = render_nodepool("p", pool(preset="cpu-general"), startup_taints=[CSI_STARTUP_TAINTS["ebs"]])
    assert rendered["spec"]["template"]["spec"]["startupTaints"] == [
        {"key": "ebs.csi.aws.com/agent-not-ready", "effect": "NoExecute"}
    ]


@given(st.sampled_from(sorted(NODE_POOL_PRESETS)))
def test_every_preset_refers_to_a_node_class_preset(preset):
    assert pool(preset=preset).node_class in NODE_CLASS_PRESETS


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(NODE_POOL_PRESETS)), min_size=1, max_size=4, unique=True))
def test_every_node_class_ref_of_a_stack_resolves_to_a_rendered_node_class(presets):
    karpenter = karpenter_config({"nodePools": {f"pool-{i}": {"preset": preset} for i, preset in enumerate(presets)}})
    classes = {render_nodeclass(n, c, CONTEXT)["metadata"]["name"] for n, c in karpenter.node_classes.items()}
    for name, spec in karpenter.node_pools.items():
        assert render_nodepool(name, spec)["spec"]["template"]["spec"]["nodeClassRef"]["name"] in classes


@pytest.mark.parametrize("name", ["GPU", "gpu_pool", "-gpu", "gpu-", "a" * 64])
def test_pool_names_that_are_not_dns_1123_labels_are_refused(name):
    with pytest.raises(ConfigError, match=rf"karpenter\.nodePools\.{re.escape(name)}: the key"):
        parse_config(raw({"nodePools": {name: {"preset": "cpu-general"}}}), project="eks-ml-platform", stack="prod")
