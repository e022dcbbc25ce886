"""What must hold for the platform to work as a whole, judged on the model (`platform.Platform`).

Each rule names both sides of a break: the workload and the node kind (or the policy, or the scheduler) it fails
against, so the message says what to change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import yaml

from ...control_plane import blocking_deployments
from .admission import (
    JudgedPod,
    bound_policies,
    documented_pods,
    invalid,
    notebook_pods,
    refusals,
    trainer_pods,
)
from .disruption import DO_NOT_DISRUPT, reachable_capacity, training_is_not_disrupted
from .flows import problems as flow_problems
from .kube import narrowed
from .landing import Problem, lands_on, why_not
from .network import Cluster
from .nodes import NodeKind
from .platform import GPU_DEPLOY_LABEL, GPU_OPERANDS, NVIDIA_PCI_LABEL, Platform
from .pod_security import refused
from .queues import every_team_can_queue, gpus_stay_within_shares, queued_work_lands, queues_stay_within_quotas
from .rbac import cluster_wide_secret_access, secret_holders
from .workloads import DEFAULT_SCHEDULER, Workload, pod_template

ARCH = "kubernetes.io/arch"


def with_operator_labels(platform: Platform) -> list[NodeKind]:
    """Node kinds as the GPU Operator leaves them: an NVIDIA node on which Node Feature Discovery's worker runs gets
    the PCI label and, from the operator, every operand's deploy label. Where the worker cannot run, nothing does."""
    workers = [w for w in platform.workloads if w.is_daemon and "node-feature-discovery" in " ".join(w.images)]
    workers = [w for w in workers if w.name.endswith("worker")]
    labelled = []
    for node in platform.nodes:
        if "nvidia" in node.accelerators and any(lands_on(w, [node]) for w in workers):
            extra: dict[str, frozenset[str] | None] = {NVIDIA_PCI_LABEL: frozenset({"true"})}
            extra.update({GPU_DEPLOY_LABEL.format(label): frozenset({"true"}) for label in GPU_OPERANDS.values()})
            node = node.with_labels(extra)
        labelled.append(node)
    return labelled


# ------------------------------------------------------------------------------------------------------- rules


def every_pod_lands(platform: Platform, nodes: list[NodeKind], **_: Any) -> list[Problem]:
    problems = []
    for workload in platform.workloads:
        if workload.is_daemon or lands_on(workload, nodes):
            continue
        reasons = "; ".join(f"{n.name}: {why_not(workload, n)}" for n in nodes)
        problems.append(Problem("lands-nowhere", f"{workload.ref} can run on no node ({reasons})"))
    return problems


def images_fit_architectures(
    platform: Platform, nodes: list[NodeKind], architectures: Callable[[str], frozenset[str]], **_: Any
) -> list[Problem]:
    problems = []
    for workload in platform.workloads:
        for node in lands_on(workload, nodes):
            possible = narrowed(node.labels, workload.node_selector, workload.affinity, ARCH) or frozenset()
            for image in workload.images:
                missing = possible - architectures(image)
                if missing:
                    problems.append(
                        Problem(
                            "architecture",
                            f"{workload.ref} can run on {node.name} as {', '.join(sorted(missing))}, "
                            f"which its image {image} is not built for",
                        )
                    )
    return problems


#: Node-level agents, by what they do and how their image names them: every node needs the first group, an
#: accelerated node the device plugin of its accelerator (and GPU nodes the DCGM exporter), a node that can get EFA
#: interfaces the EFA plugin.
EVERY_NODE = {
    "VPC CNI (aws-node)": "amazon-k8s-cni",
    "kube-proxy": "kube-proxy",
    "EBS CSI node driver": "aws-ebs-csi-driver",
    # Its node conditions are what Karpenter's node repair acts on.
    "EKS node monitoring agent": "eks-node-monitoring-agent",
}
FSX_NODE = {"FSx CSI node driver": "aws-fsx-csi-driver"}
#: Needed where Prometheus scrapes nodes (observability on); with it off, nothing reads a node exporter.
SCRAPED_NODE = {"node exporter": "node-exporter"}
PROMETHEUS_OPERATOR = "prometheus-operator"
BY_ACCELERATOR = {
    "nvidia": {"NVIDIA device plugin": "k8s-device-plugin", "DCGM exporter": "dcgm-exporter"},
    "neuron": {"Neuron device plugin": "neuron-device-plugin"},
}
EFA_NODE = {"EFA device plugin": "aws-efa-k8s-device-plugin"}


def nodes_get_their_agents(platform: Platform, nodes: list[NodeKind], **_: Any) -> list[Problem]:
    daemons = [w for w in platform.workloads if w.is_daemon]
    images = {i for w in platform.workloads for i in w.images}
    uses_fsx = any("aws-fsx-csi-driver" in i for i in images)
    scraped = any(PROMETHEUS_OPERATOR in i for i in images)
    problems = []
    for node in nodes:
        needed = dict(EVERY_NODE) | (FSX_NODE if uses_fsx else {}) | (SCRAPED_NODE if scraped else {})
        for accelerator in sorted(node.accelerators):
            needed |= BY_ACCELERATOR.get(accelerator, {})
        if node.efa or _efa_can_be_asked_on(platform, node):
            needed |= EFA_NODE
        running = [w for w in daemons if why_not(w, node) is None]
        for what, image_part in needed.items():
            if any(image_part in i for w in running for i in w.images):
                continue
            candidates = [w for w in daemons if any(image_part in i for i in w.images)]
            why = "; ".join(f"{w.ref}: {why_not(w, node)}" for w in candidates) or "nothing installs it"
            problems.append(Problem("node-agents", f"{node.name} gets no {what} ({why})"))
    return problems


def _efa_can_be_asked_on(platform: Platform, node: NodeKind) -> bool:
    """Karpenter attaches EFA interfaces to a node it launches for a pod that asks for them, on any pool."""
    return any("vpc.amazonaws.com/efa" in w.extended and why_not(w, node) is None for w in platform.workloads)


def schedulers_serve_their_pods(platform: Platform, **_: Any) -> list[Problem]:
    served = {DEFAULT_SCHEDULER} | served_schedulers(platform)
    return [
        Problem(
            "scheduler",
            f"{w.ref} asks for scheduler {w.scheduler!r}, which no scheduler of the platform serves "
            f"(served: {', '.join(sorted(served))})",
        )
        for w in platform.workloads
        if w.scheduler not in served
    ]


def served_schedulers(platform: Platform) -> set[str]:
    """Scheduler names of every KubeSchedulerConfiguration the platform ships in a ConfigMap."""
    names = set()
    for config_map in platform.of_kind("ConfigMap"):
        for text in (config_map.get("data") or {}).values():
            if "KubeSchedulerConfiguration" not in str(text):
                continue
            parsed = yaml.safe_load(text)
            names |= {p.get("schedulerName", DEFAULT_SCHEDULER) for p in parsed.get("profiles") or ()}
    return names


def control_plane_survives(platform: Platform, nodes: list[NodeKind], **_: Any) -> list[Problem]:
    """A workload whose outage blocks pod creation runs two or more replicas, under a PodDisruptionBudget, on
    on-demand nodes that Karpenter does not take away to consolidate (or with its pods marked do-not-disrupt)."""
    problems = []
    for workload, why in blocking_workloads(platform):
        replicas = _min_replicas(platform, workload)
        if replicas < 2:
            problems.append(Problem("control-plane", f"{workload.ref} ({why}) runs {replicas} replica"))
        if not _has_budget(platform, workload):
            problems.append(Problem("control-plane", f"{workload.ref} ({why}) has no PodDisruptionBudget"))
        undisruptable = workload.annotations.get(DO_NOT_DISRUPT) == "true"
        for node in lands_on(workload, nodes):
            if reachable_capacity(workload, node) - {"on-demand", "reserved"}:
                problems.append(
                    Problem("control-plane", f"{workload.ref} ({why}) can run on spot nodes of {node.name}")
                )
            elif node.consolidates_busy_nodes and not undisruptable:
                problems.append(
                    Problem(
                        "control-plane", f"{workload.ref} ({why}) can run on {node.name}, which consolidates busy nodes"
                    )
                )
    return problems


ZONE = "topology.kubernetes.io/zone"


def zone_spreads_fit(platform: Platform, nodes: list[NodeKind], **_: Any) -> list[Problem]:
    """A pod whose zone spread is required (`whenUnsatisfiable: DoNotSchedule`) with `minDomains: N` stays pending
    until nodes it may use exist in N zones: the node kinds it lands on must not be confined to fewer (a pool's
    `zones`); where a kind may launch in any of the VPC's zones (two or more), Karpenter opens the next one."""
    templates = {
        (o.get("kind"), o["metadata"].get("namespace", "default"), o["metadata"]["name"]): t
        for _, o in platform.objects
        if o.get("metadata") and (t := pod_template(o)) is not None
    }
    problems = []
    for workload in platform.workloads:
        spec = (templates.get((workload.kind, workload.namespace, workload.name)) or {}).get("spec") or {}
        for constraint in spec.get("topologySpreadConstraints") or ():
            if constraint.get("topologyKey") != ZONE or constraint.get("whenUnsatisfiable") != "DoNotSchedule":
                continue
            wanted = int(constraint.get("minDomains", 1))
            zones: set[str] = set()
            for node in lands_on(workload, nodes):
                domain = narrowed(node.labels, workload.node_selector, workload.affinity, ZONE)
                if domain is None:
                    break  # any zone of the VPC
                zones |= domain
            else:
                if len(zones) < wanted:
                    problems.append(
                        Problem(
                            "zone-spread",
                            f"{workload.ref} must spread over {wanted} zones but the nodes it may use are only in "
                            f"{sorted(zones) or 'none'}",
                        )
                    )
    return problems


def blocking_workloads(platform: Platform) -> list[tuple[Workload, str]]:
    by_name = {(w.kind, w.namespace, w.name): w for w in platform.workloads}
    return [
        (by_name[("Deployment", obj["metadata"].get("namespace", "default"), obj["metadata"]["name"])], why)
        for obj, why in blocking_deployments(obj for _, obj in platform.objects)
    ]


def _min_replicas(platform: Platform, workload: Workload) -> int:
    for hpa in platform.of_kind("HorizontalPodAutoscaler"):
        target = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        if hpa["metadata"].get("namespace") == workload.namespace and target.get("name") == workload.name:
            return int(hpa["spec"].get("minReplicas", 1))
    return workload.replicas or 0


def _has_budget(platform: Platform, workload: Workload) -> bool:
    for budget in platform.of_kind("PodDisruptionBudget"):
        if budget["metadata"].get("namespace", "default") != workload.namespace:
            continue
        match = ((budget.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        if match and all(workload.labels.get(k) == v for k, v in match.items()):
            return True
    return False


def judged_pods(platform: Platform) -> list[JudgedPod]:
    """Pods the platform's documented workflows create: a GPU TrainJob's trainer pod from every runtime, and the
    example workloads (objects read from `examples/`), each in its namespace."""
    objects = [obj for _, obj in platform.objects]
    labels = {
        o["metadata"]["name"]: dict(o["metadata"].get("labels") or {}) for o in objects if o.get("kind") == "Namespace"
    }
    examples = [obj for origin, obj in platform.objects if origin.startswith("examples/")]
    return trainer_pods(objects) + notebook_pods(objects) + documented_pods(examples, labels)


def workflows_are_admitted(platform: Platform, **_: Any) -> list[Problem]:
    """The API server's own pod validation, then the platform's own admission policies, let its documented
    workflows' pods in."""
    judged = judged_pods(platform)
    policies = bound_policies(obj for _, obj in platform.objects)
    return [
        Problem("admission", f"{pod.what} is refused by the API server's pod validation: {reason}")
        for pod in judged
        for reason in invalid(pod.pod)
    ] + [
        Problem("admission", f"{pod.what} is refused by policy {policy['metadata']['name']}: {reason}")
        for pod in judged
        for policy, binding in policies
        for reason in refusals(policy, binding, pod)
    ]


def pods_pass_their_namespaces_pod_security(platform: Platform, **_: Any) -> list[Problem]:
    """Every pod template the platform installs passes the Pod Security level its namespace enforces (a refused pod
    never starts; only an event on its ReplicaSet or DaemonSet says why)."""
    return [Problem("pod-security", reason) for reason in refused(obj for _, obj in platform.objects)]


def secrets_stay_with_their_holders(platform: Platform, **_: Any) -> list[Problem]:
    """Only the controllers whose job is in other namespaces' Secrets may touch every namespace's Secrets (each with
    its reason in `rbac.secret_holders()`): a chart upgrade or a new part that binds another account to them is
    found."""
    found = cluster_wide_secret_access(obj for _, obj in platform.objects)
    holders = secret_holders()
    return [
        Problem(
            "secret-access",
            f"{subject} may {', '.join(sorted(verbs))} the Secrets of every namespace (a ClusterRoleBinding); only "
            "the controllers listed with their reason in components/tools/cluster_model/rbac.py may",
        )
        for subject, verbs in sorted(found.items())
        if subject not in holders
    ]


#: Kinds that run for good; hook Jobs and test Pods run for seconds at install or upgrade.
_LONG_RUNNING = ("Deployment", "StatefulSet", "DaemonSet")


def system_pods(platform: Platform, nodes: list[NodeKind]) -> list[Workload]:
    """The long-running workloads the preview renders that can run on the system node group (nothing grows it, so
    each must be counted by its sizing). The EKS add-ons' pods are not rendered: their figures live in the sizing."""
    return [
        workload
        for workload in platform.workloads
        if workload.kind in _LONG_RUNNING
        and not workload.origin.startswith("eks-addon/")
        and any(not node.karpenter for node in lands_on(workload, nodes))
    ]


def system_pods_are_sized(platform: Platform, nodes: list[NodeKind], **_: Any) -> list[Problem]:
    """Every controller that can run on the system nodes requests CPU and memory and has a memory limit: an
    unrequested one is invisible to the scheduler and to the system node sizing, an unlimited one can take its
    node's memory from every controller there."""
    return [
        Problem(
            "system-sizing",
            f"{workload.ref} runs on the system nodes but {', '.join(workload.unsized)} request no CPU or memory, or "
            "set no memory limit: set them in its values and count them in components/cluster/capacity.py",
        )
        for workload in system_pods(platform, nodes)
        if workload.unsized
    ]


def network_paths_hold(platform: Platform, **_: Any) -> list[Problem]:
    """Every flow of the catalogue holds under the NetworkPolicies and Istio's policies: the promised ones open
    (webhooks, scrapes, DNS, Kubeflow's paths, AWS credentials), Prometheus and Alertmanager closed to team
    namespaces, and every namespace denying by default (`flows.problems`)."""
    objects: list[Mapping[str, Any]] = [obj for _, obj in platform.objects]
    cluster = Cluster(objects, platform.workloads, platform.vpc, platform.pod_identity)
    return [Problem("network-policy", message) for message in flow_problems(cluster)]


RULES: tuple[Callable[..., list[Problem]], ...] = (
    every_pod_lands,
    images_fit_architectures,
    nodes_get_their_agents,
    schedulers_serve_their_pods,
    control_plane_survives,
    zone_spreads_fit,
    workflows_are_admitted,
    pods_pass_their_namespaces_pod_security,
    secrets_stay_with_their_holders,
    system_pods_are_sized,
    network_paths_hold,
    every_team_can_queue,
    gpus_stay_within_shares,
    queued_work_lands,
    queues_stay_within_quotas,
    training_is_not_disrupted,
)


def check(platform: Platform, architectures: Callable[[str], frozenset[str]]) -> list[Problem]:
    """Every rule the platform breaks. Node agents are judged only when every Helm release was rendered: most of them
    come from releases (node exporter, FSx CSI node driver, the GPU Operator's operands), so an unrendered one would
    read as a missing agent."""
    nodes = with_operator_labels(platform)
    rules = RULES if not platform.unrendered else tuple(r for r in RULES if r is not nodes_get_their_agents)
    found: list[Problem] = []
    for rule in rules:
        found += rule(platform=platform, nodes=nodes, architectures=architectures)
    return found
