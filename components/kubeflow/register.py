"""Register staged Kubeflow objects as Pulumi resources: one resource per object (`k8s_objects.create`: typed for
built-in kinds, `apiextensions.CustomResource` otherwise), with `depends_on` object to object exactly as staged."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

from .. import k8s_objects
from .credentials import NAMES, placeholder
from .objects import ObjectKey
from .staging import Stage, Staged, topological
from .teams import role_arn_placeholder

_TOKEN = re.compile(r"<<kubeflow-(secret|input):")


def substitutions(
    secrets: Mapping[str, pulumi.Input[str]],
    role_arns: Mapping[str, pulumi.Input[str]],
    inputs: Mapping[str, pulumi.Input[Any]] | None = None,
) -> dict[str, pulumi.Input[str]]:
    """Placeholder -> value: the credentials (as secrets), the teams' role ARNs, and `inputs` given by their
    placeholders (the cluster's OIDC issuer URL, the file system's identity)."""
    unknown = sorted(set(secrets) - set(NAMES))
    if unknown:
        raise ValueError(f"unknown credentials: {', '.join(unknown)} (known: {', '.join(NAMES)})")
    values: dict[str, pulumi.Input[str]] = {
        placeholder(name): pulumi.Output.secret(value) for name, value in secrets.items()
    }
    values.update({role_arn_placeholder(team): arn for team, arn in role_arns.items()})
    values.update(inputs or {})
    return values


def resolve(value: Any, values: Mapping[str, pulumi.Input[str]]) -> Any:
    """`value` with every placeholder (credentials, role ARNs) replaced by its value. A placeholder must be a
    whole string, so no secret is ever spliced into text; one without a value is an error."""
    if isinstance(value, dict):
        return {k: resolve(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, values) for v in value]
    if isinstance(value, str) and _TOKEN.search(value):
        if value not in values:
            raise ValueError(f"no value given for {value[:100]!r} (placeholders must be whole strings)")
        return values[value]
    return value


def register(
    staged: Sequence[Staged],
    *,
    provider: pulumi.ProviderResource,
    parent: pulumi.Resource | Mapping[Stage, pulumi.Resource],
    cluster: pulumi.Resource | None = None,
    secrets: Mapping[str, pulumi.Input[str]] | None = None,
    role_arns: Mapping[str, pulumi.Input[str]] | None = None,
    inputs: Mapping[str, pulumi.Input[Any]] | None = None,
    depends_on: Sequence[pulumi.Resource] = (),
    depends_on_by_kind: Mapping[str, Sequence[pulumi.Resource]] | None = None,
    depends_on_by_group: Mapping[str, Sequence[pulumi.Resource]] | None = None,
    depends_on_by_namespace: Mapping[str, Sequence[pulumi.Resource]] | None = None,
) -> dict[ObjectKey, pulumi.CustomResource]:
    """Create every staged object under `parent` (one, or one per stage) with `provider`; an object that owns
    nothing in AWS goes with `cluster` on destroy (see `k8s_objects.needs_own_delete`).

    `secrets` maps credential names (`credentials.NAMES`) to the generated values, `role_arns` team names to
    their roles' ARNs (for Profiles built without one), `inputs` other placeholders to their values. `depends_on`
    (say, the node group) is added to the objects that depend on nothing else; all others reach it through them, so
    it also outlives every object on destroy. `depends_on_by_kind` adds the controllers that delete what objects of a
    kind make in AWS: {"PersistentVolumeClaim": [EBS CSI driver], "Ingress": [load balancer controller]};
    `depends_on_by_group` what serves an API group from outside Kubeflow: {"cert-manager.io": [cert-manager]};
    `depends_on_by_namespace` what must serve while a namespace's objects exist, for the objects in it and the
    Namespace itself: {"team-a": [Kueue]}."""
    values = substitutions(secrets or {}, role_arns or {}, inputs)
    resources: dict[ObjectKey, pulumi.CustomResource] = {}
    claim_namespaces = {s.key.namespace for s in staged if s.key.kind == "PersistentVolumeClaim"}
    for item in topological(staged):
        owner = parent[item.stage] if isinstance(parent, Mapping) else parent
        dependencies = [resources[k] for k in item.depends_on] if item.depends_on else list(depends_on)
        dependencies += list((depends_on_by_kind or {}).get(item.key.kind, ()))
        dependencies += list((depends_on_by_group or {}).get(item.key.group, ()))
        home = item.key.name if item.key.kind == "Namespace" and not item.key.namespace else item.key.namespace
        dependencies += list((depends_on_by_namespace or {}).get(home, ()))
        # A claim goes with its namespace: deleted on its own it would wait, on its protection finalizer, for the
        # pods that mount it, which go with the cluster or the namespace, until its delete timed out (a static
        # claim's was seen offline; a provisioned claim's by the engine tier's destroy). The volume follows its
        # reclaim policy: the kept-volume class retains it where the stack keeps its data. The namespace of a claim
        # waits for the controllers that act on a claim's delete (the EBS CSI driver), as the claim would.
        claim = item.key.kind == "PersistentVolumeClaim"
        namespace = resources.get(ObjectKey("", "Namespace", "", item.key.namespace)) if claim else None
        if item.key.kind == "Namespace" and item.key.name in claim_namespaces:
            dependencies += list((depends_on_by_kind or {}).get("PersistentVolumeClaim", ()))
        opts = pulumi.ResourceOptions(
            provider=provider,
            parent=owner,
            depends_on=dependencies,
            deleted_with=namespace or cluster,
            # The names earlier releases gave the object, under a stage component as now (the parent's type, not
            # its name, is part of the URN): the state moves to the new name, nothing is replaced.
            aliases=[pulumi.Alias(name=former) for former in item.former_names],
        )
        resources[item.key] = k8s_objects.create(item.name, resolve(item.manifest, values), opts, any_custom=True)
    return resources
