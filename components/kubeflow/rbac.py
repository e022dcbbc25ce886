"""Rights on Secrets that upstream grants and this platform does not: each dropped grant with why nothing needs it.

What Kubeflow's controllers keep (metacontroller, the pipelines UI, the Trainer, istiod) is listed with its reason in
`components.tools.cluster_model.rbac.secret_holders()`; tests/test_security.py holds the rendered platform to that list.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

from .objects import Manifest

#: (kind, name) of upstream grants left out, and why.
DROPPED_GRANTS = MappingProxyType(
    {
        (
            "ClusterRoleBinding",
            "istio-reader-clusterrole-istio-system",
        ): "gives istio-reader-service-account get, list and watch on every Secret so that another cluster's istiod "
        "can read this one in a multi-cluster mesh (Istio's multicluster install); the platform runs one cluster and "
        "no pod runs as that account, so the grant served only whoever could mint its token",
    }
)


def dropped(obj: Manifest) -> bool:
    """Whether the platform leaves this upstream object out (`DROPPED_GRANTS`)."""
    return (obj["kind"], obj["metadata"]["name"]) in DROPPED_GRANTS


def keep(objects: Iterable[Manifest]) -> list[Manifest]:
    return [obj for obj in objects if not dropped(obj)]
