"""The box's nodes, made from the stack's own objects: one node per member of each managed node group, and one per
Karpenter NodePool, shaped like the instance Karpenter would launch for it.

Each node carries what the real one would: the node group's or NodePool template's labels and taints, the labels
Karpenter or EKS put on every node (instance type, zone, capacity type, architecture, instance family and size, GPU
name and count), and capacity in CPU, memory, pods and devices (`nvidia.com/gpu`, Neuron devices and cores, EFA).
Allocatable is capacity less what the EKS AMI reserves (components.cluster.capacity.allocatable), so the real
scheduler packs system pods as tightly as the real nodes allow. Startup taints are left off: they are removed by
node agents (the CSI drivers) kwok does not run. The instance catalogue is moto's copy of EC2
DescribeInstanceTypes, the same one the placement tests read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from components.cluster.capacity import allocatable
from components.scheduling import EFA_LABEL, GPU_RESOURCE
from components.team.quantity import parse_quantity
from components.tools.preflight.selection import PoolSelection, holds
from engine.cluster import KWOK_ANNOTATION
from engine.kube import Kube
from tests.karpenter_fit import CAPACITY_KEY, EFA_RESOURCE, VM_MEMORY_OVERHEAD, Instance, catalogue

NEURON_RESOURCE = "aws.amazon.com/neuron"
NEURON_CORE_RESOURCE = "aws.amazon.com/neuroncore"
#: Which node kind a node is, as the model names kinds ("node group system", "NodePool gpu-inference").
KIND_ANNOTATION = "engine.eksml.io/node-kind"
_EKS_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
_SHAPE_LABELS = (
    "kubernetes.io/arch",
    "node.kubernetes.io/instance-type",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-memory",
    "karpenter.k8s.aws/instance-accelerator-name",
    "karpenter.k8s.aws/instance-accelerator-manufacturer",
    "karpenter.k8s.aws/instance-accelerator-count",
)


class NoInstance(Exception):
    """A NodePool or node group whose instance types the catalogue does not hold."""


@dataclass(frozen=True)
class NodePlan:
    name: str
    kind: str
    instance: Instance
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]
    efa: bool
    #: Karpenter's nodes: the hypervisor keeps 7.5% of their memory (Karpenter's vmMemoryOverheadPercent).
    karpenter: bool

    def manifest(self) -> dict[str, Any]:
        shape = self.instance.shape
        memory_mi = self.instance.memory_mi
        if self.karpenter:
            memory_mi = int(Decimal(memory_mi) * (1 - VM_MEMORY_OVERHEAD))
        room = allocatable(vcpus=self.instance.vcpus, memory_mi=memory_mi, max_pods=self.instance.max_pods)
        capacity = {"cpu": str(self.instance.vcpus), "memory": f"{memory_mi}Mi", "pods": str(self.instance.max_pods)}
        allocatable_ = {"cpu": f"{room.cpu_m}m", "memory": f"{room.memory_mi}Mi", "pods": str(self.instance.max_pods)}
        devices = {
            GPU_RESOURCE: shape.gpu_count,
            NEURON_RESOURCE: shape.accelerator_count,
            NEURON_CORE_RESOURCE: shape.neuron_cores,
            EFA_RESOURCE: self.instance.efa if self.efa else 0,
        }
        for resource, count in devices.items():
            if count:
                capacity[resource] = allocatable_[resource] = str(count)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": {**self.labels, "kubernetes.io/hostname": self.name},
                "annotations": {KWOK_ANNOTATION: "fake", KIND_ANNOTATION: self.kind},
            },
            "spec": {"taints": [dict(t) for t in self.taints]},
            "status": {
                "capacity": capacity,
                "allocatable": allocatable_,
                "nodeInfo": {"architecture": shape.architecture, "operatingSystem": "linux", "kubeletVersion": "fake"},
            },
        }


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def _by_type() -> dict[str, Instance]:
    return {i.shape.instance_type: i for i in catalogue()}


def _shape_labels(instance: Instance) -> dict[str, str]:
    labels = {"kubernetes.io/os": "linux"}
    for key in _SHAPE_LABELS:
        value = instance.shape.label(key)
        if value is not None:
            labels[key] = value
    return labels


def node_group_nodes(name: str, inputs: Mapping[str, Any], *, zones: Sequence[str], region: str) -> list[NodePlan]:
    """The members of a managed node group at its desired size, of its first instance type."""
    types = list(inputs.get("instanceTypes") or ())
    instances = _by_type()
    if not types or types[0] not in instances:
        raise NoInstance(f"node group {name}: instance type {types[:1]} is not in the catalogue")
    instance = instances[types[0]]
    labels = {
        **_shape_labels(instance),
        "eks.amazonaws.com/nodegroup": name,
        "eks.amazonaws.com/capacityType": str(inputs.get("capacityType") or "ON_DEMAND"),
        "topology.kubernetes.io/region": region,
        **{str(k): str(v) for k, v in (inputs.get("labels") or {}).items()},
    }
    taints = tuple(
        {"key": t["key"], "value": str(t.get("value", "")), "effect": _EKS_EFFECT.get(t["effect"], t["effect"])}
        for t in inputs.get("taints") or ()
    )
    size = int((inputs.get("scalingConfig") or {}).get("desiredSize") or 1)
    return [
        NodePlan(
            name=f"{_slug(name)}-{index}",
            kind=f"node group {name}",
            instance=instance,
            labels={**labels, "topology.kubernetes.io/zone": zones[index % len(zones)]},
            taints=taints,
            efa=False,
            karpenter=False,
        )
        for index in range(size)
    ]


def _within_limits(instance: Instance, limits: Mapping[str, Any]) -> bool:
    whole = {"cpu": instance.vcpus, GPU_RESOURCE: instance.shape.gpu_count, NEURON_RESOURCE: instance.shape.devices}
    return all(int(whole.get(k, 0)) <= int(str(v)) for k, v in limits.items() if k in whole and str(v).isdigit())


def node_pool_node(
    pool: Mapping[str, Any],
    *,
    zones: Sequence[str],
    region: str,
    instance_type: str | None = None,
    capacity_type: str | None = None,
    index: int = 0,
) -> NodePlan:
    """A node of a NodePool as Karpenter would label and taint it: of `instance_type` (by default the smallest
    instance the pool allows within its limits) and `capacity_type` (by default the first the pool allows)."""
    name = pool["metadata"]["name"]
    template = pool["spec"]["template"]
    requirements = tuple(template["spec"].get("requirements") or ())
    capacity = [
        c
        for c in ("on-demand", "spot", "reserved")
        if all(holds(r["operator"], c, r.get("values") or []) for r in requirements if r["key"] == CAPACITY_KEY)
    ]
    selection = PoolSelection(requirements=requirements, capacity_types=tuple(capacity))
    limits = pool["spec"].get("limits") or {}
    allowed = [i for i in catalogue() if selection.admits(i.shape) and _within_limits(i, limits)]
    if not allowed:
        raise NoInstance(f"NodePool {name}: no instance type in the catalogue meets its requirements and limits")
    instance = min(allowed, key=lambda i: (i.vcpus, i.memory_mi, i.shape.instance_type))
    if instance_type is not None:
        instance = _by_type()[instance_type]
    pool_zones = list(selection.zones(zones)) or list(zones)
    labels = {
        **_shape_labels(instance),
        CAPACITY_KEY: capacity_type or capacity[0],
        "topology.kubernetes.io/zone": pool_zones[0],
        "topology.kubernetes.io/region": region,
        "karpenter.sh/nodepool": name,
        "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
        **{str(k): str(v) for k, v in ((template.get("metadata") or {}).get("labels") or {}).items()},
    }
    # Requirements that pin a label to one value (In [x]) label every node of the pool with it.
    for requirement in requirements:
        values = requirement.get("values") or []
        if requirement["operator"] == "In" and len(values) == 1 and requirement["key"] not in labels:
            labels[requirement["key"]] = str(values[0])
    return NodePlan(
        name=f"pool-{_slug(name)}-{index}",
        kind=f"NodePool {name}",
        instance=instance,
        labels=labels,
        taints=tuple(dict(t) for t in template["spec"].get("taints") or ()),
        efa=EFA_LABEL in labels,
        karpenter=True,
    )


def plan(
    node_pools: Iterable[Mapping[str, Any]],
    node_groups: Mapping[str, Mapping[str, Any]],
    *,
    zones: Sequence[str],
    region: str,
) -> list[NodePlan]:
    nodes = [
        n for name, inputs in node_groups.items() for n in node_group_nodes(name, inputs, zones=zones, region=region)
    ]
    return nodes + [node_pool_node(pool, zones=zones, region=region) for pool in node_pools]


def from_preview(folder: Path) -> list[NodePlan]:
    """The nodes for the stack an offline preview describes (`python -m components.preview --out <folder>`)."""
    resources = json.loads((folder / "resources.json").read_text())["resources"]
    zones = sorted({r["inputs"]["availabilityZone"] for r in resources if r["type"] == "aws:ec2/subnet:Subnet"})
    region = next(r["inputs"]["region"] for r in resources if r["type"] == "pulumi:providers:aws")
    node_groups = {r["name"]: r["inputs"] for r in resources if r["type"] == "aws:eks/nodeGroup:NodeGroup"}
    pools = [
        d
        for path in sorted((folder / "manifests").glob("*.yaml"))
        for d in yaml.safe_load_all(path.read_text())
        if d and d.get("kind") == "NodePool"
    ]
    return plan(pools, node_groups, zones=zones, region=region)


def create(kube: Kube, nodes: Sequence[NodePlan]) -> None:
    """Create the nodes and set their capacity (a node's status is its own subresource, which apply leaves alone)."""
    manifests = [n.manifest() for n in nodes]
    kube.apply([{k: v for k, v in m.items() if k != "status"} for m in manifests])
    for manifest in manifests:
        status = {"status": {k: manifest["status"][k] for k in ("capacity", "allocatable", "nodeInfo")}}
        kube.kubectl(
            "patch", "node", manifest["metadata"]["name"], "--subresource=status", "--type=merge",
            "-p", json.dumps(status),
        )  # fmt: skip


def within_pool_limits(pool: Mapping[str, Any], pool_nodes: Sequence[Mapping[str, Any]]) -> bool:
    """Whether these nodes' capacity, added up, stays within the NodePool's limits (Karpenter's rule: it launches no
    node that would take the pool past a limit)."""
    totals: dict[str, Decimal] = {}
    for node in pool_nodes:
        for resource, quantity in ((node.get("status") or {}).get("capacity") or {}).items():
            totals[resource] = totals.get(resource, Decimal(0)) + parse_quantity(str(quantity))
    return all(
        totals.get(resource, Decimal(0)) <= parse_quantity(str(limit))
        for resource, limit in (pool["spec"].get("limits") or {}).items()
    )


def create_with(api: Any, plan: NodePlan) -> None:
    """Create one node through the stand-ins' API client (engine.standins.Api), its capacity set as `create` does."""
    manifest = plan.manifest()
    api.post("/api/v1/nodes", {k: v for k, v in manifest.items() if k != "status"})
    status = {k: manifest["status"][k] for k in ("capacity", "allocatable", "nodeInfo")}
    api.patch(f"/api/v1/nodes/{plan.name}/status", {"status": status})
