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

from collections.abc import Iterable
from typing import Any

from components.control_plane import blocking_deployments

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


def harden(objects: list[Manifest]) -> list[Manifest]:
    """The same objects, with the blocking Deployments (and their autoscalers) hardened."""
    blocking = {key(obj) for obj, _ in blocking_deployments(objects)}
    autoscaled = _autoscalers(objects)
    hardened = []
    for obj in objects:
        if key(obj) in blocking:
            obj = clone(obj)
            namespace = obj["metadata"].get("namespace", "")
            if (namespace, obj["metadata"]["name"]) not in autoscaled:
                obj["spec"]["replicas"] = max(int(obj["spec"].get("replicas", 1)), MIN_REPLICAS)
            template = obj["spec"]["template"]
            template.setdefault("spec", {}).setdefault("nodeSelector", {})[CAPACITY_TYPE] = "on-demand"
            template.setdefault("metadata", {}).setdefault("annotations", {})[DO_NOT_DISRUPT] = "true"
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
    """A PodDisruptionBudget for each blocking Deployment, in the same part: a drain evicts one replica at a time."""
    found = []
    existing = {key(item.manifest)[2:] for item in items if item.manifest["kind"] == "PodDisruptionBudget"}
    for deployment, _ in blocking_deployments([item.manifest for item in items]):
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
