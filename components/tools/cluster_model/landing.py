"""Where pods can run, and how a broken rule is reported: what every rule of the model shares."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...instances.families import accelerator_of
from .kube import affinity_matches, selector_matches, untolerated
from .nodes import NodeKind
from .workloads import Workload


@dataclass(frozen=True)
class Problem:
    rule: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


# ------------------------------------------------------------------------------------------- where pods can run


def why_not(workload: Workload, node: NodeKind) -> str | None:
    """Why the workload's pods cannot run on this kind of node, or None if they can."""
    blocking = untolerated(workload.tolerations, node.taints)
    if blocking:
        return "does not tolerate " + ", ".join(str(t) for t in blocking)
    if not selector_matches(workload.node_selector, node.labels):
        return f"nodeSelector {dict(workload.node_selector)} matches no node of it"
    if not affinity_matches(workload.affinity, node.labels):
        return "its required node affinity matches no node of it"
    needed = affinity_accelerators(workload)
    if needed is not None and not needed & node.accelerators:
        return f"its node affinity names only {' or '.join(sorted(needed))} instance types, which its instances are not"
    for resource in sorted(workload.extended):
        if resource.startswith("nvidia.com/") and "nvidia" not in node.accelerators:
            return f"asks for {resource}, which its instances do not have"
        if resource.startswith("aws.amazon.com/neuron") and "neuron" not in node.accelerators:
            return f"asks for {resource}, which its instances do not have"
    return None


#: Node labels whose `In` values name instance types or families, by how a value names its family.
_INSTANCE_KEYS = {
    "node.kubernetes.io/instance-type": lambda value: value.split(".", 1)[0],
    "karpenter.k8s.aws/instance-family": lambda value: value,
}


def affinity_accelerators(workload: Workload) -> frozenset[str] | None:
    """The accelerators a workload's required node affinity confines it to by naming only accelerated instance types
    (the DCGM host engine's list of NVIDIA types), or None when it does not. A node kind whose instance types are left
    open (a Karpenter pool) matches such a list in the label domains, but only a pool of that accelerator can launch
    one of its types."""
    found: set[str] = set()
    for term in workload.affinity:
        kinds = {
            accelerator_of(family(str(value)))
            for e in term
            if e.get("operator") == "In" and (family := _INSTANCE_KEYS.get(e.get("key", "")))
            for value in e.get("values") or ()
        }
        if not kinds or None in kinds:
            return None
        found |= {kind for kind in kinds if kind is not None}
    return frozenset(found) if found else None


def lands_on(workload: Workload, nodes: Iterable[NodeKind]) -> list[NodeKind]:
    return [n for n in nodes if why_not(workload, n) is None]
