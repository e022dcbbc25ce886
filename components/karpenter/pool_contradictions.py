"""What a NodePool's own fields and requirements keep out (pure): instance families, sizes and GPU names the pool
names but could never launch. Each problem is (key path within the pool, message)."""

from __future__ import annotations

from collections.abc import Callable

from ..instances import accelerators
from ..instances.families import architecture_of, category_of, family_of_type, generation_of, size_problem, sizes_of
from .pool_fields import Pool

Problems = list[tuple[str, str]]

#: How each generation operator compares a family's generation with its bound.
_GENERATION_TESTS: dict[str, Callable[[int, int], bool]] = {
    "Gt": lambda g, n: g > n,
    "Gte": lambda g, n: g >= n,
    "Lt": lambda g, n: g < n,
    "Lte": lambda g, n: g <= n,
}


def _exclusions(
    pool: Pool, skip: frozenset[str]
) -> tuple[list[tuple[str, int, str]], list[tuple[set[str], str]], list[tuple[str, str]]]:
    """What the pool's fields and requirements allow of a family, each with where it is said: generation bounds
    (operator, bound), architecture sets, and families excluded by name."""
    generation_bounds = (
        []
        if "generationAbove" in skip or pool.generation_above is None
        else [("Gt", pool.generation_above, f"generationAbove {pool.generation_above}")]
    )
    arch_sets: list[tuple[set[str], str]] = (
        [] if "architectures" in skip else [(set(pool.architectures), f"architectures {list(pool.architectures)}")]
    )
    excluded: list[tuple[str, str]] = []
    for r in () if "requirements" in skip else pool.requirements:
        if (
            r.key == "karpenter.k8s.aws/instance-generation"
            and r.operator in ("Gt", "Gte", "Lt", "Lte")
            and r.values
            and r.values[0].isdigit()
        ):
            generation_bounds.append((r.operator, int(r.values[0]), f"the requirement {r.shown()}"))
        elif r.key == "kubernetes.io/arch" and r.operator == "In":
            arch_sets.append((set(r.values), f"the requirement {r.shown()}"))
        elif r.key == "karpenter.k8s.aws/instance-family" and r.operator == "NotIn":
            excluded += [(value, f"the requirement {r.shown()}") for value in r.values]
    return generation_bounds, arch_sets, excluded


def _family_problems(pool: Pool, skip: frozenset[str]) -> Problems:
    """Families in instanceFamilies that the pool's category, generation, architecture or exclusions leave out."""
    problems: Problems = []
    generation_bounds, arch_sets, excluded = _exclusions(pool, skip)
    for family in pool.instance_families:
        out = []
        category = category_of(family)
        if "instanceCategories" not in skip and pool.instance_categories and category not in pool.instance_categories:
            out.append(
                f"is in category {category!r}, which instanceCategories {list(pool.instance_categories)} leaves out"
            )
        generation = generation_of(family)
        for operator, bound, source in generation_bounds:
            if generation is not None and not _GENERATION_TESTS[operator](generation, bound):
                out.append(f"is generation {generation}, which {source} excludes")
        arch = architecture_of(family)
        for allowed, source in arch_sets:
            if arch is not None and arch not in allowed:
                out.append(f"runs on {arch}, which {source} excludes")
        out += [f"is excluded by {source}" for value, source in excluded if value == family]
        problems += [("instanceFamilies", f"{family!r} {reason}: the pool can never launch it") for reason in out]
    return problems


def _size_problems(pool: Pool) -> Problems:
    """Sizes in instanceSizes that none of the pool's families comes in (where the facts of every family are known)."""
    problems: Problems = []
    offered = [sizes_of(family) for family in pool.instance_families]
    if offered and all(offered):
        for size in pool.instance_sizes:
            if not size_problem(size) and not any(size in sizes for sizes in offered):
                problems.append(
                    (
                        "instanceSizes",
                        (
                            f"{size!r} is a size none of instanceFamilies {list(pool.instance_families)} comes in: "
                            "the pool can never launch it"
                        ),
                    )
                )
    return problems


def _gpu_name_problems(pool: Pool) -> Problems:
    """Instance types or families a requirement names whose GPUs are none of the pool's gpuNames."""
    problems: Problems = []
    for index, r in enumerate(pool.requirements):
        if r.operator != "In" or r.key not in (
            "node.kubernetes.io/instance-type",
            "karpenter.k8s.aws/instance-family",
        ):
            continue
        for value in r.values:
            known = accelerators.facts(family_of_type(value))
            if known is not None and known.gpu_name is not None and known.gpu_name not in pool.gpu_names:
                problems.append(
                    (
                        f"requirements[{index}]",
                        (
                            f"{value!r} has {known.gpu_name} GPUs, which gpuNames {list(pool.gpu_names)} leaves "
                            "out: the pool can never launch it"
                        ),
                    )
                )
    return problems


def contradictions(pool: Pool, skip: frozenset[str]) -> Problems:
    """Instance families the pool's own other fields or requirements keep out: it could never launch them."""
    if "instanceFamilies" in skip:
        return []
    problems = _family_problems(pool, skip)
    if "instanceSizes" not in skip:
        problems += _size_problems(pool)
    if pool.gpu_names and not {"gpuNames", "requirements"} & skip:
        problems += _gpu_name_problems(pool)
    return problems


def unreachable_families(pool: Pool) -> list[str]:
    """Families in the pool whose GPUs are none of its gpuNames (facts known only)."""
    unreachable = []
    for family in pool.instance_families:
        known = accelerators.facts(family)
        if known is not None and known.gpu_name is not None and known.gpu_name not in pool.gpu_names:
            unreachable.append(family)
    return sorted(unreachable)
