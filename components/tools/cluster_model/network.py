"""The cluster the platform model judges connections in (`Cluster`: a pod endpoint of every workload, at the
addresses the stack gives them, with the NetworkPolicies placed at the stack's own VPC ranges and each end as Istio
sees it), the paths its objects imply (the API server to every webhook's and aggregated API's pods, Prometheus to
every monitor's targets, a load balancer to the Kubeflow gateway), and every namespace's default deny
(`open_namespaces`). Which connections the platform promises open or closed, and the judging, are the flow
catalogue's (`flows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from ipaddress import IPv4Network
from typing import Any

from ...kubeflow.access import GATEWAY_NAMESPACE, gateway_exposure
from ...kubeflow.network_policy import (
    runtime_labels,
)
from ...kubeflow.objects import is_webhook_configuration, matches
from ...kubeflow.teams import PROFILE_NAMESPACE_LABELS
from ...network_policies import DNS_POD, PROMETHEUS_POD
from . import istio
from .addresses import UNKNOWN_VALUE, VpcAddresses
from .kubeflow_mesh import runtime_policies
from .netpol import Endpoint, allowed
from .workloads import pod_template

#: The scheme an ALB gets when its Ingress names none (the AWS Load Balancer Controller's default).
_DEFAULT_SCHEME = "internal"
_SCHEME_ANNOTATION = "alb.ingress.kubernetes.io/scheme"


class Cluster:
    """Every pod endpoint of the platform's workloads, with addresses where the stack puts them: pods and the control
    plane's interfaces in the node subnets (the VPC CNI gives pods VPC addresses), load balancers in the subnets of
    their scheme. `vpc` is the stack's (`Platform.vpc`); the stand-in serves objects judged without a preview."""

    def __init__(
        self,
        objects: Sequence[Mapping[str, Any]],
        workloads: Iterable[Any],
        vpc: VpcAddresses | None = None,
        pod_identity: Iterable[tuple[str, str]] = (),
    ):
        self.objects = objects
        #: (namespace, service account) pairs EKS Pod Identity gives credentials to (its associations).
        self.pod_identity = frozenset(pod_identity)
        #: Istio's policies, with those Kubeflow's profile controller writes at run time.
        self.istio = istio.Policies([*objects, *runtime_policies(objects)])
        #: Each pod endpoint's place in the mesh, by address.
        self.mesh: dict[str, istio.Mesh] = {}
        self.vpc = vpc = vpc if vpc is not None else VpcAddresses.stand_in()
        self.policies = [_placed(o, vpc.cidrs) for o in objects if o.get("kind") == "NetworkPolicy"]
        self.namespace_labels = {
            o["metadata"]["name"]: dict(o["metadata"].get("labels") or {}) for o in objects if o["kind"] == "Namespace"
        }
        templates = {
            (o["metadata"].get("namespace"), o["metadata"]["name"]): t
            for o in objects
            if (t := pod_template(o)) is not None
        }
        self.hosts = hosts = vpc.hosts()
        self.control_plane = Endpoint("the API server (control plane ENI)", next(hosts))
        # An internal load balancer shares the node subnets; an internet-facing one lives in the public ones.
        public = [str(next(s.hosts())) for s in vpc.public_subnets[:1]]
        self.load_balancers = {
            "internal": Endpoint("a load balancer in the VPC", next(hosts)),
            "internet-facing": Endpoint("a load balancer in the public subnets", public[0] if public else next(hosts)),
        }
        self.pods: list[Endpoint] = []
        for w in workloads:
            template = templates.get((w.namespace, w.name)) or {}
            spec = template.get("spec") or {}
            named = {
                p["name"]: p["containerPort"]
                for c in spec.get("containers") or ()
                for p in c.get("ports") or ()
                if p.get("name")
            }
            # with the labels Istio's injector adds, which some of Kubeflow's policies select on
            labels = {**w.labels, **runtime_labels(template, self.namespace_labels.get(w.namespace, {}), w.name)}
            if w.namespace == "kube-system" and w.name == "coredns":
                labels.update(DNS_POD)  # the EKS coredns add-on labels its pods so
            address = next(hosts)
            self.mesh[address] = istio.mesh_of(template, self.namespace_labels.get(w.namespace, {}))
            self.pods.append(
                Endpoint(
                    w.ref,
                    address,
                    w.namespace,
                    self.namespace_labels.get(w.namespace, {}),
                    labels,
                    named,
                    bool(spec.get("hostNetwork")),
                )
            )

    def side(self, endpoint: Endpoint) -> istio.Side:
        """An endpoint as Istio sees it. A stand-in pod (a new pod of a namespace) gets the namespace's injection
        unless its labels opt out, and runs as `default-editor` in a Kubeflow Profile's namespace (what its notebooks
        and pipelines run as), else as `default`."""
        mesh = self.mesh.get(endpoint.address)
        if mesh is None and endpoint.is_pod:
            labels = self.namespace_labels.get(endpoint.namespace or "", {})
            profile = labels.get(PROFILE_LABEL[0]) == PROFILE_LABEL[1]
            account = PROFILE_ACCOUNT if profile else "default"
            own = {"metadata": {"labels": dict(endpoint.labels)}}  # a stand-in's own `sidecar.istio.io/inject`
            mesh = istio.Mesh(istio.injected(own, labels), service_account=account)
        return istio.Side(endpoint.namespace, endpoint.labels, endpoint.address, mesh or istio.OUTSIDE_MESH)

    def matching(self, namespace: str | None, labels: Mapping[str, str]) -> list[Endpoint]:
        return [
            p
            for p in self.pods
            if (namespace is None or p.namespace == namespace) and matches({"matchLabels": dict(labels)}, p.labels)
        ]

    def service_backends(self, namespace: str, name: str, port: Mapping[str, Any]) -> Iterator[tuple[Endpoint, int]]:
        """The pods behind a Service port, each with the container port the Service sends to."""
        service = next(
            (
                o
                for o in self.objects
                if o["kind"] == "Service"
                and o["metadata"]["name"] == name
                and o["metadata"].get("namespace") == namespace
            ),
            None,
        )
        selector = (service or {}).get("spec", {}).get("selector")
        if not selector:
            return  # no selector: its endpoints are not pods (the kubelet, the API server)
        target = port.get("targetPort", port["port"])
        for pod in self.matching(namespace, selector):
            number = pod.named_ports.get(target) if isinstance(target, str) else target
            if number is not None:
                yield pod, number


def _placed(policy: Mapping[str, Any], vpc_cidrs: Iterable[IPv4Network]) -> Mapping[str, Any]:
    """The policy as deployed: peers left as a placeholder for the VPC's ranges (the load balancer's, filled in at
    registration) become the VPC's ranges, and so does an `ipBlock` the preview could only record as unknown (an
    existing VPC's CIDRs, read from AWS at deploy time: the only address range the platform learns so)."""
    vpc = [{"ipBlock": {"cidr": str(c)}} for c in vpc_cidrs]
    spec = policy.get("spec") or {}

    def peers(listed: Any) -> Any:
        if isinstance(listed, str):
            return vpc
        if not isinstance(listed, list):
            return listed
        return [
            p for peer in listed for p in (vpc if (peer.get("ipBlock") or {}).get("cidr") == UNKNOWN_VALUE else [peer])
        ]

    placed = {
        direction: [{**r, key: peers(r[key])} if key in r else r for r in spec[direction]]
        for direction, key in (("ingress", "from"), ("egress", "to"))
        if spec.get(direction)
    }
    if all(placed[d] == spec[d] for d in placed):
        return policy
    return {**policy, "spec": {**spec, **placed}}


def gateway_paths(cluster: Cluster) -> Iterator[tuple[str, Endpoint, Endpoint, int]]:
    """With the ALB in front of Kubeflow, the load balancer to the gateway's pods on the request and health ports,
    from the subnets of the scheme its Ingress asks for."""
    ingresses = [
        o for o in cluster.objects if o["kind"] == "Ingress" and o["metadata"].get("namespace") == GATEWAY_NAMESPACE
    ]
    if not ingresses:
        return
    exposed = gateway_exposure([dict(o) for o in cluster.objects])
    schemes = {(o["metadata"].get("annotations") or {}).get(_SCHEME_ANNOTATION, _DEFAULT_SCHEME) for o in ingresses}
    for scheme in sorted(schemes):
        load_balancer = cluster.load_balancers.get(scheme, cluster.load_balancers[_DEFAULT_SCHEME])
        for pod in cluster.matching(exposed.namespace, exposed.selector):
            for port in exposed.ports:
                yield f"the Kubeflow ALB, {scheme}", load_balancer, pod, port


def _service_ports(service: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((service.get("spec") or {}).get("ports") or ())


def webhook_paths(cluster: Cluster) -> Iterator[tuple[str, Endpoint, Endpoint, int]]:
    for obj in cluster.objects:
        references = []
        if is_webhook_configuration(obj):
            references = [(w.get("clientConfig") or {}).get("service") for w in obj.get("webhooks") or ()]
        elif obj["kind"] == "APIService":
            references = [(obj.get("spec") or {}).get("service")]
        for ref in filter(None, references):
            for service in cluster.objects:
                if service["kind"] != "Service" or (
                    service["metadata"]["name"],
                    service["metadata"].get("namespace"),
                ) != (ref["name"], ref["namespace"]):
                    continue
                for port in _service_ports(service):
                    if port["port"] != ref.get("port", 443):
                        continue
                    for pod, number in cluster.service_backends(ref["namespace"], ref["name"], port):
                        what = f"{obj['kind']} {obj['metadata']['name']}"
                        yield what, cluster.control_plane, pod, number


def _scrape_path(endpoint: Mapping[str, Any]) -> str | None:
    """The HTTP path Prometheus asks for (the operator's default `/metrics`), or None over HTTPS, which a sidecar
    sees as TCP (prometheus-operator API reference, `Endpoint.path`, `Endpoint.scheme`)."""
    if endpoint.get("scheme") == "https":
        return None
    return str(endpoint.get("path") or "/metrics")


def scrape_paths(cluster: Cluster) -> Iterator[tuple[str, Endpoint, Endpoint, int, str | None]]:
    """Prometheus to every target of every ServiceMonitor and PodMonitor, with the HTTP path it asks for."""
    prometheus = cluster.matching(None, PROMETHEUS_POD)
    for monitor in cluster.objects:
        if monitor["kind"] != "ServiceMonitor":
            continue
        spec, home = monitor.get("spec") or {}, monitor["metadata"].get("namespace")
        chosen = spec.get("namespaceSelector") or {}
        endpoints = {e.get("port"): e for e in spec.get("endpoints") or ()}
        for service in cluster.objects:
            namespace = service["metadata"].get("namespace")
            if service["kind"] != "Service" or not matches(
                spec.get("selector"), service["metadata"].get("labels") or {}
            ):
                continue
            if not chosen.get("any") and namespace not in (chosen.get("matchNames") or [home]):
                continue
            for port in _service_ports(service):
                if port.get("name") not in endpoints:
                    continue
                path = _scrape_path(endpoints[port.get("name")])
                for pod, number in cluster.service_backends(namespace, service["metadata"]["name"], port):
                    for source in prometheus:
                        yield f"ServiceMonitor {home}/{monitor['metadata']['name']}", source, pod, number, path
    for monitor in cluster.objects:
        if monitor["kind"] != "PodMonitor":
            continue
        spec = monitor.get("spec") or {}
        for pod in cluster.pods:
            if not matches(spec.get("selector"), pod.labels):
                continue
            for endpoint in spec.get("podMetricsEndpoints") or ():
                named = pod.named_ports.get(endpoint.get("port", ""))
                if named is None:
                    continue
                for source in prometheus:
                    yield f"PodMonitor {monitor['metadata']['name']}", source, pod, named, _scrape_path(endpoint)


#: A port no allowance of the platform names, for the stand-in pods of `open_namespaces`.
_UNNAMED_PORT = 31337

#: Namespaces whose default deny isolates ingress only, each with its reason (docs/security.md says the same):
#: upstream Kubeflow's policies there isolate ingress, and the pinned tree does not list every destination their
#: pods call, so an egress deny could break a path nobody wrote down. Only these are excused, and only for egress.
INGRESS_ONLY = {
    "auth": "Dex calls the company's identity providers, which only the connectors' config names",
    "istio-system": "the gateway sends requests wherever a VirtualService routes, in any namespace and on any port",
    "knative-serving": "the activator proxies requests to every Revision's pods, in any namespace and on the port "
    "its container names, and the controller resolves image tags at any registry",
    "kubeflow": "two dozen controllers and apps, several calling user-given addresses (pipeline sources, model URIs)",
    "kubeflow-system": "the Trainer's and Spark's controllers, whose calls upstream does not list",
    "oauth2-proxy": "it calls Dex through the gateway's public address, which only the deployment knows",
}


def open_namespaces(cluster: Cluster) -> Iterator[tuple[str, str]]:
    """Each namespace the stack creates in which a new pod that no allowance names (no labels of a known component)
    is not isolated both ways: it is reachable from a pod in another namespace, or reaches one, on a port nobody
    opened. That is what a default deny means, whatever shape its policies take; the namespaces of `INGRESS_ONLY`
    are held to ingress only."""
    for name, labels in sorted(cluster.namespace_labels.items()):
        stand_in = Endpoint(f"a new pod in {name}", next(cluster.hosts), name, labels, {"eksml.io/stand-in": name})
        stranger = Endpoint("a pod elsewhere", next(cluster.hosts), "stand-in-elsewhere", {}, {})
        if allowed(cluster.policies, stranger, stand_in, _UNNAMED_PORT):
            yield name, f"a pod in another namespace reaches a new pod there on port {_UNNAMED_PORT}"
        elif name not in INGRESS_ONLY and allowed(cluster.policies, stand_in, stranger, _UNNAMED_PORT):
            yield name, f"a new pod there reaches a pod in another namespace on port {_UNNAMED_PORT}"


#: The service account a Profile's notebooks and pipeline runs use (the profile controller makes it).
PROFILE_ACCOUNT = "default-editor"
#: The label every Kubeflow Profile's namespace carries.
PROFILE_LABEL = ("app.kubernetes.io/part-of", PROFILE_NAMESPACE_LABELS["app.kubernetes.io/part-of"])
