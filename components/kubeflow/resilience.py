"""Kubeflow's control plane through node loss and Karpenter's consolidation (pure).

Upstream runs the workloads that gate other pods' creation (fail-closed webhooks, istiod, the gateway, Dex,
oauth2-proxy; listed in `components.control_plane`) as one replica with no PodDisruptionBudget, and the platform
schedules them on the CPU pool, which mixes spot and consolidates after a minute. While one is away, pods in team
namespaces are refused and nobody signs in. Here each runs at least two replicas on on-demand nodes Karpenter does
not voluntarily disrupt, under a budget that lets a drain take one at a time, spread by required constraints (a
preference gives way whenever one node or one zone has room, and losing that node or zone then takes every replica):
never two on one node (required pod anti-affinity on `kubernetes.io/hostname`), and over at least two zones (a
topology spread constraint on `topology.kubernetes.io/zone` with `whenUnsatisfiable: DoNotSchedule` and
`minDomains: 2`, so the scheduler waits for a node in a second zone instead of filling the zones it already sees:
Kubernetes docs, Pod Topology Spread Constraints; Karpenter launches into the missing zone: kubernetes-sigs/karpenter
#330, and the Karpenter FAQ on minDomains). The VPC always has two zones or more (`network.availabilityZones`), and
Karpenter adds the nodes the replicas need. Every one of them elects a leader or serves statelessly (jobset and
trainer configure `leaderElection.leaderElect: true`, pvcviewer runs `--leader-elect`; oauth2-proxy keeps its
sessions in the cookie), so a second replica does no work twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..control_plane import blocking_deployments
from .objects import Manifest, key
from .staging import Item
from .transform import CAPACITY_TYPE, DO_NOT_DISRUPT, clone

MIN_REPLICAS = 2
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _autoscalers(objects: Iterable[Manifest]) -> dict[tuple[str, str], Manifest]:
    return {
        (o["metadata"].get("namespace", ""), o["spec"]["scaleTargetRef"]["name"]): o
        for o in objects
        if o["kind"] == "HorizontalPodAutoscaler"
    }


def _spread(template: dict[str, Any], labels: dict[str, str]) -> None:
    """Required: one replica per node, and replicas over `MIN_REPLICAS` zones or more. A preferred
    anti-affinity on the same key is dropped: the required term says more."""
    spec = template["spec"]
    anti = spec.setdefault("affinity", {}).setdefault("podAntiAffinity", {})
    preferred = [
        t
        for t in anti.pop("preferredDuringSchedulingIgnoredDuringExecution", [])
        if t["podAffinityTerm"].get("topologyKey") != HOSTNAME
    ]
    if preferred:
        anti["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    anti.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(
        {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": labels}}
    )
    spec["topologySpreadConstraints"] = [
        c for c in spec.get("topologySpreadConstraints") or () if c.get("topologyKey") != ZONE
    ] + [
        {
            "maxSkew": 1,
            "minDomains": MIN_REPLICAS,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": labels},
        }
    ]


#: Controllers that gate no pod but stop Pipelines or the profiles while away, by (namespace, Deployment), with why
#: each runs as it does. Replicated ones are hardened like the gates (two spread replicas, a budget, on-demand).
REPLICATED: Mapping[tuple[str, str], str] = {
    # The profile controller (`manager`, `--leader-elect` in the pinned profile-controller manifests) and KFAM
    # (`access-management`, which answers from the cluster's RoleBindings and keeps no state).
    ("kubeflow", "profiles-deployment"): "the profile controller elects a leader and KFAM is stateless",
}
#: Single-instance ones stay at one replica, on on-demand nodes Karpenter does not voluntarily disrupt: a spot reclaim
#: stops every run for minutes, and neither is known to run safely twice.
SINGLE: Mapping[tuple[str, str], str] = {
    # Argo: "a single replica of the Workflow Controller is recommended for most use cases", a standby winning the
    # leader election (on by default: LEADER_ELECTION_DISABLE false) being slower than a restart
    # (argo-workflows v3.7.3 docs/high-availability.md, docs/environment-variables.md).
    ("kubeflow", "workflow-controller"): "Argo recommends one replica",
    # KFP 2.16.1's API server elects no leader and runs start-up work in each replica (samples, recurring runs'
    # reconciliation: backend/src/apiserver/main.go), and upstream documents no multi-replica setup.
    ("kubeflow", "ml-pipeline"): "the Pipelines API server elects no leader",
}


def _ident(obj: Manifest) -> tuple[str, str]:
    return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _replicated(objects: Iterable[Manifest]) -> list[Manifest]:
    """The blocking Deployments and the `REPLICATED` ones among the objects."""
    objects = list(objects)
    blocking = {key(obj) for obj, _ in blocking_deployments(objects)}
    found = [o for o in objects if key(o) in blocking]
    chosen = {key(o) for o in found}
    return found + [
        o for o in objects if o["kind"] == "Deployment" and _ident(o) in REPLICATED and key(o) not in chosen
    ]


def _on_demand(template: dict[str, Any]) -> None:
    template.setdefault("spec", {}).setdefault("nodeSelector", {})[CAPACITY_TYPE] = "on-demand"
    template.setdefault("metadata", {}).setdefault("annotations", {})[DO_NOT_DISRUPT] = "true"


def harden(objects: list[Manifest]) -> list[Manifest]:
    """The same objects, with the blocking and `REPLICATED` Deployments (and their autoscalers) hardened, and the
    `SINGLE` ones on on-demand nodes."""
    blocking = {key(obj) for obj in _replicated(objects)}
    autoscaled = _autoscalers(objects)
    hardened = []
    for obj in objects:
        if obj["kind"] == "Deployment" and _ident(obj) in SINGLE and key(obj) not in blocking:
            obj = clone(obj)
            _on_demand(obj["spec"]["template"])
        elif key(obj) in blocking:
            obj = clone(obj)
            namespace = obj["metadata"].get("namespace", "")
            if (namespace, obj["metadata"]["name"]) not in autoscaled:
                obj["spec"]["replicas"] = max(int(obj["spec"].get("replicas", 1)), MIN_REPLICAS)
            template = obj["spec"]["template"]
            _on_demand(template)
            _spread(template, dict(obj["spec"]["selector"]["matchLabels"]))
        elif obj["kind"] == "HorizontalPodAutoscaler" and any(
            key(d) in blocking
            for d in objects
            if d["kind"] == "Deployment"
            and d["metadata"]["name"] == obj["spec"]["scaleTargetRef"]["name"]
            and d["metadata"].get("namespace") == obj["metadata"].get("namespace")
        ):
            obj = clone(obj)
            obj["spec"]["minReplicas"] = max(int(obj["spec"].get("minReplicas", 1)), MIN_REPLICAS)
            obj["spec"]["maxReplicas"] = max(int(obj["spec"]["maxReplicas"]), obj["spec"]["minReplicas"])
        hardened.append(obj)
    return hardened


def budgets(items: list[Item]) -> list[Item]:
    """A PodDisruptionBudget for each blocking and `REPLICATED` Deployment, in the same part: a drain evicts one
    replica at a time."""
    found = []
    existing = {key(item.manifest)[2:] for item in items if item.manifest["kind"] == "PodDisruptionBudget"}
    for deployment in _replicated([item.manifest for item in items]):
        if key(deployment)[2:] in existing:
            continue
        part = next(item.part for item in items if item.manifest is deployment)
        budget = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": deployment["metadata"]["name"], "namespace": deployment["metadata"]["namespace"]},
            "spec": {
                "maxUnavailable": 1,
                "selector": {"matchLabels": dict(deployment["spec"]["selector"]["matchLabels"])},
            },
        }
        found.append(Item(budget, part))
    return found
