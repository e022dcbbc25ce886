"""Value types and the base model the NodePool and EC2NodeClass specs share (the pinned Karpenter CRDs' rules, from
`crd_rules.json`), and how a spec is merged into its preset."""

from __future__ import annotations

import re
import reprlib
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, StrictStr
from pydantic.alias_generators import to_camel

from ..config.validation import FieldProblems
from ..config.validation import matches as _matches
from . import crd_rules
from .presets import deep_merge


def quantity_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


#: Go durations as Karpenter accepts them ("30s", "5m", "1h30m"), or "Never" (the NodePool CRD's expireAfter and
#: consolidateAfter, `crd_rules.json`).
DURATION = re.compile(crd_rules.pattern("nodePool.expireAfter"))
DURATION_HINT = "a duration like '30s', '5m', '720h' or 'Never'"
Duration = Annotated[StrictStr, crd_rules.value_check("nodePool.expireAfter", DURATION_HINT)]
#: terminationGracePeriod has no "Never": it is the bound after which Karpenter drains a node whatever its pods'
#: PodDisruptionBudgets say.
GracePeriod = Annotated[
    StrictStr,
    crd_rules.value_check(
        "nodePool.terminationGracePeriod", "a duration like '30s', '15m' or '2h' (there is no 'Never')"
    ),
]
BUDGET_DURATION = re.compile(crd_rules.pattern("nodePool.budgetDuration"))
BUDGET_NODES = re.compile(crd_rules.pattern("nodePool.budgetNodes"))
#: The plain quantities config takes: a subset of what the CRDs' quantity pattern admits (no sign, no exponent, no
#: n/u/E suffixes), so that limits can be compared as numbers (`components/team/quantity.py`).
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|Pi|M|G|T|P)?")
QUANTITY_HINT = "a Kubernetes quantity like '1000', '500m' or '4000Gi'"
Quantity = Annotated[StrictStr, BeforeValidator(quantity_text), _matches(QUANTITY.pattern, QUANTITY_HINT)]
#: A limit value: checked by the pool itself, so a mistyped value does not hide the pool's other problems.
LooseQuantity = Annotated[StrictStr, BeforeValidator(quantity_text)]
Name = Annotated[StrictStr, _matches(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", "a lowercase DNS-1123 name")]
#: Label and taint keys: the NodePool CRD's pattern, and Kubernetes' lengths for a qualified name (a prefix of at
#: most 253 characters, a name of at most 63), which the API server checks on the node the pool's taints and labels
#: end up on.
LABEL_KEY_HINT = (
    "a Kubernetes label key like 'eksml.io/team': an optional DNS prefix and '/', then a name of at most 63 letters, "
    "digits, '-', '_' or '.'"
)


def label_key_ok(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return crd_rules.conforms("nodePool.taintKey", key) and len(prefix) <= 253 and len(name) <= 63


def _label_key(key: str) -> str:
    if not label_key_ok(key):
        raise ValueError(f"expected {LABEL_KEY_HINT}, got {key!r}")
    return key


_label_key.expected = "a Kubernetes label key"  # type: ignore[attr-defined]  # what the configuration reference shows
LabelKey = Annotated[StrictStr, AfterValidator(_label_key)]
LABEL_VALUE_HINT = "a label value of at most 63 letters, digits, '-', '_' or '.'"
LabelValue = Annotated[StrictStr, crd_rules.value_check("nodePool.labelValue", LABEL_VALUE_HINT)]


def _taint_value(value: str) -> str:
    # The NodePool CRD's pattern for taint values is that of a qualified name (it admits 'a/b'); the node the taint
    # lands on takes only a label value, so both apply. Empty: no value.
    if value and not (crd_rules.conforms("nodePool.taintValue", value) and label_value_ok(value)):
        raise ValueError(f"expected {LABEL_VALUE_HINT}, got {value!r}")
    return value


_taint_value.expected = "a label value"  # type: ignore[attr-defined]  # what the configuration reference shows
TaintValue = Annotated[StrictStr, AfterValidator(_taint_value)]


def label_value_ok(value: str) -> bool:
    """Whether `value` may be a node label's value (the NodePool CRD's rule for label values)."""
    return crd_rules.conforms("nodePool.labelValue", value)


class Spec(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


def _not_empty(value: tuple[Any, ...]) -> tuple[Any, ...]:
    if not value:
        raise ValueError("expected at least one value")
    return value


#: Not Field(min_length=1): pydantic then also reports an invalid item as "got 0 items".
NOT_EMPTY = AfterValidator(_not_empty)


def apply_preset(data: Any, presets: Mapping[str, Mapping[str, Any]]) -> Any:
    if not isinstance(data, Mapping) or "preset" not in data:
        return data
    preset = data["preset"]
    if not isinstance(preset, str) or preset not in presets:
        raise FieldProblems(
            [("preset", f"expected one of the presets {', '.join(sorted(presets))}, got {reprlib.repr(preset)}")]
        )
    return deep_merge(presets[preset], data)
