"""The stack's parts (the package's components at the top of the stack) and which builds on which, from the
dependencies the program recorded: what `report.html` draws as its first figure, and what the README's drawing of
the parts is checked against (tests/test_readme_drawing.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .folder import PACKAGE_PREFIX
from .inventory import Inventory


@dataclass(frozen=True)
class Part:
    """A component at the top of the stack, how many resources it holds, and the parts it builds on."""

    name: str
    type: str
    resources: int
    depends_on: tuple[str, ...]


def parts(inventory: Inventory) -> list[Part]:
    """The stack's parts and their dependencies: part A depends on part B when a resource inside A depends on one
    inside B (a data edge, `depends_on`, or a provider B made). Resources outside every part (the default providers)
    are left out."""
    top: dict[str, str | None] = {}

    def part_of(urn: str) -> str | None:
        """The URN of the part a resource is in (itself, for a part), None for a resource outside every part."""
        if urn not in top:
            try:
                resource = inventory.by_urn(urn)
            except KeyError:  # a reference to something the program did not register
                return None
            if resource.parent is not None:
                top[urn] = part_of(resource.parent)
            else:
                top[urn] = urn if resource.type.startswith(PACKAGE_PREFIX) else None
        return top[urn]

    counts: dict[str, int] = {}
    edges: dict[str, set[str]] = {}
    for resource in inventory.resources:
        owner = part_of(resource.urn)
        if owner is None:
            continue
        counts[owner] = counts.get(owner, 0) + (owner != resource.urn)
        edges.setdefault(owner, set())
        for urn in (*resource.dependencies, *([resource.provider] if resource.provider else [])):
            other = part_of(urn)
            if other is not None and other != owner:
                edges[owner].add(inventory.by_urn(other).name)
    found = [inventory.by_urn(urn) for urn in edges]
    return sorted(
        (Part(r.name, r.type, counts[r.urn], tuple(sorted(edges[r.urn]))) for r in found), key=lambda p: p.name
    )


def levels(found: Iterable[Part]) -> dict[str, int]:
    """Each part's column: one past the highest of the parts it depends on (0 for a part that depends on none), so
    every arrow points right. An edge that would close a circle is not followed."""
    by_name = {p.name: p for p in found}
    level: dict[str, int] = {}
    visiting: set[str] = set()

    def visit(name: str) -> int:
        if name not in level:
            visiting.add(name)
            below = [visit(d) for d in by_name[name].depends_on if d in by_name and d not in visiting]
            visiting.discard(name)
            level[name] = 1 + max(below, default=-1)
        return level[name]

    for name in sorted(by_name):
        visit(name)
    return level


def implied(found: Iterable[Part]) -> set[tuple[str, str]]:
    """The dependencies (part, dependency) that a longer path through another dependency already implies."""
    by_name = {p.name: p for p in found}

    def reach(name: str, seen: set[str]) -> set[str]:
        for dependency in by_name[name].depends_on if name in by_name else ():
            if dependency not in seen:
                seen.add(dependency)
                reach(dependency, seen)
        return seen

    return {
        (part.name, dependency)
        for part in by_name.values()
        for dependency in part.depends_on
        if any(dependency in reach(other, set()) for other in part.depends_on if other != dependency)
    }
