"""KServe: `kubeflow.components.kserve` installs its two pinned charts in Standard mode with the controller on the
system nodes, the values the platform sets are keys the pinned chart reads (refcheck), the example InferenceService
fits the pinned CRD schema, and the dashboard links only what is installed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from components import versions
from components.cluster.capacity import KSERVE
from components.kserve.network_policy import policies as kserve_policies
from components.kserve.values import CONTROLLER, CONTROLLER_LABELS, NAMESPACE, chart_values, controller_availability
from components.kubeflow import dashboard
from components.kubeflow.config import KubeflowConfig
from components.platform.parse import parse_config
from components.scheduling import SYSTEM_PLACEMENT
from components.tools.cluster_model import helm as model_helm
from components.tools.cluster_model.flows import problems as network_problems
from components.tools.cluster_model.network import Cluster
from components.tools.cluster_model.workloads import from_object

from .conftest import PROJECT, REFCHECK, REPO, stack_config

CHARTS = REPO.parent / "shared" / "reference" / "charts"
RESOURCES_CHART = CHARTS / "kserve-resources-v0.16.0"
CRD_CHART = CHARTS / "kserve-crd-v0.16.0"
EXAMPLE = REPO / "examples" / "workloads" / "inference-service.yaml"
needs_charts = pytest.mark.skipif(
    not RESOURCES_CHART.is_dir(), reason="../shared/reference/charts is not beside the repo"
)
RELEASE = "kubernetes:helm.sh/v3:Release"


# ------------------------------------------------------------------------------------------------------ config


def test_kserve_is_off_by_default_and_a_kubeflow_component_when_asked_for():
    base = {"enabled": True, "adminEmail": "a@example.org"}
    assert KubeflowConfig.model_validate(base).components.kserve is False
    assert KubeflowConfig.model_validate({**base, "components": {"kserve": True}}).components.kserve is True
    with pytest.raises(ValidationError, match="components"):  # nothing of Kubeflow's while it is off
        KubeflowConfig.model_validate({"components": {"kserve": True}})


def test_the_system_nodes_are_sized_for_the_kserve_controller_only_when_it_is_installed():
    def load(kserve: bool):
        overrides = {"kubeflow": {"enabled": True, "adminEmail": "a@example.org", "components": {"kserve": kserve}}}
        return parse_config(stack_config("dev", overrides), project=PROJECT, stack="dev")

    on, off = load(True), load(False)
    assert on.kserve
    assert not off.kserve
    assert KSERVE in on.system_capacity.workloads
    assert KSERVE not in off.system_capacity.workloads
    # the manager and its kube-rbac-proxy, at the chart's requests, on each of the replicas the HPA holds
    assert on.system_capacity.requests.cpu_m - off.system_capacity.requests.cpu_m == 2 * (100 + 100)


# ----------------------------------------------------------------------------------------------- chart values


def test_the_chart_runs_in_standard_mode_on_the_system_nodes_without_an_ingress_per_service():
    controller = chart_values(placement=SYSTEM_PLACEMENT)["kserve"]["controller"]
    assert controller["deploymentMode"] == "Standard"
    assert controller["nodeSelector"] == dict(SYSTEM_PLACEMENT.node_selector)
    assert controller["tolerations"] == [dict(t) for t in SYSTEM_PLACEMENT.tolerations]
    assert controller["gateway"] == {"disableIngressCreation": True}


def test_the_controller_is_held_at_two_replicas_under_a_budget():
    replicas, budget = controller_availability("kserve")
    assert replicas["spec"]["scaleTargetRef"]["name"] == CONTROLLER
    assert replicas["spec"]["minReplicas"] == replicas["spec"]["maxReplicas"] == KSERVE.replicas == 2
    assert budget["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": CONTROLLER_LABELS}}


def test_the_pins_name_the_published_charts_and_the_model_finds_their_copies():
    assert (versions.KSERVE_CRD.name, versions.KSERVE.name) == ("kserve-crd", "kserve")
    assert versions.KSERVE.repo == versions.KSERVE_CRD.repo == "oci://ghcr.io/kserve/charts"
    if RESOURCES_CHART.is_dir():
        # the pinned copy's Chart.yaml is the name Helm pushes it under
        assert yaml.safe_load((RESOURCES_CHART / "Chart.yaml").read_text())["name"] == versions.KSERVE.name
        assert model_helm.chart_dir(CHARTS, "kserve", "v0.16.0") == RESOURCES_CHART
        assert model_helm.chart_dir(CHARTS, "kserve-crd", "v0.16.0") == CRD_CHART


def _reference(scratch: Path) -> Path:
    """A refcheck reference folder that knows the pinned kserve chart: its values.yaml and the value paths its
    templates read (derived from the templates, as refcheck's own template-value-refs.txt files are)."""
    refs = set()
    for template in (RESOURCES_CHART / "templates").rglob("*.yaml"):
        refs |= set(re.findall(r"\.Values\.([A-Za-z0-9_.]+)", template.read_text()))
    (scratch / "kserve-refs.txt").write_text("\n".join(sorted(r.rstrip(".") for r in refs)) + "\n")
    index = {
        "charts": {
            "kserve": {
                "version": "v0.16.0",
                "values": str(RESOURCES_CHART / "values.yaml"),
                "template_refs": str(scratch / "kserve-refs.txt"),
            }
        }
    }
    (scratch / "index.yaml").write_text(yaml.safe_dump(index))
    return scratch


def _refcheck_values(values: dict[str, Any], scratch: Path) -> list[str]:
    path = scratch / "values.json"
    path.write_text(json.dumps(values))
    done = subprocess.run(
        [sys.executable, str(REFCHECK), "--helm-values", f"kserve={path}", "--ref-dir", str(_reference(scratch))],
        capture_output=True,
        text=True,
        check=False,
    )
    return [line for line in done.stdout.splitlines() if line.startswith(("ERROR", "WARN"))]


@pytest.mark.refcheck
@pytest.mark.subprocess
@needs_charts
def test_every_values_key_the_platform_sets_is_one_the_pinned_chart_reads(tmp_path):
    assert _refcheck_values(chart_values(placement=SYSTEM_PLACEMENT), tmp_path) == []
    misspelled = {"kserve": {"controller": {"deploymentmode": "Standard"}}}
    (error,) = _refcheck_values(misspelled, tmp_path)
    assert "kserve.controller.deploymentmode" in error


@pytest.mark.subprocess
@needs_charts
def test_the_rendered_controller_runs_on_the_system_nodes_in_standard_mode():
    release = {"name": "kserve", "namespace": "kserve", "chart": "kserve", "version": "v0.16.0"}
    objects = model_helm.render({**release, "values": chart_values(placement=SYSTEM_PLACEMENT)}, CHARTS, "1.35.0")
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    assert deployment["metadata"]["name"] == CONTROLLER
    pod = deployment["spec"]["template"]
    assert CONTROLLER_LABELS.items() <= pod["metadata"]["labels"].items()
    assert pod["spec"]["nodeSelector"] == dict(SYSTEM_PLACEMENT.node_selector)
    (config,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "inferenceservice-config"]
    assert json.loads(config["data"]["deploy"]) == {"defaultDeploymentMode": "Standard"}
    assert '"disableIngressCreation": true' in config["data"]["ingress"]
    # the webhook's certificate comes from the platform's cert-manager
    assert {"Certificate", "Issuer"} <= {o["kind"] for o in objects}


# --------------------------------------------------------------------------------------------------- example


@pytest.mark.refcheck
@pytest.mark.subprocess
@needs_charts
def test_the_example_inference_service_fits_the_pinned_crd_schema(tmp_path):
    crd = CRD_CHART / "templates" / "serving.kserve.io_inferenceservices.yaml"
    done = subprocess.run(
        [sys.executable, str(REFCHECK), str(crd), str(EXAMPLE), "--k8s-version", "1.35"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert [line for line in done.stdout.splitlines() if line.startswith(("ERROR", "WARN"))] == []
    assert done.stdout.strip().splitlines()[-1] == "refcheck: 3 objects, 0 errors"
    # and a field the schema does not have is caught
    (service, _) = list(yaml.safe_load_all(EXAMPLE.read_text()))
    service["spec"]["predictor"]["nodeSelecter"] = {}
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(yaml.safe_dump(service))
    done = subprocess.run(
        [sys.executable, str(REFCHECK), str(crd), str(wrong)], capture_output=True, text=True, check=False
    )
    assert "nodeSelecter" in done.stdout
    assert done.returncode == 1


# ------------------------------------------------------------------------------------------------- dashboard


def _links_config(links: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "dashboard-config", "namespace": "kubeflow"},
        "data": {"links": json.dumps(links)},
    }


def _route(name: str, prefix: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {"name": name, "namespace": "kubeflow"},
        "spec": {"http": [{"match": [{"uri": {"prefix": prefix}}]}]},
    }


def test_the_dashboard_links_only_to_apps_that_are_installed():
    links = {
        "menuLinks": [
            {"type": "item", "link": "/jupyter/", "text": "Notebooks"},
            {"type": "item", "link": "/katib/", "text": "Katib Experiments"},
            {"type": "item", "link": "/kserve-endpoints/", "text": "KServe Endpoints"},
            {"type": "section", "text": "Pipelines", "items": [{"type": "item", "link": "/pipeline/#/runs"}]},
            {"type": "section", "text": "Registry", "items": [{"type": "item", "link": "/model-registry/"}]},
        ],
        "quickLinks": [{"link": "/katib/new", "text": "New experiment"}, {"link": "/jupyter/new", "text": "New"}],
        "documentationItems": [{"link": "https://www.kubeflow.org/", "text": "Kubeflow Website"}],
    }
    objects = [
        _links_config(links),
        _route("dashboard", "/"),
        _route("jupyter", "/jupyter/"),
        _route("kfp", "/pipeline"),
    ]
    changed = json.loads(dashboard.installed_links(objects)[0]["data"]["links"])
    assert [i.get("link") or i["text"] for i in changed["menuLinks"]] == ["/jupyter/", "Pipelines"]
    assert [i["link"] for i in changed["quickLinks"]] == ["/jupyter/new"]
    assert changed["documentationItems"] == links["documentationItems"]
    with_katib = dashboard.installed_links([*objects, _route("katib-ui", "/katib/")])
    assert "/katib/" in with_katib[0]["data"]["links"]
    assert "/kserve-endpoints/" not in with_katib[0]["data"]["links"]  # no models web app in the pinned tree


# ----------------------------------------------------------------------------------------------------- stack


@pytest.mark.stack
def test_prod_installs_both_releases_after_cert_manager_and_with_the_cluster(prod):
    releases = {r.inputs["name"]: r for r in prod.of_type(RELEASE)}
    crds, controller = releases["kserve-crd"], releases["kserve"]
    assert controller.inputs["chart"] == "oci://ghcr.io/kserve/charts/kserve"
    assert controller.inputs["version"] == crds.inputs["version"] == "v0.16.0"
    assert controller.inputs["skipCrds"] is True
    assert controller.inputs["values"] == chart_values(placement=SYSTEM_PLACEMENT)
    assert prod.depends_on(controller, crds)
    assert prod.depends_on(controller, releases["cert-manager"])
    # nothing KServe installs owns an AWS resource: both go with the cluster (CRDs included)
    cluster = prod.one("eks:index:Cluster")
    assert crds.deleted_with == controller.deleted_with == cluster.urn
    hpa = prod.one("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "kserve-controller-replicas")
    assert hpa.inputs["spec"]["minReplicas"] == 2
    assert prod.depends_on(hpa, controller)


# --------------------------------------------------------------------------------------------------- network


def kserve_cluster(drop: str | None = None) -> Cluster:
    """The controller chart as rendered with the platform's values, its namespace, CoreDNS, and the namespace's
    policies less `drop`."""
    release = {"name": "kserve", "namespace": NAMESPACE, "chart": "kserve", "version": "v0.16.0"}
    rendered = model_helm.render({**release, "values": chart_values(placement=SYSTEM_PLACEMENT)}, CHARTS, "1.35.0")
    coredns = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "coredns", "namespace": "kube-system"},
        "spec": {"template": {"metadata": {"labels": {"k8s-app": "kube-dns"}}, "spec": {"containers": []}}},
    }
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    policies = [p for name, p in kserve_policies(NAMESPACE).items() if name != drop]
    objects = [namespace, coredns, *rendered, *policies]
    return Cluster(objects, [w for o in objects if (w := from_object("kserve", o)) is not None])


@pytest.mark.subprocess
@needs_charts
def test_kserves_namespace_denies_by_default_and_the_api_server_reaches_its_webhooks():
    assert network_problems(kserve_cluster()) == []
    # the rendered chart has webhooks the API server must reach: without the allowance the model says so
    assert any(
        p.startswith("the API server (control plane ENI) cannot reach Deployment kserve/kserve-controller-manager")
        for p in network_problems(kserve_cluster(drop="allow-webhooks"))
    )
    assert any(
        p.startswith("namespace kserve has no default deny") for p in network_problems(kserve_cluster("deny-all"))
    )
