"""The GPU stack: operator values per node image, the bin-packing scheduler, and the GPU admission policy's CEL."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from components import versions
from components.gpu.admission import EXEMPT_LABEL, AdmissionOptions, admission_manifests
from components.gpu.operator import GpuOperatorOptions, operator_values
from components.gpu.scheduler import SchedulerOptions, scheduler_configuration, scheduler_manifests
from components.scheduling import Placement
from components.tools.cluster_model.admission import JudgedPod, refusals
from tests.conftest import run_stack

SYSTEM = {"eksml.io/node-role": "system"}
SYSTEM_TOLERATIONS = ({"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"},)
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
#: Team stacks' GPU pools add this taint; the operator replaces its operands' tolerations with its list.
TEAM_TOLERATION = {"key": "eksml.io/team", "operator": "Exists", "effect": "NoSchedule"}


def values(**options):
    return operator_values(GpuOperatorOptions(**options), system_placement=Placement(SYSTEM, SYSTEM_TOLERATIONS))


# ------------------------------------------------------------------------------------------------- operator


def test_on_al2023_the_ami_owns_driver_and_toolkit_and_the_operator_runs_the_device_plugin():
    rendered = values(node_image="al2023")
    assert rendered["driver"] == {"enabled": False}
    assert rendered["toolkit"] == {"enabled": False}
    assert rendered["devicePlugin"]["enabled"] is True


def test_on_bottlerocket_the_operator_runs_no_second_device_plugin():
    rendered = values(node_image="bottlerocket")
    assert rendered["driver"] == {"enabled": False}
    assert rendered["toolkit"] == {"enabled": False}
    assert rendered["devicePlugin"]["enabled"] is False


@pytest.mark.parametrize("image", ["al2023", "bottlerocket"])
def test_gpu_daemonsets_tolerate_the_gpu_taint_and_controllers_run_on_system_nodes(image):
    rendered = values(node_image=image)
    assert rendered["daemonsets"]["tolerations"] == [GPU_TOLERATION, TEAM_TOLERATION]
    assert rendered["operator"]["nodeSelector"] == {"kubernetes.io/os": "linux", **SYSTEM}
    assert rendered["operator"]["tolerations"] == list(SYSTEM_TOLERATIONS)
    assert rendered["node-feature-discovery"]["worker"]["tolerations"] == [GPU_TOLERATION, TEAM_TOLERATION]
    assert rendered["node-feature-discovery"]["master"]["nodeSelector"]["eksml.io/node-role"] == "system"


def _scrape(monitor, target, series):
    """The labels Prometheus stores for one scraped series: the monitor's relabelings applied to the target labels
    the operator sets (only `replace` and `labeldrop` are used here), then the series' own labels, which win over
    the target's under honorLabels."""
    labels = dict(target)
    for rule in monitor["relabelings"]:
        if rule["action"] == "replace":
            labels[rule["targetLabel"]] = ";".join(labels[s] for s in rule["sourceLabels"])
        elif rule["action"] == "labeldrop":
            labels = {k: v for k, v in labels.items() if not re.fullmatch(rule["regex"], k)}
        else:
            raise AssertionError(f"unexpected relabel action {rule['action']}")
    kept = {k: v for k, v in labels.items() if not k.startswith("__")}
    assert monitor["honorLabels"] is True
    return {**kept, **series}


#: Target labels prometheus-operator gives a DCGM exporter pod, before the monitor's own relabelings.
EXPORTER_TARGET = {
    "__meta_kubernetes_pod_node_name": "ip-10-20-1-5.us-west-2.compute.internal",
    "namespace": "gpu-operator",
    "pod": "nvidia-dcgm-exporter-x7k2p",
    "container": "nvidia-dcgm-exporter",
    "service": "nvidia-dcgm-exporter",
    "endpoint": "gpu-metrics",
}


def test_dcgm_metrics_keep_the_workloads_pod_and_namespace_and_gain_the_node():
    monitor = values(node_image="al2023")["dcgmExporter"]["serviceMonitor"]
    held = _scrape(monitor, EXPORTER_TARGET, {"gpu": "0", "namespace": "team-a", "pod": "train-0", "container": "main"})
    assert held["namespace"] == "team-a"
    assert held["pod"] == "train-0"
    assert held["node"] == "ip-10-20-1-5.us-west-2.compute.internal"


def test_a_free_gpu_is_attributed_to_no_pod_not_to_the_exporter():
    monitor = values(node_image="al2023")["dcgmExporter"]["serviceMonitor"]
    free = _scrape(monitor, EXPORTER_TARGET, {"gpu": "1"})  # the exporter labels only GPUs a pod holds
    assert "pod" not in free
    assert "namespace" not in free
    assert free["node"] == "ip-10-20-1-5.us-west-2.compute.internal"


def test_node_feature_discovery_can_be_left_to_an_existing_installation():
    rendered = values(node_image="al2023", node_feature_discovery=False)
    assert rendered["nfd"] == {"enabled": False}
    assert "node-feature-discovery" not in rendered


def test_time_slicing_advertises_each_gpu_several_times():
    plugin = values(node_image="al2023", time_slicing_replicas=4)["devicePlugin"]
    assert plugin["config"]["create"] is True
    assert plugin["config"]["default"] == "any"
    sharing = yaml.safe_load(plugin["config"]["data"]["any"])
    assert sharing["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]


def test_mig_sets_the_strategy_and_the_default_profile():
    rendered = values(node_image="al2023", mig_strategy="mixed", mig_default_profile="all-balanced")
    assert rendered["mig"] == {"strategy": "mixed"}
    assert rendered["migManager"] == {"enabled": True, "config": {"default": "all-balanced"}}
    assert values(node_image="al2023")["migManager"] == {"enabled": False}


# ------------------------------------------------------------------------------------------------ scheduler

OPTIONS = SchedulerOptions(name="gpu-binpack", image="registry.k8s.io/kube-scheduler:v1.35.3")


def test_scheduler_scores_most_allocated_weighted_on_gpus_and_stops_spreading():
    (profile,) = scheduler_configuration(OPTIONS)["profiles"]
    assert profile["schedulerName"] == "gpu-binpack"
    fit, spread = profile["pluginConfig"]
    assert spread == {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}
    assert fit["name"] == "NodeResourcesFit"
    assert fit["args"]["scoringStrategy"] == {
        "type": "MostAllocated",
        "resources": [
            {"name": "nvidia.com/gpu", "weight": 10},
            {"name": "cpu", "weight": 1},
            {"name": "memory", "weight": 1},
        ],
    }
    assert profile["plugins"] == {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}}
    assert "filter" not in profile["plugins"]  # what fits a node stays what Karpenter thinks fits


def test_requested_to_capacity_ratio_scores_fuller_nodes_higher():
    config = scheduler_configuration(
        SchedulerOptions(name="s", image="i", strategy="RequestedToCapacityRatio", gpu_weight=20)
    )
    strategy = config["profiles"][0]["pluginConfig"][0]["args"]["scoringStrategy"]
    assert strategy["type"] == "RequestedToCapacityRatio"
    assert strategy["requestedToCapacityRatio"]["shape"] == [
        {"utilization": 0, "score": 0},
        {"utilization": 100, "score": 10},
    ]
    assert strategy["resources"][0] == {"name": "nvidia.com/gpu", "weight": 20}


def test_scheduler_runs_two_leader_elected_replicas_on_system_nodes_with_probes():
    manifests = scheduler_manifests(OPTIONS, placement=Placement(SYSTEM, SYSTEM_TOLERATIONS))
    deployment = manifests["deployment"]["spec"]
    assert deployment["replicas"] == 2
    pod = deployment["template"]["spec"]
    assert pod["nodeSelector"]["eksml.io/node-role"] == "system"
    assert pod["priorityClassName"] == manifests["priority-class"]["metadata"]["name"]
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["port"] == 10259
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    config = yaml.safe_load(manifests["config"]["data"]["config.yaml"])
    assert config["leaderElection"] == {
        "leaderElect": True,
        "resourceNamespace": "kube-system",
        "resourceName": "gpu-binpack",
    }
    lease_rules = manifests["leader-election-role"]["rules"]
    assert {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "resourceNames": ["gpu-binpack"],
        "verbs": ["get", "update"],
    } in lease_rules


def test_scheduler_image_matches_the_cluster_minor_version(dev):
    deployment = next(r for r in dev.of_type("kubernetes:apps/v1:Deployment"))
    image = deployment.inputs["spec"]["template"]["spec"]["containers"][0]["image"]
    assert (
        image
        == f"registry.k8s.io/kube-scheduler:{versions.KUBE_SCHEDULER[versions.DEFAULT_KUBERNETES_VERSION].image_tag}"
    )
    assert image.split(":v")[1].startswith(versions.DEFAULT_KUBERNETES_VERSION + ".")


# ------------------------------------------------------------------------------------------------ admission


_BIN_PACKING = AdmissionOptions(scheduler_name="gpu-binpack")


def admit(pod, *, namespace_labels=None, options=_BIN_PACKING):
    """What the user is told when creating the pod in namespace team-a (empty: admitted): under `deny` the API
    server reports only the first failed validation (deniedDecisions[0] in the apiserver's validating policy
    dispatcher); under `warn` every one comes back as a warning."""
    manifests = admission_manifests(options)
    binding = {**manifests["binding"], "spec": {**manifests["binding"]["spec"], "validationActions": ["Deny"]}}
    pod = {**pod, "metadata": {"namespace": "team-a", **(pod.get("metadata") or {})}}
    denied = refusals(manifests["policy"], binding, JudgedPod("pod", pod, namespace_labels or {}))
    return denied[:1] if options.action == "deny" else denied


def gpu_pod(**changes):
    pod: dict[str, Any] = {
        "metadata": {"name": "train", "namespace": "team-a"},
        "spec": {
            "schedulerName": "gpu-binpack",
            "tolerations": [dict(GPU_TOLERATION)],
            "containers": [
                {
                    "name": "main",
                    "image": "pytorch",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    pod["spec"].update(changes)
    return pod


def test_a_complete_gpu_pod_is_admitted():
    assert admit(gpu_pod()) == []


def test_a_pod_without_gpus_is_not_checked():
    pod = gpu_pod(schedulerName="default-scheduler", tolerations=[])
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    assert admit(pod) == []


def test_default_scheduler_is_denied_with_the_scheduler_to_add():
    (message,) = admit(gpu_pod(schedulerName="default-scheduler"))
    assert message == (
        "GPU pods are placed by the bin-packing scheduler: add spec.schedulerName: gpu-binpack (this pod has "
        "default-scheduler)"
    )


def test_missing_scheduler_name_is_denied_naming_the_default_the_api_server_filled_in():
    # The API server defaults schedulerName before admission (pkg/apis/core/v1/defaults.go, v1.35.4): the user
    # reads the name the pod got, as docs/gpu.md shows it; tests/engine/test_admission.py holds it to the real server.
    pod = gpu_pod()
    del pod["spec"]["schedulerName"]
    (message,) = admit(pod)
    assert "add spec.schedulerName: gpu-binpack (this pod has default-scheduler)" in message


def test_a_gpu_pod_that_sets_only_limits_is_admitted_as_docs_gpu_md_shows_it():
    # Requests default to limits before admission (SetDefaults_Pod, same file): the docs' pod is valid.
    pod = gpu_pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    assert admit(pod) == []


def test_missing_toleration_is_denied_with_the_toleration_to_add():
    (message,) = admit(gpu_pod(tolerations=[{"key": "other", "operator": "Exists"}]))
    assert (
        message
        == "GPU nodes are tainted: add to spec.tolerations {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}"
    )
    assert admit(gpu_pod(tolerations=[])) == [message]


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "nvidia.com/gpu", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"},
        {"operator": "Exists"},
    ],
)
def test_every_toleration_that_matches_the_taint_is_accepted(toleration):
    assert admit(gpu_pod(tolerations=[toleration])) == []


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "false"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"},
    ],
)
def test_a_toleration_that_does_not_match_the_taint_is_denied(toleration):
    assert len(admit(gpu_pod(tolerations=[toleration]))) == 1


def test_requests_different_from_limits_are_denied():
    pod = gpu_pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}}
    (message,) = admit(pod)
    assert message.startswith("set resources.requests and resources.limits of nvidia.com/gpu to the same whole number")


def test_a_gpu_request_without_a_limit_is_denied():
    pod = gpu_pod()
    pod["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": "1"}}
    assert len(admit(pod)) == 1


def test_init_containers_are_checked_too():
    pod = gpu_pod()
    pod["spec"]["initContainers"] = [
        {"name": "warmup", "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}}}
    ]
    assert len(admit(pod)) == 1


def test_a_denial_names_the_first_mistake_and_warnings_name_every_one():
    pod = gpu_pod(schedulerName="default-scheduler", tolerations=[])
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "3"
    (first,) = admit(pod)
    assert first.startswith("GPU pods are placed by the bin-packing scheduler")
    warnings = admit(pod, options=AdmissionOptions(scheduler_name="gpu-binpack", action="warn"))
    assert [w.split(":")[0] for w in warnings] == [
        "GPU pods are placed by the bin-packing scheduler",
        "GPU nodes are tainted",
        (
            "set resources.requests and resources.limits of nvidia.com/gpu to the same whole number in every "
            "container that uses a GPU"
        ),
    ]


def test_system_and_labelled_namespaces_are_exempt():
    bad = gpu_pod(schedulerName="default-scheduler", tolerations=[])
    assert admit(bad, namespace_labels={"kubernetes.io/metadata.name": "kube-system"}) == []
    assert admit(bad, namespace_labels={"kubernetes.io/metadata.name": "gpu-operator"}) == []
    assert admit(bad, namespace_labels={EXEMPT_LABEL: "exempt"}) == []
    assert len(admit(bad)) == 1


def test_namespaces_listed_in_config_are_exempt_too():
    bad = gpu_pod(schedulerName="default-scheduler", tolerations=[])
    options = AdmissionOptions(scheduler_name="gpu-binpack", exempt_namespaces=("research",))
    assert admit(bad, namespace_labels={"kubernetes.io/metadata.name": "research"}, options=options) == []
    assert len(admit(bad, options=options)) == 1


@pytest.mark.stack
def test_exempt_namespaces_from_stack_config_reach_the_binding():
    inventory = run_stack("dev", {"gpu": {"admission": {"exemptNamespaces": ["research"]}}})
    binding = inventory.one(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "gpu-admission-binding"
    )
    (by_name, _) = binding.inputs["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert "research" in by_name["values"]
    assert "kube-system" in by_name["values"]


def test_without_the_bin_packing_scheduler_any_scheduler_is_accepted():
    assert admit(gpu_pod(schedulerName="default-scheduler"), options=AdmissionOptions(scheduler_name=None)) == []


@pytest.mark.stack
@pytest.mark.parametrize(("action", "expected"), [("deny", ["Deny"]), ("warn", ["Warn"]), ("audit", ["Audit"])])
def test_enforcement_mode_comes_from_config(action, expected):
    inventory = run_stack("dev", {"gpu": {"admission": {"action": action}}})
    binding = inventory.one(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "gpu-admission-binding"
    )
    assert binding.inputs["spec"]["validationActions"] == expected


# ---------------------------------------------------------------------------------------------------- stack


@pytest.mark.stack
def test_gpu_stack_is_installed_when_a_pool_launches_gpus_and_not_otherwise(dev):
    assert dev.one("eksml:gpu:GpuStack")
    operator = dev.release("gpu-operator")
    assert operator.inputs["version"] == versions.GPU_OPERATOR.version
    assert operator.inputs["repositoryOpts"] == {"repo": versions.GPU_OPERATOR.repo}
    cpu_only = run_stack(
        "dev",
        {
            "karpenter": {
                "nodeClasses": {"default": {"preset": "default"}},
                "nodePools": {"cpu": {"preset": "cpu-general"}},
            },
            "kubeflow": {"enabled": False},  # its team's GPU quota needs a GPU pool
        },
        drop=("eks-ml-platform:kueue",),  # so does the team stacks' GPU reserve
    )
    assert not cpu_only.of_type("eksml:gpu:GpuStack")


@pytest.mark.stack
def test_bottlerocket_gpu_nodes_turn_the_operators_device_plugin_off():
    inventory = run_stack(
        "dev",
        {
            "karpenter": {
                "nodeClasses": {"default": {"preset": "default"}, "gpu": {"preset": "gpu", "amiFamily": "bottlerocket"}}
            }
        },
    )
    operator = inventory.release("gpu-operator")
    assert operator.inputs["values"]["devicePlugin"]["enabled"] is False


def test_the_scheduler_and_operator_are_removed_before_the_system_nodes(dev):
    group = dev.one("aws:eks/nodeGroup:NodeGroup")
    deployment = dev.one("kubernetes:apps/v1:Deployment", "gpu-scheduler-deployment")
    operator = dev.release("gpu-operator")
    assert dev.depends_on(deployment, group)
    assert dev.depends_on(operator, group)


def test_the_binpack_scheduler_serves_no_profiling_endpoint():
    config = scheduler_configuration(OPTIONS)
    # kube-scheduler turns both on when the fields are left out (kubescheduler.config.k8s.io/v1 DebuggingConfiguration).
    assert (config["enableProfiling"], config["enableContentionProfiling"]) == (False, False)


def test_the_api_servers_validation_refuses_a_gpu_request_other_than_its_limit_before_the_policy():
    # kubernetes v1.35.4 ValidateResourceRequirements: extended resources are not overcommitted; its wording.
    from components.tools.cluster_model.admission import invalid

    pod = gpu_pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 2}}
    assert invalid(pod) == [
        'spec.containers[0].resources.requests: Invalid value: "2": must be equal to nvidia.com/gpu limit of 1'
    ]
    assert invalid(gpu_pod()) == []
    # compared as quantities, as the API server does: 1000m of a GPU is 1
    pod["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "1"},
        "requests": {"nvidia.com/gpu": "1000m"},
    }
    assert invalid(pod) == []
