"""Where pods can run, and how a broken rule is reported: what every rule of the model shares."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

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
    for resource in sorted(workload.extended):
        if resource.startswith("nvidia.com/") and "nvidia" not in node.accelerators:
            return f"asks for {resource}, which its instances do not have"
        if resource.startswith("aws.amazon.com/neuron") and "neuron" not in node.accelerators:
            return f"asks for {resource}, which its instances do not have"
    return None


def lands_on(workload: Workload, nodes: Iterable[NodeKind]) -> list[NodeKind]:
    return [n for n in nodes if why_not(workload, n) is None]
