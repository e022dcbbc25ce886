"""Kubeflow's flows judged on the Istio side, which the NetworkPolicy evaluator (`netpol`) does not see: the scrapes
of Prometheus (which runs without a sidecar, so it speaks plaintext and has no mTLS identity) into pods that carry one.
A scrape passes the mesh when the pod has no sidecar, when its port is left out of the sidecar's inbound capture, or
when the Istio AuthorizationPolicies that apply to the pod admit a request without a peer identity on that port.

Istio's rules as the Authorization Policy reference states them (istio.io/latest/docs/reference/config/security/
authorization-policy/): a policy in the root namespace (`istio-system` in Kubeflow's mesh config) applies to every
workload, one in the workload's namespace to the pods its `selector` selects (all without one); a DENY policy that
matches refuses; then, when any ALLOW policy applies, the request needs one that matches (an ALLOW policy without
rules matches nothing); a rule matches when its `from`, `to` and `when` all do. Judged conservatively: a source that
names principals or namespaces needs an identity the scrape does not have; a `when` matches only on a header the
scrape does not send (`notValues`); CUSTOM policies (external authorization) only guard the gateway.

Sidecars: a pod gets one in a namespace labelled `istio-injection: enabled` unless it opts out
(`sidecar.istio.io/inject: "false"`, annotation or label); `traffic.sidecar.istio.io/excludeInboundPorts` lists ports
its capture leaves alone (the pinned injector template, common/istio/istio-install/base/install.yaml).

A catalogue of every Istio-aware flow is to absorb this module; until then network.problems() calls `problems`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from components.kubeflow.monitoring import EXCLUDE_INBOUND
from components.tools.model.netpol import Endpoint
from components.tools.model.workloads import pod_template

if TYPE_CHECKING:
    from components.tools.model.network import Cluster

ROOT_NAMESPACE = "istio-system"
ISTIO_SECURITY = "security.istio.io"
#: How the model names a workload's pods (`Workload.ref`): kind, namespace/name, origin.
_REF = re.compile(r"^(?P<kind>\S+) (?P<namespace>[^/\s]+)/(?P<name>\S+) \(")

Flow = tuple[str, Endpoint, Endpoint, int, str]


def _template(cluster: Cluster, pod: Endpoint) -> Mapping[str, Any]:
    found = _REF.match(pod.what)
    if found is None:
        return {}
    for obj in cluster.objects:
        meta = obj.get("metadata") or {}
        if (obj.get("kind"), meta.get("namespace"), meta.get("name")) == (
            found["kind"],
            found["namespace"],
            found["name"],
        ):
            return pod_template(obj) or {}
    return {}


def captured(cluster: Cluster, pod: Endpoint, port: int) -> bool:
    """Whether a sidecar takes the pod's inbound connections on this port."""
    if pod.namespace_labels.get("istio-injection") != "enabled" or not pod.is_pod:
        return False
    metadata = _template(cluster, pod).get("metadata") or {}
    annotations, labels = metadata.get("annotations") or {}, metadata.get("labels") or {}
    if "false" in (annotations.get("sidecar.istio.io/inject"), labels.get("sidecar.istio.io/inject")):
        return False
    excluded = {p.strip() for p in str(annotations.get(EXCLUDE_INBOUND, "")).split(",")}
    return str(port) not in excluded


def _applies(policy: Mapping[str, Any], pod: Endpoint) -> bool:
    namespace = policy["metadata"].get("namespace")
    selector = ((policy.get("spec") or {}).get("selector") or {}).get("matchLabels")
    if namespace not in (ROOT_NAMESPACE, pod.namespace):
        return False
    return not selector or all(pod.labels.get(k) == v for k, v in selector.items())


def _rule_matches(rule: Mapping[str, Any], port: int, path: str) -> bool:
    for source in rule.get("from") or ():
        wanted = source.get("source") or {}
        if wanted.get("principals") or wanted.get("namespaces") or wanted.get("requestPrincipals"):
            return False
    operations = [o.get("operation") or {} for o in rule.get("to") or ()]
    if operations and not any(
        str(port) in [str(p) for p in op.get("ports") or [port]]
        and path in (op.get("paths") or [path])
        and "GET" in (op.get("methods") or ["GET"])
        for op in operations
    ):
        return False
    return all(c.get("key", "").startswith("request.headers[") and c.get("notValues") for c in rule.get("when") or ())


def mesh_admits(policies: Iterable[Mapping[str, Any]], pod: Endpoint, port: int, path: str = "/metrics") -> bool:
    """Whether the AuthorizationPolicies that apply to the pod let a plaintext GET without identity through."""
    applying = [p for p in policies if _applies(p, pod)]
    by_action: dict[str, list[Mapping[str, Any]]] = {}
    for policy in applying:
        by_action.setdefault((policy.get("spec") or {}).get("action", "ALLOW"), []).append(policy)
    rules = {a: [r for p in ps for r in (p.get("spec") or {}).get("rules") or ()] for a, ps in by_action.items()}
    if any(_rule_matches(r, port, path) for r in rules.get("DENY", ())):
        return False
    if "ALLOW" not in by_action:
        return True
    return any(_rule_matches(r, port, path) for r in rules["ALLOW"])


def flows(cluster: Cluster, scrapes: Iterable[tuple[str, Endpoint, Endpoint, int]]) -> Iterator[Flow]:
    """The scrapes (`network.scrape_paths`) that reach a pod through its sidecar."""
    for what, source, destination, port in scrapes:
        if captured(cluster, destination, port):
            yield what, source, destination, port, "TCP"


def problems(cluster: Cluster, scrapes: Iterable[tuple[str, Endpoint, Endpoint, int]]) -> list[str]:
    """Every scrape the mesh's authorization refuses."""
    policies = [
        o
        for o in cluster.objects
        if o.get("kind") == "AuthorizationPolicy" and str(o.get("apiVersion", "")).startswith(ISTIO_SECURITY)
    ]
    return [
        f"{source.what} cannot reach {destination.what} on port {port} ({what}): its Istio sidecar takes the port "
        "and no AuthorizationPolicy admits a caller without a mesh identity"
        for what, source, destination, port, _ in flows(cluster, scrapes)
        if not mesh_admits(policies, destination, port)
    ]
