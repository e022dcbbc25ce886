"""Service-account tokens kept out of the Kubeflow pods that never call the Kubernetes API (pure).

Kubernetes mounts a token of the pod's service account into every pod unless told not to; a pod that does not call
the API gains nothing from it, and whoever breaks into the pod gains the account's rights (often the namespace's
`default` account, which other workloads' bindings may grow). Istio's sidecar is unaffected: it authenticates with
its own projected `istio-token` volume, not the service-account token.
"""

from __future__ import annotations

from collections.abc import Iterable

from .objects import Manifest, pod_template
from .transform import clone

#: The workloads (kind, namespace, name, as upstream renders them) that talk only to their clients, their files and
#: their peers: the pipelines' database and object store, the metadata gRPC proxy, the visualization server, and the
#: gateway's OIDC proxy (it reads Dex's keys over HTTP, not the API server's).
NO_API_ACCESS = frozenset(
    {
        ("Deployment", "kubeflow", "mysql"),
        ("Deployment", "kubeflow", "seaweedfs"),
        ("Deployment", "kubeflow", "metadata-envoy-deployment"),
        ("Deployment", "kubeflow", "ml-pipeline-visualizationserver"),
        ("Deployment", "oauth2-proxy", "oauth2-proxy"),
    }
)


def without_api_tokens(objects: Iterable[Manifest]) -> list[Manifest]:
    """Turn off the token mount (`automountServiceAccountToken: false`) of the workloads in NO_API_ACCESS."""
    result = []
    for obj in objects:
        meta = obj.get("metadata", {})
        if (obj.get("kind"), meta.get("namespace"), meta.get("name")) in NO_API_ACCESS:
            obj = clone(obj)
            template = pod_template(obj)
            if template is not None:
                template.setdefault("spec", {})["automountServiceAccountToken"] = False
        result.append(obj)
    return result
