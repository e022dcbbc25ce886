"""Kubeflow's ServiceMonitors and PodMonitors: one for each installed component that serves metrics, on the port
upstream's pinned manifests name, reachable by the platform's Prometheus under Kubeflow's NetworkPolicies as the
platform model judges them, and created after (deleted before) the release that defines their CRDs."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from components.kubeflow import entries, monitoring, network_policy, plan, render
from components.kubeflow.credentials import Admin
from components.observability.network_policy import monitoring_policies
from components.tools.cluster_model.flows import problems
from components.tools.cluster_model.network import Cluster, scrape_paths
from components.tools.cluster_model.workloads import from_object

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")
DEFAULT = entries.selected(katib=False, spark=False, hub=False, knative=False)
WITH_KATIB = entries.selected(katib=True, spark=False, hub=False, knative=False)
SETTINGS = plan.Settings(admin=Admin("platform@example.org"), storage_class="gp3", monitoring_namespace="monitoring")
MONITOR_KINDS = {"ServiceMonitor", "PodMonitor"}


@pytest.fixture(scope="module")
def rendered(render_cache):
    return render.render(REFERENCE, WITH_KATIB, cache_dir=render_cache)


def planned(rendered, selection, settings=SETTINGS) -> list[dict[str, Any]]:
    chosen = {e.path for e in selection}
    return [i.manifest for i in plan.platform_objects({p: o for p, o in rendered.items() if p in chosen}, settings)]


def monitors_of(objects) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if o["kind"] in MONITOR_KINDS}


def test_each_installed_component_that_serves_metrics_gets_a_monitor_and_katib_only_when_installed(rendered):
    default = monitors_of(planned(rendered, DEFAULT))
    assert set(default) == {
        ("istio-system", "istiod"),
        ("istio-system", "istio-ingressgateway"),
        ("kubeflow", "ml-pipeline"),
        ("kubeflow", "workflow-controller"),
    }
    with_katib = monitors_of(planned(rendered, WITH_KATIB))
    assert set(with_katib) - set(default) == {("kubeflow", "katib-controller")}


def test_without_the_platforms_prometheus_no_monitor_is_planned(rendered):
    objects = planned(rendered, DEFAULT, dataclasses.replace(SETTINGS, monitoring_namespace=None))
    assert monitors_of(objects) == {}


def model(objects, drop_allowances: bool = False) -> Cluster:
    """The platform model of Kubeflow's objects beside the platform's Prometheus and its policies."""
    prometheus = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "prometheus", "namespace": "monitoring"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "prometheus"}},
                "spec": {
                    "containers": [{"name": "p", "image": "x", "ports": [{"name": "web", "containerPort": 9090}]}]
                },
            }
        },
    }
    objects = [*objects, prometheus, *monitoring_policies("monitoring", metrics_adapter=False).values()]
    if drop_allowances:
        objects = [o for o in objects if o["metadata"]["name"] != network_policy.ALLOW_MONITORING]
    workloads = [w for o in objects if (w := from_object("kubeflow", o)) is not None]
    return Cluster(objects, workloads)


def test_the_model_finds_every_monitors_targets_on_upstreams_ports_and_prometheus_reaches_them(rendered):
    cluster = model(planned(rendered, WITH_KATIB))
    paths = [(what, destination.what, port) for what, _, destination, port, _ in scrape_paths(cluster)]
    reached = {what: (dest, port) for what, dest, port in paths}
    # The ports upstream's pinned files give (see monitoring.TARGETS): every monitor finds its pods there.
    assert reached["ServiceMonitor istio-system/istiod"][1] == 15014
    assert reached["PodMonitor istio-ingressgateway"][1] == 15090
    assert reached["PodMonitor ml-pipeline"][1] == 8888
    assert reached["PodMonitor workflow-controller"][1] == 9090
    assert reached["ServiceMonitor kubeflow/katib-controller"][1] == 8080
    assert problems(cluster) == []


def test_without_the_monitoring_allowances_the_model_reports_the_kubeflow_scrapes_closed(rendered):
    found = problems(model(planned(rendered, DEFAULT), drop_allowances=True))
    for monitor in ("PodMonitor ml-pipeline", "PodMonitor workflow-controller", "ServiceMonitor istio-system/istiod"):
        assert any(f"({monitor})" in p for p in found), monitor


def test_a_component_that_no_longer_names_its_metrics_port_is_refused(rendered):
    objects = copy.deepcopy(planned(rendered, DEFAULT))
    controller = next(
        o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "workflow-controller"
    )
    for container in controller["spec"]["template"]["spec"]["containers"]:
        for port in container.get("ports") or ():
            if port.get("name") == "metrics":
                port["name"] = "prom"
    with pytest.raises(ValueError, match="kubeflow/workflow-controller: no port 'metrics'"):
        monitoring.monitors(objects)


def test_argos_self_signed_metrics_are_scraped_over_https_and_the_others_over_http(rendered):
    found = monitors_of(planned(rendered, DEFAULT))
    argo = found[("kubeflow", "workflow-controller")]["spec"]["podMetricsEndpoints"][0]
    assert (argo["scheme"], argo["tlsConfig"]) == ("https", {"insecureSkipVerify": True})
    istiod = found[("istio-system", "istiod")]["spec"]["endpoints"][0]
    assert "scheme" not in istiod
    assert istiod["path"] == "/metrics"
    gateway = found[("istio-system", "istio-ingressgateway")]["spec"]["podMetricsEndpoints"][0]
    assert gateway["path"] == "/stats/prometheus"


@pytest.mark.parametrize("target", monitoring.TARGETS, ids=lambda t: t.name)
def test_every_target_names_a_file_of_the_pinned_tree_that_states_its_port(target):
    text = (REFERENCE / target.source).read_text()
    assert f"name: {target.port}" in text


@pytest.mark.stack
def test_in_the_dev_stack_the_monitors_wait_for_the_release_that_defines_their_crds(dev):
    release = dev.release("kube-prometheus-stack")
    kinds = {f"kubernetes:monitoring.coreos.com/v1:{kind}" for kind in MONITOR_KINDS}
    found = [r for kind in sorted(kinds) for r in dev.of_type(kind) if r.name.startswith("kubeflow-")]
    assert {r.inputs["metadata"]["name"] for r in found} == {
        "istiod",
        "istio-ingressgateway",
        "ml-pipeline",
        "workflow-controller",
    }
    # Created after the release (its CRDs), deleted before it.
    assert all(release.urn in r.dependencies for r in found)


def workload_named(objects, name) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == name)


def test_argos_metrics_port_alone_bypasses_its_sidecar_and_the_mesh_admits_every_scrape(rendered):
    objects = planned(rendered, DEFAULT)
    controller = workload_named(objects, "workflow-controller")["spec"]["template"]["metadata"]
    assert controller["annotations"][monitoring.EXCLUDE_INBOUND] == "9090"  # its health port 6060 stays captured
    api_server = workload_named(objects, "ml-pipeline")["spec"]["template"]["metadata"]
    assert monitoring.EXCLUDE_INBOUND not in (api_server.get("annotations") or {})  # its own policy admits it
    assert problems(model(objects)) == []


def test_without_the_bypass_the_mesh_refuses_argos_scrape_and_the_model_says_so(rendered):
    objects = copy.deepcopy(planned(rendered, DEFAULT))
    del workload_named(objects, "workflow-controller")["spec"]["template"]["metadata"]["annotations"][
        monitoring.EXCLUDE_INBOUND
    ]
    (found,) = problems(model(objects))
    assert "cannot reach Deployment kubeflow/workflow-controller" in found
    assert found.endswith(
        "on port 9090 (PodMonitor workflow-controller): Istio: no rule of the ALLOW policies that select it matches "
        "(AuthorizationPolicy istio-system/global-deny-all)"
    )


def test_an_api_server_policy_that_admits_only_named_callers_refuses_the_scrape(rendered):
    objects = copy.deepcopy(planned(rendered, DEFAULT))
    policy = next(o for o in objects if o["kind"] == "AuthorizationPolicy" and o["metadata"]["name"] == "ml-pipeline")
    policy["spec"]["rules"] = [r for r in policy["spec"]["rules"] if "from" in r]  # no rule for header-less callers
    (found,) = problems(model(objects))
    assert "cannot reach Deployment kubeflow/ml-pipeline" in found
    assert "(PodMonitor ml-pipeline)" in found


def test_existing_excluded_ports_are_kept_when_the_metrics_port_is_added(rendered):
    objects = copy.deepcopy([o for objects in rendered.values() for o in objects])
    controller = workload_named(objects, "workflow-controller")
    controller["spec"]["template"]["metadata"]["annotations"] = {monitoring.EXCLUDE_INBOUND: "7000"}
    changed = workload_named(monitoring.bypass_sidecars(objects), "workflow-controller")
    assert changed["spec"]["template"]["metadata"]["annotations"][monitoring.EXCLUDE_INBOUND] == "7000,9090"
    assert controller["spec"]["template"]["metadata"]["annotations"][monitoring.EXCLUDE_INBOUND] == "7000"  # a copy
