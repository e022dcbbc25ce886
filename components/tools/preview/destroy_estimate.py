"""How long `pulumi destroy` of a stack takes, estimated from the offline preview's graph.

    python -m components.tools.preview.destroy_estimate --stack dev

The model is the engine's own schedule (pulumi/pulumi pkg/resource/deploy/step_generator.go `ScheduleDeletes`,
pkg/resource/graph/dependency_graph.go `DependenciesOf`):

- a resource's delete waits for nothing but must happen before everything it depends on: its dependencies, its
  provider, its parent, its `deleted_with` target, and, where it depends on a component, that component's
  descendants;
- the engine peels the graph from the bottom: first every resource that depends on nothing still condemned, then
  the next layer, and so on; then it reverses the list. So each resource goes in the level set by its longest
  chain down to the roots, as late as that allows, not as early as its dependents allow;
- levels run one after the other; inside a level at most `--parallel` deletes (16 by default,
  pulumi.com/docs/cli/commands/pulumi_destroy) run at once, so a level takes as long as its slowest delete (or more
  when it holds more slow deletes than workers);
- a resource deleted with a target that goes in the same destroy (`deleted_with`) keeps its place in the levels but
  makes no delete call; one the stack retains (`retain_on_delete`) is only dropped from the state.

Delete times are typical figures for an idle stack, not measurements of this one (`delete_times`, with the source
of each). Drains of busy NodePools, large file systems and a sweep with much to delete take longer.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .delete_times import COMPONENT_PREFIXES, delete_figure
from .inventory import Inventory, Recorded
from .teardown_waits import Problem, problems

#: Pulumi's default `--parallel` for `pulumi destroy` (pulumi.com/docs/cli/commands/pulumi_destroy: "default 16").
PARALLEL = 16


def delete_seconds(resource: Recorded) -> int:
    """A typical delete of this resource on its own (see `delete_times`)."""
    return delete_figure(resource)[0]


def _level_span(seconds: Sequence[int], parallel: int) -> int:
    """How long a level takes with `parallel` workers: longest deletes first, each to the worker free soonest."""
    workers = [0] * max(1, parallel)
    for each in sorted(seconds, reverse=True):
        if each:
            workers[workers.index(min(workers))] += each
    return max(workers)


@dataclass(frozen=True)
class Batch:
    """One level of the engine's schedule: its deletes run together, and the next level waits for all of them."""

    resources: tuple[Recorded, ...]
    #: URNs in this level that make no delete call (deleted with their target, or retained).
    free: frozenset[str] = frozenset()
    parallel: int = PARALLEL

    def seconds_of(self, resource: Recorded) -> int:
        return 0 if resource.urn in self.free else delete_seconds(resource)

    @property
    def slowest(self) -> Recorded:
        return max(self.resources, key=lambda r: (self.seconds_of(r), r.urn))

    @property
    def seconds(self) -> int:
        return _level_span([self.seconds_of(r) for r in self.resources], self.parallel)


@dataclass(frozen=True)
class Estimate:
    #: The levels in the order the engine runs them.
    batches: tuple[Batch, ...]
    #: Deleted with their `deleted_with` target: in the levels, but no delete call of their own.
    skipped: tuple[Recorded, ...]
    #: Each resource's delete dependencies as the engine sees them (URN -> URNs it must be deleted before).
    before: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def seconds(self) -> int:
        return sum(batch.seconds for batch in self.batches)

    def levels(self) -> dict[str, int]:
        """Each resource's level (URN -> index in the order the engine runs the levels)."""
        return {r.urn: index for index, batch in enumerate(self.batches) for r in batch.resources}

    def critical_path(self) -> list[tuple[int, Recorded]]:
        """The slowest delete of every level that takes time, in order."""
        return [(b.seconds, b.slowest) for b in self.batches if b.seconds > 0]

    def longest_chain(self) -> list[Recorded]:
        """A chain of delete dependencies through every level, first deleted first: the edges that make the levels.

        Every level's resources have a dependency in the next level (that is what puts them there), so the chain
        starts at the slowest delete of the first level and follows, level by level, the slowest such dependency.
        """
        if not self.batches:
            return []
        chain = [self.batches[0].slowest]
        for batch in self.batches[1:]:
            in_level = [r for r in batch.resources if r.urn in self.before.get(chain[-1].urn, ())]
            if not in_level:
                break
            chain.append(max(in_level, key=lambda r: (batch.seconds_of(r), r.urn)))
        return chain


def delete_dependencies(inventory: Inventory) -> dict[str, frozenset[str]]:
    """What each resource must be deleted before, as the engine's dependency graph says (see the module's doc)."""
    urns = {r.urn for r in inventory.resources}
    children: dict[str, list[str]] = {}
    for resource in inventory.resources:
        if resource.parent in urns:
            children.setdefault(resource.parent, []).append(resource.urn)
    base: dict[str, set[str]] = {}
    for resource in inventory.resources:
        found = set(resource.dependencies)
        found.update(u for u in (resource.provider, resource.parent, resource.deleted_with) if u)
        base[resource.urn] = (found & urns) - {resource.urn}

    reach: dict[str, frozenset[str]] = {}

    def reachable(urn: str) -> frozenset[str]:
        if urn not in reach:
            seen: set[str] = set()
            todo = list(base[urn])
            while todo:
                found = todo.pop()
                if found not in seen:
                    seen.add(found)
                    todo.extend(base[found])
            reach[urn] = frozenset(seen)
        return reach[urn]

    def descendants(urn: str) -> list[str]:
        found, todo = [], list(children.get(urn, ()))
        while todo:
            child = todo.pop()
            found.append(child)
            todo.extend(children.get(child, ()))
        return found

    components = set(children) | {r.urn for r in inventory.resources if r.type.startswith(COMPONENT_PREFIXES)}
    out = {urn: set(found) for urn, found in base.items()}
    for resource in inventory.resources:
        for dependency in resource.dependencies:
            if dependency in components:
                # Depending on a component is depending on its descendants, except those that (through their own
                # dependencies) come after this resource: the engine takes only those earlier in its order.
                out[resource.urn].update(
                    c for c in descendants(dependency) if c != resource.urn and resource.urn not in reachable(c)
                )
    return {urn: frozenset(found) for urn, found in out.items()}


def estimate(inventory: Inventory, parallel: int = PARALLEL) -> Estimate:
    """The engine's delete levels for a full destroy of what the inventory holds."""
    before = delete_dependencies(inventory)
    urns = {r.urn for r in inventory.resources}
    skipped = tuple(r for r in inventory.resources if r.deleted_with in urns)
    free = frozenset(r.urn for r in skipped) | {r.urn for r in inventory.resources if r.retain_on_delete}
    condemned = {r.urn: r for r in inventory.resources}
    peeled: list[list[Recorded]] = []
    while condemned:
        ready = sorted(urn for urn in condemned if not before[urn] & condemned.keys())
        if not ready:
            raise ValueError(f"the delete graph has a cycle among {sorted(condemned)[:5]}")
        peeled.append([condemned.pop(urn) for urn in ready])
    batches = tuple(Batch(tuple(level), frozenset(r.urn for r in level) & free, parallel) for level in reversed(peeled))
    return Estimate(batches, skipped, before)


def teardown_problems(inventory: Inventory) -> list[Problem]:
    """The deletes of a full destroy that would wait on what goes after them (`teardown_waits`)."""
    return problems(inventory, estimate(inventory).levels())


def report(estimate_: Estimate, stack: str) -> str:
    minutes = estimate_.seconds / 60
    lines = [
        (
            f"Estimated `pulumi destroy` of stack '{stack}': {minutes:.1f} minutes in {len(estimate_.batches)} "
            f"levels ({len(estimate_.skipped)} resources go with their deleted_with target, without a delete call)"
        ),
        "Critical path (the slowest delete of each level that takes time):",
    ]
    start = 0
    for index, batch in enumerate(estimate_.batches):
        if batch.seconds:
            slowest = batch.slowest
            lines.append(
                f"  {index:3d}  {start / 60:5.1f} min  {batch.seconds:4d} s  {slowest.name} ({slowest.type}, "
                f"{len(batch.resources)} in the level)"
            )
        start += batch.seconds
    lines.append("Longest chain of delete levels (each must be deleted before the next):")
    skipped = {r.urn for r in estimate_.skipped}
    for resource in estimate_.longest_chain():
        seconds, note = (0, ", goes with its target") if resource.urn in skipped else (delete_seconds(resource), "")
        lines.append(f"  {seconds:4d} s  {resource.name} ({resource.type}{note})")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from ..commands import INVALID_STACK, add_stack_arguments, read_stack
    from . import run_preview

    parser = argparse.ArgumentParser(
        prog="python -m components.tools.preview.destroy_estimate", description=__doc__.split("\n\n")[0]
    )
    add_stack_arguments(parser)
    args = parser.parse_args(argv)
    inventory = read_stack(args, run_preview)
    if inventory is None:
        return INVALID_STACK
    print(report(estimate(inventory), args.stack))
    waiting = teardown_problems(inventory)
    if waiting:
        print("Deletes that would wait on what goes after them (destroy would not finish):")
        print("\n".join(f"  {p}" for p in waiting))
    return 1 if waiting else 0


if __name__ == "__main__":
    sys.exit(main())
