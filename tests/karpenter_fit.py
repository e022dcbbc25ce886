"""Where Karpenter would put a pending pod, offline: the rendered NodePools against the pod's tolerations, node
selector, required node affinity and resource requests, over EC2's instance catalogue (moto's copy of
DescribeInstanceTypes).

As Karpenter's scheduler does (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling): pools in weight
order (highest first, then by name); a pool is a candidate when the pod tolerates every taint of its template
(startup taints are expected to go away and are ignored), when each of the pod's node requirements is met by a label
the pool sets or is compatible with its requirements (a label that is neither the pool's nor well-known cannot be
met), and when some instance type the pool allows has room for the pod (allocatable after kube-reserved, the
eviction threshold, Karpenter's 7.5% VM memory overhead and the DaemonSets every node runs) within the pool's
limits. An extended resource counts only where a device plugin advertises it.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import moto

from components.cluster.capacity import BASE_WORKLOADS, FSX_WORKLOADS, Requests, allocatable
from components.scheduling import GPU_RESOURCE
from components.team.quantity import parse_quantity
from components.tools.preflight.selection import InstanceShape, PoolSelection, holds, shape_from_ec2

EFA_RESOURCE = "vpc.amazonaws.com/efa"
#: Karpenter's default `vmMemoryOverheadPercent`: what the hypervisor keeps of an instance's memory.
VM_MEMORY_OVERHEAD = Decimal("0.075")
CAPACITY_KEY = "karpenter.sh/capacity-type"
ZONE_KEY = "topology.kubernetes.io/zone"
#: Labels every node has whatever its pool says: requirements on them narrow instance types, zones or capacity.
WELL_KNOWN = frozenset(
    {
        CAPACITY_KEY,
        ZONE_KEY,
        "topology.kubernetes.io/region",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "node.kubernetes.io/instance-type",
        "karpenter.sh/nodepool",
    }
)
_INSTANCE_PREFIX = "karpenter.k8s.aws/"


@dataclass(frozen=True)
class Instance:
    shape: InstanceShape
    vcpus: int
    memory_mi: int
    efa: int
    max_pods: int

    def room(self, daemon_sets: Requests) -> Requests:
        memory = int(Decimal(self.memory_mi) * (1 - VM_MEMORY_OVERHEAD))
        node = allocatable(vcpus=self.vcpus, memory_mi=memory, max_pods=self.max_pods)
        return Requests(node.cpu_m - daemon_sets.cpu_m, node.memory_mi - daemon_sets.memory_mi)


@cache
def catalogue() -> tuple[Instance, ...]:
    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    instances = []
    with gzip.open(path) as catalogue_file:
        described = json.loads(catalogue_file.read())
    for info in described.values():
        network = info["NetworkInfo"]
        instances.append(
            Instance(
                shape=shape_from_ec2(info),
                vcpus=info["VCpuInfo"]["DefaultVCpus"],
                memory_mi=info["MemoryInfo"]["SizeInMiB"],
                efa=(network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0),
                # The VPC CNI without prefix delegation: ENIs x (IPs per ENI - 1) + 2.
                max_pods=network["MaximumNetworkInterfaces"] * (network["Ipv4AddressesPerInterface"] - 1) + 2,
            )
        )
    return tuple(instances)


def daemon_set_requests(*, fsx: bool) -> Requests:
    """What the DaemonSets on every Karpenter node request (the figures the system node sizing uses)."""
    total = Requests(0, 0)
    for workload in (*BASE_WORKLOADS, *(FSX_WORKLOADS if fsx else ())):
        if workload.daemon_set:
            total = total + workload.requests
    return total


def tolerates(taint: Mapping[str, str], tolerations: Sequence[Mapping[str, str]]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint["effect"]:
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration["key"] == taint["key"]:
                return True
        elif toleration.get("key") == taint["key"] and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def pod_requirements(spec: Mapping[str, Any]) -> list[list[dict[str, Any]]]:
    """The pod's node requirements as alternatives (the terms of required node affinity, OR), each a list of
    requirements (AND) that includes the nodeSelector."""
    selector = [{"key": k, "operator": "In", "values": [v]} for k, v in (spec.get("nodeSelector") or {}).items()]
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    terms = [term.get("matchExpressions") or [] for term in (affinity or {}).get("nodeSelectorTerms", [])]
    return [selector + term for term in terms] or [selector]


def pod_requests(spec: Mapping[str, Any], default_requests: Mapping[str, str] | None = None) -> dict[str, Decimal]:
    """What the pod asks a node for: the sum over its containers (a request defaults to its limit, then to the
    namespace's LimitRange), or the largest init container's if more; plus the pod itself."""

    def of(container: Mapping[str, Any]) -> dict[str, Decimal]:
        resources = container.get("resources") or {}
        requests = {**(default_requests or {}), **(resources.get("limits") or {}), **(resources.get("requests") or {})}
        return {name: parse_quantity(value) for name, value in requests.items()}

    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        for name, value in of(container).items():
            total[name] = total.get(name, Decimal(0)) + value
    for container in spec.get("initContainers") or []:
        for name, value in of(container).items():
            total[name] = max(total.get(name, Decimal(0)), value)
    total["pods"] = Decimal(1)
    return total


@dataclass(frozen=True)
class Landing:
    pool: str
    #: The instance types that fit, smallest first.
    instance_types: tuple[str, ...]
    capacity_types: tuple[str, ...]
    zones: tuple[str, ...]


class Unschedulable(AssertionError):
    """No pool can take the pod; `reasons` says why, pool by pool."""

    def __init__(self, reasons: Mapping[str, str]):
        self.reasons = dict(reasons)
        super().__init__(
            "no NodePool can take the pod:\n" + "\n".join(f"  {p}: {r}" for p, r in sorted(self.reasons.items()))
        )


def _pool_labels(pool: Mapping[str, Any]) -> dict[str, str]:
    labels = dict(pool["spec"]["template"].get("metadata", {}).get("labels") or {})
    labels["karpenter.sh/nodepool"] = pool["metadata"]["name"]
    return labels


def _fit(
    pool: Mapping[str, Any],
    spec: Mapping[str, Any],
    requests: Mapping[str, Decimal],
    *,
    zones: Sequence[str],
    daemon_sets: Requests,
    advertised: frozenset[str],
) -> Landing | str:
    """The landing on this pool, or why the pod cannot have one."""
    template = pool["spec"]["template"]["spec"]
    name = pool["metadata"]["name"]
    for taint in template.get("taints") or []:
        if not tolerates(taint, spec.get("tolerations") or []):
            return f"does not tolerate the taint {taint['key']}={taint.get('value', '')}:{taint['effect']}"
    pool_requirements = template.get("requirements") or []
    labels = _pool_labels(pool)
    pool_capacity = [
        c
        for c in ("on-demand", "spot", "reserved")
        if all(holds(r["operator"], c, r.get("values") or []) for r in pool_requirements if r["key"] == CAPACITY_KEY)
    ]
    selection = PoolSelection(requirements=tuple(pool_requirements), capacity_types=tuple(pool_capacity))
    why = "its node requirements match no label or requirement of the pool"
    for term in pod_requirements(spec):
        instances = [i for i in catalogue() if selection.admits(i.shape)]
        capacity, pool_zones, refused = list(pool_capacity), list(selection.zones(zones)), None
        for requirement in term:
            key, operator, values = requirement["key"], requirement["operator"], requirement.get("values") or []
            if key in labels:
                if not holds(operator, labels[key], values):
                    refused = f"needs {key} {operator} {values}; the pool's nodes are labelled {labels[key]!r}"
            elif key == CAPACITY_KEY:
                capacity = [c for c in capacity if holds(operator, c, values)]
            elif key == ZONE_KEY:
                pool_zones = [z for z in pool_zones if holds(operator, z, values)]
            elif key.startswith(_INSTANCE_PREFIX) or key in WELL_KNOWN:
                instances = [
                    i for i in instances if not i.shape.knows(key) or holds(operator, i.shape.label(key), values)
                ]
            else:
                refused = f"needs the label {key}, which the pool does not set and is not well-known"
            if refused:
                break
        if refused is None and not capacity:
            refused = f"needs a capacity type the pool does not launch ({pool_capacity})"
        if refused is None and not pool_zones:
            refused = "needs a zone the pool does not launch in"
        if refused is not None:
            why = refused
            continue
        fitting = [i for i in instances if _has_room(i, requests, pool, daemon_sets=daemon_sets, advertised=advertised)]
        if not fitting:
            why = (
                "no instance type the pool allows has room for "
                f"{dict(sorted((k, str(v)) for k, v in requests.items()))}"
            )
            if any(r not in {"cpu", "memory", "pods", GPU_RESOURCE} and r not in advertised for r in requests):
                why += (
                    " (no device plugin advertises "
                    f"{sorted(r for r in requests if r not in {'cpu', 'memory', 'pods', GPU_RESOURCE})})"
                )
            continue
        fitting.sort(key=lambda i: (i.vcpus, i.memory_mi, i.shape.instance_type))
        return Landing(name, tuple(i.shape.instance_type for i in fitting), tuple(capacity), tuple(pool_zones))
    return why


def _has_room(
    instance: Instance,
    requests: Mapping[str, Decimal],
    pool: Mapping[str, Any],
    *,
    daemon_sets: Requests,
    advertised: frozenset[str],
) -> bool:
    room = instance.room(daemon_sets)
    capacity: dict[str, Decimal] = {
        "cpu": Decimal(room.cpu_m) / 1000,
        "memory": Decimal(room.memory_mi) * 2**20,
        "pods": Decimal(instance.max_pods),
        GPU_RESOURCE: Decimal(instance.shape.gpu_count),
        EFA_RESOURCE: Decimal(instance.efa if EFA_RESOURCE in advertised else 0),
    }
    if any(value > capacity.get(name, Decimal(0)) for name, value in requests.items()):
        return False
    # Karpenter never launches a node that would take the pool past a limit (counted on the node's capacity).
    whole = {
        "cpu": Decimal(instance.vcpus),
        "memory": Decimal(instance.memory_mi) * 2**20,
        GPU_RESOURCE: Decimal(instance.shape.gpu_count),
    }
    return all(
        whole.get(name, Decimal(0)) <= parse_quantity(limit)
        for name, limit in (pool["spec"].get("limits") or {}).items()
    )


def place(
    spec: Mapping[str, Any],
    pools: Sequence[Mapping[str, Any]],
    *,
    zones: Sequence[str],
    fsx: bool,
    default_requests: Mapping[str, str] | None = None,
    advertised: frozenset[str] = frozenset({GPU_RESOURCE}),
) -> Landing:
    """The pool Karpenter would launch a node from for this pod spec, or Unschedulable naming each pool's reason."""
    requests = pod_requests(spec, default_requests)
    reasons: dict[str, str] = {}
    daemon_sets = daemon_set_requests(fsx=fsx)
    for pool in sorted(pools, key=lambda p: (-(p["spec"].get("weight") or 0), p["metadata"]["name"])):
        found = _fit(pool, spec, requests, zones=zones, daemon_sets=daemon_sets, advertised=advertised)
        if isinstance(found, Landing):
            return found
        reasons[pool["metadata"]["name"]] = found
    raise Unschedulable(reasons)
