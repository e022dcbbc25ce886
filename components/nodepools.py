"""Typed Karpenter NodePool and EC2NodeClass specs, the presets users start from, and their validation.

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
import re
from typing import Annotated, Any, Literal, Mapping

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StrictStr, model_validator
from pydantic.alias_generators import to_camel

from . import gpu_facts
from .validation import FieldProblems
from .validation import matches as _matches
from .scheduling import GPU_RESOURCE, GPU_TAINT, NEURON_RESOURCE, NEURON_TAINT, WORKLOAD_LABEL


def _quantity_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


#: Go durations as Karpenter accepts them ("30s", "5m", "1h30m"), or "Never".
Duration = Annotated[StrictStr, _matches(r"([0-9]+(s|m|h))+|Never", "a duration like '30s', '5m', '720h' or 'Never'")]
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

_CRON_FIELD = r"[0-9*,/\-a-zA-Z?]+"
_CRON = re.compile(rf"@(annually|yearly|monthly|weekly|daily|midnight|hourly)|{_CRON_FIELD}( {_CRON_FIELD}){{4}}")

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
        if self.schedule is not None and not _CRON.fullmatch(self.schedule):
            problems.append(("schedule", f"expected a cron schedule like '0 9 * * mon-fri' or '@daily', got {self.schedule!r}"))
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


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _apply_preset(data: Any, presets: Mapping[str, Mapping[str, Any]]) -> Any:
    if not isinstance(data, Mapping) or "preset" not in data:
        return data
    preset = data["preset"]
    if preset not in presets:
        raise ValueError(f"unknown preset {preset!r}; expected one of {', '.join(sorted(presets))}")
    return _deep_merge(presets[preset], data)


class NodePoolSpec(_Spec):
    """One Karpenter NodePool: what instances it may launch, how they are tainted, capped and disrupted."""

    preset: StrictStr | None = None
    node_class: Name
    weight: StrictInt | None = Field(default=None, ge=1, le=100)
    capacity_types: tuple[Literal["spot", "on-demand", "reserved"], ...] = Field(min_length=1)
    architectures: tuple[Literal["amd64", "arm64"], ...] = Field(default=("amd64",), min_length=1)
    instance_categories: tuple[StrictStr, ...] = ()
    generation_above: StrictInt | None = Field(default=None, ge=1)
    instance_families: tuple[StrictStr, ...] = ()
    instance_sizes: tuple[StrictStr, ...] = ()
    gpu_names: tuple[StrictStr, ...] = ()
    zones: tuple[StrictStr, ...] = ()
    requirements: tuple[RequirementSpec, ...] = ()
    taints: tuple[TaintSpec, ...] = ()
    labels: dict[LabelKey, StrictStr] = Field(default_factory=dict)
    limits: dict[StrictStr, Quantity] = Field(min_length=1)
    disruption: DisruptionSpec
    expire_after: Duration = "720h"
    termination_grace_period: Duration | None = None

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        return _apply_preset(data, NODE_POOL_PRESETS)

    @property
    def accelerator(self) -> Literal["nvidia", "neuron"] | None:
        """Which accelerator the pool launches, from its families, GPU names and limits."""
        families = set(self.instance_families)
        if self.gpu_names or families & gpu_facts.NVIDIA_FAMILIES or GPU_RESOURCE in self.limits:
            return "nvidia"
        if families & gpu_facts.NEURON_FAMILIES or NEURON_RESOURCE in self.limits:
            return "neuron"
        return None

    @model_validator(mode="after")
    def _check(self) -> NodePoolSpec:
        problems: list[tuple[str, str]] = []
        problems += _unknown("instanceCategories", self.instance_categories, gpu_facts.CPU_CATEGORIES)
        problems += _unknown("gpuNames", self.gpu_names, gpu_facts.NVIDIA_GPU_NAMES)
        families = set(self.instance_families)
        for family in self.instance_families:
            if not re.fullmatch(r"[a-z]+[0-9][a-z0-9-]*", family):
                problems.append(("instanceFamilies", f"{family!r} is not an instance family like 'g5' or 'm7i'"))
        for key in self.limits:
            if key not in {"cpu", "memory", GPU_RESOURCE, NEURON_RESOURCE}:
                problems.append((f"limits.{key}", f"unknown resource; expected cpu, memory, {GPU_RESOURCE} or {NEURON_RESOURCE}"))
        accelerator = self.accelerator
        if families & gpu_facts.NVIDIA_FAMILIES and families & gpu_facts.NEURON_FAMILIES:
            problems.append(("instanceFamilies", "mixes NVIDIA and Neuron families; use one pool for each"))
        if self.gpu_names:
            unreachable = sorted(
                f for f in families & gpu_facts.NVIDIA_FAMILIES
                if gpu_facts.ACCELERATED_FAMILIES[f].gpu_name not in self.gpu_names
            )
            if unreachable:
                problems.append(("instanceFamilies", f"{unreachable} have none of the GPUs in gpuNames {list(self.gpu_names)}"))
        if accelerator == "nvidia":
            problems += _accelerator_problems(self, GPU_TAINT.key, GPU_RESOURCE, "GPU")
        if accelerator == "neuron":
            problems += _accelerator_problems(self, NEURON_TAINT.key, NEURON_RESOURCE, "Neuron")
        if accelerator is None and any(t.key == GPU_TAINT.key for t in self.taints):
            problems.append(("taints", f"carries the {GPU_TAINT.key} taint but launches no GPU instances"))
        if problems:
            raise FieldProblems(problems)
        return self


def _unknown(key: str, values: tuple[str, ...], known: frozenset[str]) -> list[tuple[str, str]]:
    return [
        (key, f"unknown value {value!r}; expected one of {', '.join(sorted(known))}") for value in values if value not in known
    ]


def _accelerator_problems(pool: NodePoolSpec, taint_key: str, resource: str, what: str) -> list[tuple[str, str]]:
    problems = []
    if not any(t.key == taint_key and t.effect == "NoSchedule" for t in pool.taints):
        problems.append(
            ("taints", f"a {what} pool must carry the {taint_key}=true:NoSchedule taint, or ordinary pods fill it and it never scales to zero")
        )
    if resource not in pool.limits:
        problems.append(("limits", f"a {what} pool must set a {resource} limit: it is the ceiling on {what} spend"))
    elif not pool.limits[resource].isdigit():
        problems.append((f"limits.{resource}", f"expected a whole number of devices, got {pool.limits[resource]!r}"))
    return problems


class NodeClassSpec(_Spec):
    """One EC2NodeClass: the AMI family and the root volume of the nodes that use it."""

    preset: StrictStr | None = None
    ami_family: Literal["al2023", "bottlerocket"] = "al2023"
    root_volume_gib: StrictInt = Field(default=80, ge=20, le=16384)
    root_volume_iops: StrictInt = Field(default=3000, ge=3000, le=16000)
    root_volume_throughput_mibps: StrictInt = Field(default=125, ge=125, le=1000)
    #: 1 keeps instance credentials out of pods' reach; 2 only for workloads that must read instance metadata.
    imds_hop_limit: Literal[1, 2] = 1

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        return _apply_preset(data, NODE_CLASS_PRESETS)


# ------------------------------------------------------------------------------------------------------ presets

_TEN_PERCENT_AT_A_TIME = [{"nodes": "10%"}]

#: Presets, written as a user would write them in stack config.
_BASE_POOL_PRESETS: Mapping[str, Mapping[str, Any]] = {
    # Everything that is not a GPU job: cheapest fitting c/m/r instance of a recent generation, either arch.
    "cpu-general": {
        "nodeClass": "default",
        "capacityTypes": ["spot", "on-demand"],
        "architectures": ["amd64", "arm64"],
        "instanceCategories": ["c", "m", "r"],
        "generationAbove": 5,
        "labels": {WORKLOAD_LABEL: "general"},
        "limits": {"cpu": "1000", "memory": "4000Gi"},
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m", "budgets": _TEN_PERCENT_AT_A_TIME},
    },
    # Inference on T4 / A10G / L4 class GPUs, spot or on-demand, released quickly once idle.
    "gpu-inference": {
        "nodeClass": "gpu",
        "capacityTypes": ["spot", "on-demand"],
        "gpuNames": ["t4", "a10g", "l4"],
        "instanceSizes": ["xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge"],
        "labels": {WORKLOAD_LABEL: "inference"},
        "taints": [GPU_TAINT.as_dict()],
        "limits": {GPU_RESOURCE: "16"},
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "5m", "budgets": [{"nodes": "20%"}]},
    },
    # Training on A100 / H100 class GPUs: on-demand only, never consolidated while busy, no voluntary disruption
    # during working hours, at most one node at a time otherwise, and drift replacement only at weekends.
    "gpu-training": {
        "nodeClass": "gpu-training",
        "capacityTypes": ["on-demand"],
        "gpuNames": ["a100", "h100"],
        "labels": {WORKLOAD_LABEL: "training"},
        "taints": [GPU_TAINT.as_dict()],
        "limits": {GPU_RESOURCE: "16"},
        "expireAfter": "720h",
        "terminationGracePeriod": "2h",
        "disruption": {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "30m",
            "budgets": [
                {"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "12h"},
                {"nodes": "1"},
                {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 0 * * mon-fri", "duration": "24h"},
            ],
        },
    },
    # Inferentia / Trainium, tainted and capped like the GPU pools.
    "neuron": {
        "nodeClass": "gpu",
        "capacityTypes": ["on-demand"],
        "instanceFamilies": ["inf2", "trn1"],
        "labels": {WORKLOAD_LABEL: "inference"},
        "taints": [NEURON_TAINT.as_dict()],
        "limits": {NEURON_RESOURCE: "16"},
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m", "budgets": [{"nodes": "1"}]},
    },
}


def _inference_tier(family: str, capacity: str, weight: int) -> dict[str, Any]:
    tier = _deep_merge(_BASE_POOL_PRESETS["gpu-inference"], {"weight": weight, "capacityTypes": [capacity]})
    tier["instanceFamilies"] = [family]
    tier["gpuNames"] = [gpu_facts.ACCELERATED_FAMILIES[family].gpu_name]
    return tier


#: Spot-first inference tiers: Karpenter tries the highest weight first and falls back in order.
NODE_POOL_PRESETS: Mapping[str, Mapping[str, Any]] = {
    **_BASE_POOL_PRESETS,
    "gpu-inference-a10g-spot": _inference_tier("g5", "spot", 100),
    "gpu-inference-t4-spot": _inference_tier("g4dn", "spot", 50),
    "gpu-inference-a10g-on-demand": _inference_tier("g5", "on-demand", 10),
}

NODE_CLASS_PRESETS: Mapping[str, Mapping[str, Any]] = {
    "default": {"amiFamily": "al2023", "rootVolumeGib": 80},
    # Container images with CUDA are large; the AL2023 alias picks the NVIDIA (or Neuron) variant by instance type.
    "gpu": {"amiFamily": "al2023", "rootVolumeGib": 200, "rootVolumeIops": 6000, "rootVolumeThroughputMibps": 250},
    "gpu-training": {"amiFamily": "al2023", "rootVolumeGib": 500, "rootVolumeIops": 10000, "rootVolumeThroughputMibps": 500},
}

DEFAULT_NODE_CLASSES = {name: {"preset": name} for name in ("default", "gpu", "gpu-training")}
DEFAULT_NODE_POOLS = {name: {"preset": name} for name in ("cpu-general", "gpu-inference")}
