"""A ValidatingAdmissionPolicy and its binding, as plain manifests (pure): the one shape every admission rule of the
platform takes (the GPU pod rules, Katib's Experiment rule, the Trainer's namespace rule). The API server asks a
policy only about the requests its `resourceRules` match; the binding says where it applies and what a failed
validation does (Kubernetes docs, "Validating Admission Policy", admissionregistration.k8s.io/v1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Manifest = dict[str, Any]
_API = "admissionregistration.k8s.io/v1"


@dataclass(frozen=True)
class Requests:
    """The requests a policy is asked about: one API group, version and resource, and the operations."""

    group: str
    version: str
    resource: str
    operations: tuple[str, ...] = ("CREATE",)


def policy_and_binding(
    name: str,
    requests: Requests,
    validations: Sequence[Mapping[str, Any]],
    *,
    namespaces: Mapping[str, Any],
    actions: Sequence[str] = ("Deny",),
    match_conditions: Sequence[Mapping[str, str]] = (),
    variables: Sequence[Mapping[str, str]] = (),
) -> list[Manifest]:
    """The policy `name` (failing closed: a CEL error refuses the request) and its binding of the same name, over the
    namespaces `namespaces` (a namespace selector) with `actions` (Deny, Warn, Audit)."""
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [requests.group],
                    "apiVersions": [requests.version],
                    "operations": list(requests.operations),
                    "resources": [requests.resource],
                }
            ]
        },
    }
    if match_conditions:
        spec["matchConditions"] = [dict(c) for c in match_conditions]
    if variables:
        spec["variables"] = [dict(v) for v in variables]
    spec["validations"] = [dict(v) for v in validations]
    policy = {"apiVersion": _API, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec}
    binding = {
        "apiVersion": _API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": list(actions),
            "matchResources": {"namespaceSelector": dict(namespaces)},
        },
    }
    return [policy, binding]
