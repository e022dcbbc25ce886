"""Pools that can actually run their pods: the Neuron and EFA device plugins installed when pools need them and
tolerating those pools' taints, the Neuron pods' admission policy, accelerator ceilings as outputs and alerts, and
what a pool asks of its node class (reserved capacity, EFA layouts)."""

from __future__ import annotations

from typing import Any

import pytest

from components import versions
from components.gpu.admission import AdmissionOptions
from components.gpu.efa import efa_values
from components.gpu.neuron import neuron_values
from components.gpu.neuron_admission import neuron_admission_manifests
from components.karpenter.config import NEURON_OUTSIDE_SHARES
from components.scheduling import EFA_LABEL, GPU_TAINT, NEURON_TAINT, Taint
from components.tools.cluster_model.admission import JudgedPod, refusals
from components.tools.preview.inventory import Inventory, Recorded
from tests.conftest import run_stack
from tests.karpenter_support import P, config_problems, karpenter_config, req

RELEASE = "kubernetes:helm.sh/v3:Release"
DEDICATED = Taint("eksml.io/dedicated", "vision", "NoSchedule")
#: Every device plugin also runs on the team stacks' pools, whose taint is the team's.
TEAM_TOLERATION = {"key": "eksml.io/team", "operator": "Exists", "effect": "NoSchedule"}
NEURON_POOL = {
    "preset": "neuron",
    "instanceFamilies": ["inf2"],
    "taints": [NEURON_TAINT.as_dict(), DEDICATED.as_dict()],
}
EFA_CLASS = {"preset": "gpu-training", "efaLayout": "p5.48xlarge"}
EFA_POOL = {
    "preset": "gpu-training",
    "nodeClass": "efa",
    "requirements": [req("node.kubernetes.io/instance-type", "In", "p5.48xlarge")],
}

#: Keys of the charts' values.yaml at the pinned versions, as read upstream (no reference copy is pinned for them):
#: aws-neuron/neuron-helm-charts charts/neuron-helm-chart/values.yaml (chart 1.10.0, as `helm show values` prints
#: it), and aws/eks-charts stable/aws-efa-k8s-device-plugin/values.yaml and templates/daemonset.yaml.
NEURON_CHART_KEYS = {
    "neuronInstances",
    "devicePlugin.enabled",
    "devicePlugin.tolerations",
    "devicePlugin.nodeSelector",
    "devicePlugin.affinity",
    "devicePlugin.resources",
    "scheduler.enabled",
    "scheduler.customScheduler.enabled",
    "npd.enabled",
    "draDriver.enabled",
    "ultraserverOperator.enabled",
}
EFA_CHART_KEYS = {
    "image.repository",
    "image.tag",
    "securityContext",
    "supportedInstanceLabels.keys",
    "supportedInstanceLabels.values",
    "resources",
    "nodeSelector",
    "tolerations",
    "additionalPodAnnotations",
    "additionalPodLabels",
    "updateStrategy",
    "nameOverride",
    "fullnameOverride",
    "imagePullSecrets",
}


def _paths(values: dict[str, Any], prefix: str = "") -> set[str]:
    found = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and path not in ("devicePlugin.affinity",):
            found |= _paths(value, path + ".")
        else:
            found.add(path)
    return found


def releases(inventory: Inventory) -> dict[str, Recorded]:
    return {r.inputs["name"]: r for r in inventory.of_type(RELEASE)}


# ------------------------------------------------------------------------------------------------ renderers


def test_the_neuron_device_plugin_tolerates_every_taint_of_the_neuron_pools_and_runs_nothing_else():
    values = neuron_values([NEURON_TAINT, DEDICATED])
    assert values["devicePlugin"] == {
        "enabled": True,
        "tolerations": [
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "eksml.io/dedicated", "operator": "Exists", "effect": "NoSchedule"},
            TEAM_TOLERATION,
        ],
    }
    assert values["scheduler"] == {"enabled": False}
    assert values["npd"] == {"enabled": False}


def test_the_efa_device_plugin_runs_on_the_labelled_efa_nodes_and_tolerates_their_taints():
    values = efa_values([GPU_TAINT, DEDICATED, GPU_TAINT])
    assert values["supportedInstanceLabels"] == {"keys": [EFA_LABEL], "values": ["true"]}
    assert values["tolerations"] == [
        {"key": "eksml.io/dedicated", "operator": "Exists", "effect": "NoSchedule"},
        TEAM_TOLERATION,
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_device_plugin_values_use_only_keys_the_upstream_charts_have():
    assert _paths(neuron_values([NEURON_TAINT])) <= NEURON_CHART_KEYS
    assert _paths(efa_values([GPU_TAINT])) <= EFA_CHART_KEYS


# ------------------------------------------------------------------------------------------- stack wiring


def test_a_stack_without_neuron_or_efa_pools_installs_no_device_plugin(dev):
    assert not {"neuron-helm-chart", "aws-efa-k8s-device-plugin"} & set(releases(dev))
    assert dev.stack_outputs["nodePoolAcceleratorLimits"] == {"cpu-general": {}, "gpu-inference": {"nvidia.com/gpu": 4}}
    assert dev.stack_outputs["nodePoolGpuLimits"] == {"cpu-general": None, "gpu-inference": 4}  # the old name stays


@pytest.fixture(scope="module")
def accelerated():
    karpenter = {
        "nodeClasses": {"default": {"preset": "default"}, "gpu": {"preset": "gpu"}, "efa": EFA_CLASS},
        "nodePools": {
            "cpu-general": {"preset": "cpu-general", "limits": {"cpu": "64"}},
            "inf": {**NEURON_POOL, "limits": {"aws.amazon.com/neuroncore": "32"}},
            "train": EFA_POOL,
        },
    }
    return run_stack("dev", {"karpenter": karpenter})


@pytest.mark.stack
def test_neuron_pools_get_the_neuron_device_plugin_tolerating_their_taints(accelerated):
    release = releases(accelerated)["neuron-helm-chart"]
    assert release.inputs["chart"] == "oci://public.ecr.aws/neuron/neuron-helm-chart"
    assert release.inputs["version"] == versions.NEURON_HELM_CHART.version
    tolerated = {(t["key"], t.get("effect")) for t in release.inputs["values"]["devicePlugin"]["tolerations"]}
    assert {(NEURON_TAINT.key, "NoSchedule"), (DEDICATED.key, "NoSchedule")} <= tolerated


@pytest.mark.stack
def test_efa_pools_get_the_efa_device_plugin_and_their_nodes_its_label(accelerated):
    release = releases(accelerated)["aws-efa-k8s-device-plugin"]
    assert release.inputs["values"]["tolerations"] == [
        TEAM_TOLERATION,
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]
    pools = {r.inputs["metadata"]["name"]: r for r in accelerated.of_type("kubernetes:karpenter.sh/v1:NodePool")}
    assert pools["train"].inputs["spec"]["template"]["metadata"]["labels"][EFA_LABEL] == "true"
    assert EFA_LABEL not in pools["inf"].inputs["spec"]["template"]["metadata"]["labels"]


@pytest.mark.stack
def test_device_plugins_wait_for_cluster_dns_like_every_release(accelerated):
    coredns = next(r for r in accelerated.of_type("aws:eks/addon:Addon") if r.inputs["addonName"] == "coredns")
    for name in ("neuron-helm-chart", "aws-efa-k8s-device-plugin"):
        assert accelerated.depends_on(releases(accelerated)[name], coredns), name


@pytest.mark.stack
def test_neuron_pools_get_an_accelerator_limits_output_and_near_limit_alerts(accelerated):
    assert accelerated.stack_outputs["nodePoolAcceleratorLimits"]["inf"] == {
        "aws.amazon.com/neuron": 16,
        "aws.amazon.com/neuroncore": 32,
    }
    rules = accelerated.one("kubernetes:monitoring.coreos.com/v1:PrometheusRule", "observability-alerts").inputs[
        "spec"
    ]["groups"]
    alerts = {rule["alert"]: rule for group in rules for rule in group["rules"] if "alert" in rule}
    assert 'resource_type="aws.amazon.com/neuron"' in alerts["NodePoolNeuronNearLimit_inf"]["expr"]
    assert 'resource_type="aws.amazon.com/neuroncore"' in alerts["NodePoolNeuronCoreNearLimit_inf"]["expr"]
    assert "NodePoolGpuNearLimit_train" in alerts


@pytest.mark.stack
def test_neuron_pods_are_judged_by_their_own_admission_policy(accelerated):
    policies = {
        r.inputs["metadata"]["name"]
        for r in accelerated.of_type("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy")
    }
    assert {"gpu-pods", "neuron-pods"} <= policies


# --------------------------------------------------------------------------------------- Neuron admission CEL


def admit(pod):
    manifests = neuron_admission_manifests(AdmissionOptions())
    pod = {**pod, "metadata": {"namespace": "team-a", **(pod.get("metadata") or {})}}
    return refusals(manifests["policy"], manifests["binding"], JudgedPod("pod", pod, {}))


def neuron_pod(
    resources, tolerations=({"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"},)
):
    return {"spec": {"tolerations": list(tolerations), "containers": [{"name": "serve", "resources": resources}]}}


def test_a_complete_neuron_pod_is_admitted_without_the_bin_packing_scheduler():
    assert (
        admit(
            neuron_pod({"limits": {"aws.amazon.com/neuroncore": "2"}, "requests": {"aws.amazon.com/neuroncore": "2"}})
        )
        == []
    )
    assert admit(neuron_pod({"limits": {"cpu": "1"}}, tolerations=())) == []  # not a Neuron pod: not checked


def test_a_neuron_pod_without_the_toleration_or_with_unequal_requests_is_denied():
    assert admit(
        neuron_pod(
            {"limits": {"aws.amazon.com/neuron": "1"}, "requests": {"aws.amazon.com/neuron": "1"}}, tolerations=()
        )
    ) == [
        (
            "Neuron nodes are tainted: add to spec.tolerations {key: aws.amazon.com/neuron, operator: Exists, "
            "effect: NoSchedule}"
        )
    ]
    (message,) = admit(
        neuron_pod({"limits": {"aws.amazon.com/neuron": "2"}, "requests": {"aws.amazon.com/neuron": "1"}})
    )
    assert message.startswith("set resources.requests and resources.limits of aws.amazon.com/neuron")


# ------------------------------------------------------------------------------- what a pool asks of its class


def test_reserved_capacity_launches_into_the_reservations_the_class_selects():
    classes = {
        "gpu-training": {"preset": "gpu-training", "capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0"}]}
    }
    config = karpenter_config(
        {
            "nodeClasses": classes,
            "nodePools": {"p": {"preset": "gpu-training", "capacityTypes": ["reserved", "on-demand"]}},
        }
    )
    assert config.node_pools["p"].capacity_types == ("reserved", "on-demand")
    assert config.warnings() == []


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        (
            {
                **EFA_POOL,
                "gpuNames": ["h200"],
                "requirements": [req("node.kubernetes.io/instance-type", "In", "p5en.48xlarge")],
            },
            "'p5en.48xlarge' has 16 network cards; node class 'efa' needs 32",
        ),
        (
            {**EFA_POOL, "requirements": [req("node.kubernetes.io/instance-type", "In", "p5.4xlarge")]},
            (
                "'p5.4xlarge' is not in the EFA table (components/karpenter/efa.py); node class 'efa' needs 32 EFA "
                "network cards"
            ),
        ),
    ],
)
def test_a_pool_on_an_efa_class_must_launch_only_types_with_that_many_network_cards(pool, message):
    assert config_problems({"nodeClasses": {"efa": EFA_CLASS}, "nodePools": {"p": pool}}) == {
        f"{P}.requirements": message
    }


def test_neuron_and_efa_taints_are_derived_once_on_the_config():
    config = karpenter_config(
        {
            "nodeClasses": {"gpu": {"preset": "gpu"}, "efa": EFA_CLASS},
            "nodePools": {"inf": NEURON_POOL, "train": EFA_POOL},
        }
    )
    assert config.neuron_taints() == (NEURON_TAINT, DEDICATED)
    assert config.efa_taints() == (GPU_TAINT,)
    assert karpenter_config({}).neuron_taints() is None
    assert karpenter_config({}).efa_taints() is None


def test_every_node_agent_tolerates_its_pools_own_taints_and_any_teams_taint():
    """The GPU operator's operands, NFD's worker and the Neuron and EFA device plugins read one toleration list: a
    taint a pool adds, or a team's pool carries, keeps none of them off its nodes (or its devices go unadvertised)."""
    from components.gpu.operator import GpuOperatorOptions, operator_values
    from components.scheduling import SYSTEM_PLACEMENT
    from components.team.pool import team_taint
    from components.tools.cluster_model.kube import Taint as NodeTaint
    from components.tools.cluster_model.kube import untolerated

    own = Taint("example.com/reserved", "ml", "NoExecute")
    gpu = operator_values(
        GpuOperatorOptions(node_image="al2023", pool_taints=(GPU_TAINT, own)), system_placement=SYSTEM_PLACEMENT
    )
    agents = {
        "operands": gpu["daemonsets"]["tolerations"],
        "nfd-worker": gpu["node-feature-discovery"]["worker"]["tolerations"],
        "neuron": neuron_values([own])["devicePlugin"]["tolerations"],
        "efa": efa_values([own])["tolerations"],
    }
    for agent, tolerations in agents.items():
        for taint in (own, team_taint("vision"), team_taint("nlp")):
            node_taint = NodeTaint(taint.key, taint.value, taint.effect)
            assert not untolerated(tolerations, [node_taint]), (agent, taint)


def test_a_platform_neuron_pool_is_named_as_usable_by_no_team():
    """Teams' namespaces are capped at no Neuron device on the platform's pools: the preview says so of such a pool,
    rather than leave a user to find that no team's pod lands there."""
    config = karpenter_config({"nodeClasses": {"gpu": {"preset": "gpu"}}, "nodePools": {"inf": NEURON_POOL}})
    assert config.warnings() == [("karpenter.nodePools.inf", NEURON_OUTSIDE_SHARES)]
    assert karpenter_config({}).warnings() == []
