"""The admission policy for pods that ask for EFA interfaces (pure).

Karpenter attaches EFA interfaces to any node it launches for a pod that asks for `vpc.amazonaws.com/efa`, in any
pool whose instance types support EFA; but only the nodes of pools whose node class attaches EFA (labelled
`eksml.io/efa=true`) run the EFA device plugin. Such a pod in another pool gets a p4d or p5 that never advertises
the resource: the pod stays Pending and the node bills until it expires. So a pod asking for EFA must select the
EFA nodes; on a platform without EFA pools it then stays Pending with that reason, and launches nothing.
"""

from __future__ import annotations

from typing import Any

from ..scheduling import EFA_LABEL, EFA_RESOURCE
from .admission import AdmissionOptions, sibling_manifests

POLICY_NAME = "efa-pods"
_ALL_CONTAINERS = "object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"
MATCH_EFA_PODS = (
    f"({_ALL_CONTAINERS}).exists(c, has(c.resources) && ("
    f"(has(c.resources.limits) && '{EFA_RESOURCE}' in c.resources.limits) || "
    f"(has(c.resources.requests) && '{EFA_RESOURCE}' in c.resources.requests)))"
)
SELECTS_EFA_NODES = (
    f"has(object.spec.nodeSelector) && '{EFA_LABEL}' in object.spec.nodeSelector && "
    f"object.spec.nodeSelector['{EFA_LABEL}'] == 'true'"
)


def efa_admission_manifests(options: AdmissionOptions) -> dict[str, dict[str, Any]]:
    """The policy and its binding (the GPU policy's binding: same exempt namespaces and action)."""
    return sibling_manifests(
        options,
        POLICY_NAME,
        match={"name": "requests-efa", "expression": MATCH_EFA_PODS},
        validations=[
            {
                "expression": SELECTS_EFA_NODES,
                "message": (
                    f"only nodes labelled {EFA_LABEL}=true run the EFA device plugin: add spec.nodeSelector "
                    f"{{{EFA_LABEL}: 'true'}} (a pool gets them with a node class that attaches EFA)"
                ),
                "reason": "Forbidden",
            }
        ],
    )
