"""Kubernetes-native admission policies for GPU pods (ValidatingAdmissionPolicy, no webhook server to run).

In tenant namespaces, a pod that asks for `nvidia.com/gpu` must be placed by the bin-packing scheduler (when it is
enabled), must tolerate the GPU taint, and must request exactly what it limits. Each denial says what to add.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..admission_policy import Requests, policy_and_binding
from ..scheduling import GPU_RESOURCE, GPU_TAINT

POLICY_NAME = "gpu-pods"
#: A namespace labelled with this (value `exempt`) is not checked.
EXEMPT_LABEL = "eksml.io/gpu-admission"
#: Namespaces that belong to the platform itself are exempt by their name label.
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "gpu-operator")

ACTIONS = {"deny": ["Deny"], "warn": ["Warn"], "audit": ["Audit"]}

_ALL_CONTAINERS = "object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"


def _uses_gpu(var: str) -> str:
    return (
        f"has({var}.resources) && ((has({var}.resources.limits) && '{GPU_RESOURCE}' in {var}.resources.limits) || "
        f"(has({var}.resources.requests) && '{GPU_RESOURCE}' in {var}.resources.requests))"
    )


#: Only pods that ask for a GPU are checked at all.
MATCH_GPU_PODS = f"({_ALL_CONTAINERS}).exists(c, {_uses_gpu('c')})"

TOLERATES_GPU_TAINT = (
    "has(object.spec.tolerations) && object.spec.tolerations.exists(t, "
    f"(has(t.key) && t.key == '{GPU_TAINT.key}' && "
    f"((has(t.operator) && t.operator == 'Exists') || (has(t.value) && t.value == '{GPU_TAINT.value}')) && "
    f"(!has(t.effect) || t.effect == '' || t.effect == '{GPU_TAINT.effect}')) || "
    "((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists'))"
)

REQUESTS_EQUAL_LIMITS = (
    f"variables.gpuContainers.all(c, has(c.resources.limits) && '{GPU_RESOURCE}' in c.resources.limits && "
    f"has(c.resources.requests) && '{GPU_RESOURCE}' in c.resources.requests && "
    f"c.resources.requests['{GPU_RESOURCE}'] == c.resources.limits['{GPU_RESOURCE}'])"
)


def uses_scheduler(name: str) -> str:
    return f"has(object.spec.schedulerName) && object.spec.schedulerName == '{name}'"


@dataclass(frozen=True)
class AdmissionOptions:
    action: Literal["deny", "warn", "audit"] = "deny"
    scheduler_name: str | None = None  # None: the bin-packing scheduler is off, so its rule is too
    exempt_namespaces: tuple[str, ...] = ()


def validations(options: AdmissionOptions) -> list[dict[str, Any]]:
    rules = []
    if options.scheduler_name is not None:
        rules.append(
            {
                "expression": uses_scheduler(options.scheduler_name),
                "messageExpression": (
                    "'GPU pods are placed by the bin-packing scheduler: add spec.schedulerName: "
                    f"{options.scheduler_name} (this pod has ' + (has(object.spec.schedulerName) ? "
                    "object.spec.schedulerName : 'none') + ')'"
                ),
                "reason": "Forbidden",
            }
        )
    rules.append(
        {
            "expression": TOLERATES_GPU_TAINT,
            "message": (
                "GPU nodes are tainted: add to spec.tolerations "
                f"{{key: {GPU_TAINT.key}, operator: Exists, effect: {GPU_TAINT.effect}}}"
            ),
            "reason": "Forbidden",
        }
    )
    rules.append(
        {
            "expression": REQUESTS_EQUAL_LIMITS,
            "message": (
                f"set resources.requests and resources.limits of {GPU_RESOURCE} to the same whole number in every "
                "container that uses a GPU"
            ),
            "reason": "Invalid",
        }
    )
    return rules


#: Pod creation: what every GPU pod rule (this one, Neuron's, EFA's) is asked about.
POD_CREATION = Requests("", "v1", "pods")


def _exempt(options: AdmissionOptions) -> dict[str, Any]:
    """Every namespace but the platform's own and those exempted by name or label."""
    return {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": sorted({*SYSTEM_NAMESPACES, *options.exempt_namespaces}),
            },
            {"key": EXEMPT_LABEL, "operator": "NotIn", "values": ["exempt"]},
        ]
    }


def admission_manifests(options: AdmissionOptions) -> dict[str, dict[str, Any]]:
    policy, binding = policy_and_binding(
        POLICY_NAME,
        POD_CREATION,
        validations(options),
        namespaces=_exempt(options),
        actions=ACTIONS[options.action],
        match_conditions=[{"name": "requests-gpu", "expression": MATCH_GPU_PODS}],
        variables=[
            {"name": "containers", "expression": _ALL_CONTAINERS},
            {"name": "gpuContainers", "expression": f"variables.containers.filter(c, {_uses_gpu('c')})"},
        ],
    )
    return {"policy": policy, "binding": binding}


def sibling_manifests(
    options: AdmissionOptions,
    name: str,
    *,
    match: dict[str, str],
    validations: list[dict[str, Any]],
    variables: list[dict[str, str]] | None = None,
) -> dict[str, dict[str, Any]]:
    """A policy for other pods judged as GPU pods are: the same pods matched (pod creation), the same exempt
    namespaces and action in its binding; its own match condition, variables and validations."""
    policy, binding = policy_and_binding(
        name,
        POD_CREATION,
        validations,
        namespaces=_exempt(options),
        actions=ACTIONS[options.action],
        match_conditions=[match],
        variables=variables or (),
    )
    return {"policy": policy, "binding": binding}
