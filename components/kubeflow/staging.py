"""Install order as data: every object's stage, the objects it waits for, the await annotations Pulumi reads, and a
checker for all of it.

A single apply of Kubeflow fails on webhook readiness: a fail-closed webhook rejects every create it intercepts
until its pods serve. So objects go in stages, and each object depends on the *gate objects* of the stage before
(never on a stage component, whose readiness Pulumi cannot see):

  0 CRDs and Kubeflow's namespaces          4 the apps (workloads, their Certificates and Issuers)
  1 the ClusterIssuer                       5 the apps' webhook configurations
  2 Istio (with its webhooks)               6 the apps' custom resources
  3 auth (oauth2-proxy, Dex)                7 teams (namespace, Profile, PodDefaults, per-team apps)

cert-manager itself is the platform's (`components.certmanager`): objects of its API groups depend on that release,
which Helm holds until its webhook answers. Istio's webhook configurations share Istio's stage: each already waits
for istiod (the workload behind it) and for its caBundle, and the next stage waits for them as gates, so a stage of
their own would add no ordering.

Gates are objects whose readiness Pulumi awaits: CRDs (`condition=Established`), workloads (the provider's own
rollout await), webhook configurations (until their caBundle is injected) and cert-manager Certificates and
Issuers (`condition=Ready`). On top of the stage gates, each object depends on: its namespace; a custom resource on
its CRD and on every fail-closed webhook configuration intercepting its creation; a webhook configuration on its
Service and the workloads behind it; a workload on the Certificates whose Secrets it mounts; a Certificate on its
Issuer. Deletion runs the same graph backwards.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from .entries import Part
from .objects import Manifest, ObjectKey, group_of, is_crd, is_webhook_configuration, is_workload, key
from .relations import CERT_MANAGER_GROUP, Relations, is_custom


class Stage(IntEnum):
    CRDS = 0
    ISSUER = 1
    ISTIO = 2
    AUTH = 3
    APPS = 4
    APP_WEBHOOKS = 5
    APP_RESOURCES = 6
    TEAMS = 7


WAIT_FOR = "pulumi.com/waitFor"
ESTABLISHED = "condition=Established"
READY = "condition=Ready"
CA_INJECTED = "jsonpath={.webhooks[*].clientConfig.caBundle}"
_CERT_MANAGER_READY_KINDS = frozenset({"Certificate", "Issuer", "ClusterIssuer"})
MAX_NAME = 80


@dataclass(frozen=True)
class Staged:
    """One object ready to register: its stage, logical name, manifest (annotated) and dependencies, and the
    logical names earlier releases gave it (`former_names`, for aliases)."""

    key: ObjectKey
    stage: Stage
    name: str
    manifest: Manifest
    depends_on: tuple[ObjectKey, ...]
    former_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Item:
    """An object to stage, with the family its entry belongs to (None: a team's own object)."""

    manifest: Manifest
    part: Part | None


def wait_for(obj: Mapping[str, Any]) -> str | None:
    """The `pulumi.com/waitFor` value of a gate object Pulumi would not otherwise await (None: none needed)."""
    if is_crd(obj):
        return ESTABLISHED
    if is_webhook_configuration(obj):
        return CA_INJECTED
    if group_of(obj["apiVersion"]) == CERT_MANAGER_GROUP and obj["kind"] in _CERT_MANAGER_READY_KINDS:
        return READY
    return None


def is_gate(obj: Mapping[str, Any]) -> bool:
    return wait_for(obj) is not None or is_workload(obj)


def stage_of(item: Item, team_namespaces: frozenset[str]) -> Stage:
    obj = item.manifest
    namespace = obj["metadata"].get("namespace", "")
    if item.part is None or namespace in team_namespaces:
        return Stage.TEAMS
    if is_crd(obj) or (obj["kind"] == "Namespace" and obj["apiVersion"] == "v1"):
        return Stage.CRDS
    if item.part is Part.ISSUER:
        return Stage.ISSUER
    if item.part is Part.ISTIO:
        return Stage.ISTIO
    if item.part is Part.AUTH:
        return Stage.AUTH
    if is_webhook_configuration(obj):
        return Stage.APP_WEBHOOKS
    if is_custom(obj) and group_of(obj["apiVersion"]) != CERT_MANAGER_GROUP:
        return Stage.APP_RESOURCES
    return Stage.APPS


def logical_name(object_key: ObjectKey) -> str:
    """`kubeflow-<kind>-<namespace>-<name>` (no namespace part when cluster-scoped), lowercase and DNS-safe; past
    MAX_NAME characters it is cut and ends in a hash of the whole key, so it stays unique.

    Only the object's identity goes in: an object that moves to another stage in a later release (or whose
    dependencies change) keeps its URN, so `pulumi up` updates it rather than replacing it. The stage components
    that parent the objects share one type, so the URN does not name the stage either."""
    return _name(["kubeflow", object_key.kind, object_key.namespace, object_key.name], object_key)


def stage_numbered_name(stage: Stage, object_key: ObjectKey) -> str:
    """The name releases up to 0.2 gave an object, `kubeflow-<stage number>-<kind>-<namespace>-<name>` (cut the same
    way): its alias, so a stack deployed by them keeps every Kubeflow object."""
    return _name(["kubeflow", str(int(stage)), object_key.kind, object_key.namespace, object_key.name], object_key)


def _name(parts: list[str], object_key: ObjectKey) -> str:
    name = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]", "-", "-".join(p for p in parts if p).lower())).strip("-")
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(str(object_key).encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9].rstrip('-')}-{digest}"
    return name


def annotate(obj: Manifest) -> Manifest:
    value = wait_for(obj)
    if value is None:
        return obj
    # Only metadata is new: the rest is shared with the input, which is never changed.
    annotations = {**(obj["metadata"].get("annotations") or {}), WAIT_FOR: value}
    return {**obj, "metadata": {**obj["metadata"], "annotations": annotations}}


# ------------------------------------------------------------------------------------------------ staging


def gate_stages(stages: Mapping[ObjectKey, Stage], gates: set[ObjectKey]) -> dict[Stage, list[ObjectKey]]:
    by_stage: dict[Stage, list[ObjectKey]] = defaultdict(list)
    for object_key in sorted(gates):
        by_stage[stages[object_key]].append(object_key)
    return by_stage


def previous_gates(stage: Stage, by_stage: Mapping[Stage, list[ObjectKey]]) -> list[ObjectKey]:
    """The gates of the nearest earlier stage that has any."""
    for earlier in range(int(stage) - 1, -1, -1):
        if by_stage.get(Stage(earlier)):
            return by_stage[Stage(earlier)]
    return []


@dataclass(frozen=True)
class HeldNamespaces:
    """Kubeflow's own namespaces, and the gates that wait for them all.

    Every later object waits for the first gates after the CRDs, so when those gates also wait for every namespace,
    destroy deletes the namespaces together, in one batch after everything in them. Without it each namespace goes
    in the batch after its last object, and a namespace (the slowest delete of such a batch) costs a batch of its
    own at each step of the stage chain."""

    namespaces: tuple[ObjectKey, ...]
    gates: frozenset[ObjectKey]


def held_namespaces(stages: Mapping[ObjectKey, Stage], by_stage: Mapping[Stage, list[ObjectKey]]) -> HeldNamespaces:
    namespaces = tuple(
        sorted(k for k, s in stages.items() if s is Stage.CRDS and k.kind == "Namespace" and k.group == "")
    )
    first = next((by_stage[s] for s in Stage if s > Stage.CRDS and by_stage.get(s)), [])
    return HeldNamespaces(namespaces, frozenset(first))


def stage(items: Sequence[Item], team_namespaces: Iterable[str] = ()) -> list[Staged]:
    """Stage, annotate, name and connect every object. Raises ValueError if two objects share an identity or a
    logical name, or if a custom resource has no CRD among the objects."""
    teams = frozenset(team_namespaces)
    manifests = [annotate(item.manifest) for item in items]
    keys = [key(m) for m in manifests]
    duplicates = sorted({str(k) for k in keys if keys.count(k) > 1})
    if duplicates:
        raise ValueError(f"objects rendered twice: {', '.join(duplicates)}")
    stages = {key(m): stage_of(Item(m, item.part), teams) for m, item in zip(manifests, items, strict=True)}
    relations = Relations(manifests)
    by_stage = gate_stages(stages, {key(m) for m in manifests if is_gate(m)})
    held = held_namespaces(stages, by_stage)
    names: dict[str, ObjectKey] = {}
    staged = []
    for manifest in manifests:
        own = key(manifest)
        depends = dict.fromkeys(previous_gates(stages[own], by_stage))
        depends.update(dict.fromkeys(sorted(relations.required(manifest, stages))))
        if own in held.gates:
            depends.update(dict.fromkeys(held.namespaces))
        depends.pop(own, None)
        name = logical_name(own)
        if name in names:
            raise ValueError(f"{own} and {names[name]} share the logical name {name}")
        names[name] = own
        former = (stage_numbered_name(stages[own], own),)
        staged.append(Staged(own, stages[own], name, manifest, tuple(depends), former))
    return sorted(staged, key=lambda s: (s.stage, s.key))


# ------------------------------------------------------------------------------------------------ checking


def check(staged: Sequence[Staged]) -> list[str]:
    """Every way the staged objects could be applied in a wrong order (empty: none).

    Checks, independently of how the edges were made: dependencies exist and point to the same or an earlier
    stage; there is no cycle; each object depends directly on the previous stage's gates; every requirement of
    `Relations` is met through some path; the first gates hold every Kubeflow namespace; every gate carries its
    await annotation."""
    by_key = {s.key: s for s in staged}
    stages = {s.key: s.stage for s in staged}
    problems: list[str] = []
    for item in staged:
        for dependency in item.depends_on:
            if dependency not in by_key:
                problems.append(f"{item.key}: depends on {dependency}, which is not staged")
            elif by_key[dependency].stage > item.stage:
                later = int(by_key[dependency].stage)
                problems.append(
                    f"{item.key} (stage {int(item.stage)}) depends on {dependency} of the later stage {later}"
                )
    if problems:
        return problems
    order = _topological(staged)
    if order is None:
        return ["the dependencies have a cycle"]
    reachable = _closures(staged, order)
    gates = {s.key for s in staged if is_gate(s.manifest)}
    by_stage = gate_stages(stages, gates)
    relations = Relations([s.manifest for s in staged])
    held = held_namespaces(stages, by_stage)
    for item in staged:
        direct = set(item.depends_on)
        for gate in previous_gates(item.stage, by_stage):
            if gate not in direct:
                problems.append(f"{item.key}: does not wait for {gate}, a gate of the stage before")
        for needed, why in relations.required(item.manifest, stages).items():
            if needed not in reachable[item.key]:
                problems.append(f"{item.key}: does not wait for {needed} ({why})")
        if item.key in held.gates:
            for namespace in held.namespaces:
                if namespace not in reachable[item.key]:
                    problems.append(f"{item.key}: does not wait for {namespace} (destroy would delete it alone)")
        expected = wait_for(item.manifest)
        if expected is not None and (item.manifest["metadata"].get("annotations") or {}).get(WAIT_FOR) != expected:
            problems.append(f"{item.key}: a gate without {WAIT_FOR}: {expected}")
    return problems


def _topological(staged: Sequence[Staged]) -> list[ObjectKey] | None:
    pending = {s.key: set(s.depends_on) for s in staged}
    dependents: dict[ObjectKey, list[ObjectKey]] = defaultdict(list)
    for s in staged:
        for dependency in s.depends_on:
            dependents[dependency].append(s.key)
    ready = sorted(k for k, deps in pending.items() if not deps)
    order = []
    while ready:
        current = ready.pop()
        order.append(current)
        for dependent in dependents[current]:
            pending[dependent].discard(current)
            if not pending[dependent]:
                ready.append(dependent)
    return order if len(order) == len(staged) else None


def topological(staged: Sequence[Staged]) -> list[Staged]:
    """The staged objects with every dependency before its dependents. Raises ValueError on a cycle."""
    order = _topological(staged)
    if order is None:
        raise ValueError("the dependencies have a cycle")
    by_key = {s.key: s for s in staged}
    return [by_key[k] for k in order]


def _closures(staged: Sequence[Staged], order: list[ObjectKey]) -> dict[ObjectKey, set[ObjectKey]]:
    by_key = {s.key: s for s in staged}
    closure: dict[ObjectKey, set[ObjectKey]] = {}
    for object_key in order:
        reach: set[ObjectKey] = set()
        for dependency in by_key[object_key].depends_on:
            reach.add(dependency)
            reach |= closure[dependency]
        closure[object_key] = reach
    return closure
