"""The value rules of the pinned Karpenter CRDs, as stack config applies them (pure).

`crd_rules.json` beside this module holds, for each NodePool and EC2NodeClass field config checks, the constraints the
CRD states (patterns, lengths, enums, bounds) and what its CEL rules say (reserved label domains and the keys allowed
in them, restricted keys, which operators take which values). It is derived from the CRDs by
`components/tools/karpenter_crd_rules.py`, and a test derives it again from the pinned CRDs and compares, so a
Karpenter bump that changes a rule fails there rather than at `pulumi up`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from pydantic import AfterValidator

DATA = "crd_rules.json"

_DOCUMENT = json.loads(resources.files(__package__ or "").joinpath(DATA).read_text(encoding="utf-8"))

#: Rules by name (`nodePool.requirementKey`, ...), each with the CRD and schema path it comes from.
RULES: Mapping[str, Mapping[str, Any]] = MappingProxyType(_DOCUMENT["rules"])


@cache
def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(RULES[name]["pattern"])


def pattern(name: str) -> str:
    return str(RULES[name]["pattern"])


def conforms(name: str, value: str) -> bool:
    """Whether `value` passes the schema constraints of the field `name` (pattern, as the API server applies it:
    found anywhere, anchored only where the pattern says; and lengths)."""
    rule = RULES[name]
    if "pattern" in rule and _pattern(name).search(value) is None:
        return False
    return rule.get("minLength", 0) <= len(value) <= rule.get("maxLength", len(value))


def value_check(name: str, what: str) -> AfterValidator:
    """A field validator for the CRD field `name`: the error says what was expected."""

    def check(value: str) -> str:
        if not conforms(name, value):
            raise ValueError(f"expected {what}, got {value!r}")
        return value

    check.expected = what  # type: ignore[attr-defined]  # what the configuration reference calls the type
    return AfterValidator(check)


def enum(name: str) -> tuple[str, ...]:
    return tuple(RULES[name]["enum"])


def bounds(name: str) -> tuple[int, int]:
    return int(RULES[name]["minimum"]), int(RULES[name]["maximum"])


def allowed_in_reserved_domains(name: str) -> frozenset[str]:
    """The keys the CRD's CEL rules allow in the domains they reserve."""
    rule = RULES[name]
    allowed = {key for keys in rule.get("reservedDomains", {}).values() for key in keys}
    return frozenset(allowed - set(rule.get("restrictedKeys", ())))


def tag_problem(key: str) -> str | None:
    """Why the EC2NodeClass CRD refuses the tag key `key`, or None."""
    rule = RULES["ec2NodeClass.tags"]
    if rule.get("nonEmptyKeys") and not key:
        return "empty tag keys are refused"
    if key in rule.get("restrictedKeys", ()) or key.startswith(tuple(rule.get("restrictedPrefixes", ()))):
        return "is reserved for EKS and Karpenter"
    return None


__all__ = [
    "RULES",
    "allowed_in_reserved_domains",
    "bounds",
    "conforms",
    "enum",
    "pattern",
    "tag_problem",
    "value_check",
]
