"""A small evaluator of identity-based IAM policies, enough to ask "would AWS allow this request?" of the platform's
controller policies: Allow and Deny statements, Action/NotAction and Resource/NotResource with IAM's wildcards, and
the condition operators those policies use. An operator it does not know is an error, never a silent match.

Semantics follow AWS's policy evaluation logic (IAM User Guide, "Policy evaluation logic" and "IAM JSON policy
elements: Condition operators"): an explicit Deny wins, else any Allow, else the implicit deny; within a Condition
every operator and every key must hold (AND), and a key holds when the request's value matches any listed value (OR);
a key absent from the request fails every operator but `Null` (no `...IfExists` here). A request naming several
resources (ec2:CreateSecurityGroup names the VPC and the new group) is allowed only if each resource is.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

ALLOW, IMPLICIT_DENY, EXPLICIT_DENY = "Allow", "ImplicitDeny", "ExplicitDeny"


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _wildcard(pattern: str, value: str, *, case_sensitive: bool) -> bool:
    # IAM's wildcards are `*` (any run of characters, `:` and `/` included) and `?`; nothing else is special.
    escaped = pattern.replace("[", "[[]")
    if case_sensitive:
        return fnmatch.fnmatchcase(value, escaped)
    return fnmatch.fnmatchcase(value.lower(), escaped.lower())


def _string_equals(wanted: str, value: str) -> bool:
    return wanted == value


def _string_like(wanted: str, value: str) -> bool:
    return _wildcard(wanted, value, case_sensitive=True)


def _arn_like(wanted: str, value: str) -> bool:
    # ARN operators compare the six colon-separated parts one by one, each with wildcards; ArnEquals and ArnLike
    # behave alike.
    wanted_parts, value_parts = wanted.split(":", 5), value.split(":", 5)
    return len(wanted_parts) == len(value_parts) == 6 and all(
        _wildcard(w, v, case_sensitive=True) for w, v in zip(wanted_parts, value_parts, strict=True)
    )


#: Operator → how one listed value matches the request's value.
_MATCHERS = {
    "StringEquals": _string_equals,
    "StringLike": _string_like,
    "ArnEquals": _arn_like,
    "ArnLike": _arn_like,
}


def _condition_holds(condition: Mapping[str, Mapping[str, Any]], context: Mapping[str, str]) -> bool:
    for operator, keys in condition.items():
        for key, wanted in keys.items():
            present = key in context
            if operator == "Null":
                if any(str(w).lower() == "true" for w in _as_list(wanted)) == present:
                    return False
                continue
            if operator not in _MATCHERS:
                raise ValueError(f"condition operator {operator!r} is not known to this evaluator")
            if not present or not any(_MATCHERS[operator](str(w), context[key]) for w in _as_list(wanted)):
                return False
    return True


def _applies(statement: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str]) -> bool:
    if "Action" in statement:
        if not any(_wildcard(p, action, case_sensitive=False) for p in _as_list(statement["Action"])):
            return False
    elif any(_wildcard(p, action, case_sensitive=False) for p in _as_list(statement["NotAction"])):
        return False
    if "Resource" in statement:
        if not any(_wildcard(p, resource, case_sensitive=True) for p in _as_list(statement["Resource"])):
            return False
    elif "NotResource" in statement and any(
        _wildcard(p, resource, case_sensitive=True) for p in _as_list(statement["NotResource"])
    ):
        return False
    # Neither: a role's trust policy, whose statements apply to the role they belong to (their Principal is for the
    # caller to check).
    return _condition_holds(statement.get("Condition") or {}, context)


def decide_one(policies: Iterable[Mapping[str, Any]], action: str, resource: str, context: Mapping[str, str]) -> str:
    """AWS's decision on one action against one resource, with the request's condition keys in `context`."""
    allowed = False
    for policy in policies:
        for statement in _as_list(policy["Statement"]):
            if not _applies(statement, action, resource, context):
                continue
            if statement["Effect"] == "Deny":
                return EXPLICIT_DENY
            allowed = True
    return ALLOW if allowed else IMPLICIT_DENY


def decide(
    policy: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    action: str,
    resources: str | Sequence[str],
    context: Mapping[str, str] | None = None,
    per_resource: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The decision on a request naming one or more resources: allowed only if allowed on every one. Condition keys
    that belong to one resource (its tags, its VPC) go in `per_resource`, shared ones in `context`."""
    policies = [policy] if isinstance(policy, Mapping) else list(policy)
    decisions = [
        decide_one(policies, action, resource, {**(context or {}), **((per_resource or {}).get(resource) or {})})
        for resource in _as_list(resources)
    ]
    for outcome in (EXPLICIT_DENY, IMPLICIT_DENY):
        if outcome in decisions:
            return outcome
    return ALLOW
