"""Node kinds: what the nodes of each Karpenter NodePool, and of the system node group, will be like.

Read from the rendered NodePools (their template labels, taints and requirements) and from the node group's inputs,
so the facts are the ones the cluster will get.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...karpenter.validation import requirement_accelerators
from ...scheduling import EFA_LABEL
from .kube import ANY, Taint

#: Labels every Karpenter node gets whatever its pool says, with the values Karpenter chooses at launch:
#: kubernetes-sigs/karpenter pkg/apis/v1/labels.go (WellKnownLabels) and karpenter-provider-aws
#: pkg/apis/v1/labels.go (instance labels).
_KARPENTER_LABELS = (
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-memory",
)
#: The managed node group's AMI types, by the architecture they boot (EKS API, Nodegroup amiType).
_AMI_ARCH = {"x86_64": "amd64", "ARM_64": "arm64"}
#: `karpenter.sh/capacity-type` when a pool leaves it out (Karpenter's default).
_DEFAULT_CAPACITY = frozenset({"on-demand"})
#: How EKS spells a node group's taint effects in its API, and Kubernetes in the node's spec.
_EKS_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


@dataclass(frozen=True)
class NodeKind:
    """The nodes one pool or node group can bring up."""

    name: str  # "NodePool <name>" or "node group <name>"
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    labels: Mapping[str, frozenset[str] | None]
    capacity_types: frozenset[str]
    accelerators: frozenset[str]  # "nvidia", "neuron"
    efa: bool
    #: Karpenter may take its nodes away to pack pods tighter (consolidationPolicy WhenEmptyOrUnderutilized).
    consolidates_busy_nodes: bool
    karpenter: bool
    #: Karpenter drains its nodes at the end of their lifetime (`expireAfter` other than Never), whatever their pods'
    #: `karpenter.sh/do-not-disrupt` says (expiry is forceful in Karpenter v1).
    expires: bool = False

    @property
    def architectures(self) -> frozenset[str]:
        return self.labels.get("kubernetes.io/arch") or frozenset()

    def with_labels(self, extra: Mapping[str, frozenset[str] | None]) -> NodeKind:
        return replace(self, labels={**self.labels, **extra})


def _requirement_domain(requirement: Mapping[str, Any]) -> frozenset[str] | None:
    operator = requirement["operator"]
    values = frozenset(str(v) for v in requirement.get("values") or ())
    return values if operator == "In" else ANY


def from_node_pool(pool: Mapping[str, Any]) -> NodeKind:
    name = pool["metadata"]["name"]
    template = pool["spec"]["template"]
    spec = template["spec"]
    labels: dict[str, frozenset[str] | None] = dict.fromkeys(_KARPENTER_LABELS, ANY)
    labels["kubernetes.io/os"] = frozenset({"linux"})
    labels["kubernetes.io/arch"] = frozenset({"amd64"})
    labels["karpenter.sh/capacity-type"] = _DEFAULT_CAPACITY
    accelerators: set[str] = set()
    for requirement in spec.get("requirements") or ():
        key, operator = requirement["key"], requirement["operator"]
        accelerators |= requirement_accelerators(key, operator, [str(v) for v in requirement.get("values") or ()])
        if operator == "DoesNotExist":
            labels.pop(key, None)
        elif operator in ("In", "Exists"):
            labels[key] = _requirement_domain(requirement)
        elif operator == "NotIn" and labels.get(key) is not ANY:
            current = labels.get(key)
            if current is not None:
                labels[key] = current - frozenset(str(v) for v in requirement.get("values") or ())
    for key, value in ((template.get("metadata") or {}).get("labels") or {}).items():
        labels[str(key)] = frozenset({str(value)})
    labels["karpenter.sh/nodepool"] = frozenset({name})
    disruption = pool["spec"].get("disruption") or {}
    return NodeKind(
        name=f"NodePool {name}",
        taints=tuple(Taint.of(t) for t in spec.get("taints") or ()),
        startup_taints=tuple(Taint.of(t) for t in spec.get("startupTaints") or ()),
        labels=labels,
        capacity_types=labels["karpenter.sh/capacity-type"] or frozenset({"spot", "on-demand", "reserved"}),
        accelerators=frozenset(accelerators),
        efa=EFA_LABEL in labels,
        consolidates_busy_nodes=disruption.get("consolidationPolicy", "WhenEmptyOrUnderutilized")
        == "WhenEmptyOrUnderutilized",
        karpenter=True,
        # Karpenter's default lifetime when a pool leaves expireAfter out is 720h (the NodePool CRD's default).
        expires=spec.get("expireAfter", "720h") != "Never",
    )


def from_node_group(name: str, inputs: Mapping[str, Any]) -> NodeKind:
    """A managed node group, from the inputs of its `aws:eks/nodeGroup:NodeGroup` resource."""
    ami = str(inputs.get("amiType") or "AL2023_x86_64_STANDARD")
    arch = next((a for suffix, a in _AMI_ARCH.items() if suffix in ami), "amd64")
    labels: dict[str, frozenset[str] | None] = {
        "kubernetes.io/os": frozenset({"linux"}),
        "kubernetes.io/arch": frozenset({arch}),
        "node.kubernetes.io/instance-type": frozenset(inputs.get("instanceTypes") or ()) or ANY,
        "topology.kubernetes.io/zone": ANY,
        "eks.amazonaws.com/nodegroup": frozenset({name}),
    }
    labels.update({str(k): frozenset({str(v)}) for k, v in (inputs.get("labels") or {}).items()})
    taints = tuple(
        Taint(t["key"], str(t.get("value", "")), _EKS_EFFECT.get(t["effect"], t["effect"]))
        for t in inputs.get("taints") or ()
    )
    capacity = "spot" if inputs.get("capacityType") == "SPOT" else "on-demand"
    return NodeKind(
        name=f"node group {name}",
        taints=taints,
        startup_taints=(),
        labels=labels,
        capacity_types=frozenset({capacity}),
        accelerators=frozenset(),
        efa=False,
        consolidates_busy_nodes=False,
        karpenter=False,
    )


def node_kinds(node_pools: Iterable[Mapping[str, Any]], node_groups: Mapping[str, Mapping[str, Any]]) -> list[NodeKind]:
    return [*(from_node_group(n, i) for n, i in node_groups.items()), *(from_node_pool(p) for p in node_pools)]
