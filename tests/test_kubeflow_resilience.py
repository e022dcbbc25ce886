"""Kubeflow's workloads as the platform runs them, read from the planned objects: the fail-closed gates spread over
nodes and zones by requirement, oauth2-proxy hardened like the rest, every container requesting CPU and memory, and
the single-instance controllers Pipelines and profiles depend on kept off spot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.control_plane import blocking_deployments
from components.kubeflow import entries, plan, render
from components.kubeflow.credentials import Admin
from components.kubeflow.objects import containers, pod_template

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")
EVERYTHING = entries.selected(katib=True, spark=True, hub=True, knative=True)
SETTINGS = plan.Settings(admin=Admin("platform@example.org"), storage_class="gp3", monitoring_namespace="monitoring")


@pytest.fixture(scope="module")
def planned(render_cache) -> list[dict[str, Any]]:
    rendered = render.render(REFERENCE, EVERYTHING, cache_dir=render_cache)
    return [item.manifest for item in plan.platform_objects(rendered, SETTINGS)]


def deployment(objects: list[dict[str, Any]], namespace: str, name: str) -> dict[str, Any]:
    return next(
        o
        for o in objects
        if o["kind"] == "Deployment" and (o["metadata"].get("namespace"), o["metadata"]["name"]) == (namespace, name)
    )


def test_every_fail_closed_gate_spreads_over_nodes_and_zones_by_requirement_under_a_budget(planned):
    gates = {(o["metadata"]["namespace"], o["metadata"]["name"]): why for o, why in blocking_deployments(planned)}
    assert {
        ("kubeflow", "poddefaults-webhook-deployment"),
        ("istio-system", "istiod"),
        ("istio-system", "istio-ingressgateway"),
        ("auth", "dex"),
        ("oauth2-proxy", "oauth2-proxy"),
    } <= set(gates)
    budgets = {
        (o["metadata"]["namespace"], o["metadata"]["name"]) for o in planned if o["kind"] == "PodDisruptionBudget"
    }
    for (namespace, name), why in gates.items():
        obj = deployment(planned, namespace, name)
        spec = obj["spec"]["template"]["spec"]
        labels = obj["spec"]["selector"]["matchLabels"]
        anti = spec["affinity"]["podAntiAffinity"]
        assert "preferredDuringSchedulingIgnoredDuringExecution" not in anti, name
        assert {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": labels}} in anti[
            "requiredDuringSchedulingIgnoredDuringExecution"
        ], name
        (zone,) = [c for c in spec["topologySpreadConstraints"] if c["topologyKey"] == "topology.kubernetes.io/zone"]
        assert (zone["whenUnsatisfiable"], zone["maxSkew"], zone["minDomains"]) == ("DoNotSchedule", 1, 2), name
        assert zone["labelSelector"] == {"matchLabels": labels}, name
        assert spec["nodeSelector"]["karpenter.sh/capacity-type"] == "on-demand", name
        assert (namespace, name) in budgets, f"{name} ({why}) has no PodDisruptionBudget"


def test_oauth2_proxy_runs_hardened_like_the_rest_of_kubeflow(planned):
    spec = deployment(planned, "oauth2-proxy", "oauth2-proxy")["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = spec["containers"]
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert (context["runAsNonRoot"], context["runAsUser"]) == (True, 65532)  # distroless `nonroot`
    assert spec["automountServiceAccountToken"] is False  # upstream's, kept


def test_every_kubeflow_container_requests_cpu_and_memory_and_upstreams_figures_are_kept(planned):
    unrequested = [
        f"{o['kind']} {o['metadata'].get('namespace')}/{o['metadata']['name']}: {c['name']}"
        for o in planned
        if (template := pod_template(o)) is not None
        for c in [*(template["spec"].get("initContainers") or ()), *containers(template["spec"])]
        if not {"cpu", "memory"} <= set((c.get("resources") or {}).get("requests") or {})
    ]
    assert unrequested == []
    # Upstream's own figures stay (the API server's), and a database gets a database's figure, not the floor.
    server = deployment(planned, "kubeflow", "ml-pipeline")["spec"]["template"]["spec"]["containers"][0]
    assert server["resources"]["requests"] == {"cpu": "250m", "memory": "500Mi"}
    katib_db = deployment(planned, "kubeflow", "katib-mysql")["spec"]["template"]["spec"]["containers"][0]
    assert katib_db["resources"]["requests"] == {"cpu": "100m", "memory": "800Mi"}


def test_pipelines_and_profiles_controllers_are_never_one_replica_on_spot(planned):
    budgets = {
        (o["metadata"]["namespace"], o["metadata"]["name"]) for o in planned if o["kind"] == "PodDisruptionBudget"
    }
    # Argo's controller and the API server stay single (Argo recommends it; the API server elects no leader), on
    # on-demand nodes Karpenter does not take away to consolidate.
    for name in ("ml-pipeline", "workflow-controller"):
        obj = deployment(planned, "kubeflow", name)
        template = obj["spec"]["template"]
        assert obj["spec"].get("replicas", 1) == 1, name
        assert template["spec"]["nodeSelector"]["karpenter.sh/capacity-type"] == "on-demand", name
        assert template["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true", name
    # KFAM and the profile controller (leader-elected) run two spread replicas under a budget, like the gates.
    profiles = deployment(planned, "kubeflow", "profiles-deployment")
    spec = profiles["spec"]["template"]["spec"]
    assert profiles["spec"]["replicas"] == 2
    assert ("kubeflow", "profiles-deployment") in budgets
    assert spec["nodeSelector"]["karpenter.sh/capacity-type"] == "on-demand"
    assert spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    manager = next(c for c in spec["containers"] if c["name"] == "manager")
    assert "--leader-elect" in manager["args"]  # what makes the second replica safe
