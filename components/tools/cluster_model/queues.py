"""Kueue's part of the model: every team namespace can queue, and what is queued still lands on a GPU pool.

Kueue admits a queued workload into one of its ClusterQueue's flavors and adds that flavor's node labels to its pods'
node selector (it never gives a pod a flavor whose labels contradict its own selector, or whose taints it does not
tolerate). So a queued GPU workload must land, with the labels of every flavor Kueue may give it, on some node kind,
and on nodes of that flavor only: a node kind that carries the labels of another flavor it may be given holds GPUs
Kueue counts under that other flavor, so admitted on one flavor it would use the other's capacity (a team stack's job
admitted on the shared flavor running on the team's own pool, whose taint it tolerates).
And Kueue bounds a ClusterQueue per flavor only, nothing across its flavors: what a queue may admit in all (each
flavor's nominal quota and borrowing limit, added up) must be no more than its namespace's ResourceQuota allows, or
an admitted workload's pods are refused and it sits admitted, holding quota, never running.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ...kueue.queues import QUEUE_LABEL
from ...scheduling import GPU_RESOURCE, NEURON_RESOURCES
from ...team.namespace import TEAM_LABEL
from ...team.quantity import parse_quantity
from .kube import Taint, selector_matches, untolerated
from .landing import Problem, lands_on, why_not
from .nodes import NodeKind
from .platform import Platform
from .workloads import from_object, pod_template

#: The label the Kubeflow profile controller (and the platform, from the start) gives a Profile's namespace.
_PROFILE_LABEL = ("app.kubernetes.io/part-of", "kubeflow-profile")


def team_namespaces(platform: Platform) -> list[str]:
    """Namespaces of teams with a GPU share: a team stack's (its team label and a ResourceQuota) and a Kubeflow
    team's (a Profile's). A namespace the platform makes only to mount its FSx file system carries the team label
    (its pods are a team's) and a quota of no GPUs: it has no share, so no queue (`gpus_stay_within_shares` holds
    every team namespace to a quota)."""
    shares = {name for name, ceiling in _gpu_ceilings(platform).items() if ceiling > 0}
    found = set()
    for namespace in platform.of_kind("Namespace"):
        name, labels = namespace["metadata"]["name"], namespace["metadata"].get("labels") or {}
        if (TEAM_LABEL in labels and name in shares) or labels.get(_PROFILE_LABEL[0]) == _PROFILE_LABEL[1]:
            found.add(name)
    return sorted(found)


def _named(platform: Platform, kind: str) -> dict[str, Mapping[str, Any]]:
    return {obj["metadata"]["name"]: obj for obj in platform.of_kind(kind)}


def every_team_can_queue(platform: Platform, **_: Any) -> list[Problem]:
    """With Kueue, each team namespace has a LocalQueue whose ClusterQueue exists, and each ClusterQueue's flavors
    exist (a missing one leaves the queue inactive: nothing is admitted)."""
    cluster_queues, flavors = _named(platform, "ClusterQueue"), _named(platform, "ResourceFlavor")
    local_queues = platform.of_kind("LocalQueue")
    if not (cluster_queues or local_queues):
        return []
    problems = []
    for namespace in team_namespaces(platform):
        mine = [q for q in local_queues if q["metadata"].get("namespace") == namespace]
        if not mine:
            problems.append(Problem("queues", f"team namespace {namespace} has no Kueue LocalQueue"))
        for queue in mine:
            target = queue["spec"].get("clusterQueue")
            if target not in cluster_queues:
                problems.append(
                    Problem(
                        "queues",
                        f"LocalQueue {namespace}/{queue['metadata']['name']} points at ClusterQueue {target}, which "
                        "does not exist",
                    )
                )
    for name, cluster_queue in sorted(cluster_queues.items()):
        for group in cluster_queue["spec"].get("resourceGroups") or ():
            for flavor in group.get("flavors") or ():
                if flavor["name"] not in flavors:
                    problems.append(
                        Problem(
                            "queues", f"ClusterQueue {name} uses ResourceFlavor {flavor['name']}, which does not exist"
                        )
                    )
    return problems


def _queue_name(obj: Mapping[str, Any]) -> str | None:
    labels = dict(obj["metadata"].get("labels") or {})
    template = pod_template(obj) or {}
    labels.update((template.get("metadata") or {}).get("labels") or {})
    return labels.get(QUEUE_LABEL)


def _contradicts(selector: Mapping[str, str], node_labels: Mapping[str, str]) -> bool:
    return any(key in selector and selector[key] != value for key, value in node_labels.items())


def queued_work_lands(platform: Platform, nodes: list[NodeKind], **_: Any) -> list[Problem]:
    """Every queued GPU workload lands on a node kind with the labels of each flavor Kueue may give it. A workload
    that names no namespace (an example applied to a team's) is judged in every namespace with its queue."""
    cluster_queues, flavors = _named(platform, "ClusterQueue"), _named(platform, "ResourceFlavor")
    local_queues = platform.of_kind("LocalQueue")
    problems = []
    for origin, obj in platform.objects:
        queue = _queue_name(obj)
        workload = from_object(origin, obj) if queue is not None else None
        if workload is None or GPU_RESOURCE not in workload.extended:
            continue
        namespace = obj["metadata"].get("namespace")
        targets = [
            q["spec"].get("clusterQueue")
            for q in local_queues
            if q["metadata"]["name"] == queue and namespace in (None, q["metadata"].get("namespace"))
        ]
        if not targets:
            problems.append(Problem("queues", f"{workload.ref} is queued to {queue}, but no team has that LocalQueue"))
        for target in targets:
            problems += _lands_in(workload, cluster_queues.get(target), target, flavors, nodes)
    return problems


def _lands_in(
    workload: Any,
    cluster_queue: Mapping[str, Any] | None,
    name: str,
    flavors: Mapping[str, Mapping[str, Any]],
    nodes: list[NodeKind],
) -> list[Problem]:
    if cluster_queue is None:
        return []  # every_team_can_queue reports it
    given = []
    for group in cluster_queue["spec"].get("resourceGroups") or ():
        if GPU_RESOURCE not in group.get("coveredResources", ()):
            continue
        for entry in group.get("flavors") or ():
            spec = (flavors.get(entry["name"]) or {}).get("spec") or {}
            labels = spec.get("nodeLabels") or {}
            taints = [Taint(t["key"], t.get("value", ""), t["effect"]) for t in spec.get("nodeTaints") or ()]
            if _contradicts(workload.node_selector, labels) or untolerated(workload.tolerations, taints):
                continue
            given.append((entry["name"], labels))
    if not given:
        return [Problem("queues", f"{workload.ref}: ClusterQueue {name} has no flavor Kueue could give it")]
    problems = []
    for flavor, labels in given:
        placed = dataclasses.replace(workload, node_selector={**workload.node_selector, **labels})
        landing = lands_on(placed, nodes)
        if not landing:
            reasons = "; ".join(f"{n.name}: {why_not(placed, n)}" for n in nodes)
            problems.append(
                Problem(
                    "queues",
                    f"{workload.ref}, admitted by ClusterQueue {name} on flavor {flavor}, runs on no node ({reasons})",
                )
            )
        for node in landing:
            others = [other for other, theirs in given if other != flavor and selector_matches(theirs, node.labels)]
            if others:
                problems.append(
                    Problem(
                        "queues",
                        f"{workload.ref}, admitted by ClusterQueue {name} on flavor {flavor}, can run on {node.name}, "
                        f"which carries the node labels of its flavor {', '.join(others)} too: Kueue counts its GPUs "
                        f"under {flavor} on nodes whose capacity {', '.join(others)} stands for",
                    )
                )
    return problems


#: The quota key that caps a namespace's GPUs (a ResourceQuota's, or a Kubeflow Profile's `resourceQuotaSpec`).
_GPU_QUOTA = f"requests.{GPU_RESOURCE}"


def _gpu_ceilings(platform: Platform, key: str = _GPU_QUOTA) -> dict[str, int]:
    """Each namespace's ceiling on quota `key` (GPUs unless told): the lowest of its ResourceQuotas', or its
    Profile's (the profile controller makes that ResourceQuota in the cluster)."""
    found: dict[str, list[int]] = {}
    for quota in platform.of_kind("ResourceQuota"):
        hard = (quota.get("spec") or {}).get("hard") or {}
        if key in hard:
            found.setdefault(quota["metadata"].get("namespace"), []).append(int(parse_quantity(str(hard[key]))))
    for profile in platform.of_kind("Profile"):
        hard = ((profile.get("spec") or {}).get("resourceQuotaSpec") or {}).get("hard") or {}
        if key in hard:
            found.setdefault(profile["metadata"]["name"], []).append(int(parse_quantity(str(hard[key]))))
    return {namespace: min(values) for namespace, values in found.items()}


def _admits_at_most(cluster_queue: Mapping[str, Any]) -> int | None:
    """The GPUs a ClusterQueue may admit at once over all its flavors, or None: no bound (a flavor in a cohort
    without a borrowing limit may borrow all the cohort has)."""
    in_cohort = bool(cluster_queue["spec"].get("cohortName"))
    total = 0
    for group in cluster_queue["spec"].get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for resource in flavor.get("resources") or ():
                if resource["name"] != GPU_RESOURCE:
                    continue
                if in_cohort and "borrowingLimit" not in resource:
                    return None
                total += int(parse_quantity(str(resource["nominalQuota"])))
                total += int(parse_quantity(str(resource.get("borrowingLimit", 0))))
    return total


def gpus_stay_within_shares(platform: Platform, **_: Any) -> list[Problem]:
    """No path to a GPU outside a team's share: every namespace that runs a team's pods (the team label, or a
    Kubeflow Profile's) caps its GPU requests with a ResourceQuota or its Profile, which counts every pod, queued or
    not (KServe predictors, pipeline steps, Deployments are not queued). Without one its pods take the shared pools'
    GPUs in no team's share: Kueue lends them to other teams meanwhile, and no reclaim gets them back."""
    ceilings = _gpu_ceilings(platform)
    problems = []
    for namespace in platform.of_kind("Namespace"):
        name, labels = namespace["metadata"]["name"], namespace["metadata"].get("labels") or {}
        is_team = TEAM_LABEL in labels or labels.get(_PROFILE_LABEL[0]) == _PROFILE_LABEL[1]
        if is_team and name not in ceilings:
            problems.append(
                Problem(
                    "queues",
                    f"namespace {name} runs a team's pods with no GPU quota ({_GPU_QUOTA} in a ResourceQuota or its "
                    "Profile): its GPU pods reach the shared GPU pools outside any team's share",
                )
            )
    return problems + _quotas_within_shares(platform, ceilings) + _neuron_capped(platform)


def _neuron_capped(platform: Platform) -> list[Problem]:
    """Every team namespace caps Neuron devices and cores too: Kueue counts none (they are excluded from its
    accounting), so without a quota a team's Neuron pods would take the platform's Neuron pools in no share."""
    capped = {key: _gpu_ceilings(platform, f"requests.{key}") for key in NEURON_RESOURCES}
    problems = []
    for namespace in platform.of_kind("Namespace"):
        name, labels = namespace["metadata"]["name"], namespace["metadata"].get("labels") or {}
        if not (TEAM_LABEL in labels or labels.get(_PROFILE_LABEL[0]) == _PROFILE_LABEL[1]):
            continue
        missing = [key for key in NEURON_RESOURCES if name not in capped[key]]
        if missing:
            problems.append(
                Problem(
                    "queues",
                    f"namespace {name} runs a team's pods with no quota on {', '.join(missing)}: its Neuron pods "
                    "reach the platform's Neuron pools outside any team's share",
                )
            )
    return problems


def _quotas_within_shares(platform: Platform, ceilings: Mapping[str, int]) -> list[Problem]:
    """A queued team's namespace quota is no more than its share's ceiling (what its ClusterQueue admits at most).
    The quota counts queued and unqueued pods together, so the team's GPUs never pass it; but a quota above the
    share lets unqueued pods (KServe predictors, pipeline steps, Deployments) hold GPUs Kueue does not count while it
    admits the whole share to queued work: up to twice the share when the quota is the share counted twice."""
    problems = []
    for name, cluster_queue in sorted(_named(platform, "ClusterQueue").items()):
        selected = ((cluster_queue["spec"].get("namespaceSelector") or {}).get("matchLabels") or {}).get(
            "kubernetes.io/metadata.name"
        )
        most = _admits_at_most(cluster_queue)
        if not isinstance(selected, str) or selected not in ceilings or most is None:
            continue
        if ceilings[selected] > most:
            problems.append(
                Problem(
                    "queues",
                    f"namespace {selected}'s GPU quota ({ceilings[selected]}) is more than its share (ClusterQueue "
                    f"{name} admits up to {most}): its unqueued GPU pods may hold {ceilings[selected] - most} GPUs "
                    "past its share while Kueue admits the whole share to its queued work",
                )
            )
    return problems


def queues_stay_within_quotas(platform: Platform, **_: Any) -> list[Problem]:
    """No ClusterQueue admits more GPUs, over all its flavors, than the ResourceQuota of a namespace it serves."""
    ceilings = _gpu_ceilings(platform)
    problems = []
    for name, cluster_queue in sorted(_named(platform, "ClusterQueue").items()):
        selected = ((cluster_queue["spec"].get("namespaceSelector") or {}).get("matchLabels") or {}).get(
            "kubernetes.io/metadata.name"
        )
        if selected not in ceilings:
            continue
        most = _admits_at_most(cluster_queue)
        if most is None or most > ceilings[selected]:
            admits = "any number of" if most is None else f"up to {most}"
            problems.append(
                Problem(
                    "queues",
                    f"ClusterQueue {name} admits {admits} GPUs over its flavors, more than namespace {selected}'s "
                    f"quota allows ({ceilings[selected]}): workloads admitted past it are refused their pods",
                )
            )
    return problems
