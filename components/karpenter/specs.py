"""Typed Karpenter NodePool and EC2NodeClass specs and their validation (presets in `nodepool_presets`, name and
schedule checks in `nodepool_families` and `nodepool_validation`).

A pool in stack config names a preset and overrides it field by field:

    karpenter:
      nodePools:
        gpu-inference:
          preset: gpu-inference
          limits: {nvidia.com/gpu: 8}

Mappings merge into the preset's; lists replace the preset's. The merged spec is then validated as a whole, so a
preset can never hide a mistake (a GPU pool without its taint or GPU limit is an error whatever its origin).
"""

from __future__ import annotations

import difflib
import reprlib
from typing import Annotated, Any, Literal, Mapping

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    model_validator,
)
from pydantic.alias_generators import to_camel

from components.config.validation import FieldProblems
from components.config.validation import matches as _matches
from components.karpenter import accelerators as gpu_facts
from components.karpenter.families import Accelerator, accelerator_of, category_problem, family_problem, type_problem
from components.karpenter.presets import (
    DEFAULT_NODE_CLASSES,
    DEFAULT_NODE_POOLS,
    NODE_CLASS_PRESETS,
    NODE_POOL_PRESETS,
    deep_merge,
)
from components.karpenter.validation import cron_problem, excludes, label_problem, requirement_accelerators
from components.scheduling import GPU_RESOURCE, GPU_TAINT, NEURON_RESOURCE, NEURON_TAINT, Taint


def _quantity_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


#: Go durations as Karpenter accepts them ("30s", "5m", "1h30m"), or "Never".
Duration = Annotated[StrictStr, _matches(r"([0-9]+(s|m|h))+|Never", "a duration like '30s', '5m', '720h' or 'Never'")]
#: terminationGracePeriod has no "Never" (NodePool CRD pattern ^([0-9]+(s|m|h))+$): it is the bound after which
#: Karpenter drains a node whatever its pods' PodDisruptionBudgets say.
GracePeriod = Annotated[StrictStr, _matches(r"([0-9]+(s|m|h))+", "a duration like '30s', '15m' or '2h' (there is no 'Never')")]
BudgetDuration = Annotated[StrictStr, _matches(r"(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?", "a duration in hours and minutes like '8h' or '1h30m'")]
BudgetNodes = Annotated[
    StrictStr, BeforeValidator(_quantity_text), _matches(r"(100|[0-9]{1,2})%|[0-9]+", "a node count like '1' or a percentage like '10%'")
]
Quantity = Annotated[
    StrictStr,
    BeforeValidator(_quantity_text),
    _matches(r"[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|Pi|M|G|T|P)?", "a Kubernetes quantity like '1000', '500m' or '4000Gi'"),
]
Name = Annotated[StrictStr, _matches(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", "a lowercase DNS-1123 name")]
LabelKey = Annotated[
    StrictStr,
    _matches(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", "a Kubernetes label key"),
]
LabelValue = Annotated[
    StrictStr, _matches(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?", "a label value of at most 63 letters, digits, '-', '_' or '.'")
]

#: Requirement keys Karpenter (AWS) and Kubernetes understand on a NodePool.
REQUIREMENT_KEYS = frozenset(
    {
        "karpenter.sh/capacity-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        *(
            f"karpenter.k8s.aws/{name}"
            for name in (
                "instance-category", "instance-family", "instance-generation", "instance-size", "instance-cpu",
                "instance-cpu-manufacturer", "instance-memory", "instance-hypervisor", "instance-local-nvme",
                "instance-network-bandwidth", "instance-ebs-bandwidth", "instance-encryption-in-transit-supported",
                "instance-gpu-name", "instance-gpu-manufacturer", "instance-gpu-count", "instance-gpu-memory",
                "instance-accelerator-name", "instance-accelerator-manufacturer", "instance-accelerator-count",
                "instance-tenancy", "capacity-reservation-id", "capacity-reservation-type",
            )
        ),
    }
)
_VALUE_OPERATORS = {"In", "NotIn"}
_NUMERIC_OPERATORS = {"Gt", "Lt", "Gte", "Lte"}


def _gpu_name_problem(name: str) -> str | None:
    known = gpu_facts.NVIDIA_GPU_NAMES
    return None if name in known else f"unknown GPU name {name!r}; expected one of {', '.join(sorted(known))}"


#: Requirement values checked like the typed fields they stand for (a typo there launches nothing, silently).
_VALUE_CHECKS = {
    "karpenter.k8s.aws/instance-family": family_problem,
    "node.kubernetes.io/instance-type": type_problem,
    "karpenter.k8s.aws/instance-category": category_problem,
    "karpenter.k8s.aws/instance-gpu-name": _gpu_name_problem,
}


class _Spec(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class TaintSpec(_Spec):
    key: LabelKey
    value: StrictStr = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class RequirementSpec(_Spec):
    """An extra scheduling requirement, beyond the typed fields of a pool."""

    key: StrictStr
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
    values: tuple[StrictStr, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> RequirementSpec:
        problems = []
        if self.key not in REQUIREMENT_KEYS:
            hint = difflib.get_close_matches(self.key, sorted(REQUIREMENT_KEYS), n=1)
            suggestion = f"did you mean {hint[0]!r}?" if hint else "see the README for the known keys"
            problems.append(("key", f"unknown requirement key {self.key!r}; {suggestion}"))
        if self.operator in _VALUE_OPERATORS and not self.values:
            problems.append(("values", f"operator {self.operator} needs at least one value"))
        if self.operator in {"Exists", "DoesNotExist"} and self.values:
            problems.append(("values", f"operator {self.operator} takes no values"))
        if self.operator in _NUMERIC_OPERATORS and (len(self.values) != 1 or not self.values[0].isdigit()):
            problems.append(("values", f"operator {self.operator} takes exactly one whole number"))
        check = _VALUE_CHECKS.get(self.key)
        if check is not None and self.operator in _VALUE_OPERATORS:
            problems += [("values", problem) for value in self.values if (problem := check(value))]
        if problems:
            raise FieldProblems(problems)
        return self


class BudgetSpec(_Spec):
    """At most `nodes` of the pool may be disrupted at once (while `schedule` + `duration` is active, if given)."""

    nodes: BudgetNodes
    schedule: StrictStr | None = None
    duration: BudgetDuration | None = None
    reasons: tuple[Literal["Underutilized", "Empty", "Drifted"], ...] | None = None

    @model_validator(mode="after")
    def _check(self) -> BudgetSpec:
        problems = []
        if (self.schedule is None) != (self.duration is None):
            problems.append(("duration" if self.duration is None else "schedule", "schedule and duration go together"))
        if self.schedule is not None and (problem := cron_problem(self.schedule)):
            problems.append(("schedule", problem))
        if problems:
            raise FieldProblems(problems)
        return self


class DisruptionSpec(_Spec):
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"]
    consolidate_after: Duration
    budgets: tuple[BudgetSpec, ...]

    @model_validator(mode="after")
    def _check(self) -> DisruptionSpec:
        if not self.budgets:
            raise FieldProblems([("budgets", "needs at least one budget; without one Karpenter may disrupt 10% of the pool at once")])
        return self


def _not_empty(value: tuple[str, ...]) -> tuple[str, ...]:
    if not value:
        raise ValueError("expected at least one value")
    return value


#: Not Field(min_length=1): pydantic then also reports an invalid item as "got 0 items".
_NOT_EMPTY = AfterValidator(_not_empty)


def _apply_preset(data: Any, presets: Mapping[str, Mapping[str, Any]]) -> Any:
    if not isinstance(data, Mapping) or "preset" not in data:
        return data
    preset = data["preset"]
    if not isinstance(preset, str) or preset not in presets:
        raise FieldProblems(
            [("preset", f"expected one of the presets {', '.join(sorted(presets))}, got {reprlib.repr(preset)}")]
        )
    return deep_merge(presets[preset], data)


class NodePoolSpec(_Spec):
    """One Karpenter NodePool: what instances it may launch, how they are tainted, capped and disrupted."""

    preset: StrictStr | None = None
    node_class: Name
    weight: StrictInt | None = Field(default=None, ge=1, le=100)
    capacity_types: Annotated[tuple[Literal["spot", "on-demand", "reserved"], ...], _NOT_EMPTY]
    architectures: Annotated[tuple[Literal["amd64", "arm64"], ...], _NOT_EMPTY] = ("amd64",)
    instance_categories: tuple[StrictStr, ...] = ()
    generation_above: StrictInt | None = Field(default=None, ge=1)
    instance_families: tuple[StrictStr, ...] = ()
    instance_sizes: tuple[StrictStr, ...] = ()
    gpu_names: tuple[StrictStr, ...] = ()
    zones: tuple[StrictStr, ...] = ()
    requirements: tuple[RequirementSpec, ...] = ()
    taints: tuple[TaintSpec, ...] = ()
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    limits: dict[StrictStr, Quantity] = Field(min_length=1)
    disruption: DisruptionSpec
    expire_after: Duration = "720h"
    #: How long Karpenter waits for a node's pods (and their PodDisruptionBudgets) before it terminates the node
    #: anyway. Karpenter has no default: without one, a pod whose budget never allows eviction keeps a node, and a
    #: NodePool being deleted, forever.
    termination_grace_period: GracePeriod = "15m"

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        return _apply_preset(data, NODE_POOL_PRESETS)

    def accelerator_sources(self) -> list[tuple[str, Accelerator, str]]:
        """Every field that makes this an accelerator pool: (key path, accelerator, what it says)."""
        sources: list[tuple[str, Accelerator, str]] = []
        if self.gpu_names:
            sources.append(("gpuNames", "nvidia", f"gpuNames {list(self.gpu_names)}"))
        for family in self.instance_families:
            if kind := accelerator_of(family):
                sources.append(("instanceFamilies", kind, f"instance family {family!r}"))
        for resource, kind in ((GPU_RESOURCE, "nvidia"), (NEURON_RESOURCE, "neuron")):
            if resource in self.limits:
                sources.append((f"limits.{resource}", kind, f"the {resource} limit"))
        for index, r in enumerate(self.requirements):
            for kind in sorted(requirement_accelerators(r.key, r.operator, r.values)):
                shown = f"{r.key} {r.operator}" + (f" {list(r.values)}" if r.values else "")
                sources.append((f"requirements[{index}]", kind, f"the requirement {shown}"))
        return sources

    @property
    def gpu_limit(self) -> int | None:
        """The most NVIDIA GPUs the pool runs at once (its GPU spend ceiling); None for a pool without that limit."""
        limit = self.limits.get(GPU_RESOURCE)
        return int(limit) if limit is not None else None

    @property
    def accelerator(self) -> Accelerator | None:
        """Which accelerator the pool launches, from its GPU names, families, limits and requirements."""
        kinds = {kind for _, kind, _ in self.accelerator_sources()}
        return "nvidia" if "nvidia" in kinds else "neuron" if "neuron" in kinds else None

    @model_validator(mode="after")
    def _check(self) -> NodePoolSpec:
        problems: list[tuple[str, str]] = []
        problems += _unknown("instanceCategories", self.instance_categories, gpu_facts.CPU_CATEGORIES)
        problems += _unknown("gpuNames", self.gpu_names, gpu_facts.NVIDIA_GPU_NAMES)
        problems += [("instanceFamilies", problem) for f in self.instance_families if (problem := family_problem(f))]
        problems += [(f"labels.{key}", problem) for key in self.labels if (problem := label_problem(key))]
        for key in self.limits:
            if key not in {"cpu", "memory", GPU_RESOURCE, NEURON_RESOURCE}:
                problems.append((f"limits.{key}", f"unknown resource; expected cpu, memory, {GPU_RESOURCE} or {NEURON_RESOURCE}"))
        sources = self.accelerator_sources()
        first = {kind: (path, what) for path, kind, what in reversed(sources)}
        if len(first) == 2:
            path, what = first["neuron"]
            problems.append((path, f"mixes Neuron devices ({what}) with NVIDIA GPUs ({first['nvidia'][1]}); use one pool for each"))
        if self.gpu_names:
            unreachable = sorted(
                f for f in set(self.instance_families) & gpu_facts.NVIDIA_FAMILIES
                if gpu_facts.ACCELERATED_FAMILIES[f].gpu_name not in self.gpu_names
            )
            if unreachable:
                problems.append(("instanceFamilies", f"{unreachable} have none of the GPUs in gpuNames {list(self.gpu_names)}"))
        accelerator = self.accelerator
        for kind, taint, resource, what in (("nvidia", GPU_TAINT, GPU_RESOURCE, "GPU"), ("neuron", NEURON_TAINT, NEURON_RESOURCE, "Neuron")):
            if accelerator == kind:
                problems += _accelerator_problems(self, kind, taint, resource, what, first[kind][1])
            elif any(t.key == taint.key for t in self.taints):
                problems.append(("taints", f"carries the {taint.key} taint but launches no {what} instances"))
        if problems:
            raise FieldProblems(problems)
        return self


def _unknown(key: str, values: tuple[str, ...], known: frozenset[str]) -> list[tuple[str, str]]:
    return [
        (key, f"unknown value {value!r}; expected one of {', '.join(sorted(known))}") for value in values if value not in known
    ]


def _taint_text(key: str, value: str, effect: str) -> str:
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _accelerator_problems(
    pool: NodePoolSpec, kind: Accelerator, taint: Taint, resource: str, what: str, because: str
) -> list[tuple[str, str]]:
    problems = []
    wanted = _taint_text(taint.key, taint.value, taint.effect)
    same_key = [(i, t) for i, t in enumerate(pool.taints) if t.key == taint.key]
    if not same_key:
        problems.append(
            (
                "taints",
                f"a {what} pool must carry the {wanted} taint, or ordinary pods fill it and it never scales to zero "
                f"(this is a {what} pool because of {because})",
            )
        )
    for index, t in same_key:
        if (t.value, t.effect) != (taint.value, taint.effect):
            problems.append(
                (
                    f"taints[{index}]",
                    f"the {taint.key} taint must be exactly {wanted} (components/scheduling.py): {what} pods tolerate that "
                    f"value and effect, and any other keeps them off the node; got {_taint_text(t.key, t.value, t.effect)}",
                )
            )
    if resource not in pool.limits:
        problems.append(
            ("limits", f"a {what} pool must set a limit on {resource}: it is the ceiling on {what} spend (this is a {what} pool because of {because})")
        )
    elif not pool.limits[resource].isdigit():
        problems.append((f"limits.{resource}", f"expected a whole number of devices, got {pool.limits[resource]!r}"))
    for index, r in enumerate(pool.requirements):
        if excludes(kind, r.key, r.operator):
            problems.append((f"requirements[{index}]", f"excludes {what} instances, but {because} makes this a {what} pool"))
    return problems


class NodeClassSpec(_Spec):
    """One EC2NodeClass: the AMI family and the root volume of the nodes that use it."""

    preset: StrictStr | None = None
    ami_family: Literal["al2023", "bottlerocket"] = "al2023"
    # gp3 limits (EBS User Guide, "General Purpose SSD volumes"; raised in September 2025 from 16 TiB, 16,000 IOPS and
    # 1,000 MiB/s): 1 GiB-64 TiB, 3,000-80,000 IOPS, 125-2,000 MiB/s, at most 500 IOPS per GiB above the 3,000
    # baseline and 0.25 MiB/s per provisioned IOPS. The size stops at 59000 because the EC2NodeClass schema's
    # volumeSize pattern does; the 20 GiB floor is this platform's, not EC2's.
    root_volume_gib: StrictInt = Field(default=80, ge=20, le=59000)
    root_volume_iops: StrictInt = Field(default=3000, ge=3000, le=80000)
    root_volume_throughput_mibps: StrictInt = Field(default=125, ge=125, le=2000)
    #: 1 keeps instance credentials out of pods' reach; 2 only for workloads that must read instance metadata.
    imds_hop_limit: Literal[1, 2] = 1

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        return _apply_preset(data, NODE_CLASS_PRESETS)

    @model_validator(mode="after")
    def _check(self) -> NodeClassSpec:
        # EC2 refuses these at launch (InvalidParameterCombination), which Karpenter only reports as a failed
        # NodeClaim: every node of the class fails to start.
        problems = []
        gib, iops, mibps = self.root_volume_gib, self.root_volume_iops, self.root_volume_throughput_mibps
        if iops > max(3000, 500 * gib):
            problems.append(
                ("rootVolumeIops", f"{iops} IOPS needs rootVolumeGib of at least {-(-iops // 500)} (gp3 allows 500 IOPS per GiB); rootVolumeGib is {gib}")
            )
        if mibps * 4 > iops:
            problems.append(
                (
                    "rootVolumeThroughputMibps",
                    f"{mibps} MiB/s needs rootVolumeIops of at least {mibps * 4} (gp3 allows 0.25 MiB/s per IOPS); rootVolumeIops is {iops}",
                )
            )
        if problems:
            raise FieldProblems(problems)
        return self


__all__ = [
    "DEFAULT_NODE_CLASSES", "DEFAULT_NODE_POOLS", "NODE_CLASS_PRESETS", "NODE_POOL_PRESETS",
    "BudgetSpec", "DisruptionSpec", "NodeClassSpec", "NodePoolSpec", "RequirementSpec", "TaintSpec",
]
