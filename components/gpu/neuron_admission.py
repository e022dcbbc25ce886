"""The admission policy for Neuron pods (pure): judged as GPU pods are (`admission.py`), with one difference.

In tenant namespaces, a pod that asks for `aws.amazon.com/neuron` or `aws.amazon.com/neuroncore` must tolerate the
Neuron taint and request exactly what it limits, in every container that uses a Neuron resource. It is not sent to
the bin-packing scheduler: that one weighs `nvidia.com/gpu` only, and which Neuron cores a pod gets on a
multi-device node is the Neuron scheduler extension's concern, not packing's (README, "Neuron pools").
"""

from __future__ import annotations

from typing import Any

from ..scheduling import NEURON_CORE_RESOURCE, NEURON_RESOURCE, NEURON_TAINT
from .admission import AdmissionOptions, sibling_manifests

POLICY_NAME = "neuron-pods"
RESOURCES = (NEURON_RESOURCE, NEURON_CORE_RESOURCE)
_ALL_CONTAINERS = "object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"


def _names(var: str, where: str, resource: str) -> str:
    return f"(has({var}.resources.{where}) && '{resource}' in {var}.resources.{where})"


def _uses(var: str, resource: str) -> str:
    return f"({_names(var, 'limits', resource)} || {_names(var, 'requests', resource)})"


def _uses_neuron(var: str) -> str:
    return f"has({var}.resources) && (" + " || ".join(_uses(var, r) for r in RESOURCES) + ")"


MATCH_NEURON_PODS = f"({_ALL_CONTAINERS}).exists(c, {_uses_neuron('c')})"

TOLERATES_NEURON_TAINT = (
    "has(object.spec.tolerations) && object.spec.tolerations.exists(t, "
    f"(has(t.key) && t.key == '{NEURON_TAINT.key}' && "
    f"((has(t.operator) && t.operator == 'Exists') || (has(t.value) && t.value == '{NEURON_TAINT.value}')) && "
    f"(!has(t.effect) || t.effect == '' || t.effect == '{NEURON_TAINT.effect}')) || "
    "((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists'))"
)

#: A container that names a Neuron resource names it in both, with the same value.
REQUESTS_EQUAL_LIMITS = (
    "variables.neuronContainers.all(c, "
    + " && ".join(
        f"(!{_uses('c', r)} || ({_names('c', 'limits', r)} && {_names('c', 'requests', r)} && "
        f"c.resources.requests['{r}'] == c.resources.limits['{r}']))"
        for r in RESOURCES
    )
    + ")"
)


def validations() -> list[dict[str, Any]]:
    return [
        {
            "expression": TOLERATES_NEURON_TAINT,
            "message": (
                "Neuron nodes are tainted: add to spec.tolerations "
                f"{{key: {NEURON_TAINT.key}, operator: Exists, effect: {NEURON_TAINT.effect}}}"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": REQUESTS_EQUAL_LIMITS,
            "message": (
                f"set resources.requests and resources.limits of {NEURON_RESOURCE} (or {NEURON_CORE_RESOURCE}) to the "
                "same whole number in every container that uses Neuron devices"
            ),
            "reason": "Invalid",
        },
    ]


def neuron_admission_manifests(options: AdmissionOptions) -> dict[str, dict[str, Any]]:
    """The policy and its binding (the GPU policy's binding: same exempt namespaces and action)."""
    return sibling_manifests(
        options,
        POLICY_NAME,
        match={"name": "requests-neuron", "expression": MATCH_NEURON_PODS},
        variables=[
            {"name": "containers", "expression": _ALL_CONTAINERS},
            {"name": "neuronContainers", "expression": f"variables.containers.filter(c, {_uses_neuron('c')})"},
        ],
        validations=validations(),
    )
