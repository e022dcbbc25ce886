"""Observability: dashboards query only metrics that exist, alerts follow the NodePools of the stack, Grafana's
password is generated and secret, monitors wait for their CRDs, and prometheus-adapter serves DCGM's per-pod GPU
utilisation from the stack's Prometheus."""

from __future__ import annotations

import json
import operator
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import promql_parser
import pytest
import yaml

from components import versions
from components.config.errors import ConfigError
from components.observability.adapter import (
    DCGM_GPU_UTIL,
    DCGM_NAMESPACE_LABEL,
    DCGM_POD_LABEL,
    GPU_UTILIZATION_METRIC,
    PROMETHEUS_PORT,
    adapter_values,
    gpu_utilization_rule,
)
from components.observability.config import AlertThresholds
from components.observability.cost import RECORDED
from components.observability.network_policy import ADAPTER_PORT
from components.observability.render import (
    DASHBOARDS,
    DCGM_METRICS,
    KARPENTER_METRICS,
    KUBE_STATE_METRICS,
    GpuPool,
    alert_rules,
    dashboard,
    gpu_pools,
)
from components.platform.parse import parse_config
from components.scheduling import SYSTEM_PLACEMENT, Placement
from components.tools.cluster_model.netpol import Endpoint, allowed
from tests.conftest import PROJECT, run_stack, stack_config

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "dcgm-exporter"
KNOWN = DCGM_METRICS | KARPENTER_METRICS | KUBE_STATE_METRICS | RECORDED
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"


def metric_names(expr: str) -> set[str]:
    """Every metric an expression selects, from the parsed PromQL (not a text search)."""
    names: set[str] = set()

    def visit(node):
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            names.add(node.name)

    promql_parser.walk(
        promql_parser.parse(
            expr.replace("$nodepool", "x").replace("$namespace", "x").replace("$node", "x").replace("$__range", "1d")
        ),
        visit,
    )
    return names


def dashboard_queries(name: str) -> list[str]:
    return [target["expr"] for panel in dashboard(name)["panels"] for target in panel["targets"]]


@pytest.mark.parametrize("name", DASHBOARDS)
def test_every_dashboard_parses_and_queries_only_known_metrics(name):
    board = dashboard(name)
    assert board["uid"].startswith("eksml-")
    assert board["panels"]
    for expr in dashboard_queries(name):
        names = metric_names(expr)
        assert names, expr
        assert names <= KNOWN, f"{name}: unknown metrics {names - KNOWN} in {expr}"


def test_dashboards_answer_gpu_use_per_namespace_pod_and_node():
    workloads = " ".join(dashboard_queries("gpu-workloads"))
    assert "by (namespace)" in workloads
    assert "by (namespace, pod)" in workloads
    overview = " ".join(dashboard_queries("gpu-overview"))
    assert "by (node, gpu)" in overview
    karpenter = " ".join(dashboard_queries("karpenter"))
    assert 'karpenter_nodepools_limit{nodepool=~"$nodepool", resource_type="nvidia.com/gpu"}' in karpenter


def test_every_alert_expression_queries_only_known_metrics():
    rules = alert_rules("r", "monitoring", [GpuPool("gpu-a", 8)], AlertThresholds())
    alerts = [rule for group in rules["spec"]["groups"] for rule in group["rules"]]
    assert {a["alert"] for a in alerts} == {
        "GpuIdle",
        "GpuHardwareXid_gpu_a",
        "GpuEccUncorrectable_gpu_a",
        "GpuRowRemapFailed_gpu_a",
        "GpuNvlinkErrors_gpu_a",
        "GpuXidError",
        "GpuPodsPending",
        "KarpenterLaunchFailures",
        "NodePoolGpuNearLimit_gpu_a",
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
    if op == "and":  # the pool's nodes: this GPU's node is one
        return left if _series(node.rhs, last_xid) else set()
    if op == "or":
        return left or _series(node.rhs, last_xid)
    if op == "unless":
        return set() if _series(node.rhs, last_xid) else left
    compare = {"==": operator.eq, ">": operator.gt}[op]
    assert isinstance(node.rhs, promql_parser.NumberLiteral)
    return {v for v in left if compare(v, node.rhs.val)}


def _firing(expr, last_xid):
    return bool(_series(promql_parser.parse(expr), last_xid))


@pytest.mark.parametrize(
    ("xid", "hardware", "other"),
    [
        (0, False, False),
        (13, False, True),
        (43, False, True),
        (48, True, False),
        (79, True, False),
        # What pages is what the EKS node monitoring agent (v1.7.0) treats as fatal, and so what node repair replaces:
        (46, True, False),
        (140, True, False),
        (143, True, False),
        # ...and not the ECC XIDs it only records an event for, which no repair follows.
        (92, False, True),
        (94, False, True),
    ],
)
def test_hardware_xids_page_and_application_xids_only_warn(xid, hardware, other):
    rules = alert_rules("r", "monitoring", [GpuPool("gpu-a", 8)], AlertThresholds())
    alerts = {rule["alert"]: rule for group in rules["spec"]["groups"] for rule in group["rules"]}
    assert alerts["GpuHardwareXid_gpu_a"]["labels"]["severity"] == "critical"
    assert alerts["GpuXidError"]["labels"]["severity"] == "warning"
    assert _firing(alerts["GpuHardwareXid_gpu_a"]["expr"], xid) is hardware
    assert _firing(alerts["GpuXidError"]["expr"], xid) is other


def _alerts(inventory):
    rule = inventory.one(RULE, "observability-alerts")
    return {r["alert"]: r for group in rule.inputs["spec"]["groups"] for r in group["rules"]}


def test_there_is_a_near_limit_alert_for_every_gpu_pool_of_the_stack(prod):
    alerts = _alerts(prod)
    pools = {name for name, limit in prod.stack_outputs["nodePoolGpuLimits"].items() if limit is not None}
    near_limit = {a for a in alerts if a.startswith("NodePoolGpuNearLimit_")}
    assert near_limit == {f"NodePoolGpuNearLimit_{p.replace('-', '_')}" for p in pools}
    training = alerts["NodePoolGpuNearLimit_training"]
    assert 'nodepool="training", resource_type="nvidia.com/gpu"' in training["expr"]
    assert training["expr"].endswith("> 0.9")


@pytest.mark.stack
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
    release = dev.release("kube-prometheus-stack")
    grafana = release.inputs["values"]["grafana"]
    assert grafana["admin"] == {
        "existingSecret": "grafana-admin",
        "userKey": "admin-user",
        "passwordKey": "admin-password",
    }
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
    release = dev.release("kube-prometheus-stack")
    spec = release.inputs["values"]["prometheus"]["prometheusSpec"]
    for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False
    assert spec["retention"] == "15d"
    assert spec["storageSpec"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "gp3"
    assert spec["nodeSelector"] == {"eksml.io/node-role": "system"}
    assert release.inputs["version"] == versions.KUBE_PROMETHEUS_STACK.version


def test_prometheus_volume_goes_with_it_in_dev_and_stays_in_prod(dev, prod):
    def policy(inventory):
        release = inventory.release("kube-prometheus-stack")
        return release.inputs["values"]["prometheus"]["prometheusSpec"]["persistentVolumeClaimRetentionPolicy"][
            "whenDeleted"
        ]

    assert policy(dev) == "Delete"
    assert policy(prod) == "Retain"


def test_monitors_rules_and_dashboards_wait_for_the_release_that_installs_their_crds(dev):
    release = dev.release("kube-prometheus-stack")
    for kind in ("monitoring.coreos.com/v1:ServiceMonitor", "monitoring.coreos.com/v1:PrometheusRule"):
        for resource in dev.of_type(f"kubernetes:{kind}"):
            assert release.urn in resource.dependencies
    dashboards = [
        c for c in dev.of_type("kubernetes:core/v1:ConfigMap") if c.name.startswith("observability-dashboard-")
    ]
    assert len(dashboards) == len(DASHBOARDS)
    for configmap in dashboards:
        assert configmap.inputs["metadata"]["labels"] == {"grafana_dashboard": "1"}
        (text,) = configmap.inputs["data"].values()
        assert json.loads(text)["panels"]


def test_karpenter_is_scraped_through_its_charts_service(dev):
    monitor = dev.one("kubernetes:monitoring.coreos.com/v1:ServiceMonitor", "observability-karpenter-monitor")
    karpenter = dev.release("karpenter")
    assert monitor.inputs["spec"]["namespaceSelector"] == {"matchNames": [karpenter.inputs["namespace"]]}
    assert monitor.inputs["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "karpenter"
    assert monitor.inputs["spec"]["endpoints"][0]["port"] == "http-metrics"


@pytest.mark.stack
def test_alertmanager_webhook_is_a_secret_receiver():
    inventory = run_stack(
        "dev", {"observability": {"alertmanager": {"webhookUrl": "https://hooks.example.com/T0/B0/x"}}}
    )
    release = inventory.release("kube-prometheus-stack")
    config = release.inputs["values"]["alertmanager"]["config"]
    # The whole receiver configuration becomes secret with the URL; its shape is kept.
    assert set(config) == {"route", "receivers"}
    _null_receiver, default_receiver = config["receivers"]
    assert default_receiver["webhook_configs"][0]["url"] == "[secret]"
    assert "hooks.example.com" not in json.dumps([r.inputs for r in inventory.resources])

    from components.observability.component import stack_values
    from components.observability.config import ObservabilityConfig

    plain = stack_values(
        ObservabilityConfig(),
        storage_class="gp3",
        delete_volumes=True,
        placement=Placement({}, ()),
        webhook_url="https://x",
    )["alertmanager"]["config"]
    assert plain["route"] == {"receiver": "default"}
    assert [r["name"] for r in plain["receivers"]] == ["null", "default"]  # the chart's routes still find "null"


@pytest.mark.stack
def test_observability_can_be_left_out():
    inventory = run_stack("dev", {"observability": {"enabled": False}})
    assert not inventory.of_type("eksml:observability:Observability")


# prometheus-adapter --------------------------------------------------------------------------------------------

#: Every prometheus-adapter values key the platform sets, with where it was read upstream
#: (prometheus-community/helm-charts, charts/prometheus-adapter/). refcheck pins no copy of this chart, so this list
#: stands in for it: a new key must be read upstream at the pinned version and added here with its source.
#: values.yaml: at commit 4e2b8dbb7bef, and as chart 5.2.0 republishes it (revisionHistoryLimit, added for 5.2.0, is
#: there); templates: deployment.yaml at 3617085ac97e, configmap.yaml at 4232be4311ac, pdb.yaml at 7604877c0927,
#: custom-metrics-apiservice.yaml at a3b5c8ed85d0. Kubernetes pass-throughs and the rules list end a path.
ADAPTER_KEYS = {
    "prometheus.url": "values.yaml `prometheus.url` (templated); deployment.yaml --prometheus-url",
    "prometheus.port": "values.yaml `prometheus.port`; deployment.yaml appends it to the URL",
    "replicas": "values.yaml `replicas: 1`; deployment.yaml spec.replicas",
    "resources": "values.yaml `resources: {}`; deployment.yaml container resources",
    "nodeSelector": "values.yaml `nodeSelector: {}`; deployment.yaml",
    "tolerations": "values.yaml `tolerations: []`; deployment.yaml",
    "rules.default": "values.yaml `rules.default: true`; configmap.yaml, custom-metrics-apiservice.yaml",
    "rules.custom": "values.yaml `rules.custom: []`; configmap.yaml (through tpl), custom-metrics-apiservice.yaml",
    "podDisruptionBudget.enabled": "values.yaml `podDisruptionBudget.enabled: false`; pdb.yaml",
    "podDisruptionBudget.maxUnavailable": "values.yaml `podDisruptionBudget.maxUnavailable: 1`; pdb.yaml",
}
ADAPTER_FREE_FORM = {"resources", "nodeSelector", "tolerations", "rules.custom"}
CHART_INDEX = REFERENCE.parent / "index.yaml"


def _key_paths(values: dict[str, Any], prefix: str = "") -> set[str]:
    paths = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and path not in ADAPTER_FREE_FORM:
            paths |= _key_paths(value, f"{path}.")
        else:
            paths.add(path)
    return paths


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_metrics_adapter_is_the_pinned_chart_on_the_system_nodes(stack, request):
    inventory = request.getfixturevalue(stack)
    adapter = inventory.release("prometheus-adapter")
    pin = versions.PROMETHEUS_ADAPTER
    assert (adapter.inputs["version"], adapter.inputs["repositoryOpts"]["repo"]) == (pin.version, pin.repo)
    assert adapter.inputs["namespace"] == "monitoring"
    values = adapter.inputs["values"]
    placement = SYSTEM_PLACEMENT.values()
    assert (values["nodeSelector"], values["tolerations"]) == (placement["nodeSelector"], placement["tolerations"])
    # Two replicas and a budget: API discovery of custom.metrics.k8s.io (and namespace deletion) needs one up.
    assert values["replicas"] == 2
    assert values["podDisruptionBudget"] == {"enabled": True, "maxUnavailable": 1}
    assert set(values["resources"]["requests"]) == {"cpu", "memory"}
    assert "memory" in values["resources"]["limits"]


def test_the_adapter_queries_the_service_kube_prometheus_stack_puts_in_front_of_prometheus(dev):
    adapter, stack = dev.release("prometheus-adapter"), dev.release("kube-prometheus-stack")
    # The chart names it `<fullname>-prometheus`; its fullname is the release name, which contains the chart's.
    assert versions.KUBE_PROMETHEUS_STACK.name in stack.inputs["name"]
    prometheus = adapter.inputs["values"]["prometheus"]
    assert prometheus["url"] == f"http://{stack.inputs['name']}-prometheus.{stack.inputs['namespace']}.svc"
    assert prometheus["port"] == stack.inputs["values"]["prometheus"]["service"]["port"]
    # Installed after Prometheus through a value (`created_after`), with no edge: on destroy it is uninstalled beside
    # the namespaces, taking its APIService (tests/test_teardown_waits.py), not in a level of its own before Prometheus
    assert not dev.depends_on(adapter, stack)
    assert adapter.deleted_with is None


def test_the_adapter_serves_only_custom_metrics():
    """Resource metrics (metrics.k8s.io) stay with metrics-server: `rules.resource` would register the same
    APIService; the chart's default rules would publish every container_* series as a custom metric."""
    values = adapter_values(prometheus_url="http://p", placement=SYSTEM_PLACEMENT)
    assert values["rules"]["default"] is False
    assert set(values["rules"]) == {"default", "custom"}
    assert [rule["name"]["as"] for rule in values["rules"]["custom"]] == [GPU_UTILIZATION_METRIC]


def test_the_adapters_values_use_only_keys_read_upstream():
    values = adapter_values(prometheus_url="http://p", placement=SYSTEM_PLACEMENT)
    assert _key_paths(values) <= set(ADAPTER_KEYS), _key_paths(values) - set(ADAPTER_KEYS)


@pytest.mark.skipif(not CHART_INDEX.exists(), reason="../shared/reference is not beside the repository")
def test_refcheck_has_no_copy_of_the_adapter_chart_so_the_key_list_stands_in():
    """When the reference data pins prometheus-adapter, check its values with refcheck instead of ADAPTER_KEYS."""
    charts = yaml.safe_load(CHART_INDEX.read_text())["charts"]
    names = {name for name, chart in charts.items() for name in (name, *((chart or {}).get("aliases") or []))}
    assert versions.PROMETHEUS_ADAPTER.name not in names


def _rendered(query: str) -> str:
    """A rule query as the adapter fills it in for one HPA of two pods in `vision`."""
    return (
        query.replace("<<.Series>>", DCGM_GPU_UTIL)
        .replace("<<.LabelMatchers>>", 'namespace="vision",pod=~"llm-a|llm-b"')
        .replace("<<.GroupBy>>", "pod")
    )


@pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference is not beside the repository")
def test_the_adapter_rule_reads_dcgm_utilisation_per_pod_with_the_labels_prometheus_keeps(prod):
    rule = gpu_utilization_rule()
    series = promql_parser.parse(rule["seriesQuery"])
    assert isinstance(series, promql_parser.VectorSelector)
    assert metric_names(rule["seriesQuery"]) == {DCGM_GPU_UTIL} <= DCGM_METRICS
    collected = {line.split(",")[0].strip() for csv in REFERENCE.glob("*.csv") for line in csv.read_text().splitlines()}
    assert DCGM_GPU_UTIL in collected
    # Only GPUs a pod holds: both labels must be set.
    matchers = {(m.name, str(m.op), m.value) for m in series.matchers.matchers}
    assert matchers == {(DCGM_NAMESPACE_LABEL, "MatchOp.NotEqual", ""), (DCGM_POD_LABEL, "MatchOp.NotEqual", "")}
    assert rule["resources"]["overrides"] == {
        DCGM_NAMESPACE_LABEL: {"resource": "namespace"},
        DCGM_POD_LABEL: {"resource": "pod"},
    }
    query = promql_parser.parse(_rendered(rule["metricsQuery"]))
    assert isinstance(query, promql_parser.AggregateExpr)
    assert str(query.op) == "avg"
    assert query.modifier is not None
    assert query.modifier.labels == ["pod"]
    assert metric_names(_rendered(rule["metricsQuery"])) == {DCGM_GPU_UTIL}
    # Those labels reach Prometheus as the workload's: the GPU Operator's ServiceMonitor honours the exporter's and
    # drops the scrape target's own.
    monitor = prod.release("gpu-operator").inputs["values"]["dcgmExporter"]["serviceMonitor"]
    assert monitor["honorLabels"] is True
    (drop,) = [r for r in monitor["relabelings"] if r["action"] == "labeldrop"]
    assert all(re.fullmatch(drop["regex"], label) for label in (DCGM_POD_LABEL, DCGM_NAMESPACE_LABEL))


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_monitoring_namespaces_policies_let_the_adapter_reach_prometheus_and_the_api_server_the_adapter(
    stack, request
):
    """`monitoring` denies by default (the platform's policies; kube-prometheus-stack's own stay off), and its
    allowances keep the adapter's two paths open: the adapter to Prometheus, the API server to the adapter."""
    inventory = request.getfixturevalue(stack)
    policies = [
        p.inputs
        for p in inventory.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if p.inputs["metadata"].get("namespace") == "monitoring"
    ]
    assert "deny-all" in {p["metadata"]["name"] for p in policies}
    policies = [{"kind": "NetworkPolicy", **p} for p in policies]
    adapter = Endpoint("adapter", "10.0.0.10", "monitoring", labels={"app.kubernetes.io/name": "prometheus-adapter"})
    prometheus = Endpoint("prometheus", "10.0.0.11", "monitoring", labels={"app.kubernetes.io/name": "prometheus"})
    api_server = Endpoint("control plane", "10.0.0.12")
    assert allowed(policies, adapter, prometheus, PROMETHEUS_PORT)
    assert allowed(policies, api_server, adapter, ADAPTER_PORT)
    assert not allowed(policies, api_server, prometheus, PROMETHEUS_PORT)
    prometheus_values = inventory.release("kube-prometheus-stack").inputs["values"]["prometheus"]
    assert not prometheus_values.get("networkPolicy", {}).get("enabled", False)


@pytest.mark.stack
def test_the_metrics_adapter_can_be_left_out():
    inventory = run_stack("dev", {"observability": {"metricsAdapter": {"enabled": False}}})
    releases = {r.inputs["name"] for r in inventory.of_type("kubernetes:helm.sh/v3:Release")}
    assert "kube-prometheus-stack" in releases
    assert "prometheus-adapter" not in releases


@pytest.mark.parametrize(
    ("observability", "path", "message"),
    [
        ({"metricsAdapter": {"enabled": "yes"}}, "observability.metricsAdapter.enabled", "a valid boolean, got 'yes'"),
        (
            {"metricsAdapter": {"replicas": 3}},
            "observability.metricsAdapter.replicas",
            "unknown key (expected one of enabled)",
        ),
        ({"metricsAdapter": True}, "observability.metricsAdapter", "a valid dictionary"),
        (
            {"enabled": False, "metricsAdapter": {}},
            "observability.metricsAdapter",
            "is not used while enabled is false",
        ),
    ],
)
def test_a_wrong_metrics_adapter_setting_is_refused_with_its_key_path(observability, path, message):
    with pytest.raises(ConfigError) as caught:
        parse_config(stack_config("dev", {"observability": observability}), project=PROJECT, stack="dev")
    found = {issue.path: issue.message for issue in caught.value.issues}
    assert path in found, found
    assert message in found[path], found


def test_a_pools_ceiling_is_its_accelerator_limit_whatever_the_device_and_the_old_name_still_reads_it():
    (neuron,) = gpu_pools({"inf": SimpleNamespace(accelerator_limits={"aws.amazon.com/neuron": 4})})
    assert (neuron.accelerator_limit, neuron.resource) == (4, "aws.amazon.com/neuron")
    with pytest.warns(DeprecationWarning, match="use accelerator_limit"):
        assert neuron.gpu_limit == 4
