"""A team's GPU share as Kueue objects (pure): the one place a team's queue and quota are derived from its config,
used by the platform's Kubeflow teams and by team stacks alike.

A team's share has three numbers: its nominal quota (the GPUs it is guaranteed, `gpuQuota` / `quota.gpus`), how
many more it may borrow from idle teams of the cohort (`gpuBorrowingLimit`), and their sum, the ceiling its
namespace's ResourceQuota holds (`requests.nvidia.com/gpu`). Kueue admits within the ceiling; the ResourceQuota
refuses anything past it, queued or not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.scheduling import GPU_RESOURCE, WORKLOAD_LABEL

Manifest = dict[str, Any]

API_VERSION = "kueue.x-k8s.io/v1beta2"
#: The cohort every team's ClusterQueue joins: unused nominal quota of one team may be borrowed by the others.
COHORT = "gpu-teams"
#: The LocalQueue in each team namespace; workloads name it with `QUEUE_LABEL`.
LOCAL_QUEUE = "gpu"
#: The label a Job, JobSet, TrainJob or pod carries to queue through Kueue (kueue.x-k8s.io/queue-name).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: Team namespaces carry this label: Kueue's webhooks and controllers act only in namespaces that have it
#: (`managedJobsNamespaceSelector`), so a Kueue outage never blocks a pod of the platform's own namespaces.
MANAGED_NAMESPACE_LABEL = "eksml.io/kueue"
MANAGED_NAMESPACE_VALUE = "managed"
#: The label Karpenter puts on every node with the name of its NodePool.
NODEPOOL_LABEL = "karpenter.sh/nodepool"


@dataclass(frozen=True)
class GpuShare:
    """A team's GPUs: `nominal` guaranteed, up to `borrowing_limit` more while others are idle."""

    nominal: int
    borrowing_limit: int

    def __post_init__(self) -> None:
        if self.nominal < 0 or self.borrowing_limit < 0:
            raise ValueError("a GPU share is never negative")

    @property
    def ceiling(self) -> int:
        """The most the team holds at once: what its namespace's ResourceQuota allows."""
        return self.nominal + self.borrowing_limit


def gpu_share(quota: int, borrowing_limit: int | None, *, queueing: bool) -> GpuShare:
    """The share of a team with `quota` GPUs; a borrowing limit left unset is the quota itself (a team at most doubles
    its share while others idle: what it may cost past its quota stays bounded, and so does what a reclaim preempts).
    Without Kueue (`queueing` false) nothing arbitrates borrowing: the share is the quota alone, and a borrowing limit
    set anyway is refused by the config checks that call this."""
    if not queueing:
        return GpuShare(quota, 0)
    return GpuShare(quota, quota if borrowing_limit is None else borrowing_limit)


@dataclass(frozen=True)
class Flavor:
    """A ResourceFlavor: the nodes of one GPU NodePool, and at most how many GPUs it runs."""

    name: str
    node_labels: Mapping[str, str]
    gpus: int
    #: Taints of the pool a pod must tolerate for Kueue to give it this flavor (a team pool's team taint). The GPU
    #: taint is not among them: the GPU admission policy adds its toleration to the pods, after Kueue admitted.
    node_taints: tuple[Mapping[str, str], ...] = ()


def pool_flavor(
    name: str, labels: Mapping[str, str], gpu_limit: int, node_taints: Sequence[Mapping[str, str]] = ()
) -> Flavor:
    """The flavor of the GPU pool `name`: Kueue adds its labels as a node selector to what it admits there. The pool's
    workload label is among them, so a pod that selects `eksml.io/workload: training` is only given training pools
    (Kueue skips flavors whose labels contradict a pod's selector)."""
    node_labels = {NODEPOOL_LABEL: name}
    if WORKLOAD_LABEL in labels:
        node_labels[WORKLOAD_LABEL] = labels[WORKLOAD_LABEL]
    return Flavor(name, node_labels, gpu_limit, tuple(dict(t) for t in node_taints))


def resource_flavor(flavor: Flavor) -> Manifest:
    spec: dict[str, Any] = {"nodeLabels": dict(sorted(flavor.node_labels.items()))}
    if flavor.node_taints:
        spec["nodeTaints"] = [dict(t) for t in flavor.node_taints]
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor.name}, "spec": spec}


def cluster_queue_name(team: str) -> str:
    return f"team-{team}"


def cluster_queue(team: str, share: GpuShare, flavors: Sequence[Flavor], *, cohort: str = COHORT) -> Manifest:
    """The team's ClusterQueue in the cohort. Per flavor (GPU pool) the team's nominal quota and borrowing limit, each
    no more than the pool runs; the namespace's ResourceQuota holds the total across pools to the share's ceiling.

    Preemption: a team below its nominal quota reclaims it from teams that borrowed (`reclaimWithinCohort: Any`),
    and within a team a higher-priority workload may preempt a lower one (`withinClusterQueue: LowerPriority`)."""
    if not flavors:
        raise ValueError(f"team {team}: a ClusterQueue needs at least one GPU flavor")

    def quota(flavor: Flavor) -> dict[str, Any]:
        resource: dict[str, Any] = {
            "name": GPU_RESOURCE,
            "nominalQuota": min(share.nominal, flavor.gpus),
            "borrowingLimit": min(share.borrowing_limit, flavor.gpus),
        }
        return {"name": flavor.name, "resources": [resource]}

    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": cluster_queue_name(team)},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team}},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{"coveredResources": [GPU_RESOURCE], "flavors": [quota(f) for f in flavors]}],
            "preemption": {
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "Never"},
                "withinClusterQueue": "LowerPriority",
            },
        },
    }


def local_queue(team: str) -> Manifest:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": LOCAL_QUEUE, "namespace": team},
        "spec": {"clusterQueue": cluster_queue_name(team)},
    }


def team_queue(
    team: str, share: GpuShare, flavors: Sequence[Flavor], *, cohort: str = COHORT
) -> tuple[Manifest, Manifest]:
    """The team's ClusterQueue and the LocalQueue in its namespace that points at it."""
    return cluster_queue(team, share, flavors, cohort=cohort), local_queue(team)


def offered(flavors: Sequence[Flavor]) -> dict[str, Any]:
    """How the platform exports its queueing to team stacks (the `kueue` output): the flavors as a list, in the order
    Kueue tries them."""
    return {
        "cohort": COHORT,
        "flavors": [{"name": f.name, "nodeLabels": dict(f.node_labels), "gpus": f.gpus} for f in flavors],
    }
