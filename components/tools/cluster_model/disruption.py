"""Training is not killed by the platform: the nodes a trainer pod or a GPU notebook can land on do not take it
away while it runs.

Karpenter takes a node away in two ways (karpenter.sh/docs/concepts/disruption/, v1.14): voluntarily
(consolidation, drift), which a pod's `karpenter.sh/do-not-disrupt: "true"` holds back, and forcefully (expiry at
`expireAfter`, spot reclaims, node repair), which nothing on the pod holds back. So:

- every trainer pod and every GPU notebook carries do-not-disrupt;
- a trainer pod, where the platform has a training pool (`eksml.io/workload: training`), can land only on nodes
  that neither expire nor are spot. A stack without one (dev) runs trainers on its other GPU pools, as
  docs/workloads.md says, and only the annotation is judged there;
- a GPU notebook may land on the inference pools the notebook form offers, spot and expiring ones included, which
  docs/kubeflow.md states: it is interactive, its workspace volume survives, and culling frees it when idle.

Node repair is left out: it replaces a node whose hardware failed, which the job has already lost.
"""

from __future__ import annotations

from typing import Any

from ...scheduling import TRAINING_WORKLOAD, WORKLOAD_LABEL
from .admission import JudgedPod, notebook_pods, trainer_pods
from .kube import narrowed
from .landing import Problem, lands_on
from .nodes import NodeKind
from .platform import Platform
from .workloads import Workload, from_pod_template

CAPACITY = "karpenter.sh/capacity-type"
#: Karpenter neither consolidates nor drifts a node running a pod with this annotation (karpenter.sh docs, Disruption).
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def reachable_capacity(workload: Workload, node: NodeKind) -> frozenset[str]:
    """The capacity types of a node kind the workload can land on: those its selector or affinity narrows to."""
    return narrowed(node.labels, workload.node_selector, workload.affinity, CAPACITY) or node.capacity_types


def _workload(judged: JudgedPod) -> Workload:
    pod = judged.pod
    return from_pod_template("judged", "Pod", pod["metadata"]["namespace"], pod["metadata"]["name"], 1, pod)


def _is_training_node(node: NodeKind) -> bool:
    return node.labels.get(WORKLOAD_LABEL) == frozenset({TRAINING_WORKLOAD})


def forceful_disruptions(workload: Workload, node: NodeKind) -> list[str]:
    """What takes the node away from under the workload, whatever the pod says: spot reclaims and expiry."""
    found = []
    if "spot" in reachable_capacity(workload, node):
        found.append("spot capacity, reclaimed with two minutes' notice")
    if node.expires:
        found.append("expireAfter, which drains a node whatever its pods say")
    return found


def _unprotected(judged: JudgedPod, workload: Workload) -> list[Problem]:
    if workload.annotations.get(DO_NOT_DISRUPT) == "true":
        return []
    return [
        Problem(
            "training-disruption",
            f"{judged.what} has no {DO_NOT_DISRUPT}: consolidation or drift can drain its node while it runs",
        )
    ]


def training_is_not_disrupted(platform: Platform, nodes: list[NodeKind], **_: Any) -> list[Problem]:
    """Trainer pods and GPU notebooks carry do-not-disrupt; where the platform has a training pool, trainer pods
    land only on nodes that neither expire nor are spot."""
    objects = [obj for _, obj in platform.objects]
    has_training_pool = any(_is_training_node(node) for node in nodes)
    problems = []
    for judged in notebook_pods(objects):
        problems += _unprotected(judged, _workload(judged))
    for judged in trainer_pods(objects):
        workload = _workload(judged)
        problems += _unprotected(judged, workload)
        if not has_training_pool:
            continue
        for node in lands_on(workload, nodes):
            problems += [
                Problem("training-disruption", f"{judged.what} can run on {node.name}, with {why}")
                for why in forceful_disruptions(workload, node)
            ]
    return problems
