"""Katib and the Trainer as the platform runs them: every `kubeflow.components` switch previews clean,
Katib's controller reaches its suggestion services and reads Secrets only where trials run, one controller
reconciles, Job trials cannot keep Istio's sidecar, and a TrainJob where `default-editor` does not exist is refused
with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.tools.cluster_model.admission import JudgedPod, bound_policies, refusals
from components.tools.cluster_model.rbac import cluster_wide_secret_access

from .conftest import PROJECT, run_stack, stack_config

CHARTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "charts"
TEAM = "ml-research"  # the dev stack's Kubeflow team
#: A Profile namespace as the cluster labels it, and a team namespace without a Profile (an FSx namespace).
PROFILE_NS = {"app.kubernetes.io/part-of": "kubeflow-profile", "istio-injection": "enabled", "eksml.io/team": TEAM}
PLAIN_NS = {"eksml.io/team": "datasets"}


def with_components(**switches: bool) -> Any:
    section = json.loads(stack_config("dev")[f"{PROJECT}:kubeflow"])
    section["components"] = switches
    return run_stack("dev", {"kubeflow": section})


def model(inventory: Any, charts: Path | None = None) -> tuple[Any, list[str]]:
    """The platform model of a preview, and its problems (with `charts`, the Helm releases rendered too)."""
    from components.tools.preview import platform_model

    platform, found = platform_model(inventory, charts)
    return platform, [str(p) for p in found]


@pytest.fixture(scope="module")
def katib(kubeflow_tree: None) -> tuple[Any, list[str]]:
    return model(with_components(katib=True))


def objects_of(platform: Any) -> list[dict[str, Any]]:
    return [obj for _, obj in platform.objects]


def named(objects: list[dict[str, Any]], kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    return next(
        o
        for o in objects
        if o["kind"] == kind and o["metadata"]["name"] == name and o["metadata"].get("namespace") == namespace
    )


@pytest.mark.subprocess
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
@pytest.mark.parametrize("switch", ["katib", "spark", "knative", "hub", "kserve"])
def test_every_documented_kubeflow_component_switch_previews_without_model_problems(switch, kubeflow_tree):
    _, found = model(with_components(**{switch: True}), CHARTS)
    assert found == []


@pytest.mark.stack
def test_katibs_controller_reads_secrets_only_in_team_namespaces(katib):
    platform, _ = katib
    objects = objects_of(platform)
    assert "kubeflow/katib-controller" not in cluster_wide_secret_access(objects)
    binding = named(objects, "RoleBinding", "katib-controller-pull-secrets", TEAM)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "katib-controller", "namespace": "kubeflow"}]
    role = named(objects, "Role", binding["roleRef"]["name"], TEAM)
    # the pod webhook's k8schain reads a trial pod's pull Secrets, nothing more
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]


@pytest.mark.stack
def test_the_model_fails_the_preview_when_a_team_namespace_shuts_out_katibs_controller(katib):
    from components.tools.cluster_model.flows import problems
    from components.tools.cluster_model.network import Cluster

    platform, found = katib
    assert found == []
    objects = [o for o in objects_of(platform) if o["metadata"]["name"] != "allow-katib-controller"]
    closed = problems(Cluster(objects, platform.workloads, platform.vpc))
    suggestion = f"an Experiment's suggestion pod in {TEAM}"
    assert any("katib-controller" in p and suggestion in p and "port 6789" in p for p in closed), closed
    assert any("port 6788" in p and "early-stopping" in p for p in closed), closed


@pytest.mark.stack
def test_katibs_suggestion_allowance_exists_only_when_katib_is_installed(dev):
    from components.tools.preview import platform_model

    platform, _ = platform_model(dev, None)
    assert not [o for _, o in platform.objects if o["metadata"]["name"] == "allow-katib-controller"]


@pytest.mark.stack
def test_of_katibs_controller_replicas_only_the_elected_leader_reconciles(katib):
    platform, _ = katib
    objects = objects_of(platform)
    deployment = named(objects, "Deployment", "katib-controller", "kubeflow")
    assert deployment["spec"]["replicas"] > 1
    config = yaml.safe_load(named(objects, "ConfigMap", "katib-config", "kubeflow")["data"]["katib-config.yaml"])
    assert config["init"]["controller"]["enableLeaderElection"] is True
    bindings = [
        o
        for o in objects
        if o["kind"] == "RoleBinding"
        and o["metadata"].get("namespace") == "kubeflow"
        and {"kind": "ServiceAccount", "name": "katib-controller", "namespace": "kubeflow"} in o.get("subjects", [])
    ]
    rules = [r for b in bindings for r in named(objects, "Role", b["roleRef"]["name"], "kubeflow")["rules"]]
    lease = [r for r in rules if "leases" in r["resources"] and "coordination.k8s.io" in r["apiGroups"]]
    assert lease
    assert {"get", "create", "update"} <= set(lease[0]["verbs"])


def experiment(pod_metadata: dict[str, Any] | None, namespace: str = TEAM) -> dict[str, Any]:
    """Katib's `examples/v1beta1/hp-tuning/random.yaml` (v0.19.0), trimmed to what the policy reads."""
    template: dict[str, Any] = {"spec": {"containers": [{"name": "training-container", "image": "i"}]}}
    if pod_metadata is not None:
        template["metadata"] = pod_metadata
    trial = {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": template}}
    return {
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "Experiment",
        "metadata": {"name": "random", "namespace": namespace},
        "spec": {"trialTemplate": {"primaryContainerName": "training-container", "trialSpec": trial}},
    }


def judged(objects: list[dict[str, Any]], obj: dict[str, Any], namespace_labels: dict[str, str]) -> list[str]:
    """What the policies refuse of it (those whose resource rules take in its kind: `refusals` asks only them)."""
    return [
        m
        for policy, binding in bound_policies(objects)
        for m in refusals(policy, binding, JudgedPod("t", obj, namespace_labels))
    ]


@pytest.mark.stack
def test_an_experiment_whose_job_trials_would_keep_the_sidecar_is_refused_naming_the_label(katib):
    objects = objects_of(katib[0])
    (message,) = judged(objects, experiment(None), PROFILE_NS)
    assert "spec.trialTemplate.trialSpec.spec.template.metadata.labels['sidecar.istio.io/inject']" in message
    assert judged(objects, experiment({"labels": {"sidecar.istio.io/inject": "false"}}), PROFILE_NS) == []
    assert judged(objects, experiment({"annotations": {"sidecar.istio.io/inject": "false"}}), PROFILE_NS) == []
    # no sidecar is injected where the namespace does not ask for it
    assert judged(objects, experiment(None, "datasets"), PLAIN_NS) == []


@pytest.mark.stack
def test_the_shipped_job_trial_templates_pass_the_experiment_policy(katib):
    objects = objects_of(katib[0])
    templates = next(
        o
        for o in objects
        if o["kind"] == "ConfigMap"
        and (o["metadata"].get("labels") or {}).get("katib.kubeflow.org/component") == "trial-templates"
    )
    jobs = [t for t in map(yaml.safe_load, templates["data"].values()) if t["kind"] == "Job"]
    assert jobs
    for job in jobs:
        submitted = experiment(None)
        submitted["spec"]["trialTemplate"]["trialSpec"] = job
        assert judged(objects, submitted, PROFILE_NS) == []


def trainjob(namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "mnist", "namespace": namespace},
        "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "t"}}
        | spec,
    }


@pytest.mark.stack
def test_a_trainjob_where_default_editor_does_not_exist_is_refused_saying_why(dev):
    from components.tools.preview import platform_model

    objects = objects_of(platform_model(dev, None)[0])
    (message,) = judged(objects, trainjob("datasets"), PLAIN_NS)
    assert "default-editor" in message
    assert "Profile" in message
    assert judged(objects, trainjob(TEAM), PROFILE_NS) == []
    patched = {
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"spec": {"serviceAccountName": "d"}}}}}
                    ]
                }
            }
        }
    }
    own_account = trainjob("datasets", runtimePatches=[{"manager": "me", **patched}])
    assert judged(objects, own_account, PLAIN_NS) == []
    own_runtime = trainjob("datasets")
    own_runtime["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    assert judged(objects, own_runtime, PLAIN_NS) == []
