"""GPU node health: the EKS node monitoring agent on every node, Karpenter's node repair on, and per-pool DCGM
health alerts that read only counters the exporter collects at the pinned version."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml

from components import versions
from components.cluster.addons import NODE_MONITORING_CONFIGURATION
from components.gpu.dcgm import DCGM_COUNTERS, OPERATOR_DEFAULT_COUNTERS, counters_csv
from components.karpenter.repair import FEATURE_GATE, REPAIR_CONDITIONS
from components.observability.config import AlertThresholds
from components.observability.cost import cost_rules
from components.observability.render import DASHBOARDS, GpuPool, alert_rules, dashboard

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "reference"
needs_reference = pytest.mark.skipif(not SHARED.exists(), reason="../shared/reference is not beside the repository")
ADDON = "aws:eks/addon:Addon"
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
AGENT = "eks-node-monitoring-agent"


def _csv_fields(path: Path, *, commented: bool) -> dict[str, str]:
    """field -> type of a dcgm-exporter counter list; with `commented`, the lines it lists commented out too (fields
    the exporter knows at that version but does not collect by default)."""
    found = {}
    for line in path.read_text().splitlines():
        text = line.lstrip("#").strip() if commented else line.strip()
        if line.startswith("#") and not commented:
            continue
        parts = [p.strip() for p in text.split(",")]
        if len(parts) >= 3 and re.fullmatch(r"DCGM_[A-Z0-9_]+", parts[0]):
            found[parts[0]] = parts[1]
    return found


def _metrics(expr: str) -> set[str]:
    names: set[str] = set()

    def visit(node):
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            names.add(node.name)

    expr = re.sub(r"\$(nodepool|namespace|node)", "x", expr).replace("$__range", "1d")
    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


def uncollected(exprs, collected) -> set[str]:
    """The DCGM counters the expressions read that the exporter does not collect (parsed, not searched)."""
    return {name for expr in exprs for name in _metrics(expr) if name.startswith("DCGM_")} - set(collected)


def _alert_exprs(pools) -> list[str]:
    rules = alert_rules("r", "monitoring", pools, AlertThresholds())
    return [rule["expr"] for group in rules["spec"]["groups"] for rule in group["rules"]]


def _dashboard_exprs() -> list[str]:
    return [t["expr"] for name in DASHBOARDS for panel in dashboard(name)["panels"] for t in panel["targets"]]


def _cost_exprs() -> list[str]:
    return [rule["expr"] for rule in cost_rules("c", "monitoring", {})["spec"]["groups"][0]["rules"]]


# ---------------------------------------------------------------------------------------------- DCGM counters


@needs_reference
def test_every_counter_the_platform_asks_for_is_a_field_of_the_pinned_exporter():
    known = _csv_fields(SHARED / "dcgm-exporter" / "default-counters.csv", commented=True)
    for field, kind in DCGM_COUNTERS.items():
        assert known.get(field) == kind, field


@needs_reference
def test_the_counter_list_keeps_everything_the_operator_collects_by_default():
    # The operator's default list, as the pinned exporter ships it; ours replaces it, so nothing may go missing.
    default = _csv_fields(SHARED / "dcgm-exporter" / "dcp-metrics-included.csv", commented=False)
    assert dict(OPERATOR_DEFAULT_COUNTERS) == default
    assert set(DCGM_COUNTERS) >= set(default)


def test_alerts_and_dashboards_read_only_counters_the_exporter_collects():
    exprs = _alert_exprs([GpuPool("gpu-a", 8), GpuPool("training", 16)]) + _dashboard_exprs() + _cost_exprs()
    assert uncollected(exprs, DCGM_COUNTERS) == set()
    # The health alerts do read the counters the platform adds to the defaults.
    assert {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"} <= {
        n for e in exprs for n in _metrics(e)
    }


def test_an_alert_on_a_counter_nobody_collects_is_caught():
    seeded = [*_alert_exprs([GpuPool("gpu-a", 8)]), "increase(DCGM_FI_DEV_ECC_SBE_AGG_TOTAL[5m]) > 0"]
    assert uncollected(seeded, DCGM_COUNTERS) == {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"}
    # With only the operator's defaults, the ECC and NVLink alerts would query nothing.
    defaults_only = uncollected(_alert_exprs([GpuPool("gpu-a", 8)]), OPERATOR_DEFAULT_COUNTERS)
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in defaults_only


def test_health_alerts_are_per_gpu_pool_and_only_for_gpu_pools():
    exprs = alert_rules(
        "r", "monitoring", [GpuPool("gpu-a", 8), GpuPool("inf", 4, "aws.amazon.com/neuron")], AlertThresholds()
    )
    health = {r["alert"]: r for g in exprs["spec"]["groups"] if g["name"] == "gpu-health" for r in g["rules"]}
    assert set(health) == {
        "GpuHardwareXid_gpu_a",
        "GpuEccUncorrectable_gpu_a",
        "GpuRowRemapFailed_gpu_a",
        "GpuNvlinkErrors_gpu_a",
    }
    for rule in health.values():
        assert 'karpenter_nodes_allocatable{nodepool="gpu-a", resource_type="nvidia.com/gpu"}' in rule["expr"]
        assert "docs/gpu.md#when-a-gpu-node-fails" in rule["annotations"]["description"]
    assert health["GpuEccUncorrectable_gpu_a"]["labels"]["severity"] == "critical"
    assert health["GpuNvlinkErrors_gpu_a"]["labels"]["severity"] == "warning"


# ---------------------------------------------------------------------------------------------- node repair

#: Karpenter's node repair on AWS as documented for v1.14 (https://karpenter.sh/docs/concepts/disruption/
#: #node-auto-repair) with the waits of the EKS user guide's table for Karpenter
#: (https://docs.aws.amazon.com/eks/latest/userguide/node-repair.html): condition -> (unhealthy statuses, minutes).
DOCUMENTED = {
    "Ready": ({"False", "Unknown"}, 30),
    "AcceleratedHardwareReady": ({"False"}, 10),
    "ContainerRuntimeReady": ({"False"}, 30),
    "KernelReady": ({"False"}, 30),
    "NetworkingReady": ({"False"}, 30),
    "StorageReady": ({"False"}, 30),
}


def test_repair_conditions_are_karpenters_documented_ones():
    assert {c.type: (set(c.statuses), c.after_minutes) for c in REPAIR_CONDITIONS} == DOCUMENTED


def _docs_table() -> dict[str, tuple[set[str], int]]:
    text = (ROOT / "docs" / "gpu.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \| (\d+) min \|", text, flags=re.M)
    return {kind: ({s.strip(" `") for s in statuses.split(" or ")}, int(minutes)) for kind, statuses, minutes in rows}


def test_the_runbook_lists_every_repair_condition_and_its_wait():
    assert _docs_table() == {c.type: (set(c.statuses), c.after_minutes) for c in REPAIR_CONDITIONS}


@needs_reference
def test_the_feature_gate_is_a_key_of_the_pinned_karpenter_chart():
    values = yaml.safe_load((SHARED / "karpenter" / "chart" / "values.yaml").read_text())
    assert FEATURE_GATE in values["settings"]["featureGates"]
    assert values["settings"]["featureGates"][FEATURE_GATE] is False  # off unless the platform turns it on


@pytest.mark.stack
@pytest.mark.render
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_node_repair_is_on_in_both_stacks(stack, request):
    inventory = request.getfixturevalue(stack)
    controller = inventory.release("karpenter")
    assert controller.inputs["values"]["settings"]["featureGates"] == {FEATURE_GATE: True}


# ---------------------------------------------------------------------------------------------- monitoring agent


def _model_facts(addon: str) -> list[dict[str, Any]]:
    facts = json.loads(resources.files("components.tools.cluster_model").joinpath("data/eks_addons.json").read_text())
    return facts["addons"][addon]


@pytest.mark.stack
@pytest.mark.render
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_node_monitoring_agent_is_installed_pinned_in_both_stacks(stack, request):
    inventory = request.getfixturevalue(stack)
    addon = next(a for a in inventory.of_type(ADDON) if a.inputs["addonName"] == AGENT)
    assert addon.inputs["addonVersion"] == versions.eks_addon(versions.DEFAULT_KUBERNETES_VERSION, AGENT).version
    configuration = json.loads(addon.inputs["configurationValues"])
    # Its DCGM host engine runs on the tainted GPU nodes too, as the model's facts say it does.
    dcgm_server = next(p for p in _model_facts(AGENT) if p["name"] == "dcgm-server")
    assert configuration["dcgmAgent"]["tolerations"] == dcgm_server["tolerations"]
    assert configuration == NODE_MONITORING_CONFIGURATION


def test_the_dcgm_host_engine_runs_only_on_nvidia_nodes_in_the_model():
    """dcgm-server's affinity (the add-on chart's dcgmAgent.affinity at v1.7.0) lists NVIDIA instance types only and
    amd64: the model places it on NVIDIA pools, not on CPU or Neuron pools or the system nodes."""
    from components.karpenter.pool_spec import NodePoolSpec
    from components.karpenter.render import render_nodepool
    from components.tools.cluster_model.landing import why_not
    from components.tools.cluster_model.nodes import from_node_group, from_node_pool
    from components.tools.cluster_model.platform import _addon_workloads

    configured = {AGENT: {"configurationValues": json.dumps(NODE_MONITORING_CONFIGURATION)}}
    workloads = {w.name: w for w in _addon_workloads(configured)}
    dcgm, agent = workloads["dcgm-server"], workloads[AGENT]

    def kind(preset: str):
        return from_node_pool(render_nodepool(preset, NodePoolSpec.model_validate({"preset": preset})))

    system = from_node_group("system", {"instanceTypes": ["m7i.xlarge"], "amiType": "AL2023_x86_64_STANDARD"})
    for node in (kind("gpu-inference"), kind("gpu-training")):
        assert why_not(dcgm, node) is None, node.name
    for node in (kind("cpu-general"), kind("neuron"), system):
        assert why_not(dcgm, node) is not None, node.name
        assert why_not(agent, node) is None, node.name  # the agent itself runs everywhere
    assert "names only nvidia instance types" in str(why_not(dcgm, kind("cpu-general")))


def test_the_models_agent_tolerates_every_taint():
    agent = next(p for p in _model_facts(AGENT) if p["name"] == AGENT)
    assert agent["kind"] == "DaemonSet"
    assert {"operator": "Exists"} in agent["tolerations"]


@pytest.mark.stack
@pytest.mark.render
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_exporter_is_given_the_health_counters_in_both_stacks(stack, request):
    inventory = request.getfixturevalue(stack)
    operator = inventory.release("gpu-operator")
    config = operator.inputs["values"]["dcgmExporter"]["config"]
    assert config["create"] is True
    given = {line.split(",")[0].strip(): line.split(",")[1].strip() for line in config["data"].splitlines()}
    assert given == dict(DCGM_COUNTERS)
    assert config["data"] == counters_csv()


def test_every_gpu_pool_of_prod_has_its_health_alerts(prod):
    rule = prod.one(RULE, "observability-alerts")
    alerts = {r["alert"] for group in rule.inputs["spec"]["groups"] for r in group["rules"]}
    pools = {name for name, limit in prod.stack_outputs["nodePoolGpuLimits"].items() if limit is not None}
    assert pools
    for pool in pools:
        suffix = pool.replace("-", "_")
        assert {f"GpuHardwareXid_{suffix}", f"GpuEccUncorrectable_{suffix}", f"GpuNvlinkErrors_{suffix}"} <= alerts
