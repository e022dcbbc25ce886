"""The CrossGuard adapters: each rule of `policy_rules` as a pulumi-policy policy (used by `policies/__main__.py`).

Kept apart from the rules so the rules stay plain Python the offline preview can run without the policy SDK.

pulumi-policy hands a policy each resource's properties wrapped by `proxy.unknown_checking_proxy`: read-only
mappings and sequences (not dicts and lists) that raise `UnknownValueError` when a value the engine does not know yet
is read. The adapters pass them through untouched (copying them would read every value, so one unknown value would
switch the policy off) and tell the rules which error means "unknown": the rules then skip only the resource, or the
part of it, that is unknown. An unknown value a resource rule cannot do without ends that rule for that resource
only; the SDK reports it as an advisory "can't run policy during preview".
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from components.policy.rules import RULES, Resource, Rule

PACK_NAME = "eks-ml-platform"
_LEVELS = {
    "mandatory": EnforcementLevel.MANDATORY,
    "advisory": EnforcementLevel.ADVISORY,
    "disabled": EnforcementLevel.DISABLED,
}
_UNKNOWN = (UnknownValueError,)


def _described(rule: Rule) -> dict[str, Any]:
    """What every policy of the pack says about itself, from its rule."""
    return {
        "name": rule.name,
        "description": rule.description,
        "enforcement_level": _LEVELS[rule.enforcement],
        "remediation_steps": rule.remediation,
        "tags": list(rule.tags),
    }


def _resource_policy(rule: Rule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.resource_type not in rule.types or rule.check_resource is None:
            return
        resource = Resource(urn=args.urn, type=args.resource_type, name=args.name, props=args.props, unknown=_UNKNOWN)
        for message in rule.check_resource(resource):
            report_violation(message, None)

    return ResourceValidationPolicy(validate=validate, **_described(rule))


def _dependencies(resource: Any) -> frozenset[str]:
    urns = {d.urn for d in resource.dependencies or []}
    for dependencies in (resource.property_dependencies or {}).values():
        urns |= {d.urn for d in dependencies}
    return frozenset(urns)


def _stack_policy(rule: Rule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [
            Resource(
                urn=r.urn,
                type=r.resource_type,
                name=r.name,
                props=r.props,
                dependencies=_dependencies(r),
                unknown=_UNKNOWN,
            )
            for r in args.resources
        ]
        assert rule.check_stack is not None
        for urn, message in rule.check_stack(resources):
            report_violation(message, urn)

    return StackValidationPolicy(validate=validate, **_described(rule))


def policies() -> list[ResourceValidationPolicy | StackValidationPolicy]:
    """Every rule as a CrossGuard policy, with its default enforcement level (overridable by pack config)."""
    return [_stack_policy(rule) if rule.check_stack else _resource_policy(rule) for rule in RULES]
