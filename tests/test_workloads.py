"""The workloads of examples/workloads prove the platform: each pod template is admitted by the GPU admission policy
the platform deploys (its CEL evaluated), passes the team namespace's Pod Security level and quota, and lands on a
NodePool that exists, as Karpenter would place it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from components.gpu.admission import AdmissionOptions, admission_manifests
from components.kubeflow.gpu_scheduling import kubeflow_exemption
from components.observability.adapter import GPU_UTILIZATION_METRIC
from components.team.quantity import parse_quantity
from components.tools.cluster_model.workloads import pod_template
from components.tools.preview import read_project_name, read_stack_config
from components.tools.preview.program import run_program

from .conftest import REFCHECK, REPO
from .karpenter_fit import EFA_RESOURCE, Unschedulable, place, pod_requests
from .test_gpu import admit

WORKLOADS = REPO / "examples" / "workloads"
TEAM_STACK = REPO / "examples" / "team-stack"
PLATFORM_STACK = "acme/eks-ml-platform/prod"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def documents() -> list[tuple[str, dict[str, Any]]]:
    return [
        (path.name, document)
        for path in sorted(WORKLOADS.glob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text())
        if document
    ]


def templates() -> dict[str, Mapping[str, Any]]:
    """Every pod template, keyed `<file>/<kind>/<name>` (an InferenceService's: its predictor's, as KServe makes it)."""
    found = {}
    for file, document in documents():
        if document["kind"] in ("Deployment", "Job", "StatefulSet", "InferenceService"):
            key = f"{file}/{document['kind']}/{document['metadata']['name']}"
            template = pod_template(document)
            assert template is not None, f"{key} has no pod template"
            found[key] = template
    return found


#: Where each workload lands on the prod platform. Deliberate: a pool change that moves one shows up here.
EXPECTED = {
    "inference.yaml/Deployment/llm": "inference-a10g-spot",
    "inference-service.yaml/InferenceService/llm-kserve": "inference-a10g-spot",
    "notebook.yaml/Deployment/notebook": "inference-a10g-on-demand",
    "training-multinode.yaml/Job/train-multi": "training",
    "training-single.yaml/Job/train-single": "training",
}


@pytest.fixture(scope="module")
def team():
    project = read_project_name(TEAM_STACK)
    config, secret_keys = read_stack_config(TEAM_STACK, project, "prod")
    outputs = json.loads((TEAM_STACK / "platform-outputs.prod.json").read_text())
    return run_program(TEAM_STACK, project, "prod", config, secret_keys, {PLATFORM_STACK: outputs})


@pytest.fixture(scope="module")
def platform(prod, team):
    """The prod platform as a workload meets it: its pools and the team's, the admission policy it deploys, the
    team namespace's labels, quota and default requests."""
    outputs = prod.stack_outputs
    options = AdmissionOptions(scheduler_name=outputs["gpuSchedulerName"])
    deployed = prod.one(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "gpu-admission-policy"
    ).inputs["spec"]
    # What is deployed: this policy, with Kubeflow's notebook pods exempt from the scheduler rule only. None of
    # these workloads is a notebook controller's pod, so evaluating the policy itself is evaluating what they meet.
    plain = admission_manifests(options)["policy"]
    assert deployed == kubeflow_exemption(plain, outputs["gpuSchedulerName"])["spec"]
    namespace = team.one("kubernetes:core/v1:Namespace").inputs["metadata"]
    (limits,) = team.one("kubernetes:core/v1:LimitRange").inputs["spec"]["limits"]
    return {
        "pools": [r.inputs for r in (*prod.of_type(NODEPOOL), *team.of_type(NODEPOOL))],
        "zones": outputs["availabilityZones"],
        "options": options,
        "namespace": namespace,
        "labels": {"kubernetes.io/metadata.name": namespace["name"], **namespace["labels"]},
        "quota": team.one("kubernetes:core/v1:ResourceQuota").inputs["spec"]["hard"],
        "defaults": limits["defaultRequest"],
        "vpc_cidr": outputs["vpcCidr"],
        "claims": {r.inputs["metadata"]["name"] for r in team.of_type("kubernetes:core/v1:PersistentVolumeClaim")},
        "service_account": team.one("kubernetes:core/v1:ServiceAccount").inputs["metadata"]["name"],
    }


def land(spec: dict[str, Any], platform: dict[str, Any], **options):
    return place(
        spec, platform["pools"], zones=platform["zones"], fsx=True, default_requests=platform["defaults"], **options
    )


def test_every_workload_is_listed_with_where_it_lands():
    assert set(templates()) == set(EXPECTED)


@pytest.mark.stack
@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_every_workload_is_admitted_by_the_platforms_gpu_policy(key, platform):
    template = templates()[key]
    pod = {"metadata": {**template["metadata"], "namespace": platform["namespace"]["name"]}, "spec": template["spec"]}
    assert admit(pod, namespace_labels=platform["labels"], options=platform["options"]) == []


@pytest.mark.stack
@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_every_workload_lands_on_a_pool_of_the_platform(key, platform):
    landing = land(templates()[key]["spec"], platform)
    assert landing.pool == EXPECTED[key]
    assert landing.instance_types  # some instance type the pool allows has room for it


@pytest.mark.stack
def test_the_landings_are_the_instances_each_workload_was_sized_for(platform):
    by_key = {key: land(templates()[key]["spec"], platform) for key in EXPECTED}
    assert by_key["inference.yaml/Deployment/llm"].instance_types[0] == "g5.xlarge"  # one A10G, the smallest that fits
    assert by_key["inference.yaml/Deployment/llm"].capacity_types == ("spot",)
    assert by_key["notebook.yaml/Deployment/notebook"].capacity_types == ("on-demand",)
    training = by_key["training-single.yaml/Job/train-single"]
    assert set(training.instance_types) == {"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge"}  # eight A100s or H100s
    assert training.zones == ("us-west-2a",)  # next to the FSx file system


@pytest.mark.stack
def test_a_gpu_pod_without_the_toleration_is_refused_by_admission_and_by_every_gpu_pool(platform):
    spec = dict(templates()["inference.yaml/Deployment/llm"]["spec"], tolerations=[])
    (denied,) = admit({"metadata": {}, "spec": spec}, namespace_labels=platform["labels"], options=platform["options"])
    assert denied.startswith("GPU nodes are tainted")
    with pytest.raises(Unschedulable) as caught:
        land(spec, platform)
    assert caught.value.reasons["inference-a10g-spot"] == "does not tolerate the taint nvidia.com/gpu=true:NoSchedule"


@pytest.mark.stack
def test_only_pods_that_ask_for_the_team_pool_land_there(platform):
    spec = templates()["inference.yaml/Deployment/llm"]["spec"]
    team_toleration = {"key": "eksml.io/team", "operator": "Equal", "value": "vision", "effect": "NoSchedule"}
    asking = dict(spec, tolerations=[GPU_TOLERATION, team_toleration], nodeSelector={"eksml.io/team": "vision"})
    assert land(asking, platform).pool == "team-vision"
    assert land(dict(spec, tolerations=[GPU_TOLERATION, team_toleration]), platform).pool == "inference-a10g-spot"


@pytest.mark.stack
def test_efa_is_not_offered_by_the_platforms_pools_today(platform):
    """No EFA device plugin runs on the platform, so a pod asking for EFA would stay Pending: the multi-node Job
    trains over TCP (docs/workloads.md)."""
    spec = json.loads(json.dumps(templates()["training-multinode.yaml/Job/train-multi"]["spec"]))
    for where in ("requests", "limits"):
        spec["containers"][0]["resources"][where][EFA_RESOURCE] = "4"
    with pytest.raises(Unschedulable) as caught:
        land(spec, platform)
    assert "no device plugin advertises ['vpc.amazonaws.com/efa']" in caught.value.reasons["training"]
    assert land(spec, platform, advertised=frozenset({"nvidia.com/gpu", EFA_RESOURCE})).pool == "training"


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_every_workload_passes_the_team_namespaces_baseline_pod_security(key):
    spec = templates()[key]["spec"]
    assert not any(spec.get(field) for field in ("hostNetwork", "hostPID", "hostIPC"))
    assert not any("hostPath" in volume for volume in spec.get("volumes") or [])
    for container in spec["containers"]:
        context = container.get("securityContext") or {}
        assert not context.get("privileged")
        assert not (context.get("capabilities") or {}).get("add")
        assert ":" in container["image"]
        assert not container["image"].endswith(":latest")


def most_pods(kind: str, name: str) -> int:
    """How many pods of a workload run at once at most: an HPA's maximum, a Job's parallelism, else its replicas."""
    objects = {(d["kind"], d["metadata"]["name"]): d for _, d in documents()}
    # KServe names an InferenceService's Deployment after its predictor
    target = f"{name}-predictor" if kind == "InferenceService" else name
    scalers = [
        d
        for (k, _), d in objects.items()
        if k == "HorizontalPodAutoscaler" and d["spec"]["scaleTargetRef"]["name"] == target
    ]
    if scalers:
        return scalers[0]["spec"]["maxReplicas"]
    spec = objects[(kind, name)]["spec"]
    return spec.get("parallelism", 1) if kind == "Job" else spec.get("replicas", 1)


@pytest.mark.stack
@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_every_workload_fits_the_team_quota_at_its_largest(key, platform):
    _, kind, name = key.split("/")
    requests = pod_requests(templates()[key]["spec"], platform["defaults"])
    for resource in ("nvidia.com/gpu", "cpu", "memory"):
        allowed = parse_quantity(platform["quota"][f"requests.{resource}"])
        assert requests.get(resource, 0) * most_pods(kind, name) <= allowed, resource


@pytest.mark.stack
def test_workloads_use_the_team_stacks_claims_and_service_account(platform):
    for key, template in templates().items():
        spec = template["spec"]
        claims = {
            v["persistentVolumeClaim"]["claimName"] for v in spec.get("volumes") or [] if "persistentVolumeClaim" in v
        }
        assert claims <= platform["claims"], key
        assert spec.get("serviceAccountName", platform["service_account"]) == platform["service_account"], key


def test_training_and_notebooks_are_never_disrupted_voluntarily():
    for key in (
        "training-single.yaml/Job/train-single",
        "training-multinode.yaml/Job/train-multi",
        "notebook.yaml/Deployment/notebook",
    ):
        assert templates()[key]["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"


@pytest.mark.stack
def test_the_inference_service_is_an_internal_nlb_to_pod_ips_through_the_controller(platform):
    objects = {(d["kind"], d["metadata"]["name"]): d for _, d in documents()}
    service = objects[("Service", "llm")]
    # The platform runs the controller without its Service webhook: the class is the only way to pick it.
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["loadBalancerClass"] == "service.k8s.aws/nlb"
    annotations = service["metadata"]["annotations"]
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"] == "ip"
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internal"
    (container,) = objects[("Deployment", "llm")]["spec"]["template"]["spec"]["containers"]
    port = {p["name"]: p["containerPort"] for p in container["ports"]}[service["spec"]["ports"][0]["targetPort"]]
    (rule,) = objects[("NetworkPolicy", "llm-from-load-balancer")]["spec"]["ingress"]
    assert rule == {"from": [{"ipBlock": {"cidr": platform["vpc_cidr"]}}], "ports": [{"protocol": "TCP", "port": port}]}
    assert (
        container["readinessProbe"]["httpGet"]["path"]
        == annotations["service.beta.kubernetes.io/aws-load-balancer-healthcheck-path"]
    )


def test_inference_scales_from_one_on_gpu_utilisation_and_keeps_a_replica_through_disruptions():
    objects = {(d["kind"], d["metadata"]["name"]): d for _, d in documents()}
    hpa = objects[("HorizontalPodAutoscaler", "llm")]["spec"]
    # From 1: scaling to 0 needs the alpha HPAScaleToZero gate, which EKS does not enable.
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (1, 4)
    (metric,) = hpa["metrics"]
    assert metric["type"] == "Pods"
    assert metric["pods"]["metric"]["name"] == GPU_UTILIZATION_METRIC
    assert 0 < float(metric["pods"]["target"]["averageValue"]) < 100  # a utilisation in percent
    pdb = objects[("PodDisruptionBudget", "llm")]["spec"]
    labels = objects[("Deployment", "llm")]["spec"]["template"]["metadata"]["labels"]
    assert pdb["minAvailable"] == 1
    assert pdb["selector"]["matchLabels"].items() <= labels.items()


def test_the_metric_the_inference_hpa_scales_on_is_served_by_the_platform(prod):
    """The prod platform installs prometheus-adapter with a custom-metrics rule of the name the HPA asks for, per pod,
    so the HPA does not sit at its minimum with `<unknown>` targets."""
    objects = {(d["kind"], d["metadata"]["name"]): d for _, d in documents()}
    asked = objects[("HorizontalPodAutoscaler", "llm")]["spec"]["metrics"][0]["pods"]["metric"]["name"]
    adapter = prod.release("prometheus-adapter")
    rules = adapter.inputs["values"]["rules"]["custom"]
    served = {rule["name"]["as"]: rule for rule in rules}
    assert asked in served
    assert served[asked]["resources"]["overrides"]["pod"] == {"resource": "pod"}  # a Pods metric needs the pod label


@pytest.mark.refcheck
@pytest.mark.subprocess
def test_the_workload_manifests_pass_refcheck(tmp_path):
    """Every object against the Kubernetes schemas of the versions the platform runs (refcheck, as for the preview)."""
    for path in WORKLOADS.glob("*.yaml"):
        (tmp_path / path.name).write_text(path.read_text())
    # The InferenceService against KServe's pinned CRD (refcheck's reference has none of KServe's).
    crd = REPO.parent / "shared" / "reference" / "charts" / "kserve-crd-v0.16.0" / "templates"
    crd = crd / "serving.kserve.io_inferenceservices.yaml"
    result = subprocess.run(
        [sys.executable, str(REFCHECK), str(tmp_path), str(crd), "--k8s-version", "1.34,1.35", "-v"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert [line for line in result.stdout.splitlines() if line.startswith(("ERROR", "WARN"))] == []
    assert result.stdout.strip().endswith(f"refcheck: {len(documents()) + 1} objects, 0 errors")
