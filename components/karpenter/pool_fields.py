"""The parts a NodePool spec is made of: its taints, extra requirements and disruption settings (with budgets).

Each checks its own fields; what they say together is checked by the pool (`pool_checks.py`), which reads these and
the pool's fields (as `Pool` says), and is run by the pool spec (`pool_spec.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

from pydantic import Field, StrictInt, StrictStr

from ..instances.families import Accelerator
from ..scheduling import Taint
from . import crd_rules
from .spec_types import (
    BUDGET_DURATION,
    BUDGET_NODES,
    DURATION,
    DURATION_HINT,
    LabelKey,
    LooseQuantity,
    Spec,
    TaintValue,
)
from .validation import cron_problem


class TaintSpec(Spec):
    key: LabelKey = Field(description="taint key")
    value: TaintValue = Field(default="", description="taint value; empty: none")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        description="what the taint does to pods that do not tolerate it"
    )

    @property
    def taint(self) -> Taint:
        """The taint the pool's nodes carry, as every renderer and check reads it."""
        return Taint(self.key, self.value, self.effect)


#: The NodePool CRD's requirement operators (a test compares them with `crd_rules.json`).
Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
MIN_VALUES = crd_rules.bounds("nodePool.minValues")


class RequirementSpec(Spec):
    """An extra scheduling requirement, beyond the typed fields of a pool. `minValues` asks Karpenter to keep at least
    that many distinct values of the key among the instance types it may choose from (spot flexibility)."""

    key: StrictStr = Field(
        description="a well-known key (listed under [Karpenter NodePools](#karpenter-nodepools)) or a label key of "
        "your own domain, which Karpenter sets on the nodes"
    )
    operator: Operator = Field(description="how the node's value of `key` is compared with `values`")
    values: tuple[StrictStr, ...] = Field(default=(), description="what `operator` compares with")
    min_values: StrictInt | None = Field(
        default=None,
        ge=MIN_VALUES[0],
        le=MIN_VALUES[1],
        description="keep at least this many distinct values of `key` among the instance types Karpenter may choose "
        "from: on instance families it keeps spot pools flexible. With `In` the requirement lists at least that many "
        "values; with `Exists`, `NotIn`, `Gt`, `Lt` the values are those of the instance types the pool allows; "
        "`DoesNotExist` has none to count",
    )

    def shown(self) -> str:
        return f"{self.key} {self.operator}" + (f" {list(self.values)}" if self.values else "")


class BudgetSpec(Spec):
    """At most `nodes` of the pool may be disrupted at once (while `schedule` + `duration` is active, if given)."""

    #: Checked by the budget itself; a count written as a number becomes the string Karpenter expects.
    nodes: LooseQuantity = Field(
        default="10%", description="how many of the pool's nodes: a count like `1` or a percentage like `10%`"
    )
    schedule: StrictStr | None = Field(
        default=None,
        description="when the budget becomes active: standard cron in UTC (minute, hour, day of month, month or "
        "`jan`-`dec`, day of week or `sun`-`sat`; `*`, lists, ranges, steps) or `@yearly`, `@monthly`, `@weekly`, "
        "`@daily`, `@hourly` and their aliases; needs `duration`; none: always active",
    )
    duration: StrictStr | None = Field(
        default=None, description="how long it stays active after each `schedule` start, like `8h` or `1h30m`"
    )
    reasons: tuple[Literal["Underutilized", "Empty", "Drifted"], ...] | None = Field(
        default=None, description="the disruptions it limits; none: all of them"
    )

    @property
    def blocks_empty_removal(self) -> bool:
        """Always active, zero nodes, and for every reason including Empty: not even an idle node is ever removed."""
        zero = self.nodes in ("0", "0%")
        return zero and self.schedule is None and (self.reasons is None or "Empty" in self.reasons)

    def problems(self) -> list[tuple[str, str]]:
        problems = []
        if not BUDGET_NODES.fullmatch(self.nodes):
            problems.append(("nodes", f"expected a node count like '1' or a percentage like '10%', got {self.nodes!r}"))
        if (self.schedule is None) != (self.duration is None):
            problems.append(("duration" if self.duration is None else "schedule", "schedule and duration go together"))
        if self.schedule is not None and (problem := cron_problem(self.schedule)):
            problems.append(("schedule", problem))
        if self.duration is not None and not BUDGET_DURATION.fullmatch(self.duration):
            problems.append(
                ("duration", f"expected a duration in hours and minutes like '8h' or '1h30m', got {self.duration!r}")
            )
        return problems


class DisruptionSpec(Spec):
    """Karpenter's defaults where a pool leaves a field out: consolidate empty or underused nodes at once (`0s`),
    at most 10% of the pool at a time."""

    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = Field(
        default="WhenEmptyOrUnderutilized",
        description="which nodes Karpenter consolidates: `WhenEmpty` only empty ones; the others also underused ones, "
        "repacking their pods onto fewer nodes",
    )
    consolidate_after: StrictStr = Field(
        default="0s",
        description="how long a node stays empty or underused before it is consolidated, e.g. `5m` or `Never`; "
        "shorter releases idle GPUs sooner",
    )
    budgets: tuple[BudgetSpec, ...] = Field(
        default=(BudgetSpec(),),
        description="how many nodes may be disrupted at once; the most restrictive active budget wins, so budgets "
        "protect running jobs from voluntary disruption",
    )

    def problems(self) -> list[tuple[str, str]]:
        problems = []
        if not DURATION.fullmatch(self.consolidate_after):
            problems.append(("consolidateAfter", f"expected {DURATION_HINT}, got {self.consolidate_after!r}"))
        if not self.budgets:
            problems.append(
                (
                    "budgets",
                    (
                        "needs at least one budget; an empty list leaves the pool without any "
                        "(leave the key out for Karpenter's 10%)"
                    ),
                )
            )
        for index, budget in enumerate(self.budgets):
            problems += [(f"budgets[{index}].{key}", message) for key, message in budget.problems()]
        return problems


__all__ = ["BudgetSpec", "DisruptionSpec", "Pool", "RequirementSpec", "TaintSpec"]


class Pool(Protocol):
    """What the checks read of a pool (`pool_spec.NodePoolSpec`, which runs them as it validates)."""

    @property
    def architectures(self) -> tuple[str, ...]: ...
    @property
    def instance_categories(self) -> tuple[str, ...]: ...
    @property
    def generation_above(self) -> int | None: ...
    @property
    def instance_families(self) -> tuple[str, ...]: ...
    @property
    def instance_sizes(self) -> tuple[str, ...]: ...
    @property
    def gpu_names(self) -> tuple[str, ...]: ...
    @property
    def requirements(self) -> tuple[RequirementSpec, ...]: ...
    @property
    def taints(self) -> tuple[TaintSpec, ...]: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def limits(self) -> Mapping[str, Any]: ...
    @property
    def disruption(self) -> DisruptionSpec: ...
    @property
    def capacity_types(self) -> tuple[str, ...]: ...
    @property
    def expire_after(self) -> str: ...
    @property
    def accelerator(self) -> Accelerator | None: ...
    def accelerator_sources(self) -> list[tuple[str, Accelerator, str]]: ...
