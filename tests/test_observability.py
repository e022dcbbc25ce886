"""Observability: dashboards query only metrics that exist, alerts follow the NodePools of the stack, Grafana's
password is generated and secret, and monitors wait for their CRDs."""

from __future__ import annotations

import json
import operator
from pathlib import Path

import promql_parser
import pytest

from components import versions
from components.observability.config import AlertThresholds
from components.observability.render import (
    DASHBOARDS,
    DCGM_METRICS,
    KARPENTER_METRICS,
    KUBE_STATE_METRICS,
    GpuPool,
    alert_rules,
    dashboard,
)
from components.scheduling import Placement
from tests.conftest import run_stack

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "dcgm-exporter"
KNOWN = DCGM_METRICS | KARPENTER_METRICS | KUBE_STATE_METRICS
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"


def metric_names(expr: str) -> set[str]:
    """Every metric an expression selects, from the parsed PromQL (not a text search)."""
    names: set[str] = set()

    def visit(node):
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expr.replace("$nodepool", "x").replace("$namespace", "x").replace("$node", "x")), visit)
    return names


def dashboard_queries(name: str) -> list[str]:
    return [target["expr"] for panel in dashboard(name)["panels"] for target in panel["targets"]]


@pytest.mark.parametrize("name", DASHBOARDS)
def test_every_dashboard_parses_and_queries_only_known_metrics(name):
    board = dashboard(name)
    assert board["uid"].startswith("eksml-") and board["panels"]
    for expr in dashboard_queries(name):
        names = metric_names(expr)
        assert names, expr
        assert names <= KNOWN, f"{name}: unknown metrics {names - KNOWN} in {expr}"


@pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference is not beside the repository")
def test_every_dcgm_metric_used_is_collected_by_the_exporters_default_counters():
    collected = set()
    for csv in REFERENCE.glob("*.csv"):
        for line in csv.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                collected.add(line.split(",")[0].strip())
    used = {n for name in DASHBOARDS for e in dashboard_queries(name) for n in metric_names(e) if n.startswith("DCGM_")}
    assert used and used <= collected and DCGM_METRICS <= collected


def test_dashboards_answer_gpu_use_per_namespace_pod_and_node():
    workloads = " ".join(dashboard_queries("gpu-workloads"))
    assert "by (namespace)" in workloads and "by (namespace, pod)" in workloads
    overview = " ".join(dashboard_queries("gpu-overview"))
    assert "by (node, gpu)" in overview
    karpenter = " ".join(dashboard_queries("karpenter"))
    assert 'karpenter_nodepools_limit{nodepool=~"$nodepool", resource_type="nvidia.com/gpu"}' in karpenter


def test_every_alert_expression_queries_only_known_metrics():
    rules = alert_rules("r", "monitoring", [GpuPool("gpu-a", 8)], AlertThresholds())
    alerts = [rule for group in rules["spec"]["groups"] for rule in group["rules"]]
    assert {a["alert"] for a in alerts} == {
        "GpuIdle", "GpuHardwareXid", "GpuXidError", "GpuPodsPending", "KarpenterLaunchFailures", "NodePoolGpuNearLimit_gpu_a",
    }
    for alert in alerts:
        assert metric_names(alert["expr"]) <= KNOWN
        assert alert["annotations"]["description"]  # what to do about it


def _series(node, last_xid):
    """PromQL evaluated for one GPU whose last XID over 5 minutes is `last_xid`: the values left of its one series
    (an empty set: the series was filtered out). Only what the XID alerts use: comparisons with a number, `or`,
    `unless`, parentheses; anything else is that GPU's series."""
    if isinstance(node, promql_parser.ParenExpr):
        return _series(node.expr, last_xid)
    if not isinstance(node, promql_parser.BinaryExpr):
        return {last_xid}
    op, left = str(node.op), _series(node.lhs, last_xid)
    if op == "or":
        return left or _series(node.rhs, last_xid)
    if op == "unless":
        return set() if _series(node.rhs, last_xid) else left
    compare = {"==": operator.eq, ">": operator.gt}[op]
    return {v for v in left if compare(v, node.rhs.val)}


def _firing(expr, last_xid):
    return bool(_series(promql_parser.parse(expr), last_xid))


@pytest.mark.parametrize(("xid", "hardware", "other"), [(0, False, False), (13, False, True), (43, False, True), (48, True, False), (79, True, False)])
def test_hardware_xids_page_and_application_xids_only_warn(xid, hardware, other):
    rules = alert_rules("r", "monitoring", [], AlertThresholds())
    alerts = {rule["alert"]: rule for group in rules["spec"]["groups"] for rule in group["rules"]}
    assert alerts["GpuHardwareXid"]["labels"]["severity"] == "critical"
    assert alerts["GpuXidError"]["labels"]["severity"] == "warning"
    assert _firing(alerts["GpuHardwareXid"]["expr"], xid) is hardware
    assert _firing(alerts["GpuXidError"]["expr"], xid) is other


def _alerts(inventory):
    rule = inventory.one(RULE)
    return {r["alert"]: r for group in rule.inputs["spec"]["groups"] for r in group["rules"]}


def test_there_is_a_near_limit_alert_for_every_gpu_pool_of_the_stack(prod):
    alerts = _alerts(prod)
    pools = {name for name, limit in prod.stack_outputs["nodePoolGpuLimits"].items() if limit is not None}
    near_limit = {a for a in alerts if a.startswith("NodePoolGpuNearLimit_")}
    assert near_limit == {f"NodePoolGpuNearLimit_{p.replace('-', '_')}" for p in pools}
    training = alerts["NodePoolGpuNearLimit_training"]
    assert 'nodepool="training", resource_type="nvidia.com/gpu"' in training["expr"]
    assert training["expr"].endswith("> 0.9")


def test_alerts_change_when_the_pools_and_thresholds_change():
    inventory = run_stack(
        "dev",
        {
            "karpenter": {
                "nodeClasses": {"default": {"preset": "default"}, "gpu": {"preset": "gpu"}},
                "nodePools": {"l4-spot": {"preset": "gpu-inference", "gpuNames": ["l4"]}},
            },
            "observability": {"alerts": {"gpuLimitRatio": 0.75, "gpuIdlePercent": 5, "pendingGpuPodsFor": "30m"}},
        },
    )
    alerts = _alerts(inventory)
    assert [a for a in alerts if a.startswith("NodePoolGpuNearLimit_")] == ["NodePoolGpuNearLimit_l4_spot"]
    assert alerts["NodePoolGpuNearLimit_l4_spot"]["expr"].endswith("> 0.75")
    assert alerts["GpuIdle"]["expr"].endswith("< 5")
    assert alerts["GpuPodsPending"]["for"] == "30m"


def test_grafana_password_is_generated_secret_and_never_the_chart_default(dev):
    release = next(r for r in dev.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kube-prometheus-stack")
    grafana = release.inputs["values"]["grafana"]
    assert grafana["admin"] == {"existingSecret": "grafana-admin", "userKey": "admin-user", "passwordKey": "admin-password"}
    assert "adminPassword" not in grafana
    password = dev.one("random:index/randomPassword:RandomPassword", "observability-grafana-admin")
    assert password.inputs["length"] >= 32
    secret = dev.one("kubernetes:core/v1:Secret", "observability-grafana-admin")
    assert secret.inputs["metadata"] == {"name": "grafana-admin", "namespace": "monitoring"}
    assert secret.inputs["stringData"]["admin-password"] == "[secret]"
    assert password.urn in secret.dependencies
    assert dev.stack_outputs["grafanaAdminPassword"] == "[secret]"
    assert dev.depends_on(release, secret)


def test_prometheus_selects_monitors_and_rules_from_every_namespace(dev):
    release = next(r for r in dev.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kube-prometheus-stack")
    spec = release.inputs["values"]["prometheus"]["prometheusSpec"]
    for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False
    assert spec["retention"] == "15d"
    assert spec["storageSpec"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "gp3"
    assert spec["nodeSelector"] == {"eksml.io/node-role": "system"}
    assert release.inputs["version"] == versions.KUBE_PROMETHEUS_STACK.version


def test_prometheus_volume_goes_with_it_in_dev_and_stays_in_prod(dev, prod):
    def policy(inventory):
        release = next(r for r in inventory.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kube-prometheus-stack")
        return release.inputs["values"]["prometheus"]["prometheusSpec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"]

    assert policy(dev) == "Delete" and policy(prod) == "Retain"


def test_monitors_rules_and_dashboards_wait_for_the_release_that_installs_their_crds(dev):
    release = next(r for r in dev.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kube-prometheus-stack")
    for kind in ("monitoring.coreos.com/v1:ServiceMonitor", "monitoring.coreos.com/v1:PrometheusRule"):
        for resource in dev.of_type(f"kubernetes:{kind}"):
            assert release.urn in resource.dependencies
    dashboards = [c for c in dev.of_type("kubernetes:core/v1:ConfigMap") if c.name.startswith("observability-dashboard-")]
    assert len(dashboards) == len(DASHBOARDS)
    for configmap in dashboards:
        assert configmap.inputs["metadata"]["labels"] == {"grafana_dashboard": "1"}
        (text,) = configmap.inputs["data"].values()
        assert json.loads(text)["panels"]


def test_karpenter_is_scraped_through_its_charts_service(dev):
    monitor = dev.one("kubernetes:monitoring.coreos.com/v1:ServiceMonitor")
    karpenter = next(r for r in dev.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "karpenter")
    assert monitor.inputs["spec"]["namespaceSelector"] == {"matchNames": [karpenter.inputs["namespace"]]}
    assert monitor.inputs["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "karpenter"
    assert monitor.inputs["spec"]["endpoints"][0]["port"] == "http-metrics"


def test_alertmanager_webhook_is_a_secret_receiver():
    inventory = run_stack("dev", {"observability": {"alertmanager": {"webhookUrl": "https://hooks.example.com/T0/B0/x"}}})
    release = next(r for r in inventory.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kube-prometheus-stack")
    config = release.inputs["values"]["alertmanager"]["config"]
    # The whole receiver configuration becomes secret with the URL; its shape is kept.
    assert set(config) == {"route", "receivers"}
    null_receiver, default_receiver = config["receivers"]
    assert default_receiver["webhook_configs"][0]["url"] == "[secret]"
    assert "hooks.example.com" not in json.dumps([r.inputs for r in inventory.resources])

    from components.observability.component import stack_values
    from components.observability.config import ObservabilityConfig

    plain = stack_values(
        ObservabilityConfig(), storage_class="gp3", delete_volumes=True, placement=Placement({}, ()), webhook_url="https://x"
    )["alertmanager"]["config"]
    assert plain["route"] == {"receiver": "default"}
    assert [r["name"] for r in plain["receivers"]] == ["null", "default"]  # the chart's routes still find "null"


def test_observability_can_be_left_out():
    inventory = run_stack("dev", {"observability": {"enabled": False}})
    assert not inventory.of_type("eksml:observability:Observability")
