"""A path through the Kubeflow gateway to one InferenceService's predictor (pure: plain dicts).

KServe in Standard mode makes no route of its own here (`gateway.disableIngressCreation`), so a model is reached in
the cluster only, at `<name>-predictor.<namespace>.svc`. `route_manifests` publishes one on the gateway every signed-in
user already goes through (ALB or port-forward, oauth2-proxy, Dex's token turned into `kubeflow-userid`):

- a VirtualService on `kubeflow/kubeflow-gateway` sending `/serving/<namespace>/<name>/...` to the predictor's Service
  (the prefix rewritten to `/`, so the model server sees its own paths: `/v1/models/<name>:predict`, `/v1/...`);
- with token clients, an AuthorizationPolicy on the predictor's pods admitting requests the gateway forwards for those
  service accounts (the `kubeflow-userid` the gateway sets from a cluster token's `sub`), shaped like the profile
  controller's own `ns-owner-access-istio` (a header check, from the gateway's identity only).

Facts, with their sources:
- the predictor's Service is `<name>-predictor`, port 80 (`CommonDefaultHttpPort`), to the container's first port or
  8080 (`InferenceServiceDefaultHttpPort`); its pods carry `serving.kserve.io/inferenceservice: <name>` and
  `component: predictor` (kserve/kserve v0.16.0 pkg/constants/constants.go);
- an InferenceService name is a DNS-1035 label (`[a-z]([-a-z0-9]*[a-z0-9])?`, kserve/kserve v0.16.0
  pkg/apis/serving/v1beta1/inference_service_validation.go), and its Service name `<name>-predictor` at most 63;
- the gateway `kubeflow/kubeflow-gateway` (Kubeflow 26.03.1 common/istio/kubeflow-istio-resources), its service
  account's principal and the `kubeflow-userid` header (`components.kubeflow.auth`, from profiles-config);
- a cluster token's `sub` becomes `kubeflow-userid` at the gateway (Kubeflow 26.03.1
  common/oauth2-proxy/components/istio-m2m/requestauthentication.yaml, `outputClaimToHeaders`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..kubeflow.auth import KFAM_PRINCIPALS, USERID_HEADER

Manifest = dict[str, Any]

#: The gateway every Kubeflow app is routed on, as a VirtualService in another namespace names it.
GATEWAY = "kubeflow/kubeflow-gateway"
#: The gateway pods' identity (what the profile controller's policies admit a user's request from).
GATEWAY_PRINCIPAL = KFAM_PRINCIPALS[0]
#: Where models are published: `/serving/<namespace>/<name>/`.
PATH_ROOT = "/serving"
#: The predictor Service's port, and the container port it sends to when the container names none.
SERVICE_PORT = 80
DEFAULT_PREDICTOR_PORT = 8080
INFERENCE_SERVICE_LABEL = "serving.kserve.io/inferenceservice"
COMPONENT_LABEL = ("component", "predictor")
#: The predictor's container port, recorded on the VirtualService for the platform model's check of the path.
PORT_ANNOTATION = "eksml.io/predictor-port"
#: Objects made here carry this label, with the InferenceService's name.
ROUTE_LABEL = "eksml.io/model-route"
#: A cluster token's subject, as `kubeflow-userid` carries it.
SERVICE_ACCOUNT_USER = "system:serviceaccount:{namespace}:{name}"

_DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS_1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_PREDICTOR_SUFFIX = "-predictor"
_MAX_LABEL = 63


@dataclass(frozen=True)
class ModelRouteSpec:
    """One InferenceService of a Kubeflow Profile's namespace, published on the gateway."""

    #: The Profile's namespace (Istio sidecars, the owner's and contributors' header policies, the gateway let in).
    namespace: str
    #: The InferenceService's name.
    inference_service: str
    #: `<namespace>/<service account>` of the programs that may call the model with a cluster token through the
    #: gateway (the platform's `kubeflow.access.clusterTokens` must be on). Default: none, only signed-in users.
    token_clients: tuple[str, ...] = ()
    #: The predictor container's port (its first `ports` entry; KServe's default 8080).
    predictor_port: int = DEFAULT_PREDICTOR_PORT

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ValueError("; ".join(problems))

    def problems(self) -> list[str]:
        """Every argument that cannot work, each naming the argument and what it takes."""
        found = []
        if not _is_label(_DNS_1123, self.namespace):
            found.append(f"namespace: {self.namespace!r} is not a namespace name (a DNS label)")
        longest = _MAX_LABEL - len(_PREDICTOR_SUFFIX)
        if not _is_label(_DNS_1035, self.inference_service, longest):
            found.append(
                f"inference_service: {self.inference_service!r} is not an InferenceService name (lowercase letters, "
                f"digits and '-', starting with a letter, at most {longest} characters: its Service is "
                f"'<name>{_PREDICTOR_SUFFIX}')"
            )
        for client in self.token_clients:
            namespace, _, account = client.partition("/")
            if not (_is_label(_DNS_1123, namespace) and _is_label(_DNS_1123, account, 253)):
                found.append(f"token_clients: {client!r} is not '<namespace>/<service account>'")
        if len(set(self.token_clients)) != len(self.token_clients):
            found.append(f"token_clients: {list(self.token_clients)} names a service account twice")
        if not 1 <= self.predictor_port <= 65535:
            found.append(f"predictor_port: {self.predictor_port} is not a port (1 to 65535)")
        return found

    @property
    def prefix(self) -> str:
        return f"{PATH_ROOT}/{self.namespace}/{self.inference_service}/"

    @property
    def service_host(self) -> str:
        return f"{self.inference_service}{_PREDICTOR_SUFFIX}.{self.namespace}.svc.cluster.local"

    @property
    def name(self) -> str:
        """The VirtualService's name (and the AuthorizationPolicy's stem)."""
        return f"serving-{self.inference_service}"


def _is_label(pattern: re.Pattern[str], value: str, longest: int = _MAX_LABEL) -> bool:
    return 0 < len(value) <= longest and pattern.fullmatch(value) is not None


def predictor_labels(inference_service: str) -> dict[str, str]:
    """The labels KServe puts on a predictor's pods."""
    return {INFERENCE_SERVICE_LABEL: inference_service, COMPONENT_LABEL[0]: COMPONENT_LABEL[1]}


def virtual_service(spec: ModelRouteSpec) -> Manifest:
    """The gateway's route to the predictor's Service."""
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {
            "name": spec.name,
            "namespace": spec.namespace,
            "labels": {ROUTE_LABEL: spec.inference_service},
            "annotations": {PORT_ANNOTATION: str(spec.predictor_port)},
        },
        "spec": {
            "gateways": [GATEWAY],
            "hosts": ["*"],
            "http": [
                {
                    "match": [{"uri": {"prefix": spec.prefix}}],
                    "rewrite": {"uri": "/"},
                    "route": [{"destination": {"host": spec.service_host, "port": {"number": SERVICE_PORT}}}],
                }
            ],
        },
    }


def token_client_policy(spec: ModelRouteSpec) -> Manifest | None:
    """The predictor's allowance for its token clients, or None without any. Signed-in users need none: the
    profile controller's policy admits the owner, and each contributor has one of their own."""
    if not spec.token_clients:
        return None
    users = [SERVICE_ACCOUNT_USER.format(namespace=c.split("/")[0], name=c.split("/")[1]) for c in spec.token_clients]
    return {
        "apiVersion": "security.istio.io/v1beta1",
        "kind": "AuthorizationPolicy",
        "metadata": {
            "name": f"{spec.name}-token-clients",
            "namespace": spec.namespace,
            "labels": {ROUTE_LABEL: spec.inference_service},
        },
        "spec": {
            "action": "ALLOW",
            "selector": {"matchLabels": predictor_labels(spec.inference_service)},
            "rules": [
                {
                    "from": [{"source": {"principals": [GATEWAY_PRINCIPAL]}}],
                    "when": [{"key": f"request.headers[{USERID_HEADER}]", "values": sorted(users)}],
                }
            ],
        },
    }


def route_manifests(spec: ModelRouteSpec) -> dict[str, Manifest]:
    """The route's objects, keyed by a short stable name."""
    manifests = {"route": virtual_service(spec)}
    policy = token_client_policy(spec)
    if policy is not None:
        manifests["token-clients"] = policy
    return manifests
