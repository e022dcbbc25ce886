"""NodePool and EC2NodeClass specs: presets, validation messages, and properties of everything they render."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from components import gpu_facts, versions
from components.nodepool_render import NodeClassContext, render_nodeclass, render_nodepool, requirements
from components.nodepools import NODE_CLASS_PRESETS, NODE_POOL_PRESETS, NodeClassSpec, NodePoolSpec
from components.scheduling import CSI_STARTUP_TAINTS, GPU_RESOURCE, GPU_TAINT, NEURON_RESOURCE, NEURON_TAINT

DNS_1123 = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
CONTEXT = NodeClassContext(cluster_name="ml", node_role_name="ml-node", tags={"team": "ml"})


def pool(**fields) -> NodePoolSpec:
    return NodePoolSpec.model_validate(fields)


def problems(**fields) -> dict[str, str]:
    from components.config_errors import issues_from  # the same formatting stack config errors get

    with pytest.raises(ValidationError) as caught:
        NodePoolSpec.model_validate(fields)
    return {issue.path: issue.message for issue in issues_from(caught.value, NodePoolSpec)}


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


def test_cpu_general_preset_is_multi_arch_recent_c_m_r():
    rendered = requirements(pool(preset="cpu-general"))
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]} in rendered
    assert {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]} in rendered
    assert {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]} in rendered
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]} in rendered


def test_neuron_preset_carries_the_neuron_taint_and_limit():
    spec = pool(preset="neuron")
    assert spec.accelerator == "neuron"
    assert [t.key for t in spec.taints] == [NEURON_TAINT.key]
    assert NEURON_RESOURCE in spec.limits


# ------------------------------------------------------------------------------------------------ validation


def test_gpu_pool_without_taint_or_limit_is_refused():
    found = problems(
        nodeClass="gpu",
        capacityTypes=["spot"],
        gpuNames=["l4"],
        limits={"cpu": "100"},
        disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m", "budgets": [{"nodes": "1"}]},
    )
    assert "must carry the nvidia.com/gpu=true:NoSchedule taint" in found["taints"]
    assert found["limits"].startswith("a GPU pool must set a nvidia.com/gpu limit")


def test_a_preset_gpu_taint_cannot_be_dropped_by_an_override():
    assert "must carry the nvidia.com/gpu=true:NoSchedule taint" in problems(preset="gpu-inference", taints=[])["taints"]


def test_pool_is_a_gpu_pool_when_it_names_gpu_families_even_without_gpu_names():
    found = problems(preset="cpu-general", instanceFamilies=["g5"], instanceCategories=[])
    assert "taints" in found and "limits" in found


@pytest.mark.parametrize(
    ("fields", "path", "message"),
    [
        ({"preset": "gpu-inference", "gpuNames": ["a10"]}, "gpuNames", "unknown value 'a10'; expected one of a100, a10g"),
        ({"preset": "cpu-general", "instanceCategories": ["q"]}, "instanceCategories", "unknown value 'q'"),
        ({"preset": "cpu-general", "instanceFamilies": ["M7I"]}, "instanceFamilies", "'M7I' is not an instance family"),
        ({"preset": "gpu-inference", "instanceFamilies": ["p5"]}, "instanceFamilies", "['p5'] have none of the GPUs in gpuNames"),
        ({"preset": "gpu-inference", "instanceFamilies": ["g5", "inf2"]}, "instanceFamilies", "mixes NVIDIA and Neuron families"),
        ({"preset": "gpu-inference", "limits": {GPU_RESOURCE: "1.5"}}, "limits.nvidia.com/gpu", "expected a whole number of devices, got '1.5'"),
        ({"preset": "cpu-general", "limits": {"gpus": "4"}}, "limits.gpus", "unknown resource; expected cpu, memory"),
        ({"preset": "cpu-general", "limits": {"memory": "4 TB"}}, "limits.memory", "expected a Kubernetes quantity"),
        ({"preset": "cpu-general", "taints": [GPU_TAINT.as_dict()]}, "taints", "carries the nvidia.com/gpu taint but launches no GPU instances"),
        ({"preset": "cpu-general", "weight": 0}, "weight", "Input should be greater than or equal to 1"),
        ({"preset": "cpu-general", "capacityTypes": ["preemptible"]}, "capacityTypes[0]", "Input should be 'spot', 'on-demand' or 'reserved'"),
        ({"preset": "cpu-general", "expireAfter": "30d"}, "expireAfter", "expected a duration like '30s', '5m', '720h' or 'Never', got '30d'"),
        (
            {"preset": "cpu-general", "disruption": {"consolidateAfter": "2 minutes"}},
            "disruption.consolidateAfter",
            "expected a duration like",
        ),
        (
            {"preset": "cpu-general", "disruption": {"consolidationPolicy": "WhenUnderutilized"}},
            "disruption.consolidationPolicy",
            "Input should be 'WhenEmpty' or 'WhenEmptyOrUnderutilized'",
        ),
        ({"preset": "cpu-general", "disruption": {"budgets": []}}, "disruption.budgets", "needs at least one budget"),
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
            {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "1", "schedule": "nine am", "duration": "8h"}]}},
            "disruption.budgets[0].schedule",
            "expected a cron schedule like '0 9 * * mon-fri' or '@daily', got 'nine am'",
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "1", "schedule": "@daily", "duration": "30s"}]}},
            "disruption.budgets[0].duration",
            "expected a duration in hours and minutes",
        ),
        (
            {"preset": "cpu-general", "disruption": {"budgets": [{"nodes": "1", "reasons": ["Expired"]}]}},
            "disruption.budgets[0].reasons[0]",
            "Input should be 'Underutilized', 'Empty' or 'Drifted'",
        ),
        (
            {"preset": "cpu-general", "requirements": [{"key": "karpenter.k8s.aws/instance-gpu-nam", "operator": "In", "values": ["1"]}]},
            "requirements[0].key",
            "unknown requirement key 'karpenter.k8s.aws/instance-gpu-nam'; did you mean 'karpenter.k8s.aws/instance-gpu-name'?",
        ),
        (
            {"preset": "cpu-general", "requirements": [{"key": "kubernetes.io/arch", "operator": "In"}]},
            "requirements[0].values",
            "operator In needs at least one value",
        ),
        (
            {"preset": "cpu-general", "requirements": [{"key": "kubernetes.io/arch", "operator": "Exists", "values": ["amd64"]}]},
            "requirements[0].values",
            "operator Exists takes no values",
        ),
        (
            {"preset": "cpu-general", "requirements": [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["many"]}]},
            "requirements[0].values",
            "operator Gt takes exactly one whole number",
        ),
        (
            {"preset": "cpu-general", "requirements": [{"key": "kubernetes.io/arch", "operator": "Like", "values": ["x"]}]},
            "requirements[0].operator",
            "Input should be 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt', 'Gte' or 'Lte'",
        ),
        ({"preset": "cpu-general", "taints": [{"key": "dedicated", "effect": "NoExecut"}]}, "taints[0].effect", "Input should be 'NoSchedule'"),
        ({"preset": "large"}, "", "unknown preset 'large'; expected one of cpu-general, gpu-inference"),
    ],
)
def test_mistake_in_a_pool_is_reported_with_its_field_and_expectation(fields, path, message):
    found = problems(**fields)
    assert path in found, found
    assert message in found[path]


# ---------------------------------------------------------------------------------------- rendered properties

pool_presets = st.sampled_from(sorted(NODE_POOL_PRESETS))
overrides = st.fixed_dictionaries(
    {},
    optional={
        "capacityTypes": st.lists(st.sampled_from(["spot", "on-demand"]), min_size=1, max_size=2, unique=True),
        "limits": st.dictionaries(st.sampled_from(["cpu", GPU_RESOURCE]), st.integers(1, 512).map(str), max_size=2),
        "weight": st.integers(1, 100),
        "gpuNames": st.lists(st.sampled_from(sorted(gpu_facts.NVIDIA_GPU_NAMES)), min_size=1, max_size=3, unique=True),
        "taints": st.just([]),
        "instanceFamilies": st.lists(st.sampled_from(sorted(gpu_facts.ACCELERATED_FAMILIES)), max_size=2, unique=True),
    },
)
names = st.from_regex(DNS_1123, fullmatch=True).filter(lambda n: len(n) <= 63)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(pool_presets, overrides, names)
def test_every_pool_that_validates_renders_a_tainted_capped_gpu_pool_or_none_at_all(preset, override, name):
    try:
        spec = pool(preset=preset, **override)
    except ValidationError:
        return  # refused with a message: tested above
    rendered = render_nodepool(name, spec)
    taints = _taints(rendered)
    if spec.accelerator == "nvidia":
        assert GPU_TAINT.as_dict() in taints
        assert int(rendered["spec"]["limits"][GPU_RESOURCE]) >= 1
    elif spec.accelerator == "neuron":
        assert NEURON_TAINT.as_dict() in taints
        assert NEURON_RESOURCE in rendered["spec"]["limits"]
    else:
        assert all(t["key"] != GPU_TAINT.key for t in taints)
    assert DNS_1123.fullmatch(rendered["metadata"]["name"])
    assert rendered["spec"]["disruption"]["budgets"]


@given(pool_presets)
def test_every_preset_refers_to_a_node_class_preset(preset):
    assert pool(preset=preset).node_class in NODE_CLASS_PRESETS


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


def test_node_class_rejects_unknown_presets_and_out_of_range_volumes():
    with pytest.raises(ValidationError, match="unknown preset 'huge'"):
        NodeClassSpec.model_validate({"preset": "huge"})
    with pytest.raises(ValidationError, match="less than or equal to 16000"):
        NodeClassSpec.model_validate({"preset": "gpu", "rootVolumeIops": 20000})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(NODE_POOL_PRESETS)), min_size=1, max_size=4, unique=True))
def test_every_node_class_ref_of_a_stack_resolves_to_a_rendered_node_class(presets):
    import json

    from components.config import parse_config

    pools = {f"pool-{i}": {"preset": preset} for i, preset in enumerate(presets)}
    raw = {
        "aws:region": "us-west-2",
        "eks-ml-platform:environment": "prod",
        "eks-ml-platform:owner": "ml",
        "eks-ml-platform:karpenter": json.dumps({"nodePools": pools}),
    }
    karpenter = parse_config(raw, project="eks-ml-platform", stack="prod").karpenter
    classes = {render_nodeclass(n, c, CONTEXT)["metadata"]["name"] for n, c in karpenter.node_classes.items()}
    for name, spec in karpenter.node_pools.items():
        assert render_nodepool(name, spec)["spec"]["template"]["spec"]["nodeClassRef"]["name"] in classes


@pytest.mark.parametrize("name", ["GPU", "gpu_pool", "-gpu", "gpu-", "a" * 64])
def test_pool_names_that_are_not_dns_1123_labels_are_refused(name):
    import json

    from components.config import ConfigError, parse_config

    raw = {
        "aws:region": "us-west-2",
        "eks-ml-platform:environment": "prod",
        "eks-ml-platform:owner": "ml",
        "eks-ml-platform:karpenter": json.dumps({"nodePools": {name: {"preset": "cpu-general"}}}),
    }
    with pytest.raises(ConfigError, match=rf"karpenter\.nodePools\.{re.escape(name)}: the key"):
        parse_config(raw, project="eks-ml-platform", stack="prod")
