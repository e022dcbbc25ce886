"""The paths a model published on the Kubeflow gateway (`components.kserve.route`) needs open under the
NetworkPolicies: the gateway's pods to the predictor's pods on the predictor's port (every request, a signed-in
user's or a token client's, arrives so), and each token client's pods to the gateway's pods in the cluster.

The predictor's pods come from an InferenceService the team applies itself, so no manifest shows them: a stand-in
pod with KServe's predictor labels stands for them, in the route's namespace, on the port the route records. A token
client is a stand-in pod of its namespace. Each flow is (what, source, destination, port, protocol), as
`network.team_paths` yields them; `network.problems` judges them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from components.kserve.route import PORT_ANNOTATION, ROUTE_LABEL, SERVICE_ACCOUNT_USER, predictor_labels
from components.kubeflow.network_policy import GATEWAY_POD, GATEWAY_POD_HTTP_PORT, ISTIO_NAMESPACE
from components.tools.model.netpol import Endpoint


class Cluster(Protocol):
    """What the flows read of `network.Cluster` (a protocol: `network` imports this module)."""

    objects: list[Mapping[str, Any]]
    namespace_labels: dict[str, dict[str, str]]
    hosts: Iterator[str]

    def matching(self, namespace: str | None, labels: Mapping[str, str]) -> list[Endpoint]: ...


Flow = tuple[str, Endpoint, Endpoint, int, str]
_USER_PREFIX = SERVICE_ACCOUNT_USER.split("{", 1)[0]


def _routes(cluster: Cluster, kind: str) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """Each object of `kind` a model route made: its namespace, its InferenceService and the object."""
    for obj in cluster.objects:
        meta = obj.get("metadata") or {}
        model = (meta.get("labels") or {}).get(ROUTE_LABEL)
        if obj.get("kind") == kind and model and meta.get("namespace"):
            yield meta["namespace"], model, obj


def _token_clients(policy: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (namespace, service account) pairs whose `kubeflow-userid` the policy admits."""
    found = []
    for rule in (policy.get("spec") or {}).get("rules") or ():
        for condition in rule.get("when") or ():
            for value in condition.get("values") or ():
                if value.startswith(_USER_PREFIX):
                    namespace, _, account = value[len(_USER_PREFIX) :].partition(":")
                    found.append((namespace, account))
    return found


def model_paths(cluster: Cluster) -> Iterator[Flow]:
    """The gateway to every published model's predictor, and every token client to the gateway."""
    gateways = cluster.matching(ISTIO_NAMESPACE, GATEWAY_POD)
    for namespace, model, route in _routes(cluster, "VirtualService"):
        port = int((route["metadata"].get("annotations") or {}).get(PORT_ANNOTATION, "8080"))
        predictor = Endpoint(
            f"the predictor of InferenceService {namespace}/{model}",
            next(cluster.hosts),
            namespace,
            cluster.namespace_labels.get(namespace, {}),
            predictor_labels(model),
        )
        for gateway in gateways:
            yield f"model {namespace}/{model} through the gateway", gateway, predictor, port, "TCP"
    for namespace, model, policy in _routes(cluster, "AuthorizationPolicy"):
        for client_namespace, account in _token_clients(policy):
            client = Endpoint(
                f"a pod of {client_namespace} running as {account}",
                next(cluster.hosts),
                client_namespace,
                cluster.namespace_labels.get(client_namespace, {}),
                {"eksml.io/stand-in": client_namespace},
            )
            for gateway in gateways:
                what = f"a token client of model {namespace}/{model} to the gateway"
                yield what, client, gateway, GATEWAY_POD_HTTP_PORT, "TCP"
