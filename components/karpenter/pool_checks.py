"""Everything a NodePool spec is checked for beyond the shape of its fields (pure): values and keys, accelerator
guarantees (taint, ceiling, no mixing), requirements that contradict each other, and budgets that keep idle
accelerators running. Each problem is (key path within the pool, message)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..instances import accelerators
from ..instances.families import (
    ACCELERATED_CATEGORIES,
    Accelerator,
    category_problem,
    family_problem,
    size_problem,
    type_problem,
)
from ..scheduling import (
    ACCELERATOR_RESOURCES,
    GPU_RESOURCE,
    GPU_SHARE_LABEL,
    GPU_TAINT,
    NEURON_CORE_RESOURCE,
    NEURON_RESOURCE,
    NEURON_TAINT,
    Taint,
)
from . import crd_rules
from .pool_contradictions import contradictions, unreachable_families
from .pool_fields import Pool, RequirementSpec
from .spec_types import LABEL_VALUE_HINT, QUANTITY, QUANTITY_HINT
from .training import training_problems
from .validation import excludes, label_problem, requirement_key_problem

Problems = list[tuple[str, str]]

#: `nodes` caps how many nodes the pool has (the NodePool CRD's limits.nodes); the others cap the sum of its nodes'
#: capacity.
NODES_LIMIT = "nodes"
LIMIT_RESOURCES = ("cpu", "memory", NODES_LIMIT, *ACCELERATOR_RESOURCES)
#: Why a limit on Neuron devices by their other name is refused: Karpenter never counts it, so it caps nothing.
NEURONDEVICE_REASON = (
    "Karpenter does not count aws.amazon.com/neurondevice (an instance type offers aws.amazon.com/neuron devices and "
    "aws.amazon.com/neuroncore cores, and the current Neuron device plugin advertises only those), so a limit on it "
    "never stops a launch; limit aws.amazon.com/neuron or aws.amazon.com/neuroncore instead"
)


def _gpu_name_problem(name: str) -> str | None:
    known = accelerators.nvidia_gpu_names()
    if name in known:
        return None
    return (
        f"unknown GPU name {name!r}; expected one of {', '.join(sorted(known))} "
        "(add the facts of a newer family under karpenter.acceleratorFamilies)"
    )


#: Requirement values checked like the typed fields they stand for (a typo there launches nothing, silently).
_VALUE_CHECKS: dict[str, Callable[[str], str | None]] = {
    "karpenter.k8s.aws/instance-family": family_problem,
    "node.kubernetes.io/instance-type": type_problem,
    "karpenter.k8s.aws/instance-category": category_problem,
    "karpenter.k8s.aws/instance-gpu-name": _gpu_name_problem,
}


#: What the NodePool CRD's CEL rules say of a requirement's operator and values (`crd_rules.json`).
_REQUIREMENTS = crd_rules.RULES["nodePool.requirements"]


def requirement_problems(r: RequirementSpec) -> Problems:
    problems = []
    if problem := requirement_key_problem(r.key):
        problems.append(("key", problem))
    if r.operator in _REQUIREMENTS["operatorsNeedingValues"] and not r.values:
        problems.append(("values", f"operator {r.operator} needs at least one value"))
    if r.operator == "NotIn" and not r.values:
        # The CRD admits it; it excludes nothing, so it is either a mistake or a no-op.
        problems.append(("values", "operator NotIn needs at least one value: with none it excludes nothing"))
    if r.operator in ("Exists", "DoesNotExist") and r.values:
        # The CRD admits them, and Karpenter ignores them.
        problems.append(("values", f"operator {r.operator} takes no values"))
    if r.operator in _REQUIREMENTS["operatorsTakingOneWholeNumber"] and (
        len(r.values) != 1 or not r.values[0].isdigit()
    ):
        problems.append(("values", f"operator {r.operator} takes exactly one whole number"))
    for value in r.values:
        # The CRD states this rule on the list of values (where the API server does not apply it); each value is
        # compared with node labels, which take only label values.
        if not crd_rules.conforms("nodePool.requirementValues", value):
            problems.append(("values", f"expected {LABEL_VALUE_HINT}, got {value!r}"))
    check = _VALUE_CHECKS.get(r.key)
    if check is not None and r.operator in ("In", "NotIn"):
        problems += [("values", problem) for value in r.values if (problem := check(value))]
    if r.min_values is not None:
        if r.operator == "DoesNotExist":
            problems.append(
                (
                    "minValues",
                    (
                        "operator DoesNotExist leaves the key without values, so no choice of instance types has "
                        f"{r.min_values} distinct ones and Karpenter would launch nothing; use it with In, NotIn, "
                        "Exists, Gt or Lt"
                    ),
                )
            )
        elif r.operator in _REQUIREMENTS["minValuesAtMostValuesFor"] and len(r.values) < r.min_values:
            problems.append(
                ("minValues", f"asks for {r.min_values} distinct values but the requirement lists {len(r.values)}")
            )
    return problems


def limit_problems(pool: Pool) -> Problems:
    problems = []
    for key, value in pool.limits.items():
        if key == "aws.amazon.com/neurondevice":
            problems.append((f"limits.{key}", NEURONDEVICE_REASON))
        elif key not in LIMIT_RESOURCES:
            problems.append(
                (
                    f"limits.{key}",
                    f"unknown resource; expected {', '.join(LIMIT_RESOURCES[:-1])} or {LIMIT_RESOURCES[-1]}",
                )
            )
        elif not QUANTITY.fullmatch(value):
            problems.append((f"limits.{key}", f"expected {QUANTITY_HINT}, got {value!r}"))
        elif key in ACCELERATOR_RESOURCES and not value.isdigit():
            problems.append((f"limits.{key}", f"expected a whole number of devices, got {value!r}"))
        elif key == NODES_LIMIT and not value.isdigit():
            problems.append((f"limits.{key}", f"expected a whole number of nodes, got {value!r}"))
    return problems


def _unknown(key: str, values: Iterable[str], known: Iterable[str]) -> Problems:
    allowed = frozenset(known)
    return [
        (key, f"unknown value {value!r}; expected one of {', '.join(sorted(allowed))}")
        for value in values
        if value not in allowed
    ]


def _taint_text(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


_KINDS: dict[Accelerator, tuple[Taint, tuple[str, ...], str]] = {
    "nvidia": (GPU_TAINT, (GPU_RESOURCE,), "GPU"),
    "neuron": (NEURON_TAINT, (NEURON_RESOURCE, NEURON_CORE_RESOURCE), "Neuron"),
}


def accelerator_problems(pool: Pool, kind: Accelerator, because: str, skip: frozenset[str]) -> Problems:
    taint, resources, what = _KINDS[kind]
    wanted = _taint_text(taint)
    problems = []
    same_key = [(i, t) for i, t in enumerate(pool.taints) if t.key == taint.key]
    if "taints" not in skip and not same_key:
        problems.append(
            (
                "taints",
                (
                    f"a {what} pool must carry the {wanted} taint, or ordinary pods fill it and it never scales to "
                    f"zero (this is a {what} pool because of {because})"
                ),
            )
        )
    for index, t in same_key:
        got = t.taint
        if got != taint:
            problems.append(
                (
                    f"taints[{index}]",
                    (
                        f"the {taint.key} taint must be exactly {wanted} (components/scheduling.py): {what} pods "
                        "tolerate that value and effect, and any other keeps them off the node; got "
                        f"{_taint_text(got)}"
                    ),
                )
            )
    if "limits" not in skip and not any(r in pool.limits for r in resources):
        named = " or ".join(resources)
        problems.append(
            (
                "limits",
                (
                    f"a {what} pool must set a limit on {named}: it is the ceiling on {what} spend (this is a {what} "
                    f"pool because of {because})"
                ),
            )
        )
    for index, r in enumerate(pool.requirements):
        if excludes(kind, r.key, r.operator):
            problems.append(
                (f"requirements[{index}]", f"excludes {what} instances, but {because} makes this a {what} pool")
            )
    if "disruption" not in skip:
        for index, budget in enumerate(pool.disruption.budgets):
            if budget.blocks_empty_removal:
                problems.append((f"disruption.budgets[{index}]", idle_budget_message(what)))
    return problems


def idle_budget_message(what: str) -> str:
    return (
        f'nodes "0" without a schedule blocks every voluntary disruption, even removing empty nodes, so idle {what} '
        "nodes keep running (and billing) until expireAfter; give it a schedule and duration (e.g. "
        "{nodes: '0', schedule: '0 8 * * mon-fri', duration: '10h'}), or reasons without Empty"
    )


def pool_problems(pool: Pool, skip: frozenset[str] = frozenset()) -> Problems:
    """Every problem of a pool whose fields have their shapes; checks that read a field in `skip` (one that failed
    to validate) are left out."""
    problems: Problems = []
    problems += _unknown(
        "instanceCategories", pool.instance_categories, accelerators.CPU_CATEGORIES | ACCELERATED_CATEGORIES.keys()
    )
    problems += _unknown("gpuNames", pool.gpu_names, accelerators.nvidia_gpu_names())
    problems += [("instanceFamilies", problem) for f in pool.instance_families if (problem := family_problem(f))]
    problems += [("instanceSizes", problem) for size in pool.instance_sizes if (problem := size_problem(size))]
    problems += [(f"labels.{key}", problem) for key in pool.labels if (problem := label_problem(key))]
    if GPU_SHARE_LABEL in pool.labels:
        # Set by the platform on its shared GPU pools: given to a team pool (or taken off a shared one), it would put
        # what Kueue admits on the shared flavor onto nodes no shared quota stands for.
        problems.append(
            (
                f"labels.{GPU_SHARE_LABEL}",
                (
                    f"{GPU_SHARE_LABEL!r} is set by the platform on the GPU pools every team shares (Kueue's shared "
                    "flavor selects their nodes by it); remove it"
                ),
            )
        )
    problems += limit_problems(pool)
    for index, r in enumerate(pool.requirements):
        problems += [(f"requirements[{index}].{key}", message) for key, message in requirement_problems(r)]
    problems += [(f"disruption.{key}", message) for key, message in pool.disruption.problems()]
    sources = pool.accelerator_sources()
    first = {kind: (path, what) for path, kind, what in reversed(sources)}
    if len(first) == 2:
        path, what = first["neuron"]
        problems.append(
            (path, f"mixes Neuron devices ({what}) with NVIDIA GPUs ({first['nvidia'][1]}); use one pool for each")
        )
    if pool.gpu_names and (unreachable := unreachable_families(pool)):
        problems.append(("instanceFamilies", f"{unreachable} have none of the GPUs in gpuNames {list(pool.gpu_names)}"))
    accelerator = pool.accelerator
    for kind, (taint, _, what) in _KINDS.items():
        if accelerator == kind:
            problems += accelerator_problems(pool, kind, first[kind][1], skip)
        elif any(t.key == taint.key for t in pool.taints):
            problems.append(("taints", f"carries the {taint.key} taint but launches no {what} instances"))
    if accelerator is None and "limits" not in skip and not pool.limits:
        problems.append(
            (
                "limits",
                (
                    "set at least one limit (cpu, memory, nodes): without one Karpenter launches whatever pending pods "
                    "ask for"
                ),
            )
        )
    problems += contradictions(pool, skip)
    problems += training_problems(pool.labels, pool.capacity_types, pool.expire_after, skip)
    return list(dict.fromkeys(problems))


def instance_types(pool: Pool) -> tuple[str, ...] | None:
    """The instance types a pool names (a requirement on node.kubernetes.io/instance-type In, or families times
    sizes), or None when it leaves them open."""
    for r in pool.requirements:
        if r.key == "node.kubernetes.io/instance-type" and r.operator == "In":
            return tuple(r.values)
    if pool.instance_families and pool.instance_sizes:
        return tuple(f"{family}.{size}" for family in pool.instance_families for size in pool.instance_sizes)
    return None


__all__ = ["contradictions", "instance_types", "limit_problems", "pool_problems", "requirement_problems"]
