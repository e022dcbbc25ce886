"""Where the box's pods run, judged against the platform model (components/tools/cluster_model): each pod the real
controllers made and the real scheduler placed must be running (a Job's: done) on a kind of node the model says
it lands on, and each workload the model expects must have its pods."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.tools.cluster_model.landing import lands_on
from components.tools.cluster_model.platform import Platform
from engine.nodes import KIND_ANNOTATION

#: Workloads the box cannot run: pods an operator makes (its operator runs no code) and the EKS add-ons' (EKS
#: runs them, not the stack).
_NOT_IN_THE_BOX = ("operator/", "eks-addon/")


@dataclass
class Judgement:
    problems: list[str] = field(default_factory=list)
    #: Workloads the model expects that have no pod in the box, and are not of the kinds it cannot run.
    absent: list[str] = field(default_factory=list)
    judged: int = 0


def owner(pod: Mapping[str, Any], replica_sets: Mapping[tuple[str, str], str]) -> tuple[str, str, str] | None:
    """The workload a pod belongs to, as the model names workloads: (kind, namespace, name)."""
    namespace = pod["metadata"]["namespace"]
    for ref in pod["metadata"].get("ownerReferences") or ():
        if ref["kind"] == "ReplicaSet":
            deployment = replica_sets.get((namespace, ref["name"]))
            return ("Deployment", namespace, deployment) if deployment else None
        if ref["kind"] in ("DaemonSet", "StatefulSet", "Job"):
            return (ref["kind"], namespace, ref["name"])
    return None


def judge(
    platform: Platform,
    pods: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, Any]],
    replica_sets: Iterable[Mapping[str, Any]],
) -> Judgement:
    expected = {(w.kind, w.namespace, w.name): w for w in platform.workloads}
    node_kind = {n["metadata"]["name"]: n["metadata"]["annotations"][KIND_ANNOTATION] for n in nodes}
    deployments = {
        (rs["metadata"]["namespace"], rs["metadata"]["name"]): ref["name"]
        for rs in replica_sets
        for ref in rs["metadata"].get("ownerReferences") or ()
        if ref["kind"] == "Deployment"
    }
    result, seen = Judgement(), set()
    for pod in pods:
        where = f"pod {pod['metadata']['namespace']}/{pod['metadata']['name']}"
        workload = owner(pod, deployments)
        if workload is None or workload not in expected:
            result.problems.append(f"{where}: belongs to {workload}, a workload the model does not know")
            continue
        seen.add(workload)
        status = pod.get("status") or {}
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ())
        if not (status.get("phase") == "Succeeded" or (status.get("phase") == "Running" and ready)):
            result.problems.append(f"{where}: {status.get('phase')}, not running and ready")
            continue
        landing = {kind.name for kind in lands_on(expected[workload], platform.nodes)}
        actual = node_kind.get(pod["spec"].get("nodeName", ""), "no node")
        if actual not in landing:
            result.problems.append(f"{where}: on a node of {actual}; the model says {sorted(landing)}")
        result.judged += 1
    # Expected: every workload but those the box cannot run, the model's sample pods (a TrainJob's, a notebook's),
    # Jobs (Helm deletes its hook Jobs once they succeed) and DaemonSets for nodes the stack does not have.
    result.absent = sorted(
        w.ref
        for ref, w in expected.items()
        if ref not in seen
        and not w.origin.startswith(_NOT_IN_THE_BOX)
        and w.kind not in ("Pod", "Job")
        and lands_on(w, platform.nodes)
    )
    return result
