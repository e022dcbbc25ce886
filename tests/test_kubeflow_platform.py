"""What the platform changes in Kubeflow: no upstream default credential survives, the notebook form offers the GPU
pools, idle notebooks are culled, GPU pods Kubeflow creates pass the platform's admission policy, HTTPS access."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kubeflow import (
    access,
    credentials,
    entries,
    gpu_scheduling,
    notebooks,
    references,
    register,
    render,
    transform,
)
from components.kubeflow.credentials import Admin, Credentials
from components.scheduling import DEFAULT_GPU_SCHEDULER, GPU_TAINT
from components.tools.cluster_model.admission import JudgedPod, refusals
from tests.kubeflow_support import template_of

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")
EVERYTHING = entries.selected(katib=True, spark=True, hub=True, knative=True, hub_registry=True)
ADMIN = Admin("platform@example.org")
REAL = Credentials(**{name: f"generated-{name}" for name in credentials.NAMES})


@pytest.fixture(scope="session")
def cleaned(render_cache) -> list[dict[str, Any]]:
    rendered = render.render(REFERENCE, EVERYTHING, cache_dir=render_cache)
    return references.stable_names(transform.cleanup([o for objects in rendered.values() for o in objects]))


def find(objects, kind, namespace, name):
    return transform.find(objects, kind, namespace, name)


def secret(objects, namespace, name) -> dict[str, str]:
    return dict(credentials.secret_values(find(objects, "Secret", namespace, name)))


# ------------------------------------------------------------------------------------------------ credentials


def test_upstream_ships_every_default_the_checker_looks_for(cleaned):
    found = "\n".join(credentials.defaults_left(cleaned))
    for where in (
        "auth/dex-passwords",
        "auth/dex-oidc-client",
        "auth/dex:",
        "oauth2-proxy/oauth2-proxy",
        "kubeflow/mlpipeline-minio-artifact",
        "kubeflow/mysql-secret",
        "kubeflow/mysql:",
        "kubeflow/katib-mysql-secrets",
        "kubeflow/model-catalog-postgres",
        "model-registry-db-secrets",
    ):
        assert where in found


def test_no_upstream_default_credential_survives(cleaned):
    assert credentials.defaults_left(credentials.apply(cleaned, REAL, ADMIN)) == []


def test_dex_and_oauth2_proxy_share_one_generated_client(cleaned):
    changed = credentials.apply(cleaned, REAL, ADMIN)
    dex, proxy = secret(changed, "auth", "dex-oidc-client"), secret(changed, "oauth2-proxy", "oauth2-proxy")
    assert dex["OIDC_CLIENT_SECRET"] == proxy["client-secret"] == REAL.oidc_client_secret
    assert dex["OIDC_CLIENT_ID"] == proxy["client-id"] == credentials.OIDC_CLIENT_ID
    assert proxy["cookie-secret"] == REAL.oauth2_proxy_cookie_secret
    assert secret(changed, "auth", "dex-passwords") == {"DEX_USER_PASSWORD": REAL.admin_password_bcrypt}


def test_dex_knows_only_the_admin(cleaned):
    changed = credentials.apply(cleaned, REAL, ADMIN)
    config = yaml.safe_load(find(changed, "ConfigMap", "auth", "dex")["data"]["config.yaml"])
    (user,) = config["staticPasswords"]
    assert (user["email"], user["username"], user["hashFromEnv"]) == (ADMIN.email, "admin", "DEX_USER_PASSWORD")
    assert config["staticClients"][0]["secretEnv"] == "OIDC_CLIENT_SECRET"


def test_pipelines_storage_and_databases_get_generated_credentials(cleaned):
    changed = credentials.apply(cleaned, REAL, ADMIN)
    assert secret(changed, "kubeflow", "mlpipeline-minio-artifact") == {
        "accesskey": REAL.pipelines_s3_access_key,
        "secretkey": REAL.pipelines_s3_secret_key,
    }
    assert secret(changed, "kubeflow", "mysql-secret") == {
        "username": "root",
        "password": REAL.pipelines_mysql_password,
    }
    for name, secret_name, secret_key in (
        ("mysql", "mysql-secret", "password"),
        ("katib-mysql", "katib-mysql-secrets", "MYSQL_ROOT_PASSWORD"),
    ):
        env = template_of(find(changed, "Deployment", "kubeflow", name))["spec"]["containers"][0]["env"]
        names = [e["name"] for e in env]
        assert "MYSQL_ALLOW_EMPTY_PASSWORD" not in names
        assert names.count("MYSQL_ROOT_PASSWORD") == 1
        root = next(e for e in env if e["name"] == "MYSQL_ROOT_PASSWORD")
        assert root["valueFrom"]["secretKeyRef"] == {"name": secret_name, "key": secret_key}


def test_by_default_credentials_are_whole_string_placeholders_the_registration_resolves(cleaned):
    changed = credentials.apply(cleaned, Credentials(), ADMIN)
    text = json.dumps(changed)
    for name in credentials.NAMES:
        assert f'"{credentials.placeholder(name)}"' in text
    values = {credentials.placeholder(name): f"value-{name}" for name in credentials.NAMES}
    resolved = register.resolve(changed, values)
    assert "<<kubeflow-" not in json.dumps(resolved)
    assert secret(resolved, "oauth2-proxy", "oauth2-proxy")["client-secret"] == "value-oidc_client_secret"


def test_a_placeholder_inside_text_or_without_a_value_is_refused():
    with pytest.raises(ValueError, match="no value given"):
        register.resolve(
            {"a": f"x{credentials.placeholder('oidc_client_secret')}"},
            {credentials.placeholder("oidc_client_secret"): "v"},
        )
    with pytest.raises(ValueError, match="no value given"):
        register.resolve({"a": credentials.placeholder("oidc_client_secret")}, {})
    with pytest.raises(ValueError, match="unknown credentials"):
        register.substitutions({"admin_password": "x"}, {})


# ------------------------------------------------------------------------------------------------ notebooks


@pytest.fixture(scope="module")
def with_notebooks(cleaned):
    return notebooks.apply(cleaned, gpu_pools=("gpu-inference", "gpu-training"), storage_class="gp3", idle_minutes=90)


def form(objects) -> dict[str, Any]:
    config = find(objects, "ConfigMap", "kubeflow", "jupyter-web-app-config")["data"][notebooks.SPAWNER_KEY]
    return yaml.safe_load(config)["spawnerFormDefaults"]


def test_the_notebook_form_offers_nvidia_gpus_and_preselects_none(with_notebooks):
    gpus = form(with_notebooks)["gpus"]["value"]
    assert gpus == {"vendor": "", "vendors": [{"limitsKey": "nvidia.com/gpu", "uiName": "NVIDIA"}], "num": "none"}


def test_the_gpu_toleration_group_tolerates_exactly_the_platforms_gpu_taint(with_notebooks):
    group = form(with_notebooks)["tolerationGroup"]
    assert group["value"] == ""
    (option,) = group["options"]
    assert option["tolerations"] == [
        {"key": GPU_TAINT.key, "operator": "Equal", "value": GPU_TAINT.value, "effect": GPU_TAINT.effect}
    ]


def test_each_gpu_pool_is_one_affinity_option(with_notebooks):
    affinity = form(with_notebooks)["affinityConfig"]
    assert affinity["value"] == ""
    terms = {
        o["configKey"]: o["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        for o in affinity["options"]
    }
    assert terms == {
        f"nodepool-{pool}": [
            {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": [pool]}]}
        ]
        for pool in ("gpu-inference", "gpu-training")
    }


def test_workspaces_use_the_platform_class_and_notebooks_can_reach_pipelines(with_notebooks, cleaned):
    defaults = form(with_notebooks)
    assert defaults["workspaceVolume"]["value"]["newPvc"]["spec"]["storageClassName"] == "gp3"
    assert defaults["configurations"]["value"] == ["access-ml-pipeline"]
    assert defaults["image"] == form(cleaned)["image"]  # upstream's image choices are kept


def test_idle_notebooks_are_culled_after_the_configured_time(with_notebooks):
    data = find(with_notebooks, "ConfigMap", "kubeflow", "notebook-controller-config")["data"]
    assert (data["ENABLE_CULLING"], data["CULL_IDLE_TIME"]) == ("true", "90")


# ------------------------------------------------------------------------------------------------ GPU admission

#: The policy as the platform binds it in a team namespace: denials reported.
DENY = {"spec": {"validationActions": ["Deny"]}}


def admit(policy: dict[str, Any], pod: dict[str, Any], namespace_labels: dict[str, str]) -> list[str]:
    """Evaluate a ValidatingAdmissionPolicy on a pod creation, as the API server does (empty: admitted)."""
    return refusals(policy, DENY, JudgedPod("pod", pod, namespace_labels))


@pytest.fixture(scope="module")
def policy() -> dict[str, Any]:
    admission = pytest.importorskip("components.gpu.admission")
    options = admission.AdmissionOptions(scheduler_name=DEFAULT_GPU_SCHEDULER)
    return admission.admission_manifests(options)["policy"]


TEAM_LABELS = {"app.kubernetes.io/part-of": "kubeflow-profile", "kubernetes.io/metadata.name": "vision"}
GPU = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def trainer_pod(runtime: dict[str, Any]) -> dict[str, Any]:
    """A TrainJob's node pod: the runtime's pod template, with the resources the TrainJob adds."""
    job = next(j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "node")
    spec = copy.deepcopy(job["template"]["spec"]["template"]["spec"])
    spec["containers"][0]["resources"] = GPU  # a TrainJob adds resources, never tolerations
    labels = {"jobset.sigs.k8s.io/jobset-name": "llm", "jobset.sigs.k8s.io/replicatedjob-name": "node"}
    return {"metadata": {"name": "llm-node-0-0", "namespace": "vision", "labels": labels}, "spec": spec}


def argo_pod(objects) -> dict[str, Any]:
    """A pipeline task's GPU pod: Argo fills the workflow's missing fields from workflowDefaults and copies
    spec.schedulerName to every pod it creates; KFP's compiled workflows name no scheduler; the step adds the GPU
    toleration (kfp-kubernetes add_toleration)."""
    defaults = (
        yaml.safe_load(
            find(objects, "ConfigMap", "kubeflow", "workflow-controller-configmap")["data"].get("workflowDefaults")
            or "{}"
        )
        or {}
    )
    workflow = {"spec": {"entrypoint": "entrypoint", "serviceAccountName": "default-editor"}}
    spec = {**defaults.get("spec", {}), **workflow["spec"]}
    pod_spec = {
        "containers": [{"name": "main", "image": "pytorch", "resources": GPU}, {"name": "wait", "image": "argoexec"}],
        "tolerations": [TOLERATION],
    }
    if "schedulerName" in spec:
        pod_spec["schedulerName"] = spec["schedulerName"]
    owner = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "name": "run", "controller": True, "uid": "u"}
    metadata = {"name": "train-step", "namespace": "vision", "labels": {"workflows.argoproj.io/workflow": "run"}}
    return {"metadata": {**metadata, "ownerReferences": [owner]}, "spec": pod_spec}


def notebook_pod(*, owner: str | None = "nb", toleration: bool = True) -> dict[str, Any]:
    """A GPU notebook's pod as the notebook controller's StatefulSet creates it (JWA sets no schedulerName)."""
    metadata: dict[str, Any] = {
        "name": "nb-0",
        "namespace": "vision",
        "labels": {"notebook-name": "nb", "statefulset": "nb"},
    }
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": owner, "controller": True, "uid": "u"}
        ]
    spec: dict[str, Any] = {"containers": [{"name": "nb", "image": "jupyter-pytorch-cuda-full", "resources": GPU}]}
    if toleration:
        spec["tolerations"] = [{"key": GPU_TAINT.key, "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    return {"metadata": metadata, "spec": spec}


def test_training_pods_are_admitted_run_as_the_team_without_sidecars_and_only_trainers_tolerate_gpus(cleaned, policy):
    runtime = find(cleaned, "ClusterTrainingRuntime", "", "torch-distributed")
    assert admit(policy, trainer_pod(runtime), TEAM_LABELS) != []  # upstream's runtimes: no scheduler, no toleration
    changed = gpu_scheduling.apply(cleaned, DEFAULT_GPU_SCHEDULER)
    runtimes = [o for o in changed if o["kind"] == "ClusterTrainingRuntime"]
    assert len(runtimes) == 8
    for runtime in runtimes:
        for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
            template = job["template"]["spec"]["template"]
            assert template["spec"]["schedulerName"] == DEFAULT_GPU_SCHEDULER
            assert template["spec"]["serviceAccountName"] == "default-editor"  # the one the team role trusts
            assert template["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"  # kubeflow/trainer#2794
            # Only the trainers may land on GPU nodes; initializers and launchers stay off them.
            assert (TOLERATION in (template["spec"].get("tolerations") or [])) is (job["name"] == "node")
    assert (
        admit(policy, trainer_pod(find(changed, "ClusterTrainingRuntime", "", "torch-distributed")), TEAM_LABELS) == []
    )


def test_pipeline_pods_keep_the_default_scheduler_and_gpu_steps_are_admitted_with_their_toleration(cleaned, policy):
    changed = gpu_scheduling.apply(cleaned, DEFAULT_GPU_SCHEDULER)
    pod = argo_pod(changed)
    assert "schedulerName" not in pod["spec"]  # a stalled bin-packing scheduler stalls no pipeline
    assert admit(policy, pod, TEAM_LABELS) != []  # the plain policy would refuse the GPU step
    exempted = gpu_scheduling.kubeflow_exemption(policy, DEFAULT_GPU_SCHEDULER)
    assert admit(exempted, pod, TEAM_LABELS) == []
    untolerated = {**pod, "spec": {**pod["spec"], "tolerations": []}}
    assert admit(exempted, untolerated, TEAM_LABELS) != []  # the toleration is still required
    orphan = {**pod, "metadata": {k: v for k, v in pod["metadata"].items() if k != "ownerReferences"}}
    assert admit(exempted, orphan, TEAM_LABELS) != []  # a bare pod with the label is not a pipeline step


def test_without_the_bin_packing_scheduler_no_runtime_names_one(cleaned):
    changed = gpu_scheduling.apply(cleaned, None)
    for runtime in (o for o in changed if o["kind"] == "ClusterTrainingRuntime"):
        for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
            assert "schedulerName" not in job["template"]["spec"]["template"]["spec"]


def test_gpu_notebooks_are_exempt_from_the_scheduler_rule_only(policy):
    exempted = gpu_scheduling.kubeflow_exemption(policy, DEFAULT_GPU_SCHEDULER)
    assert admit(policy, notebook_pod(), TEAM_LABELS) != []  # what JWA makes is denied without the exemption
    assert admit(exempted, notebook_pod(), TEAM_LABELS) == []
    assert admit(exempted, notebook_pod(toleration=False), TEAM_LABELS) != []  # the toleration is still required
    assert admit(exempted, notebook_pod(owner=None), TEAM_LABELS) != []  # a bare pod with the label is not a notebook
    assert admit(exempted, notebook_pod(owner="other"), TEAM_LABELS) != []
    outside = {"kubernetes.io/metadata.name": "vision"}
    assert admit(exempted, notebook_pod(), outside) != []  # only in team namespaces
    assert (
        admit(
            exempted,
            trainer_pod(
                {
                    "spec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [
                                    {
                                        "name": "node",
                                        "template": {
                                            "spec": {
                                                "template": {"spec": {"containers": [{"name": "node", "image": "x"}]}}
                                            }
                                        },
                                    }
                                ]
                            }
                        }
                    }
                }
            ),
            TEAM_LABELS,
        )
        != []
    )  # other pods still need the scheduler


def test_an_exemption_for_a_policy_without_the_scheduler_rule_is_an_error(policy):
    with pytest.raises(ValueError, match="no rule requiring schedulerName other"):
        gpu_scheduling.kubeflow_exemption(policy, "other")


# ------------------------------------------------------------------------------------------------ access


def test_the_alb_serves_https_with_the_certificate_and_tags_and_port_80_only_redirects():
    alb = access.Alb(
        "arn:aws:acm:us-west-2:123456789012:certificate/abc",
        scheme="internet-facing",
        host="kubeflow.example.org",
        allowed_cidrs=("203.0.113.0/24",),
    )
    ingress = access.ingress(alb, {"project": "ml", "stack": "dev"})
    annotations = ingress["metadata"]["annotations"]
    # The controller's ssl-redirect gives each HTTP listener a single default action: redirect to this HTTPS port
    # (aws-load-balancer-controller v2.x docs, guide/tasks/ssl_redirect); the port must be one it listens on.
    assert json.loads(annotations["alb.ingress.kubernetes.io/listen-ports"]) == [{"HTTP": 80}, {"HTTPS": 443}]
    assert annotations["alb.ingress.kubernetes.io/ssl-redirect"] == "443"
    assert annotations["alb.ingress.kubernetes.io/certificate-arn"] == alb.certificate_arn
    assert annotations["alb.ingress.kubernetes.io/scheme"] == "internet-facing"
    assert annotations["alb.ingress.kubernetes.io/tags"] == "project=ml,stack=dev"
    assert annotations["alb.ingress.kubernetes.io/inbound-cidrs"] == "203.0.113.0/24"
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "kubeflow.example.org"
    assert rule["http"]["paths"][0]["backend"]["service"] == {"name": "istio-ingressgateway", "port": {"number": 80}}


def test_the_session_cookie_is_secure_exactly_behind_https(cleaned):
    parameters = ("ConfigMap", "oauth2-proxy", "oauth2-proxy-parameters")
    assert find(cleaned, *parameters)["data"]["FORCE_HTTPS"] == "false"
    assert find(access.cookies(cleaned, secure=True), *parameters)["data"]["FORCE_HTTPS"] == "true"
    forced = access.cookies(cleaned, secure=True)
    assert find(access.cookies(forced, secure=False), *parameters)["data"]["FORCE_HTTPS"] == "false"


def test_secret_values_decode_base64_data():
    obj = {"kind": "Secret", "data": {"a": base64.b64encode(b"minio123").decode()}, "stringData": {"b": "x"}}
    assert dict(credentials.secret_values(obj)) == {"a": "minio123", "b": "x"}
