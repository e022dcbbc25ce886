"""Value types and the base model the NodePool and EC2NodeClass specs share (patterns as the pinned Karpenter CRDs
write them), and how a spec is merged into its preset."""

from __future__ import annotations

import re
import reprlib
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, StrictStr
from pydantic.alias_generators import to_camel

from components.config.validation import FieldProblems
from components.config.validation import matches as _matches
from components.karpenter.presets import deep_merge


def quantity_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


#: Go durations as Karpenter accepts them ("30s", "5m", "1h30m"), or "Never".
DURATION = re.compile(r"([0-9]+(s|m|h))+|Never")
DURATION_HINT = "a duration like '30s', '5m', '720h' or 'Never'"
Duration = Annotated[StrictStr, _matches(DURATION.pattern, DURATION_HINT)]
#: terminationGracePeriod has no "Never" (NodePool CRD pattern ^([0-9]+(s|m|h))+$): it is the bound after which
#: Karpenter drains a node whatever its pods' PodDisruptionBudgets say.
GracePeriod = Annotated[
    StrictStr, _matches(r"([0-9]+(s|m|h))+", "a duration like '30s', '15m' or '2h' (there is no 'Never')")
]
BUDGET_DURATION = re.compile(r"(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?")
BUDGET_NODES = re.compile(r"(100|[0-9]{1,2})%|[0-9]+")
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|Pi|M|G|T|P)?")
QUANTITY_HINT = "a Kubernetes quantity like '1000', '500m' or '4000Gi'"
Quantity = Annotated[StrictStr, BeforeValidator(quantity_text), _matches(QUANTITY.pattern, QUANTITY_HINT)]
#: A limit value: checked by the pool itself, so a mistyped value does not hide the pool's other problems.
LooseQuantity = Annotated[StrictStr, BeforeValidator(quantity_text)]
Name = Annotated[StrictStr, _matches(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", "a lowercase DNS-1123 name")]
LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)
LabelKey = Annotated[StrictStr, _matches(LABEL_KEY.pattern, "a Kubernetes label key")]
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?")
LABEL_VALUE_HINT = "a label value of at most 63 letters, digits, '-', '_' or '.'"
LabelValue = Annotated[StrictStr, _matches(LABEL_VALUE.pattern, LABEL_VALUE_HINT)]


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
