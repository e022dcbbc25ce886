"""A model published on the Kubeflow gateway (`components.kserve.route`), as the concrete connections of one
cluster for the catalogue (`flows.CATALOGUE`): the gateway's pods to the predictor's pods on the predictor's port,
for a signed-in user (the Profile owner's e-mail in `kubeflow-userid`) and for each listed token client (its service
account's user name there); and each token client's pods to the gateway in the cluster.

The predictor's pods come from an InferenceService the team applies itself, so no manifest shows them: a stand-in
pod with KServe's predictor labels stands for them, in the route's namespace, on the port the route records. A token
client is a stand-in pod of its namespace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ...kserve.route import PORT_ANNOTATION, ROUTE_LABEL, SERVICE_ACCOUNT_USER, predictor_labels
from ...kubeflow.network_policy import GATEWAY_POD, GATEWAY_POD_HTTP_PORT, ISTIO_NAMESPACE
from .flows_platform import Connection, user_request
from .kubeflow_mesh import owners
from .netpol import Endpoint
from .network import Cluster

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


def _predictors(cluster: Cluster) -> Iterator[tuple[str, str, Endpoint, int]]:
    for namespace, model, route in _routes(cluster, "VirtualService"):
        port = int((route["metadata"].get("annotations") or {}).get(PORT_ANNOTATION, "8080"))
        predictor = Endpoint(
            f"the predictor of InferenceService {namespace}/{model}",
            next(cluster.hosts),
            namespace,
            cluster.namespace_labels.get(namespace, {}),
            predictor_labels(model),
        )
        yield namespace, model, predictor, port


def signed_in(cluster: Cluster) -> Iterator[Connection]:
    """The gateway to every published model's predictor, with the Profile owner's request."""
    profile_owners = owners(cluster.objects)
    for namespace, model, predictor, port in _predictors(cluster):
        request = user_request(profile_owners.get(namespace, ""), f"/serving/{namespace}/{model}/v1/models/{model}")
        for gateway in cluster.matching(ISTIO_NAMESPACE, GATEWAY_POD):
            yield Connection(
                f"model {namespace}/{model} through the gateway", gateway, predictor, port, request=request
            )


def token_clients(cluster: Cluster) -> Iterator[Connection]:
    """Every listed token client to the gateway, and the gateway on to the predictor with the client's identity."""
    policies = {(ns, model): policy for ns, model, policy in _routes(cluster, "AuthorizationPolicy")}
    for namespace, model, predictor, port in _predictors(cluster):
        for client_namespace, account in _token_clients(policies.get((namespace, model), {})):
            client = Endpoint(
                f"a pod of {client_namespace} running as {account}",
                next(cluster.hosts),
                client_namespace,
                cluster.namespace_labels.get(client_namespace, {}),
                {"eksml.io/stand-in": client_namespace},
            )
            user = SERVICE_ACCOUNT_USER.format(namespace=client_namespace, name=account)
            request = user_request(user, f"/serving/{namespace}/{model}/v1/models/{model}")
            what = f"token client {client_namespace}/{account} of model {namespace}/{model}"
            for gateway in cluster.matching(ISTIO_NAMESPACE, GATEWAY_POD):
                # Both sides judged: a listed client the gateway does not admit (`kubeflow.access.clusterTokens`) is
                # a published path that does not work.
                yield Connection(f"{what}, to the gateway", client, gateway, GATEWAY_POD_HTTP_PORT, request=request)
                yield Connection(f"{what}, through the gateway", gateway, predictor, port, request=request)
