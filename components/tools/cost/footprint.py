"""The platform's own footprint on Karpenter's pools: what its always-on pods (Kubeflow, Istio, the pipelines' store,
...) make Karpenter launch with no workload at all, and the volumes they claim.

Read from the model of the running platform (`components.tools.cluster_model`: every pod with its requests, rendered
from the stack's objects and each Helm release), so the figures are what the cluster would ask for:

- a Deployment, StatefulSet or ReplicaSet whose pods can run on the system node group counts there (already paid);
  one that can run only on Karpenter pools goes to the one Karpenter tries first (highest weight, then name);
  Jobs and bare Pods run to completion and are not idle load;
- a pool's pods are bin-packed (first fit, largest first) onto nodes of each instance type the pool allows that every
  one of them can run on, less what the DaemonSets that land there ask on each node and what the node keeps for
  itself (`allocatable`); the cheapest way is counted, at the spot price where the pool allows spot and the table
  has one, else on-demand;
- PersistentVolumeClaims and StatefulSet volume claim templates of a gp3 class (or of none, gp3 being the default)
  count as gp3 storage. Prometheus' own volume is counted from the config.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from ...karpenter.specs import NodePoolSpec
from ...team.quantity import parse_quantity
from ..cluster_model.nodes import NodeKind
from ..cluster_model.platform import Platform
from ..cluster_model.rules import lands_on, with_operator_labels
from ..cluster_model.workloads import Workload
from ..preflight.selection import select
from .cpu_types import CpuType

#: What Karpenter holds back on each node (karpenter-provider-aws pkg/providers/instancetype/types.go): kube-reserved
#: CPU of 6 % of the first core, 1 % of the second, 0.5 % of the next two and 0.25 % of the rest; kube-reserved memory
#: of 11 MiB per pod + 255 MiB (110 pods assumed, the kubelet's default maximum: the most that can be held back); the
#: 100 MiB eviction threshold; and 7.5 % of memory the hypervisor keeps (VM_MEMORY_OVERHEAD_PERCENT's default).
MAX_PODS = 110
VM_MEMORY_OVERHEAD = Decimal("0.075")
_MIB = Decimal(2**20)
_GIB = Decimal(2**30)
_IDLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")


def reserved_cpu(vcpus: int) -> Decimal:
    steps = ((1, Decimal("0.06")), (1, Decimal("0.01")), (2, Decimal("0.005")))
    reserved, left = Decimal(0), vcpus
    for cores, share in steps:
        used = min(cores, left)
        reserved, left = reserved + used * share, left - used
    return reserved + left * Decimal("0.0025")


def capacity_memory(cpu_type: CpuType) -> Decimal:
    """The bytes of memory Karpenter counts for a node of this type (against a pool's `memory` limit too): the type's
    memory less the hypervisor's share."""
    return cpu_type.memory_gib * _GIB * (1 - VM_MEMORY_OVERHEAD)


def allocatable(cpu_type: CpuType) -> tuple[Decimal, Decimal]:
    """(cores, bytes) a node of this type offers pods."""
    memory = capacity_memory(cpu_type) - (11 * MAX_PODS + 255 + 100) * _MIB
    return cpu_type.vcpus - reserved_cpu(cpu_type.vcpus), memory


@dataclass(frozen=True)
class PoolLoad:
    """The platform's always-on pods that only a Karpenter pool can run, and how they are cheapest run there."""

    pool: str
    pods: tuple[str, ...]  # "namespace/name" once per replica
    cpu: Decimal
    memory: Decimal  # bytes
    #: (instance type, nodes, $/hour each, capacity type), None when no allowed type holds them.
    fill: tuple[str, int, Decimal, str] | None
    why_unpriced: str = ""


@dataclass(frozen=True)
class Footprint:
    loads: tuple[PoolLoad, ...]
    #: gp3 volumes: ("namespace/name", GiB).
    volumes: tuple[tuple[str, Decimal], ...]
    #: Helm releases the model could not render: their pods are not counted.
    unrendered: tuple[str, ...]


def _cpu(workload: Workload) -> Decimal:
    return workload.requests.get("cpu", Decimal(0))


def _memory(workload: Workload) -> Decimal:
    return workload.requests.get("memory", Decimal(0))


def _pack(pods: Sequence[Workload], room: tuple[Decimal, Decimal]) -> int | None:
    """Nodes of `room` (cores, bytes) first-fit-decreasing needs for `pods`; None when one pod fits on none."""
    nodes: list[list[Decimal]] = []
    for pod in sorted(pods, key=lambda w: (_cpu(w), _memory(w)), reverse=True):
        if _cpu(pod) > room[0] or _memory(pod) > room[1]:
            return None
        for node in nodes:
            if node[0] >= _cpu(pod) and node[1] >= _memory(pod):
                node[0] -= _cpu(pod)
                node[1] -= _memory(pod)
                break
        else:
            nodes.append([room[0] - _cpu(pod), room[1] - _memory(pod)])
    return len(nodes)


def _gp3_classes(platform: Platform) -> frozenset[str]:
    return frozenset(
        sc["metadata"]["name"]
        for sc in platform.of_kind("StorageClass")
        if (sc.get("parameters") or {}).get("type") == "gp3"
    )


def _claim_gib(claim: Mapping[str, object], gp3: frozenset[str]) -> Decimal | None:
    spec = claim.get("spec") or {}
    assert isinstance(spec, Mapping)
    storage_class = spec.get("storageClassName")
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    if storage is None or spec.get("volumeName") or not (storage_class is None or storage_class in gp3):
        return None  # statically bound (FSx) or another kind of storage
    return parse_quantity(storage) / _GIB


def volumes(platform: Platform) -> list[tuple[str, Decimal]]:
    gp3 = _gp3_classes(platform)
    found = []
    for _, obj in platform.objects:
        meta = obj.get("metadata") or {}
        where = f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"
        if obj.get("kind") == "PersistentVolumeClaim" and (gib := _claim_gib(obj, gp3)) is not None:
            found.append((where, gib))
        elif obj.get("kind") == "StatefulSet":
            replicas = int((obj.get("spec") or {}).get("replicas", 1))
            for template in (obj.get("spec") or {}).get("volumeClaimTemplates") or ():
                if (gib := _claim_gib(template, gp3)) is not None:
                    found.append((f"{where} {template['metadata']['name']} × {replicas}", gib * replicas))
    return found


def footprint(
    platform: Platform,
    pools: Mapping[str, NodePoolSpec],
    catalog: Sequence[CpuType],
    price: Mapping[str, Mapping[str, Decimal]],
) -> Footprint:
    """The platform's load on each pool of `pools`, priced from `price` ({"on-demand": {type: $/h}, "spot": ...})."""
    nodes = with_operator_labels(platform)
    pool_nodes = {n.name.removeprefix("NodePool "): n for n in nodes if n.karpenter}
    order = sorted((name for name in pool_nodes if name in pools), key=lambda name: (-(pools[name].weight or 0), name))
    pods: dict[str, list[Workload]] = {}
    daemons: dict[str, list[Workload]] = {}
    for workload in platform.workloads:
        kinds = lands_on(workload, nodes)
        karpenter = [n.name.removeprefix("NodePool ") for n in kinds if n.karpenter]
        if workload.is_daemon:
            for name in karpenter:
                daemons.setdefault(name, []).append(workload)
        elif workload.kind in _IDLE_KINDS and karpenter and len(karpenter) == len(kinds):
            first = next((name for name in order if name in karpenter), None)
            if first is not None:
                pods.setdefault(first, []).extend([workload] * (workload.replicas or 0))
    loads = []
    for name in order:
        if not pods.get(name):
            continue
        loads.append(_load(name, pods[name], daemons.get(name, []), pools[name], pool_nodes[name], catalog, price))
    return Footprint(tuple(loads), tuple(volumes(platform)), tuple(sorted(platform.unrendered)))


def _load(
    name: str,
    pods: list[Workload],
    daemons: list[Workload],
    pool: NodePoolSpec,
    node: NodeKind,
    catalog: Sequence[CpuType],
    price: Mapping[str, Mapping[str, Decimal]],
) -> PoolLoad:
    selection = select(pool)
    capacity = "spot" if "spot" in selection.capacity_types and price.get("spot") else "on-demand"
    best: tuple[Decimal, int, str, Decimal] | None = None
    for cpu_type in catalog:
        shape = cpu_type.shape
        if not selection.admits(shape):
            continue
        hourly = price.get(capacity, {}).get(shape.instance_type) or price.get("on-demand", {}).get(shape.instance_type)
        if hourly is None:
            continue
        typed = node.with_labels(
            {
                "kubernetes.io/arch": frozenset({shape.architecture}),
                "node.kubernetes.io/instance-type": frozenset({shape.instance_type}),
            }
        )
        if any(not lands_on(pod, [typed]) for pod in pods):
            continue
        cores, memory = allocatable(cpu_type)
        on_node = [d for d in daemons if lands_on(d, [typed])]
        room = (cores - sum(map(_cpu, on_node), Decimal(0)), memory - sum(map(_memory, on_node), Decimal(0)))
        count = _pack(pods, room)
        # The cheapest; at the same price, fewer nodes (fewer DaemonSet copies, less to drain).
        if count is not None and (best is None or (count * hourly, count, shape.instance_type) < best[:3]):
            best = (count * hourly, count, shape.instance_type, hourly)
    refs = tuple(f"{pod.namespace}/{pod.name}" for pod in pods)
    cpu, memory = sum(map(_cpu, pods), Decimal(0)), sum(map(_memory, pods), Decimal(0))
    if best is None:
        return PoolLoad(name, refs, cpu, memory, None, "no priced instance type the pool allows holds these pods")
    return PoolLoad(name, refs, cpu, memory, (best[2], best[1], best[3], capacity))
