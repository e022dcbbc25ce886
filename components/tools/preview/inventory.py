"""What a program run under the mocks registered: one record per resource, with lookups for assertions and for
the preview's checks (dependency reach, children, the URNs the engine matches a resource against)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The type of a Helm release (pulumi-kubernetes `helm.v3.Release`).
HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


@dataclass(frozen=True)
class Recorded:
    """One registered resource, as the engine would have received it."""

    urn: str
    type: str
    name: str
    parent: str | None
    inputs: dict[str, Any]
    dependencies: tuple[str, ...]
    protect: bool
    retain_on_delete: bool
    deleted_with: str | None
    id: str | None = None
    outputs: dict[str, Any] = field(default_factory=dict, compare=False)
    #: The aliases the program gave this resource, as sent to the engine: `{"urn": ...}` or an alias spec
    #: (`name`, `type`, `parentUrn`, `noParent`; empty fields default to the resource's own).
    aliases: tuple[dict[str, Any], ...] = ()
    #: How long the engine waits for a delete (Pulumi's default when None).
    delete_timeout: str | None = None
    #: The URN of the explicit provider the resource uses; the engine deletes a resource before its provider.
    provider: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "inputs": self.inputs,
            "dependencies": list(self.dependencies),
            "protect": self.protect,
            "retain_on_delete": self.retain_on_delete,
            "deleted_with": self.deleted_with,
        }


class Inventory:
    """What a program registered, with lookups for assertions."""

    def __init__(self, resources: Iterable[Recorded], stack_outputs: Mapping[str, Any]):
        self.resources = tuple(sorted(resources, key=lambda r: r.urn))
        self.stack_outputs = dict(stack_outputs)
        self._by_urn = {r.urn: r for r in self.resources}

    def of_type(self, type_: str) -> list[Recorded]:
        return [r for r in self.resources if r.type == type_]

    def release(self, name: str) -> Recorded:
        """The Helm release of that release name (its `name` input, what `helm list` shows); fails if there are
        none or several."""
        found = [r for r in self.of_type(HELM_RELEASE_TYPE) if r.inputs.get("name") == name]
        if len(found) != 1:
            raise LookupError(f"{len(found)} Helm releases named {name!r}")
        return found[0]

    def one(self, type_: str, name: str | None = None) -> Recorded:
        """The single resource of a type (and name, when given); fails if there are none or several."""
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            names = sorted(r.name for r in self.of_type(type_))
            raise AssertionError(f"expected one {type_} named {name!r}, found {len(found)} among {names}")
        return found[0]

    def by_urn(self, urn: str) -> Recorded:
        return self._by_urn[urn]

    def depends_on(self, resource: Recorded, other: Recorded) -> bool:
        """Whether `resource` waits for `other` (and so is deleted before it), directly or through what it depends
        on, its provider included: the engine deletes a resource before its provider."""
        seen: set[str] = set()
        todo = [*resource.dependencies, *([resource.provider] if resource.provider else [])]
        while todo:
            urn = todo.pop()
            if urn == other.urn:
                return True
            if urn in seen or urn not in self._by_urn:
                continue
            seen.add(urn)
            found = self._by_urn[urn]
            todo.extend(found.dependencies)
            if found.provider:
                todo.append(found.provider)
        return False

    def children(self, parent: Recorded) -> list[Recorded]:
        return [r for r in self.resources if r.parent == parent.urn]

    def alias_urns(self, resource: Recorded) -> frozenset[str]:
        """Every earlier URN the engine matches this resource against: its own aliases, and those it inherits from
        its parent's (the engine's rule, as in every SDK's `inheritedChildAlias`: a child whose name starts with its
        parent's name gets the parent's alias name in place of that prefix), for its own type and name and for each
        of its aliases' (the Python SDK's `all_aliases`: N own and M parent aliases make N + M * (1 + N))."""
        stack_prefix = resource.urn.split("::", 2)[:2]
        own: set[str] = set()
        for alias in resource.aliases:
            if alias.get("urn"):
                own.add(alias["urn"])
                continue
            parent = None if alias.get("noParent") else alias.get("parentUrn") or resource.parent
            own.add(_urn(stack_prefix, parent, alias.get("type") or resource.type, alias.get("name") or resource.name))
        if resource.parent is not None and resource.parent in self._by_urn:
            parent = self._by_urn[resource.parent]
            identities = {(resource.type, resource.name)} | {_type_and_name(urn) for urn in own}
            for parent_alias in self.alias_urns(parent):
                for type_, name in identities:
                    if name.startswith(parent.name):
                        name = parent_alias.rsplit("::", 1)[1] + name[len(parent.name) :]
                    own.add(_urn(stack_prefix, parent_alias, type_, name))
        return frozenset(own)


def _type_and_name(urn: str) -> tuple[str, str]:
    """The type (the last of the chain) and the name a URN ends with."""
    chain, name = urn.rsplit("::", 1)
    return chain.rsplit("::", 1)[1].rsplit("$", 1)[-1], name


def _urn(stack_prefix: list[str], parent: str | None, type_: str, name: str) -> str:
    """A URN as the engine builds it: the parent's type chain, then this type, then the name."""
    if parent is None:
        return f"{stack_prefix[0]}::{stack_prefix[1]}::{type_}::{name}"
    return f"{parent.rsplit('::', 1)[0]}${type_}::{name}"
