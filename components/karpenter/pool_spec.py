"""The typed NodePool spec: what instances a pool may launch, how they are tainted, capped and disrupted.

Shapes (types, enums, ranges) are checked field by field; everything else (values, keys, and what fields say about
each other) by the pool as a whole (`pool_checks.py`), and every problem is reported at once: a mistyped field does
not hide a missing GPU limit or a wrong taint (`NodePoolSpec._every_problem`). Defaults are Karpenter's own where a
pool leaves a field out (`capacityTypes` on-demand, `architectures` amd64, `disruption` as below, `expireAfter`
720h), except `terminationGracePeriod`, which Karpenter leaves unset and this platform bounds (15m).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, StrictStr, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from ..config.errors import issues_from
from ..config.validation import FieldProblems
from ..instances.families import ACCELERATED_CATEGORIES, Accelerator, accelerator_of
from ..scheduling import ACCELERATOR_RESOURCES, GPU_RESOURCE
from . import crd_rules
from .pool_checks import pool_problems
from .pool_fields import DisruptionSpec, RequirementSpec, TaintSpec
from .presets import NODE_POOL_PRESETS
from .spec_types import (
    NOT_EMPTY,
    Duration,
    GracePeriod,
    LabelKey,
    LabelValue,
    LooseQuantity,
    Name,
    Spec,
    apply_preset,
)
from .validation import requirement_accelerators

#: Field aliases whose values did not validate while a pool's problems are collected: checks that read them are
#: skipped rather than run on stand-ins (see `NodePoolSpec._every_problem`).
_FAILED: ContextVar[frozenset[str]] = ContextVar("failed_pool_fields", default=frozenset())
#: Stand-ins for required fields that did not validate, so the rest of the pool can still be checked.
_STAND_INS = {"nodeClass": "unset"}


class NodePoolSpec(Spec):
    """One Karpenter NodePool: what instances it may launch, how they are tainted, capped and disrupted."""

    preset: StrictStr | None = Field(
        default=None,
        description="the preset to start from (see [Karpenter NodePools](#karpenter-nodepools)); the pool's fields "
        "override it, mappings merging into the preset's and lists replacing them. A field left out takes the "
        "preset's value, or else the default shown",
    )
    node_class: Name = Field(description="the name of an entry in `karpenter.nodeClasses` (every preset sets one)")
    weight: StrictInt | None = Field(
        default=None,
        ge=crd_rules.bounds("nodePool.weight")[0],
        le=crd_rules.bounds("nodePool.weight")[1],
        description="higher is tried first among pools that fit: spot tiers above on-demand save 60-70% while spot "
        "lasts; none: no preference",
    )
    capacity_types: Annotated[tuple[Literal["spot", "on-demand", "reserved"], ...], NOT_EMPTY] = Field(
        default=("on-demand",),
        description="spot is far cheaper but can be reclaimed with 2 minutes' notice (handled through the "
        "interruption queue); `reserved` needs the node class's `capacityReservationSelectorTerms` and is paid for "
        "whether used or not",
    )
    architectures: Annotated[tuple[Literal["amd64", "arm64"], ...], NOT_EMPTY] = Field(
        default=("amd64",), description="`arm64` (Graviton) is about 20% cheaper for CPU work"
    )
    instance_categories: tuple[StrictStr, ...] = Field(
        default=(),
        description="e.g. `[c, m, r]`; the accelerated categories `g`, `gr`, `p` (NVIDIA) and `inf`, `trn` (Neuron) "
        "make the pool an accelerator pool; empty: any",
    )
    generation_above: StrictInt | None = Field(
        default=None, ge=1, description="only generations above this, e.g. `5`: newer ones cost less per unit of work"
    )
    instance_families: tuple[StrictStr, ...] = Field(
        default=(), description="e.g. `[g5]`; empty: any. The wider the choice, the cheaper the fit Karpenter finds"
    )
    instance_sizes: tuple[StrictStr, ...] = Field(default=(), description="e.g. `[xlarge, 2xlarge]`; empty: any")
    gpu_names: tuple[StrictStr, ...] = Field(
        default=(),
        description="NVIDIA GPUs by their `karpenter.k8s.aws/instance-gpu-name`, e.g. `[a10g]`, checked against the "
        "known names; makes the pool a GPU pool",
    )
    zones: tuple[StrictStr, ...] = Field(
        default=(),
        description="some of the stack's AZs; empty: all of them. Pin training next to FSx (one AZ) to avoid "
        "cross-AZ traffic",
    )
    requirements: tuple[RequirementSpec, ...] = Field(
        default=(), description="extra scheduling requirements beyond the pool's own fields"
    )
    taints: tuple[TaintSpec, ...] = Field(
        default=(),
        description="node taints. GPU pools must carry exactly `nvidia.com/gpu=true:NoSchedule` (Neuron pools "
        "`aws.amazon.com/neuron=true:NoSchedule`), or ordinary pods fill them and they never scale to zero",
    )
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        description="node labels; those in the domains Karpenter reserves (`karpenter.sh`, `karpenter.k8s.aws`, "
        "`kubernetes.io` and `k8s.io` except `node.kubernetes.io` and the well-known labels) are refused, and so is "
        "`eksml.io/gpu-share`, which the platform sets on the GPU pools every team shares",
    )
    #: Checked by the pool (`pool_checks.limit_problems`).
    limits: dict[StrictStr, LooseQuantity] = Field(
        default_factory=dict,
        description="**the ceiling**: Karpenter launches nothing beyond it. Keys `cpu`, `memory`, `nodes` (a count "
        "of nodes), `nvidia.com/gpu`, `aws.amazon.com/neuron` (devices), `aws.amazon.com/neuroncore` (cores); a GPU "
        "pool must set `nvidia.com/gpu`, a Neuron pool one of the Neuron two, any other pool at least one",
    )
    disruption: DisruptionSpec = Field(
        default=DisruptionSpec(), description="how Karpenter may disrupt the pool's nodes (Karpenter's defaults)"
    )
    expire_after: Duration = Field(
        default="720h",
        description="node lifetime, e.g. `720h` or `Never` (see how AMI patches reach nodes under "
        "[Karpenter NodePools](#karpenter-nodepools)). Expiry drains a node whatever its pods say, so a training pool "
        "(label `eksml.io/workload: training`, where trainer pods run) must be `Never` and may not allow `spot`",
    )
    termination_grace_period: GracePeriod = Field(
        default="15m",
        description="how long a draining node waits for its pods (and their PodDisruptionBudgets) before it is "
        "terminated anyway, e.g. `2h` for training to checkpoint. Karpenter has no default: without one, a pod whose "
        "budget never allows eviction keeps its node, and a NodePool being deleted, forever",
    )

    @model_validator(mode="after")
    def _check(self) -> NodePoolSpec:
        # Defined before _every_problem, so that validator wraps this one.
        if problems := pool_problems(self, skip=_FAILED.get()):
            raise FieldProblems(problems)
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _every_problem(cls, data: Any, handler: Any) -> NodePoolSpec:
        """Validate the pool merged into its preset; when fields fail to validate, check the rest of the pool too and
        report every problem at once."""
        data = apply_preset(data, NODE_POOL_PRESETS)
        try:
            return handler(data)
        except ValidationError as error:
            failed = frozenset(to_camel(str(e["loc"][0])) for e in error.errors() if e["loc"])
            if not failed or not isinstance(data, Mapping) or _FAILED.get():
                raise
            found = [(issue.path, issue.message) for issue in issues_from(error, cls)]
            rest = {k: v for k, v in data.items() if k != "preset" and to_camel(k) not in failed}
            rest.update({k: v for k, v in _STAND_INS.items() if k in failed})
            token = _FAILED.set(failed)
            try:
                handler(rest)
            except ValidationError as second:
                for detail in second.errors():
                    cause = (detail.get("ctx") or {}).get("error")
                    if isinstance(cause, FieldProblems):
                        found += [p for p in cause.problems if p not in found]
            finally:
                _FAILED.reset(token)
            raise FieldProblems(found) from None

    def accelerator_sources(self) -> list[tuple[str, Accelerator, str]]:
        """Every field that makes this an accelerator pool: (key path, accelerator, what it says)."""
        sources: list[tuple[str, Accelerator, str]] = []
        if self.gpu_names:
            sources.append(("gpuNames", "nvidia", f"gpuNames {list(self.gpu_names)}"))
        for category in self.instance_categories:
            if kind := ACCELERATED_CATEGORIES.get(category):
                sources.append(("instanceCategories", kind, f"instance category {category!r}"))
        for family in self.instance_families:
            if kind := accelerator_of(family):
                sources.append(("instanceFamilies", kind, f"instance family {family!r}"))
        for resource in ACCELERATOR_RESOURCES:
            if resource in self.limits:
                sources.append(
                    (f"limits.{resource}", "nvidia" if resource == GPU_RESOURCE else "neuron", f"the {resource} limit")
                )
        for index, r in enumerate(self.requirements):
            for kind in sorted(requirement_accelerators(r.key, r.operator, r.values)):
                sources.append((f"requirements[{index}]", kind, f"the requirement {r.shown()}"))
        return sources

    @property
    def accelerator(self) -> Accelerator | None:
        """Which accelerator the pool launches, from its GPU names, categories, families, limits and requirements."""
        kinds = {kind for _, kind, _ in self.accelerator_sources()}
        return "nvidia" if "nvidia" in kinds else "neuron" if "neuron" in kinds else None

    @property
    def accelerator_limits(self) -> dict[str, int]:
        """The pool's ceilings on accelerators ({} for a pool without any): the most it runs at once."""
        return {r: int(self.limits[r]) for r in ACCELERATOR_RESOURCES if r in self.limits and self.limits[r].isdigit()}

    @property
    def gpu_limit(self) -> int | None:
        """The most NVIDIA GPUs the pool runs at once (its GPU spend ceiling); None for a pool without that limit."""
        return self.accelerator_limits.get(GPU_RESOURCE)


__all__ = ["NodePoolSpec"]
