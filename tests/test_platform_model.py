"""The model of the running platform: Kubernetes' scheduling rules as the cluster applies them, each rule caught on a
seeded break, and the shipped stacks judged by it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.images import architectures, split
from components.tools.cluster_model import StackView, check_previews
from components.tools.cluster_model.kube import Taint, expression_matches, tolerates

CHARTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "charts"
SYSTEM_GROUP = {
    "type": "aws:eks/nodeGroup:NodeGroup",
    "name": "system",
    "inputs": {
        "labels": {"eksml.io/node-role": "system"},
        "taints": [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}],
        "amiType": "AL2023_x86_64_STANDARD",
        "capacityType": "ON_DEMAND",
    },
}
SYSTEM: dict[str, Any] = {
    "nodeSelector": {"eksml.io/node-role": "system"},
    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
}
EVERYWHERE: dict[str, Any] = {"tolerations": [{"operator": "Exists"}]}
#: Node agents every node needs, as minimal DaemonSets that run everywhere.
AGENTS = [
    ("aws-node", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1"),
    ("kube-proxy", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:v1"),
    ("ebs-csi-node", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-ebs-csi-driver:v1"),
    ("node-exporter", "quay.io/prometheus/node-exporter:v1.12.1-distroless"),
    ("eks-node-monitoring-agent", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/eks-node-monitoring-agent:v1"),
]


#: What a container asks and may use, so that those landing on the system nodes pass the sizing rule.
SIZED = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}


def pod_template(image: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": image.rsplit("/", 1)[-1].split(":")[0]}},
        "spec": {**spec, "containers": [{"name": "c", "image": image, "resources": SIZED}]},
    }


def workload(
    kind: str, name: str, image: str, namespace: str = "apps", replicas: int = 2, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"template": pod_template(image, **spec)}
    if kind != "DaemonSet":
        body["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": body}


def node_pool(
    name: str, *, arch=("amd64",), capacity=("on-demand",), taints=(), labels=None, gpu=False, consolidate="WhenEmpty"
) -> dict[str, Any]:
    requirements = [
        {"key": "kubernetes.io/arch", "operator": "In", "values": list(arch)},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(capacity)},
    ]
    if gpu:
        requirements.append({"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]})
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": labels or {}},
                "spec": {"taints": list(taints), "requirements": requirements},
            },
            "disruption": {"consolidationPolicy": consolidate},
        },
    }


def agents() -> list[dict[str, Any]]:
    return [workload("DaemonSet", name, image, namespace="kube-system", **EVERYWHERE) for name, image in AGENTS]


def preview(
    folder: Path, objects: list[dict[str, Any]], resources: tuple[dict[str, Any], ...] = (SYSTEM_GROUP,)
) -> Path:
    """A folder shaped like the offline preview's output, holding these objects."""
    (folder / "manifests").mkdir(parents=True)
    (folder / "helm").mkdir()
    (folder / "manifests" / "all.yaml").write_text(yaml.safe_dump_all(objects))
    (folder / "resources.json").write_text(json.dumps({"resources": list(resources)}))
    return folder


def problems(tmp_path: Path, objects: list[dict[str, Any]]) -> list[str]:
    _, found = check_previews([preview(tmp_path / "p", objects)], None)
    return [str(p) for p in found]


# ---------------------------------------------------------------------------------------------- Kubernetes' rules


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"operator": "Exists"}, True),  # an empty key with Exists tolerates everything
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),  # wrong effect
        ({"key": "nvidia.com/gpu", "value": "true"}, True),  # Equal is the default operator
        ({"key": "nvidia.com/gpu", "value": "false"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"operator": "Equal"}, False),  # an empty key needs Exists
    ],
)
def test_tolerations_match_taints_as_kubernetes_matches_them(toleration, expected):
    assert tolerates(toleration, Taint("nvidia.com/gpu", "true", "NoSchedule")) is expected


def test_selector_requirements_match_what_a_node_of_the_kind_could_carry():
    domains = {"kubernetes.io/arch": frozenset({"amd64", "arm64"}), "node.kubernetes.io/instance-type": None}
    assert expression_matches({"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}, domains)
    assert not expression_matches({"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}, domains)
    assert expression_matches({"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["arm64"]}, domains)
    assert expression_matches(
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m7i.large"]}, domains
    )
    assert not expression_matches({"key": "eksml.io/team", "operator": "Exists"}, domains)
    assert expression_matches({"key": "eksml.io/team", "operator": "DoesNotExist"}, domains)


def test_image_facts_hold_for_the_tag_they_were_read_for_and_unknown_images_are_amd64_only():
    assert split("ghcr.io/kubeflow/kfp-api-server:2.16.1") == ("ghcr.io/kubeflow/kfp-api-server", "2.16.1")
    assert split("localhost:5000/x@sha256:abc") == ("localhost:5000/x", "latest")
    assert architectures("ghcr.io/kubeflow/kfp-api-server:2.16.1") == {"amd64"}  # kubeflow/pipelines#13957
    assert {"amd64", "arm64"} <= architectures("quay.io/jetstack/cert-manager-controller:v1.20.2")
    assert architectures("quay.io/jetstack/cert-manager-controller:v0.1.0") == {"amd64"}  # not read for that tag
    assert architectures("example.org/never-seen:1") == {"amd64"}


# ---------------------------------------------------------------------------------------------- seeded breaks


def test_a_clean_small_platform_has_no_problem(tmp_path):
    objects = [
        *agents(),
        node_pool("general", capacity=("on-demand",)),
        workload("Deployment", "api", "quay.io/jetstack/cert-manager-controller:v1.20.2"),
    ]
    assert problems(tmp_path, objects) == []


@pytest.mark.parametrize(
    ("resources", "sized"),
    [
        (SIZED, True),
        ({}, False),  # the chart default of most controllers: invisible to the sizing
        ({"requests": {"cpu": "10m", "memory": "32Mi"}}, False),  # no memory limit
        ({"requests": {"memory": "32Mi"}, "limits": {"memory": "64Mi"}}, False),  # no CPU request
        ({"limits": {"cpu": "10m", "memory": "64Mi"}}, True),  # limits stand in for requests (API defaulting)
    ],
)
def test_a_controller_on_the_system_nodes_must_request_cpu_and_memory_and_limit_memory(tmp_path, resources, sized):
    controller = workload("Deployment", "operator", "quay.io/jetstack/cert-manager-controller:v1.20.2", **SYSTEM)
    controller["spec"]["template"]["spec"]["containers"][0]["resources"] = resources
    # The same pod elsewhere is not the system nodes' business.
    elsewhere = workload("Deployment", "api", "quay.io/jetstack/cert-manager-controller:v1.20.2")
    elsewhere["spec"]["template"]["spec"]["containers"][0]["resources"] = resources
    found = problems(tmp_path, [*agents(), node_pool("general"), controller, elsewhere])
    expected = [
        (
            "[system-sizing] Deployment apps/operator (manifests/all.yaml) runs on the system nodes but c request "
            "no CPU or memory, or set no memory limit: set them in its values and count them in "
            "components/cluster/capacity.py"
        )
    ]
    assert found == ([] if sized else expected)


def test_a_team_gpu_pool_whose_taint_the_operator_does_not_tolerate_gets_no_device_plugin(tmp_path):
    team_pool = node_pool(
        "team-vision",
        gpu=True,
        taints=[
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            {"key": "eksml.io/team", "value": "vision", "effect": "NoSchedule"},
        ],
    )
    policy: dict[str, Any] = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {
            "daemonsets": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
            "devicePlugin": {
                "enabled": True,
                "repository": "nvcr.io/nvidia",
                "image": "k8s-device-plugin",
                "version": "v0.20.0",
            },
            "dcgmExporter": {
                "enabled": True,
                "repository": "nvcr.io/nvidia/k8s",
                "image": "dcgm-exporter",
                "version": "4.6.0-4.8.3-distroless",
            },
        },
    }
    nfd = workload(
        "DaemonSet",
        "node-feature-discovery-worker",
        "registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
        namespace="gpu-operator",
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    )
    found = problems(tmp_path, [*agents(), team_pool, policy, nfd])
    assert any(
        "NodePool team-vision gets no NVIDIA device plugin" in p and "eksml.io/team=vision:NoSchedule" in p
        for p in found
    )
    assert any("NodePool team-vision gets no DCGM exporter" in p for p in found)

    # Tolerated by key and effect, as the platform now renders it: the operands run there.
    team = {"key": "eksml.io/team", "operator": "Exists", "effect": "NoSchedule"}
    policy["spec"]["daemonsets"]["tolerations"].append(team)
    nfd["spec"]["template"]["spec"]["tolerations"].append(team)
    assert problems(tmp_path / "fixed", [*agents(), team_pool, policy, nfd]) == []


def test_an_amd64_only_image_that_can_land_on_arm64_nodes_is_caught_and_pinning_the_architecture_fixes_it(tmp_path):
    pool = node_pool("general", arch=("amd64", "arm64"))
    api = workload("Deployment", "ml-pipeline", "ghcr.io/kubeflow/kfp-api-server:2.16.1")
    found = problems(tmp_path, [*agents(), pool, api])
    assert found == [
        (
            "[architecture] Deployment apps/ml-pipeline (manifests/all.yaml) can run on NodePool general as arm64, "
            "which its image ghcr.io/kubeflow/kfp-api-server:2.16.1 is not built for"
        )
    ]
    pinned = workload(
        "Deployment",
        "ml-pipeline",
        "ghcr.io/kubeflow/kfp-api-server:2.16.1",
        nodeSelector={"kubernetes.io/arch": "amd64"},
    )
    assert problems(tmp_path / "pinned", [*agents(), pool, pinned]) == []


def test_a_pod_no_node_kind_admits_is_caught_naming_each_kind_and_why(tmp_path):
    gpu_pool = node_pool("gpu", gpu=True, taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    job = workload(
        "Deployment",
        "trainer",
        "quay.io/jetstack/cert-manager-controller:v1.20.2",
        nodeSelector={"eksml.io/workload": "training"},
    )
    (found,) = [p for p in problems(tmp_path, [*agents(), gpu_pool, job]) if "lands-nowhere" in p]
    assert "Deployment apps/trainer" in found
    assert "node group system: does not tolerate CriticalAddonsOnly=true:NoSchedule" in found
    assert "NodePool gpu: does not tolerate nvidia.com/gpu=true:NoSchedule" in found


def test_a_pod_asking_for_a_scheduler_nobody_runs_is_caught(tmp_path):
    pod = workload(
        "Deployment", "infer", "quay.io/jetstack/cert-manager-controller:v1.20.2", schedulerName="gpu-binpack", **SYSTEM
    )
    found = problems(tmp_path, [*agents(), pod])
    assert found == [
        (
            "[scheduler] Deployment apps/infer (manifests/all.yaml) asks for scheduler 'gpu-binpack', "
            "which no scheduler of the platform serves (served: default-scheduler)"
        )
    ]
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gpu-binpack", "namespace": "kube-system"},
        "data": {
            "config.yaml": yaml.safe_dump(
                {"kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "gpu-binpack"}]}
            )
        },
    }
    assert problems(tmp_path / "served", [*agents(), pod, config]) == []


def test_a_fail_closed_webhook_on_one_spot_replica_without_a_budget_is_caught(tmp_path):
    pool = node_pool("general", capacity=("spot", "on-demand"), consolidate="WhenEmptyOrUnderutilized")
    backend = workload("Deployment", "poddefaults", "quay.io/jetstack/cert-manager-webhook:v1.20.2", replicas=1)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "poddefaults", "namespace": "apps"},
        "spec": {"selector": {"app": "cert-manager-webhook"}},
    }
    hook: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "poddefaults"},
        "webhooks": [
            {
                "name": "poddefaults.kubeflow.org",
                "clientConfig": {"service": {"name": "poddefaults", "namespace": "apps"}},
            }
        ],
    }
    found = problems(tmp_path, [*agents(), pool, backend, service, hook])
    assert {p.split(") ", 2)[-1] for p in found} == {
        "runs 1 replica",
        "has no PodDisruptionBudget",
        "can run on spot nodes of NodePool general",
    }
    # Ignore instead of Fail: its outage refuses nothing.
    hook["webhooks"][0]["failurePolicy"] = "Ignore"
    assert problems(tmp_path / "ignore", [*agents(), pool, backend, service, hook]) == []


def test_a_pod_that_asks_for_efa_where_no_efa_plugin_runs_is_caught(tmp_path):
    gpu_pool = node_pool(
        "training", gpu=True, taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    )
    spec: dict[str, Any] = {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}
    job = workload("Deployment", "nccl", "quay.io/jetstack/cert-manager-controller:v1.20.2", **spec)
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"vpc.amazonaws.com/efa": "4", "nvidia.com/gpu": "8"}
    }
    found = problems(tmp_path, [*agents(), gpu_pool, job])
    assert any("NodePool training gets no EFA device plugin" in p for p in found)


#: kube-prometheus-stack's operator: where it runs, Prometheus scrapes every node's exporter.
PROMETHEUS_OPERATOR = workload(
    "Deployment",
    "prometheus-operator",
    "quay.io/prometheus-operator/prometheus-operator:v0.89.0",
    namespace="monitoring",
    replicas=1,
    **SYSTEM,
)


def test_a_node_kind_missing_a_node_agent_is_caught(tmp_path):
    pool = node_pool("special", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
    exporter_only_untainted = [
        *[w for w in agents() if w["metadata"]["name"] != "node-exporter"],
        workload(
            "DaemonSet", "node-exporter", "quay.io/prometheus/node-exporter:v1.12.1-distroless", namespace="monitoring"
        ),
    ]
    found = problems(tmp_path, [*exporter_only_untainted, PROMETHEUS_OPERATOR, pool])
    assert len(found) == 2  # the system group and the pool, both tainted
    assert any(
        "NodePool special gets no node exporter" in p and "does not tolerate dedicated=x:NoSchedule" in p for p in found
    )


def test_without_prometheus_no_node_needs_a_node_exporter(tmp_path):
    """`observability.enabled: false` installs no Prometheus and no node exporter: nothing would read one."""
    without_exporter = [w for w in agents() if w["metadata"]["name"] != "node-exporter"]
    pool = node_pool("special")
    assert problems(tmp_path / "off", [*without_exporter, pool]) == []
    found = problems(tmp_path / "on", [*without_exporter, PROMETHEUS_OPERATOR, pool])
    assert any("NodePool special gets no node exporter" in p for p in found)


# ---------------------------------------------------------------------------------------------- shipped stacks


@pytest.mark.subprocess
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
def test_prod_its_team_stack_and_the_example_workloads_break_no_rule_and_the_team_pool_gets_its_operands(
    prod, tmp_path
):
    from components.tools.cluster_model import check_views
    from components.tools.cluster_model.platform import read_folder
    from components.tools.preview import main
    from components.tools.preview.folder import write_preview

    from .test_team_stack import TEAM_STACK, preview_args

    write_preview(prod, tmp_path / "prod")
    assert main(preview_args(tmp_path / "team", "--policy-config", str(TEAM_STACK / "policy-config.json"))) == 0
    examples = sorted((Path(__file__).resolve().parents[1] / "examples" / "workloads").glob("*.yaml"))
    documented = [
        (f"examples/workloads/{p.name}", doc) for p in examples for doc in yaml.safe_load_all(p.read_text()) if doc
    ]
    views = [read_folder(tmp_path / "prod"), read_folder(tmp_path / "team"), StackView([], documented, [])]
    platform, found = check_views(views, CHARTS)
    assert platform.unrendered == {}
    team_pool = next(n for n in platform.nodes if n.name == "NodePool team-vision")
    assert "nvidia" in team_pool.accelerators
    assert {w.name for w in platform.workloads if w.origin.startswith("examples/")} >= {"llm", "train-single"}
    assert [str(p) for p in found] == []


@pytest.mark.subprocess
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
def test_prod_and_a_team_stacks_profile_whose_pipelines_keep_artifacts_in_s3_break_no_rule(prod, tmp_path):
    from components.tools.cluster_model import check_views
    from components.tools.cluster_model.platform import read_folder
    from components.tools.preview.folder import write_preview

    from .test_team_stack import run_team_with_profile

    write_preview(prod, tmp_path / "prod")
    team = run_team_with_profile()
    assert {c.inputs["metadata"]["name"] for c in team.of_type("kubernetes:core/v1:ConfigMap")} >= {"kfp-launcher"}
    write_preview(team, tmp_path / "team")
    platform, found = check_views([read_folder(tmp_path / "prod"), read_folder(tmp_path / "team")], CHARTS)
    assert platform.unrendered == {}
    assert [str(p) for p in found] == []


def test_kubeflow_pods_whose_images_are_amd64_only_select_amd64_nodes_and_others_are_left_free():
    from components.kubeflow.transform import pinned_architectures

    api = workload("Deployment", "ml-pipeline", "ghcr.io/kubeflow/kfp-api-server:2.16.1")
    dex = workload("Deployment", "dex", "ghcr.io/dexidp/dex:v2.45.1")
    pinned, free = pinned_architectures([api, dex])
    assert pinned["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/arch": "amd64"}
    assert "nodeSelector" not in free["spec"]["template"]["spec"]


def test_kubeflow_fail_closed_gates_get_two_on_demand_replicas_spread_by_requirement_and_a_budget():
    from components.kubeflow import resilience
    from components.kubeflow.staging import Item

    backend = workload("Deployment", "poddefaults", "ghcr.io/kubeflow/dashboard/poddefaults-webhook:v2.0.0", replicas=1)
    backend["spec"]["selector"] = {"matchLabels": {"app": "poddefaults-webhook"}}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "pd", "namespace": "apps"},
        "spec": {"selector": {"app": "poddefaults-webhook"}},
    }
    hook = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "pd"},
        "webhooks": [{"name": "pd.kubeflow.org", "clientConfig": {"service": {"name": "pd", "namespace": "apps"}}}],
    }
    other = workload("Deployment", "ui", "ghcr.io/kubeflow/kfp-frontend:2.16.1", replicas=1)
    hardened, *_, untouched = resilience.harden([backend, service, hook, other])
    assert untouched is other
    assert hardened["spec"]["replicas"] == 2
    pod = hardened["spec"]["template"]
    assert pod["spec"]["nodeSelector"] == {"karpenter.sh/capacity-type": "on-demand"}
    assert pod["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    # Never two on one node, and over two zones at least: required, so a node or zone with room cannot take both.
    assert pod["spec"]["affinity"]["podAntiAffinity"] == {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "poddefaults-webhook"}}}
        ]
    }
    assert pod["spec"]["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "minDomains": 2,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "poddefaults-webhook"}},
        }
    ]
    (budget,) = resilience.budgets([Item(o, None) for o in (hardened, service, hook, other)])
    assert budget.manifest["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "poddefaults-webhook"}}}


@pytest.mark.subprocess
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_shipped_stacks_break_no_rule_of_the_model(stack, request, tmp_path):
    from components.tools.preview.folder import write_preview

    write_preview(request.getfixturevalue(stack), tmp_path / stack)
    platform, found = check_previews([tmp_path / stack], CHARTS)
    assert platform.unrendered == {}
    assert [str(p) for p in found] == []


@pytest.mark.stack
def test_without_the_charts_the_verdict_says_it_covers_only_what_was_judged(dev):
    """A clone without ../shared renders no Helm release: the headline must not say every pod lands."""
    from components.tools.preview import model_report, platform_model

    report, broken = model_report(*platform_model(dev, None))
    head, *lines = report.splitlines()
    assert not broken
    assert "every judged pod lands" in head
    assert "Helm release(s) and the node agents not judged: see below" in head
    assert [line for line in lines if line.startswith("  not judged: the pods of Helm release kube-prometheus-stack")]


@pytest.mark.subprocess
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
def test_the_preview_fails_naming_both_sides_when_kubeflow_can_land_on_no_pool():
    from components.tools.preview import model_report, platform_model

    from .conftest import run_stack

    pools = {
        "cpu-general": {
            "preset": "cpu-general",
            "architectures": ["arm64"],
            "limits": {"cpu": "64", "memory": "256Gi"},
        },
        "gpu-inference": {"preset": "gpu-inference", "capacityTypes": ["spot"], "limits": {"nvidia.com/gpu": "4"}},
    }
    karpenter = {"nodeClasses": {"default": {"preset": "default"}, "gpu": {"preset": "gpu"}}, "nodePools": pools}
    report, broken = model_report(*platform_model(run_stack("dev", {"karpenter": karpenter}), CHARTS))
    assert broken
    assert (
        "[lands-nowhere] Deployment kubeflow/ml-pipeline (manifests/kubeflow-apps.yaml) can run on no node "
        "(node group cluster-system: does not tolerate CriticalAddonsOnly=true:NoSchedule; "
        "NodePool cpu-general: nodeSelector {'kubernetes.io/arch': 'amd64', 'karpenter.sh/capacity-type': "
        "'on-demand'} matches no node of it;" in report
    )


def test_a_gpu_trainjob_from_a_runtime_without_the_gpu_toleration_is_refused_by_the_platforms_own_policy(tmp_path):
    from components.gpu.admission import AdmissionOptions, admission_manifests
    from components.kubeflow.gpu_scheduling import trainer_runtimes

    admission = admission_manifests(AdmissionOptions(scheduler_name="gpu-binpack"))
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gpu-binpack", "namespace": "kube-system"},
        "data": {
            "c": yaml.safe_dump({"kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "gpu-binpack"}]})
        },
    }
    pod = {"spec": {"containers": [{"name": "node", "image": "pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime"}]}}
    upstream = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch-distributed"},
        "spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod}}}]}}},
    }
    gpu_pool = node_pool("gpu", gpu=True, taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    base = [*agents(), gpu_pool, config, admission["policy"], admission["binding"]]
    found = problems(tmp_path / "upstream", [*base, upstream])
    assert (
        "[admission] a GPU TrainJob's trainer pod from runtime torch-distributed is refused by policy gpu-pods: "
        "GPU nodes are tainted" in "\n".join(found)
    )
    assert any(p.startswith("[lands-nowhere] Pod team/torch-distributed-node-0-0") for p in found)
    (ours,) = trainer_runtimes([upstream], "gpu-binpack")
    # The pool has no device plugin here (no operator in this small platform); nothing else is wrong.
    assert {p.split("]")[0] for p in problems(tmp_path / "ours", [*base, ours])} == {"[node-agents"}


def test_a_documented_pod_the_api_servers_own_validation_refuses_is_named_before_any_policy():
    """A GPU request other than its limit never reaches a ValidatingAdmissionPolicy: pod validation refuses it
    first, with its own message (the engine tier saw the real API server do so)."""
    from components.tools.cluster_model.platform import Platform
    from components.tools.cluster_model.rules import workflows_are_admitted

    container: dict[str, Any] = {
        "name": "train",
        "image": "pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime",
        "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}},
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "uneven", "namespace": "team"},
        "spec": {"template": {"spec": {"containers": [container], "restartPolicy": "Never"}}},
    }
    platform = Platform()
    platform.objects.append(("examples/uneven.yaml", job))
    assert [str(p) for p in workflows_are_admitted(platform)] == [
        (
            "[admission] Job team/uneven is refused by the API server's pod validation: spec.containers[0].resources."
            'requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'
        )
    ]
    container["resources"]["requests"] = {"nvidia.com/gpu": "2"}
    assert workflows_are_admitted(platform) == []


def test_a_notebook_form_without_the_gpu_toleration_offers_notebooks_that_are_refused_and_land_nowhere(tmp_path):
    from components.gpu.admission import AdmissionOptions, admission_manifests

    admission = admission_manifests(AdmissionOptions(scheduler_name="gpu-binpack"))
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu"]}]}
                ]
            }
        }
    }
    form = {
        "spawnerFormDefaults": {
            "image": {
                "value": "jupyter",
                "options": ["ghcr.io/kubeflow/kubeflow/notebook-servers/jupyter-pytorch-cuda-full:v1.11.0"],
            },
            "affinityConfig": {"options": [{"configKey": "gpu", "displayName": "NodePool gpu", "affinity": affinity}]},
        }
    }
    spawner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "jupyter-web-app-config", "namespace": "kubeflow"},
        "data": {"spawner_ui_config.yaml": yaml.safe_dump(form)},
    }
    gpu_pool = node_pool("gpu", gpu=True, taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    found = "\n".join(problems(tmp_path, [*agents(), gpu_pool, spawner, admission["policy"], admission["binding"]]))
    assert "[admission] a GPU notebook on NodePool gpu is refused by policy gpu-pods: GPU nodes are tainted" in found
    assert "[lands-nowhere] Pod team/nb-gpu-0 (a GPU notebook on NodePool gpu)" in found


def test_a_pod_asking_for_efa_must_select_the_nodes_that_run_the_efa_plugin():
    from components.gpu.admission import AdmissionOptions
    from components.gpu.efa_admission import efa_admission_manifests
    from components.tools.cluster_model.admission import JudgedPod, refusals

    efa = efa_admission_manifests(AdmissionOptions())
    resources = {
        "limits": {"vpc.amazonaws.com/efa": "4", "nvidia.com/gpu": "8"},
        "requests": {"vpc.amazonaws.com/efa": "4", "nvidia.com/gpu": "8"},
    }
    pod: dict[str, Any] = {
        "metadata": {"name": "nccl-0", "namespace": "vision"},
        "spec": {"containers": [{"name": "t", "image": "x", "resources": resources}]},
    }
    team = {"app.kubernetes.io/part-of": "kubeflow-profile"}
    (refused,) = refusals(efa["policy"], efa["binding"], JudgedPod("nccl", pod, team))
    assert "only nodes labelled eksml.io/efa=true run the EFA device plugin" in refused
    selecting = {**pod, "spec": {**pod["spec"], "nodeSelector": {"eksml.io/efa": "true"}}}
    assert refusals(efa["policy"], efa["binding"], JudgedPod("nccl", selecting, team)) == []
    plain = {**pod, "spec": {"containers": [{"name": "t", "image": "x"}]}}
    assert refusals(efa["policy"], efa["binding"], JudgedPod("cpu", plain, team)) == []  # not an EFA pod
    system = {**pod, "metadata": {"name": "x", "namespace": "kube-system"}}
    assert refusals(efa["policy"], efa["binding"], JudgedPod("system", system, {})) == []  # exempt namespace


@pytest.mark.subprocess
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
def test_a_platform_gpu_pool_with_a_taint_of_its_own_still_gets_its_operands(tmp_path):
    """A GPU pool may carry taints besides the GPU one (a pool kept for one kind of work): the GPU Operator replaces
    its operands' tolerations with `daemonsets.tolerations`, so unless that list covers the pool's own taint its
    nodes get no device plugin and never offer a GPU. The preview's model is the judge."""
    from components.tools.cluster_model import check_views
    from components.tools.cluster_model.platform import read_folder
    from components.tools.preview.folder import write_preview

    from .conftest import run_stack, stack_config

    karpenter = json.loads(stack_config("dev")["eks-ml-platform:karpenter"])
    karpenter["nodePools"]["gpu-dedicated"] = {
        "preset": "gpu-inference",
        "limits": {"nvidia.com/gpu": "2"},
        "taints": [
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "inference", "effect": "NoSchedule"},
        ],
    }
    write_preview(run_stack("dev", {"karpenter": karpenter}), tmp_path / "dev")
    platform, found = check_views([read_folder(tmp_path / "dev")], CHARTS)
    pool = next(n for n in platform.nodes if n.name == "NodePool gpu-dedicated")
    assert ("dedicated", "inference", "NoSchedule") in {(t.key, t.value, t.effect) for t in pool.taints}
    assert "nvidia" in pool.accelerators
    # its notebooks too: the form offers the pool with a toleration group of its own
    assert any(w.name == "nb-nodepool-gpu-dedicated-0" for w in platform.workloads)
    assert [str(p) for p in found] == []


def test_an_account_outside_the_reasoned_list_bound_to_every_namespaces_secrets_is_caught(tmp_path):
    """A chart upgrade or a new part that binds another service account to Secrets cluster-wide fails the preview; a
    listed controller, a role narrowed by resourceNames and a namespaced RoleBinding do not."""
    reader = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}],
    }
    narrowed = {
        **reader,
        "metadata": {"name": "one-secret"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["x"], "verbs": ["get"]}],
    }

    def binding(kind: str, role: str, namespace: str, account: str) -> dict[str, Any]:
        meta = {"name": f"{account}-{role}", **({"namespace": namespace} if kind == "RoleBinding" else {})}
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        }

    allowed = [
        binding("ClusterRoleBinding", "reader", "cert-manager", "cert-manager"),  # listed, with its reason
        binding("ClusterRoleBinding", "one-secret", "tools", "exporter"),  # one named Secret only
        binding("RoleBinding", "reader", "tools", "exporter"),  # its own namespace only
    ]
    assert problems(tmp_path / "ok", [*agents(), reader, narrowed, *allowed]) == []
    found = problems(tmp_path / "bad", [*agents(), reader, binding("ClusterRoleBinding", "reader", "tools", "dash")])
    assert found == [
        (
            "[secret-access] tools/dash may get, list the Secrets of every namespace (a ClusterRoleBinding); only the "
            "controllers listed with their reason in components/tools/cluster_model/rbac.py may"
        )
    ]


# ------------------------------------------------------------------------------------------ metrics-server add-on


def metrics_server_addon(configuration: dict[str, Any] | None) -> dict[str, Any]:
    inputs: dict[str, Any] = {"addonName": "metrics-server"}
    if configuration is not None:
        inputs["configurationValues"] = json.dumps(configuration)
    return {"type": "aws:eks/addon:Addon", "name": "cluster-metrics-server", "inputs": inputs}


def test_the_metrics_server_add_ons_pods_land_where_its_configuration_puts_them(tmp_path):
    """The model knows the add-on's pods (no manifest shows them) and reads their placement from the add-on's
    configuration, as the cluster component sets it."""
    from components.cluster.addons import metrics_server_configuration
    from components.scheduling import SYSTEM_PLACEMENT

    addon = metrics_server_addon(metrics_server_configuration(SYSTEM_PLACEMENT))
    platform, found = check_previews([preview(tmp_path / "p", agents(), (SYSTEM_GROUP, addon))], None)
    (server,) = [w for w in platform.workloads if w.name == "metrics-server"]
    assert (server.kind, server.namespace, server.replicas) == ("Deployment", "kube-system", 2)
    assert server.node_selector == {"eksml.io/node-role": "system"}
    assert [str(p) for p in found] == []


def test_the_api_server_must_reach_the_metrics_server_behind_its_apiservice(tmp_path):
    """The add-on's APIService is not among the stack's objects; the model adds it, so a policy that closes
    metrics-server's port to the control plane (every HPA on CPU then reads nothing) is caught."""
    from components.cluster.addons import metrics_server_configuration
    from components.scheduling import SYSTEM_PLACEMENT

    deny = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny-all", "namespace": "kube-system"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }
    addon = metrics_server_addon(metrics_server_configuration(SYSTEM_PLACEMENT))
    _, found = check_previews([preview(tmp_path / "p", [*agents(), deny], (SYSTEM_GROUP, addon))], None)
    assert any(
        "metrics-server" in str(p) and "port 10251 (APIService v1beta1.metrics.k8s.io)" in str(p) for p in found
    ), found


def zone_spread(workload_object: dict[str, Any], min_domains: int) -> dict[str, Any]:
    labels = workload_object["spec"]["template"]["metadata"]["labels"]
    workload_object["spec"]["template"]["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "minDomains": min_domains,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": labels},
        }
    ]
    return workload_object


def test_a_required_zone_spread_needs_nodes_in_as_many_zones_as_its_min_domains(tmp_path):
    one_zone = node_pool("cpu")
    one_zone["spec"]["template"]["spec"]["requirements"].append(
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}
    )
    gate = zone_spread(workload("Deployment", "gate", "ghcr.io/dexidp/dex:v2.45.1"), 2)
    found = [p for p in problems(tmp_path / "one", [one_zone, gate, *agents()]) if "zone-spread" in p]
    assert found == [
        (
            "[zone-spread] Deployment apps/gate (manifests/all.yaml) must spread over 2 zones but the nodes it may "
            "use are only in ['us-west-2a']"
        )
    ]
    anywhere = node_pool("cpu")  # any zone of the VPC: Karpenter opens the second
    assert [p for p in problems(tmp_path / "any", [anywhere, gate, *agents()]) if "zone-spread" in p] == []
    two_zones = copy.deepcopy(one_zone)
    two_zones["spec"]["template"]["spec"]["requirements"][-1]["values"] = ["us-west-2a", "us-west-2b"]
    assert [p for p in problems(tmp_path / "two", [two_zones, gate, *agents()]) if "zone-spread" in p] == []
