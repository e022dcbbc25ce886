"""What `pulumi up` would do to a stack whose state is one preview when the program now previews another: the
resources it would create, delete, update in place and replace, each with why.

A resource of the new preview is the state's resource of the same URN or of one of its aliases (the engine's rule,
`Inventory.alias_urns`). Whether a change of inputs is an update or a replacement follows the Kubernetes provider's
rules for the kinds Kubeflow registers (the sources beside `IMMUTABLE`); a changed resource of another provider is
`unmodelled`, so a caller sees it rather than an update that may be a replacement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .inventory import Inventory, Recorded

#: Fields the API server refuses to change in place, by Kubernetes kind; pulumi-kubernetes plans a replacement when
#: one changes. Sources: the Kubernetes API reference (a workload's `spec.selector` is immutable in apps/v1; a
#: StatefulSet may change only `replicas`, `template`, `updateStrategy`, `minReadySeconds`,
#: `persistentVolumeClaimRetentionPolicy` and `ordinals`; a claim's spec only its storage request and volume
#: attributes class; a Job's selector and template) and pulumi-kubernetes #1926 / #3164 (`immutable`, a Secret's
#: `type`).
IMMUTABLE: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "apps/v1:Deployment": (("spec", "selector"),),
    "apps/v1:DaemonSet": (("spec", "selector"),),
    "apps/v1:StatefulSet": (
        ("spec", "selector"),
        ("spec", "serviceName"),
        ("spec", "volumeClaimTemplates"),
        ("spec", "podManagementPolicy"),
    ),
    "core/v1:PersistentVolumeClaim": (
        ("spec", "accessModes"),
        ("spec", "storageClassName"),
        ("spec", "volumeName"),
        ("spec", "selector"),
        ("spec", "volumeMode"),
        ("spec", "dataSource"),
    ),
    "batch/v1:Job": (("spec", "selector"), ("spec", "template")),
    "core/v1:ConfigMap": (("immutable",),),
    "core/v1:Secret": (("immutable",), ("type",)),
}

#: The data of these kinds, replaced on change unless the provider's flag (`enableConfigMapMutable`,
#: `enableSecretMutable`: pulumi-kubernetes #1926 and #2291) is on and the object is not `immutable: true`.
DATA_FIELDS: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "core/v1:ConfigMap": ("enableConfigMapMutable", ("data", "binaryData")),
    "core/v1:Secret": ("enableSecretMutable", ("data", "stringData")),
}

_KUBERNETES = "kubernetes:"


@dataclass(frozen=True)
class UpgradePlan:
    """URNs (of the new preview; of the state for `delete`) by what `pulumi up` would do, and why for each change."""

    create: tuple[str, ...]
    delete: tuple[str, ...]
    update: tuple[str, ...]
    replace: tuple[str, ...]
    unmodelled: tuple[str, ...]
    #: URN -> the changed top-level input paths (`spec.template`), and for a replacement the field that forces it.
    why: Mapping[str, str] = field(default_factory=dict)


def plan(state: Inventory, new: Inventory) -> UpgradePlan:
    """What `pulumi up` of `new` does to a stack whose state is `state`."""
    matched: set[str] = set()
    create, update, replace, unmodelled = [], [], [], []
    why: dict[str, str] = {}
    state_urns = {r.urn for r in state.resources}
    for resource in new.resources:
        candidates = [resource.urn, *sorted(new.alias_urns(resource))]
        before = next((state.by_urn(u) for u in candidates if u in state_urns), None)
        if before is None:
            create.append(resource.urn)
            continue
        matched.add(before.urn)
        changed = _changed(before.inputs, resource.inputs)
        if not changed:
            continue
        why[resource.urn] = ", ".join(changed)
        if not resource.type.startswith(_KUBERNETES) or resource.type.startswith("kubernetes:helm"):
            unmodelled.append(resource.urn)
            continue
        forced = _forces_replacement(resource, before, changed, new)
        if forced:
            why[resource.urn] = f"{why[resource.urn]} (replaced: {forced})"
            replace.append(resource.urn)
        else:
            update.append(resource.urn)
    delete = sorted(state_urns - matched)
    return UpgradePlan(tuple(create), tuple(delete), tuple(update), tuple(replace), tuple(unmodelled), why)


def _changed(before: Mapping[str, Any], after: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The paths whose values differ, down to the second level (`spec.template`, `data.settings`)."""
    paths = []
    for key in sorted(set(before) | set(after)):
        path = f"{prefix}{key}"
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if not prefix and isinstance(old, dict) and isinstance(new, dict):
            paths.extend(_changed(old, new, f"{path}."))
        else:
            paths.append(path)
    return paths


def _kind(type_: str) -> str:
    return type_.removeprefix(_KUBERNETES)


def _forces_replacement(resource: Recorded, before: Recorded, changed: list[str], new: Inventory) -> str | None:
    kind = _kind(resource.type)
    meta_before, meta_after = before.inputs.get("metadata") or {}, resource.inputs.get("metadata") or {}
    for identity in ("name", "namespace"):
        if meta_before.get(identity) != meta_after.get(identity):
            return f"metadata.{identity}"
    for path in IMMUTABLE.get(kind, ()):
        if _get(before.inputs, path) != _get(resource.inputs, path):
            return ".".join(path)
    if kind in DATA_FIELDS:
        flag, fields = DATA_FIELDS[kind]
        data_changed = any(_get(before.inputs, (f,)) != _get(resource.inputs, (f,)) for f in fields)
        mutable = _provider_flag(resource, flag, new) and resource.inputs.get("immutable") is not True
        if data_changed and not mutable:
            return f"{'/'.join(fields)} (the provider's {flag} is off, or the object is immutable)"
    return None


def _get(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _provider_flag(resource: Recorded, flag: str, new: Inventory) -> bool:
    """Whether the resource's explicit Kubernetes provider has `flag` on (a default provider has every flag off)."""
    if resource.provider is None:
        return False
    provider_urn = resource.provider.split("::")[:4]
    urn = "::".join(provider_urn)
    try:
        provider = new.by_urn(urn)
    except KeyError:
        return False
    return provider.inputs.get(flag) in (True, "true")
