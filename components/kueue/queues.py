"""A team's GPU share as Kueue objects (pure): the one place a team's queue and quota are derived from its config,
used by the platform's Kubeflow teams and by team stacks alike.

A team's share has three numbers: its nominal quota (the GPUs it is guaranteed, `gpuQuota` / `quota.gpus`), how
many more it may borrow from idle teams of the cohort (`gpuBorrowingLimit`), and their sum, the ceiling its
namespace's ResourceQuota holds (`requests.nvidia.com/gpu`). Kueue admits within the ceiling; the ResourceQuota
refuses anything past it, queued or not. Kueue counts quota per ResourceFlavor only, so the platform's GPU pools are
one flavor (`shared_flavor`), and a team stack's own pool a second one that takes part of the same share
(`flavor_quotas`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..scheduling import (
    GPU_RESOURCE,
    GPU_SHARE_LABEL,
    GPU_SHARE_PLATFORM,
    NEURON_CORE_RESOURCE,
    NEURON_RESOURCE,
    NEURON_RESOURCES,
    WORKLOAD_LABEL,
)

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


def neuron_ceilings(own_pool_limits: Mapping[str, int] | None = None) -> dict[str, str]:
    """The ResourceQuota entries that cap a team namespace's Neuron devices and cores (`requests.<resource>`).

    Neuron is in no team's Kueue share: the teams' shares are NVIDIA GPUs and Kueue leaves Neuron to the quota
    (`values.EXCLUDED_RESOURCE_PREFIXES`), so the quota is the whole of a team's Neuron share: a Kubeflow team's
    `neuronQuota` devices on the platform's Neuron pools (whose sum the preview keeps within the pools' device
    limits, so no team's share waits on another's), a team stack's own Neuron pool, and none otherwise (first
    come, first served would let one team take them all). The quota allows the devices given, by the resource the
    pool is capped on (`aws.amazon.com/neurondevice`, the older name for devices, as much as devices); cores only
    when given."""
    limits = dict(own_pool_limits or {})
    devices = limits.get(NEURON_RESOURCE, 0)
    amounts = {NEURON_RESOURCE: devices, NEURON_CORE_RESOURCE: limits.get(NEURON_CORE_RESOURCE, 0)}
    return {f"requests.{resource}": str(amounts.get(resource, devices)) for resource in NEURON_RESOURCES}


#: The one ResourceFlavor of the platform's GPU pools, which every team's ClusterQueue shares.
SHARED_FLAVOR = "platform-gpus"


@dataclass(frozen=True)
class Flavor:
    """A ResourceFlavor: nodes Kueue counts GPUs on, and at most how many GPUs they run."""

    name: str
    node_labels: Mapping[str, str]
    gpus: int
    #: Taints of the pool a pod must tolerate for Kueue to give it this flavor (a team pool's team taint). The GPU
    #: taint is not among them: the GPU admission policy refuses a GPU pod without its toleration, so every GPU pod
    #: carries it already.
    node_taints: tuple[Mapping[str, str], ...] = ()


def shared_flavor(gpu_limits: Iterable[int]) -> Flavor:
    """The platform's GPU pools (their GPU limits) as one flavor.

    Kueue bounds a ClusterQueue per flavor only (nominalQuota + borrowingLimit of each flavor; the pinned
    ClusterQueue CRD has no limit across flavors), so a flavor per pool would admit a team its share on every pool
    at once, past the ceiling its ResourceQuota then refuses. One flavor holds what Kueue admits for a team to
    its share whichever pool its pods land on. Its one node label is `GPU_SHARE_LABEL`, which every shared pool
    carries and no team pool does: a team stack's pods tolerate its own pool's taint, and without the label what Kueue
    admits here could run on the team's own pool, holding shared quota for capacity it does not use. Among the shared
    pools the pods' own selector (the `eksml.io/workload` label), the GPU admission policy and Karpenter's pool
    weights choose, as they do without Kueue. Its GPUs are the pools' GPU limits together."""
    total = sum(gpu_limits)
    if total <= 0:
        raise ValueError("the shared GPU flavor needs at least one GPU pool with a GPU limit")
    return Flavor(SHARED_FLAVOR, {GPU_SHARE_LABEL: GPU_SHARE_PLATFORM}, total)


def pool_flavor(
    name: str, labels: Mapping[str, str], gpu_limit: int, node_taints: Sequence[Mapping[str, str]] = ()
) -> Flavor:
    """The flavor of one GPU pool `name` (a team stack's own pool): Kueue adds its labels as a node selector to what
    it admits there. The pool's workload label is among them, so a pod that selects another workload is not given
    it (Kueue skips flavors whose labels contradict a pod's selector)."""
    node_labels = {NODEPOOL_LABEL: name}
    if WORKLOAD_LABEL in labels:
        node_labels[WORKLOAD_LABEL] = labels[WORKLOAD_LABEL]
    return Flavor(name, node_labels, gpu_limit, tuple(dict(t) for t in node_taints))


def resource_flavor(flavor: Flavor) -> Manifest:
    spec: dict[str, Any] = {}
    if flavor.node_labels:
        spec["nodeLabels"] = dict(sorted(flavor.node_labels.items()))
    if flavor.node_taints:
        spec["nodeTaints"] = [dict(t) for t in flavor.node_taints]
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor.name}, "spec": spec}


def cluster_queue_name(team: str) -> str:
    return f"team-{team}"


def flavor_quotas(share: GpuShare, shared: Flavor, own: Flavor | None = None) -> list[tuple[Flavor, int, int]]:
    """(flavor, nominal quota, borrowing limit) of each flavor of the team's ClusterQueue, in the order Kueue tries
    them. Together they never pass the share's ceiling, since Kueue adds up nothing across flavors:

    - the team's own pool (a team stack's, tainted for it) first: as much of the nominal quota as the pool runs, and
      nothing to borrow (no other team's queue lists it, so there is nothing to borrow there);
    - the platform's shared pools: the rest of the nominal quota, and the whole borrowing limit, each no more than
      the pools run.

    So a team with a pool of its own holds its share across both, and claims on the shared pools only the part its
    own pool does not cover: the cohort's guarantees on the shared pools stay within what they run."""
    own_nominal = min(share.nominal, own.gpus) if own is not None else 0
    quotas = [(own, own_nominal, 0)] if own is not None else []
    quotas.append((shared, min(share.nominal - own_nominal, shared.gpus), min(share.borrowing_limit, shared.gpus)))
    return quotas


def cluster_queue(
    team: str, share: GpuShare, shared: Flavor, *, own: Flavor | None = None, cohort: str = COHORT
) -> Manifest:
    """The team's ClusterQueue in the cohort, with the quotas of `flavor_quotas`: Kueue admits no more than the
    share's ceiling, which the namespace's ResourceQuota holds too.

    Preemption: a team below its nominal quota reclaims it from teams that borrowed (`reclaimWithinCohort: Any`),
    and within a team a higher-priority workload may preempt a lower one (`withinClusterQueue: LowerPriority`)."""

    def quota(flavor: Flavor, nominal: int, borrowing_limit: int) -> dict[str, Any]:
        resource = {"name": GPU_RESOURCE, "nominalQuota": nominal, "borrowingLimit": borrowing_limit}
        return {"name": flavor.name, "resources": [resource]}

    flavors = [quota(*entry) for entry in flavor_quotas(share, shared, own)]
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": cluster_queue_name(team)},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team}},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{"coveredResources": [GPU_RESOURCE], "flavors": flavors}],
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
    team: str, share: GpuShare, shared: Flavor, *, own: Flavor | None = None, cohort: str = COHORT
) -> tuple[Manifest, Manifest]:
    """The team's ClusterQueue and the LocalQueue in its namespace that points at it."""
    return cluster_queue(team, share, shared, own=own, cohort=cohort), local_queue(team)


def idle_gpus(shared: Flavor, nominal_quotas: Iterable[int], reserved: int) -> int:
    """The shared pools' GPUs no team is guaranteed: the pools' GPUs less every nominal quota on them (the platform's
    teams' and `reserved`, what team stacks may claim), never below none (the config checks refuse that)."""
    return max(shared.gpus - sum(nominal_quotas) - reserved, 0)


def cohort(shared: Flavor, idle: int, *, name: str = COHORT) -> Manifest:
    """The cohort as an object of its own, holding the shared pools' `idle` GPUs as nominal quota of its own.

    Kueue lends a cohort's own nominal quota to its ClusterQueues as "a shared pool ... on top of those defined by
    ClusterQueues within the Cohort" (the pinned Cohort CRD, kueue 0.19.2 `kueue.x-k8s.io/v1beta2`,
    spec.resourceGroups). ClusterQueues borrow only unused nominal quota (ClusterQueue CRD, borrowingLimit); without
    this a lone team, whose nominal quota is the cohort's only one, could borrow nothing and stopped at its quota
    whatever its ceiling and the pools. No queue's namespace selects the cohort, so nothing is admitted against it
    directly and nothing reclaims it: a team borrowing it is preempted only by a team reclaiming its own quota."""
    resource = {"name": GPU_RESOURCE, "nominalQuota": idle}
    return {
        "apiVersion": API_VERSION,
        "kind": "Cohort",
        "metadata": {"name": name},
        "spec": {
            "resourceGroups": [
                {"coveredResources": [GPU_RESOURCE], "flavors": [{"name": shared.name, "resources": [resource]}]}
            ]
        },
    }


def offered(shared: Flavor, team_stack_gpus: int, team_stacks: Mapping[str, int]) -> dict[str, Any]:
    """How the platform exports its queueing to team stacks (the `kueue` output): the cohort and the shared flavor
    a team stack's ClusterQueue joins them with; `teamStackGpus`, the GPUs of the shared pools the platform keeps
    for team stacks' nominal quotas (`kueue.teamStackGpus`), which every team stack's guarantee there comes out of;
    and `teamStacks`, that reserve split by team stack (`kueue.teamStacks`; empty: not split)."""
    return {
        "cohort": COHORT,
        "flavor": {"name": shared.name, "nodeLabels": dict(shared.node_labels), "gpus": shared.gpus},
        "teamStackGpus": team_stack_gpus,
        "teamStacks": dict(sorted(team_stacks.items())),
    }
