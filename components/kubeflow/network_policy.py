"""Kubeflow's NetworkPolicies, read and completed: which sources reach which pods, and the allowances the platform
adds so its own Prometheus can scrape what runs in Kubeflow's namespaces.

Upstream isolates every pod of its namespaces for ingress (a `default-allow-same-namespace` policy selects them all)
and opens single paths: the gateway to the apps, the API server to each webhook's port. The VPC CNI's policy agent
enforces them, so a scrape from the monitoring namespace is dropped unless a policy admits it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import network_policies as netpol
from .objects import (
    NAME_LABEL,
    Manifest,
    containers,
    group_of,
    is_webhook_configuration,
    matches,
    namespace_labels,
    pod_template,
)

ALLOW_MONITORING = "allow-platform-monitoring"


@dataclass(frozen=True)
class Source:
    """Where a connection comes from: a pod (its namespace's labels and its own), or outside every namespace (the
    API server calling a webhook) when both are None."""

    namespace_labels: Mapping[str, str] | None = None
    pod_labels: Mapping[str, str] | None = None


OUTSIDE = Source()


def runtime_labels(template: Mapping[str, Any], namespace_labels: Mapping[str, str], workload: str) -> dict[str, str]:
    """A pod's labels as the cluster sees them: its template's, plus the two Istio's injector adds to every pod it
    gives a sidecar (in a namespace labelled `istio-injection: enabled`, unless the pod opts out), which some of
    upstream's policies select on. Istio takes the canonical name from `app.kubernetes.io/name`, else `app`, else
    the workload's name."""
    metadata = template.get("metadata") or {}
    labels = dict(metadata.get("labels") or {})
    opted_out = (metadata.get("annotations") or {}).get("sidecar.istio.io/inject") == "false" or labels.get(
        "sidecar.istio.io/inject"
    ) == "false"
    if namespace_labels.get("istio-injection") == "enabled" and not opted_out:
        labels.setdefault(
            "service.istio.io/canonical-name", labels.get("app.kubernetes.io/name") or labels.get("app") or workload
        )
        labels.setdefault(
            "service.istio.io/canonical-revision",
            labels.get("app.kubernetes.io/version") or labels.get("version") or "latest",
        )
    return labels


def is_network_policy(obj: Mapping[str, Any]) -> bool:
    return obj["kind"] == "NetworkPolicy" and group_of(obj["apiVersion"]) == "networking.k8s.io"


def _isolates_ingress(policy: Manifest) -> bool:
    types = policy["spec"].get("policyTypes")
    return "Ingress" in types if types else True  # without policyTypes, a policy always restricts ingress


def _peer_admits(peer: Mapping[str, Any], own_namespace: str, source: Source) -> bool:
    if "ipBlock" in peer:
        return source.namespace_labels is None  # an address range: only traffic from outside the pods is judged here
    if source.namespace_labels is None or source.pod_labels is None:
        return False
    if "namespaceSelector" in peer:
        if not matches(peer["namespaceSelector"], source.namespace_labels):
            return False
    elif source.namespace_labels.get(NAME_LABEL) != own_namespace:
        return False  # a podSelector alone selects pods of the policy's own namespace
    return matches(peer.get("podSelector"), source.pod_labels)


def _port_admits(rule_ports: Iterable[Mapping[str, Any]] | None, port: int, port_name: str | None) -> bool:
    ports = list(rule_ports or ())
    if not ports:
        return True
    for entry in ports:
        wanted = entry.get("port")
        if wanted is None or wanted == port or (port_name is not None and wanted == port_name):
            return True
    return False


def admits(
    policies: Iterable[Manifest],
    *,
    namespace: str,
    pod_labels: Mapping[str, str],
    port: int,
    source: Source,
    port_name: str | None = None,
) -> bool:
    """Whether the NetworkPolicies let `source` reach a pod with these labels in `namespace` on `port`: a pod no
    policy isolates takes everything; an isolated one takes what some rule of a policy selecting it allows."""
    selecting = [
        p
        for p in policies
        if is_network_policy(p)
        and p["metadata"].get("namespace") == namespace
        and _isolates_ingress(p)
        and matches(p["spec"].get("podSelector"), pod_labels)
    ]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("ingress") or ():
            peers = rule.get("from")
            if isinstance(peers, str):  # a placeholder for address ranges known only at deploy time
                peers = [{"ipBlock": {"cidr": peers}}]
            peer_ok = not peers or any(_peer_admits(peer, namespace, source) for peer in peers)
            if peer_ok and _port_admits(rule.get("ports"), port, port_name):
                return True
    return False


def isolated_namespaces(objects: Iterable[Manifest]) -> list[str]:
    """Namespaces in which some NetworkPolicy isolates pods for ingress."""
    return sorted({o["metadata"]["namespace"] for o in objects if is_network_policy(o) and _isolates_ingress(o)})


def monitoring_allowance(namespace: str, monitoring_namespace: str) -> Manifest:
    """A policy admitting every connection from the monitoring namespace to the pods of `namespace` (scrapes only
    reach the ports that serve metrics; which of them to scrape is the monitors' choice, not this policy's)."""
    peers = [netpol.namespace(monitoring_namespace)]
    return netpol.policy(namespace, ALLOW_MONITORING, ingress=[netpol.rule(peers, to=False)])


#: Istio's ingress gateway pods (istio-system), as upstream's Istio install labels them, and the port behind the
#: gateway Service's port 80 (the pinned tree's `istio-ingressgateway` Service targets 8080).
GATEWAY_POD = {"app": "istio-ingressgateway"}
GATEWAY_POD_HTTP_PORT = 8080
#: istiod's pods, and the port every sidecar takes its configuration and certificates from (secure xDS). Its 15017
#: is the injection webhook, called by the API server, never by a sidecar.
ISTIOD_POD = {"app": "istiod"}
ISTIOD_XDS_PORT = 15012
#: The notebook controller's pods (`kubeflow`), whose culler asks each notebook's Jupyter server whether its kernels
#: are idle, on the notebook's container port (the controller's default, 8888, which the spawner keeps).
NOTEBOOK_CONTROLLER_POD = {"app": "notebook-controller"}
NOTEBOOK_PORT = 8888


@dataclass(frozen=True)
class KubeflowService:
    """A service in the `kubeflow` namespace a team's pods call: whose pods, on which container ports, and who
    calls it (the pinned tree's profile sync hook and ConfigMaps name the addresses; upstream's own policies in
    `kubeflow` admit profile namespaces to exactly these pods)."""

    what: str
    pods: Mapping[str, str]
    ports: tuple[int, ...]


#: What a team's pipelines and notebooks call in `kubeflow`. KFP's v2 driver and launcher call the Pipelines API
#: (`ml-pipeline`: 8888 HTTP, 8887 gRPC; also the KFP SDK in a notebook) and ML Metadata (`metadata-grpc-service`
#: 8080, the `metadata-grpc-configmap` the sync hook writes); the launcher, Argo's executor (its
#: `artifact-repositories`) and the artifact UI read and write artifacts in SeaweedFS (Service port 9000, container
#: port 8333); Katib's metrics collector reports to its DB manager (6789). Caching goes through the Pipelines API;
#: the cache server is a webhook only the API server calls.
KUBEFLOW_SERVICES = (
    KubeflowService("the Pipelines API", {"app": "ml-pipeline"}, (8888, 8887)),
    KubeflowService("ML Metadata", {"component": "metadata-grpc-server"}, (8080,)),
    KubeflowService("SeaweedFS, the pipelines' artifact store", {"app": "seaweedfs"}, (8333,)),
    KubeflowService("Katib's DB manager", {"katib.kubeflow.org/component": "db-manager"}, (6789,)),
)
KUBEFLOW_NAMESPACE = "kubeflow"
ISTIO_NAMESPACE = "istio-system"


def profile_allowances(namespace: str) -> list[Manifest]:
    """The paths a Kubeflow Profile's namespace needs besides a team namespace's own (`netpol.team_namespace`),
    each its own policy: the gateway to the namespace's apps (notebooks, TensorBoards; any port, since a
    VirtualService picks it), the notebook culler to the notebooks' port, every sidecar to istiod, the team's pods to
    Kubeflow's services, and to the gateway itself (clients in the cluster calling Kubeflow's APIs through it)."""
    gateway = [netpol.namespace(ISTIO_NAMESPACE, GATEWAY_POD)]
    services = [
        netpol.rule([netpol.namespace(KUBEFLOW_NAMESPACE, s.pods)], netpol.ports(*s.ports), to=True)
        for s in KUBEFLOW_SERVICES
    ]
    return [
        netpol.policy(namespace, "allow-istio-gateway", ingress=[netpol.rule(gateway, to=False)]),
        netpol.policy(
            namespace,
            "allow-notebook-culler",
            ingress=[
                netpol.rule(
                    [netpol.namespace(KUBEFLOW_NAMESPACE, NOTEBOOK_CONTROLLER_POD)],
                    netpol.ports(NOTEBOOK_PORT),
                    to=False,
                )
            ],
        ),
        netpol.policy(
            namespace,
            "allow-istiod",
            egress=[
                netpol.rule([netpol.namespace(ISTIO_NAMESPACE, ISTIOD_POD)], netpol.ports(ISTIOD_XDS_PORT), to=True)
            ],
        ),
        netpol.policy(namespace, "allow-kubeflow-services", egress=services),
        netpol.policy(
            namespace,
            "allow-gateway-in-cluster",
            egress=[netpol.rule(gateway, netpol.ports(GATEWAY_POD_HTTP_PORT), to=True)],
        ),
    ]


@dataclass(frozen=True)
class Pod:
    """The pods of one workload as the policies see them: namespace, labels at run time, (port, name) pairs."""

    workload: str
    namespace: str
    labels: Mapping[str, str]
    ports: tuple[tuple[int, str | None], ...]


def pods(objects: Iterable[Manifest]) -> list[Pod]:
    objects = list(objects)
    labels_of = namespace_labels(objects)
    found = []
    for obj in objects:
        template = pod_template(obj)
        if template is None:
            continue
        namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        labels = runtime_labels(template, labels_of.get(namespace, {}), name)
        ports = tuple(
            (p["containerPort"], p.get("name"))
            for c in containers(template.get("spec", {}))
            for p in c.get("ports") or ()
        )
        found.append(Pod(f"{obj['kind']} {namespace}/{name}", namespace, labels, ports))
    return found


@dataclass(frozen=True)
class Backend:
    """A pod a webhook calls, and the port it calls it on."""

    webhook: str
    pod: Pod
    port: int
    port_name: str | None


def webhook_backends(objects: Iterable[Manifest]) -> list[Backend]:
    """The pods behind every webhook's Service, with the container port the Service sends the call to."""
    objects = list(objects)
    services = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if o["kind"] == "Service"}
    workloads = pods(objects)
    found = []
    for configuration in filter(is_webhook_configuration, objects):
        for webhook in configuration.get("webhooks") or ():
            reference = webhook.get("clientConfig", {}).get("service")
            if reference is None or (reference["namespace"], reference["name"]) not in services:
                continue
            service = services[(reference["namespace"], reference["name"])]
            port = next(p for p in service["spec"]["ports"] if p["port"] == reference.get("port", 443))
            target = port.get("targetPort", port["port"])
            selector = service["spec"].get("selector") or {}
            if not selector:
                continue  # no selector, no pods: its endpoints are someone else's
            for pod in workloads:
                if pod.namespace != reference["namespace"] or not all(
                    pod.labels.get(k) == v for k, v in selector.items()
                ):
                    continue
                if isinstance(target, int):
                    number, name = target, next((n for p, n in pod.ports if p == target), None)
                else:
                    number, name = next(p for p, n in pod.ports if n == target), target
                found.append(Backend(configuration["metadata"]["name"], pod, number, name))
    return found


@dataclass(frozen=True)
class Exposed:
    """Pods a load balancer connects to from its addresses in the VPC (outside every namespace), and on which ports."""

    namespace: str
    selector: Mapping[str, str]
    ports: tuple[int, ...]


def problems(
    objects: Iterable[Manifest], monitoring_namespace: str | None, exposed: Exposed | None = None
) -> list[str]:
    """Paths the policies close that the platform needs open: the API server to each webhook's pods, (with
    monitoring) Prometheus to every port of every pod, and (with a load balancer) the load balancer to the pods it
    sends requests and health checks to."""
    objects = list(objects)
    found = [
        f"{b.pod.workload}: the API server cannot reach webhook {b.webhook} on port {b.port}"
        for b in webhook_backends(objects)
        if not admits(
            objects,
            namespace=b.pod.namespace,
            pod_labels=b.pod.labels,
            port=b.port,
            port_name=b.port_name,
            source=OUTSIDE,
        )
    ]
    if monitoring_namespace is not None:
        prometheus = Source(namespace_labels={NAME_LABEL: monitoring_namespace}, pod_labels={})
        found += [
            f"{pod.workload}: Prometheus in {monitoring_namespace} cannot reach port {port}"
            for pod in pods(objects)
            for port, name in pod.ports
            if not admits(
                objects, namespace=pod.namespace, pod_labels=pod.labels, port=port, port_name=name, source=prometheus
            )
        ]
    if exposed is not None:
        targets = [
            p
            for p in pods(objects)
            if p.namespace == exposed.namespace and matches({"matchLabels": exposed.selector}, p.labels)
        ]
        if not targets:
            found.append(f"no pods in {exposed.namespace} match {dict(exposed.selector)} for the load balancer")
        found += [
            f"{pod.workload}: the load balancer cannot reach port {port}"
            for pod in targets
            for port in exposed.ports
            if not admits(objects, namespace=pod.namespace, pod_labels=pod.labels, port=port, source=OUTSIDE)
        ]
    return found
