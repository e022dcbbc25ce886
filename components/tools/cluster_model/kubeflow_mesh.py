"""What Kubeflow's controllers write into the mesh at run time, which no preview shows: the AuthorizationPolicy the
profile controller keeps in every Profile's namespace.

`ns-owner-access-istio` (kubeflow/dashboard v2.0.0, components/profile-controller/controllers/profile_controller.go,
`getAuthorizationPolicy`; the pinned tree's `profile-controller:v2.0.0` image): an ALLOW policy for every workload of
the namespace with four rules: the gateway's and the Pipelines UI's identities carrying the owner's
`kubeflow-userid` header; any source of the namespace itself (`source.namespace`, so mTLS only); any source on the
paths `/healthz`, `/metrics` and `/wait-for-drain` (Knative's probes, and Prometheus' scrapes); the notebook
controller's identity on `GET */api/kernels` (the culler).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PROFILE_POLICY = "ns-owner-access-istio"
#: The header the gateway writes the signed-in user's email into (the pinned RequestAuthentication `dex-jwt`'s
#: `outputClaimToHeaders`), and the profile controller's `USERID_HEADER` default; its `USERID_PREFIX` is empty.
USERID_HEADER = "kubeflow-userid"
GATEWAY_PRINCIPAL = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
PIPELINES_UI_PRINCIPAL = "cluster.local/ns/kubeflow/sa/ml-pipeline-ui"
NOTEBOOK_CONTROLLER_PRINCIPAL = "cluster.local/ns/kubeflow/sa/notebook-controller-service-account"


def profile_policy(namespace: str, owner: str) -> dict[str, Any]:
    return {
        "apiVersion": "security.istio.io/v1",
        "kind": "AuthorizationPolicy",
        "metadata": {"name": PROFILE_POLICY, "namespace": namespace},
        "spec": {
            "action": "ALLOW",
            "rules": [
                {
                    "from": [{"source": {"principals": [GATEWAY_PRINCIPAL, PIPELINES_UI_PRINCIPAL]}}],
                    "when": [{"key": f"request.headers[{USERID_HEADER}]", "values": [owner]}],
                },
                {"when": [{"key": "source.namespace", "values": [namespace]}]},
                {"to": [{"operation": {"paths": ["/healthz", "/metrics", "/wait-for-drain"]}}]},
                {
                    "from": [{"source": {"principals": [NOTEBOOK_CONTROLLER_PRINCIPAL]}}],
                    "to": [{"operation": {"methods": ["GET"], "paths": ["*/api/kernels"]}}],
                },
            ],
        },
    }


def owners(objects: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each Profile's namespace (the Profile's name) and its owner."""
    return {
        o["metadata"]["name"]: ((o.get("spec") or {}).get("owner") or {}).get("name", "")
        for o in objects
        if o.get("kind") == "Profile"
    }


def runtime_policies(objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The policies the profile controller will write for the Profiles among `objects`."""
    return [profile_policy(namespace, owner) for namespace, owner in sorted(owners(objects).items())]
