"""The platform's own flows, as the concrete connections of one cluster (`network.Cluster`): what each entry of the
catalogue (`flows.CATALOGUE`) finds. Each function yields `Connection`s; the catalogue says what they are and who
says so."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from ipaddress import ip_network
from typing import Any

from ...kubeflow.network_policy import (
    GATEWAY_POD,
    GATEWAY_POD_HTTP_PORT,
    ISTIO_NAMESPACE,
    ISTIOD_POD,
    ISTIOD_XDS_PORT,
    KUBEFLOW_NAMESPACE,
    KUBEFLOW_SERVICES,
    NOTEBOOK_CONTROLLER_POD,
    NOTEBOOK_PORT,
)
from ...network_policies import ALERTMANAGER_POD, DNS_POD, EGRESS_ANNOTATION, PROMETHEUS_POD, TEAM_LABEL
from ...observability.adapter import PROMETHEUS_PORT
from ...observability.network_policy import ALERTMANAGER_PORT, GRAFANA_POD
from . import istio
from .istio import TCP, Request
from .kubeflow_mesh import USERID_HEADER, owners
from .netpol import Endpoint
from .network import (
    PROFILE_LABEL,
    Cluster,
    gateway_paths,
    scrape_paths,
    webhook_paths,
)

#: The EKS Pod Identity agent: a host-network DaemonSet that serves credentials on this link-local address, port 80
#: (`AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.23/v1/credentials`; docs.aws.amazon.com/eks/latest/
#: userguide/pod-id-how-it-works.html and pod-id-agent-setup.html).
POD_IDENTITY_AGENT = "169.254.170.23"
POD_IDENTITY_PORT = 80
#: The EC2 instance metadata service (IMDS): the node's own credentials, on a link-local address (EC2 User Guide,
#: "Access instance metadata", docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html).
IMDS = "169.254.169.254"
IMDS_PORT = 80
#: A port a team's workload serves metrics on, as Prometheus would scrape it.
_METRICS_PORT = 9090
#: A signed-in user, as the gateway's RequestAuthentication leaves the request: Dex's JWT validated (its subject
#: the request principal) and the email written into `kubeflow-userid`.
_USER = "user@example.org"


@dataclass(frozen=True)
class Connection:
    """One connection in one cluster: its ends, port, protocol and what it carries (for Istio's policies)."""

    what: str
    source: Endpoint
    destination: Endpoint
    port: int
    protocol: str = "TCP"
    request: Request = TCP
    #: Judge only the source namespace's NetworkPolicies (the far end's owner decides whom it admits).
    own_side_only: bool = False


def user_request(email: str = _USER, path: str = "/") -> Request:
    return Request(
        http=True,
        path=path,
        headers={USERID_HEADER: email, "authorization": "Bearer <Dex JWT>"},
        request_principal="http://dex.auth.svc.cluster.local:5556/dex/<subject>",
    )


def _stand_in(cluster: Cluster, namespace: str) -> Endpoint:
    what = f"a new pod in team namespace {namespace}"
    labels = cluster.namespace_labels[namespace]
    return Endpoint(what, next(cluster.hosts), namespace, labels, {"eksml.io/stand-in": namespace})


def team_namespaces(cluster: Cluster, *, profiles_only: bool = False) -> Iterator[str]:
    """Every team namespace (`TEAM_LABEL`), or only those of Kubeflow Profiles."""
    for name, labels in sorted(cluster.namespace_labels.items()):
        if TEAM_LABEL not in labels:
            continue
        if profiles_only and labels.get(PROFILE_LABEL[0]) != PROFILE_LABEL[1]:
            continue
        yield name


def dns(cluster: Cluster) -> Iterator[Connection]:
    servers = cluster.matching("kube-system", DNS_POD)
    stand_ins = [_stand_in(cluster, n) for n in team_namespaces(cluster)]
    for pod in [*cluster.pods, *stand_ins]:
        if pod.is_pod:
            for server in servers:
                yield Connection("cluster DNS", pod, server, 53, "UDP")


def webhooks(cluster: Cluster) -> Iterator[Connection]:
    for what, source, destination, port in webhook_paths(cluster):
        yield Connection(what, source, destination, port)


def scrapes(cluster: Cluster) -> Iterator[Connection]:
    for what, source, destination, port, path in scrape_paths(cluster):
        request = TCP if path is None else Request(http=True, path=path)
        yield Connection(what, source, destination, port, request=request)


def team_scrapes(cluster: Cluster) -> Iterator[Connection]:
    for namespace in team_namespaces(cluster):
        pod = _stand_in(cluster, namespace)
        for source in cluster.matching(None, PROMETHEUS_POD):
            yield Connection("a scrape", source, pod, _METRICS_PORT, request=Request(http=True, path="/metrics"))


def monitoring_clients(cluster: Cluster) -> Iterator[Connection]:
    prometheus, alertmanager = cluster.matching(None, PROMETHEUS_POD), cluster.matching(None, ALERTMANAGER_POD)
    grafana = cluster.matching(None, GRAFANA_POD)
    adapter = cluster.matching(None, {"app.kubernetes.io/name": "prometheus-adapter"})
    pairs = [(c, PROMETHEUS_PORT, s) for c in grafana + adapter for s in prometheus]
    pairs += [(c, ALERTMANAGER_PORT, s) for c in prometheus + grafana for s in alertmanager]
    for client, port, server in pairs:
        yield Connection("queries and alerts", client, server, port, request=Request(http=True, path="/api/v1/query"))


def team_to_monitoring(cluster: Cluster) -> Iterator[Connection]:
    teams = set(team_namespaces(cluster))
    outsiders = [p for p in cluster.pods if p.namespace in teams]
    outsiders += [
        Endpoint(f"a pod in team namespace {n}", next(cluster.hosts), n, cluster.namespace_labels[n])
        for n in sorted(teams)
    ]
    servers = [(s, PROMETHEUS_PORT) for s in cluster.matching(None, PROMETHEUS_POD)]
    servers += [(s, ALERTMANAGER_PORT) for s in cluster.matching(None, ALERTMANAGER_POD)]
    for outsider in outsiders:
        for server, port in servers:
            yield Connection("unauthenticated monitoring", outsider, server, port, request=Request(http=True))


def load_balancer(cluster: Cluster) -> Iterator[Connection]:
    for what, source, destination, port in gateway_paths(cluster):
        yield Connection(what, source, destination, port, request=user_request())


def _service(cluster: Cluster, host: str) -> tuple[str, str] | None:
    """The (namespace, name) of a VirtualService destination host (`name.namespace.svc.cluster.local`)."""
    parts = host.split(".")
    return (parts[1], parts[0]) if len(parts) >= 2 else None


#: Routes of the gateway that are not for users, each with why: their flow is not promised.
NOT_FOR_USERS = {
    ("kubeflow", "profiles-kfam"): "KFAM answers only the central dashboard (upstream's AuthorizationPolicy "
    "kubeflow/profiles-kfam admits the dashboard's identity alone)",
}


def gateway_to_apps(cluster: Cluster) -> Iterator[Connection]:
    gateways = cluster.matching(ISTIO_NAMESPACE, GATEWAY_POD)
    for service in cluster.objects:
        meta = service["metadata"]
        if service.get("kind") != "VirtualService" or (meta.get("namespace"), meta["name"]) in NOT_FOR_USERS:
            continue
        for route in (service.get("spec") or {}).get("http") or ():
            prefix = next((m.get("uri", {}).get("prefix") for m in route.get("match") or () if m.get("uri")), "/")
            for target in route.get("route") or ():
                destination = target.get("destination") or {}
                found = _service(cluster, destination.get("host", ""))
                number = (destination.get("port") or {}).get("number")
                if found is None or number is None:
                    continue
                what = f"VirtualService {service['metadata'].get('namespace')}/{service['metadata']['name']}"
                for pod, port in cluster.service_backends(
                    found[0], found[1], {"port": number, **_port(cluster, *found, number)}
                ):
                    for gateway in gateways:
                        yield Connection(what, gateway, pod, port, request=user_request(path=prefix or "/"))


def _port(cluster: Cluster, namespace: str, name: str, number: int) -> Mapping[str, Any]:
    for obj in cluster.objects:
        meta = obj["metadata"]
        if obj["kind"] == "Service" and (meta.get("namespace"), meta["name"]) == (namespace, name):
            return next((p for p in (obj.get("spec") or {}).get("ports") or () if p["port"] == number), {})
    return {}


def gateway_to_notebooks(cluster: Cluster) -> Iterator[Connection]:
    profile_owners = owners(cluster.objects)
    for namespace in team_namespaces(cluster, profiles_only=True):
        pod = _stand_in(cluster, namespace)
        request = user_request(profile_owners.get(namespace, ""), f"/notebook/{namespace}/a-notebook/")
        for gateway in cluster.matching(ISTIO_NAMESPACE, GATEWAY_POD):
            yield Connection("a notebook through the gateway", gateway, pod, NOTEBOOK_PORT, request=request)


def culler(cluster: Cluster) -> Iterator[Connection]:
    for namespace in team_namespaces(cluster, profiles_only=True):
        pod = _stand_in(cluster, namespace)
        request = Request(http=True, path=f"/notebook/{namespace}/a-notebook/api/kernels")
        for controller in cluster.matching(KUBEFLOW_NAMESPACE, NOTEBOOK_CONTROLLER_POD):
            yield Connection("the notebook culler", controller, pod, NOTEBOOK_PORT, request=request)


def istiod(cluster: Cluster) -> Iterator[Connection]:
    for namespace in team_namespaces(cluster, profiles_only=True):
        pod = _stand_in(cluster, namespace)
        for server in cluster.matching(ISTIO_NAMESPACE, ISTIOD_POD):
            yield Connection("the sidecar's configuration", pod, server, ISTIOD_XDS_PORT)


def kubeflow_services(cluster: Cluster) -> Iterator[Connection]:
    """A run's pods call Kubeflow's services with and without a sidecar (whichever the run's pods get): the
    policies must let both through."""
    for namespace in team_namespaces(cluster, profiles_only=True):
        with_sidecar = _stand_in(cluster, namespace)
        without = Endpoint(
            f"a run's pod without a sidecar in {namespace}",
            next(cluster.hosts),
            namespace,
            with_sidecar.namespace_labels,
            {"eksml.io/stand-in": namespace, istio.INJECT: "false"},
        )
        cluster.mesh[without.address] = istio.Mesh(service_account="default-editor")
        for service in KUBEFLOW_SERVICES:
            for server in cluster.matching(KUBEFLOW_NAMESPACE, service.pods):
                for port in service.ports:
                    request = Request(http=True, method="POST", path="/")
                    for pod in (with_sidecar, without):
                        yield Connection(service.what, pod, server, port, request=request)


def in_cluster_gateway(cluster: Cluster) -> Iterator[Connection]:
    for namespace in team_namespaces(cluster, profiles_only=True):
        pod = _stand_in(cluster, namespace)
        for gateway in cluster.matching(ISTIO_NAMESPACE, GATEWAY_POD):
            yield Connection(
                "the gateway in the cluster",
                pod,
                gateway,
                GATEWAY_POD_HTTP_PORT,
                request=user_request(),
                own_side_only=True,
            )


def https_out(cluster: Cluster) -> Iterator[Connection]:
    outside = Endpoint("an address outside the VPC", cluster.vpc.outside())
    for namespace in team_namespaces(cluster):
        yield Connection("HTTPS out", _stand_in(cluster, namespace), outside, 443)


def pod_identity_agent(cluster: Cluster) -> Iterator[Connection]:
    agent = Endpoint("the EKS Pod Identity agent", POD_IDENTITY_AGENT)
    for namespace in sorted({n for n, _ in cluster.pod_identity}):
        if namespace not in cluster.namespace_labels:
            continue  # a namespace the stack does not make (kube-system) has no policy of the stack's
        pod = Endpoint(
            f"a new pod in {namespace}", next(cluster.hosts), namespace, cluster.namespace_labels[namespace], {}
        )
        yield Connection("AWS credentials", pod, agent, POD_IDENTITY_PORT)


def imds(cluster: Cluster) -> Iterator[Connection]:
    """A new pod of every team namespace to the instance metadata service: its node role's credentials."""
    metadata = Endpoint("the EC2 instance metadata service", IMDS)
    for namespace in team_namespaces(cluster):
        yield Connection("the node's credentials", _stand_in(cluster, namespace), metadata, IMDS_PORT)


def team_egress(cluster: Cluster) -> Iterator[Connection]:
    """Each range and port a team namespace's `network.egress` asks for, to the range's first address."""
    for obj in cluster.objects:
        if obj.get("kind") != "Namespace":
            continue
        promised = json.loads((obj["metadata"].get("annotations") or {}).get(EGRESS_ANNOTATION) or "{}")
        namespace = obj["metadata"]["name"]
        for name, entry in sorted(promised.items()):
            network = ip_network(entry["cidr"])
            target = Endpoint(f"{entry['cidr']} ({name})", str(next(network.hosts(), network.network_address)))
            for port in entry["ports"]:
                yield Connection(f"egress {name}", _stand_in(cluster, namespace), target, port, entry["protocol"])
