"""How people reach the Kubeflow dashboard: `kubectl port-forward` to the Istio ingress gateway (the default;
nothing is exposed), or an AWS Application Load Balancer terminating TLS with an ACM certificate (opt-in)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .. import network_policies as netpol
from . import alb_auth
from .alb_auth import AlbAuth
from .network_policy import ISTIO_NAMESPACE, Exposed
from .objects import Manifest
from .transform import replace

GATEWAY_NAMESPACE = ISTIO_NAMESPACE
GATEWAY_SERVICE = "istio-ingressgateway"
#: Istio's gateway reports readiness on this port and path (its pods' own readiness probe).
GATEWAY_HEALTH = ("15021", "/healthz/ready")
OAUTH2_PROXY_PARAMETERS = ("ConfigMap", "oauth2-proxy", "oauth2-proxy-parameters")
#: The gateway Service's port the Ingress sends requests to.
GATEWAY_HTTP_PORT = 80
#: TLS 1.2 and 1.3 only.
SSL_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
#: Where the ALB's sources go when only AWS knows them (the list of ipBlock peers for an existing VPC's CIDRs).
LOAD_BALANCER_SOURCES_PLACEHOLDER = "<<kubeflow-input:load-balancer-sources>>"
ALLOW_LOAD_BALANCER = "allow-load-balancer"
#: The load balancer controller gives pods of a namespace with this label a readiness gate that holds until the ALB
#: sends them traffic, so a rollout or a node drain never removes a gateway pod the ALB still routes to.
READINESS_GATE_LABEL = ("elbv2.k8s.aws/pod-readiness-gate-inject", "enabled")


@dataclass(frozen=True)
class Alb:
    """Expose the gateway through an ALB: HTTPS only, with the given ACM certificate."""

    certificate_arn: str
    scheme: Literal["internal", "internet-facing"] = "internal"
    host: str | None = None  # answer only this host name (None: any)
    allowed_cidrs: tuple[str, ...] = ()  # who may connect (empty: the load balancer controller's default)
    #: The CIDRs of the subnets the ALB's nodes live in, which its requests and health checks come from (empty: the
    #: VPC's CIDRs, known only at deploy time).
    source_cidrs: tuple[str, ...] = ()
    #: The authenticate action on the HTTPS listener (None: the ALB forwards every request).
    auth: AlbAuth | None = None


def ingress(alb: Alb, tags: Mapping[str, str]) -> Manifest:
    """The Ingress the AWS Load Balancer Controller turns into an ALB in front of the Istio gateway. `tags` are the
    platform's standard tags: the controller creates the ALB, so the provider's default tags never reach it."""
    annotations = {
        "alb.ingress.kubernetes.io/scheme": alb.scheme,
        "alb.ingress.kubernetes.io/target-type": "ip",
        # Port 80 only answers with a redirect to 443 (the controller's ssl-redirect: the HTTP listener's one default
        # action; kubernetes-sigs.github.io/aws-load-balancer-controller/v2.x guide/tasks/ssl_redirect).
        "alb.ingress.kubernetes.io/listen-ports": json.dumps([{"HTTP": 80}, {"HTTPS": 443}]),
        "alb.ingress.kubernetes.io/ssl-redirect": "443",
        "alb.ingress.kubernetes.io/certificate-arn": alb.certificate_arn,
        "alb.ingress.kubernetes.io/ssl-policy": SSL_POLICY,
        "alb.ingress.kubernetes.io/healthcheck-port": GATEWAY_HEALTH[0],
        "alb.ingress.kubernetes.io/healthcheck-path": GATEWAY_HEALTH[1],
    }
    if tags:
        annotations["alb.ingress.kubernetes.io/tags"] = ",".join(f"{k}={v}" for k, v in sorted(tags.items()))
    if alb.allowed_cidrs:
        annotations["alb.ingress.kubernetes.io/inbound-cidrs"] = ",".join(alb.allowed_cidrs)
    if alb.auth is not None:
        annotations.update(alb_auth.ingress_annotations(alb.auth))
    rule: dict[str, Any] = {
        "http": {
            "paths": [
                {
                    "path": "/",
                    "pathType": "Prefix",
                    "backend": {"service": {"name": GATEWAY_SERVICE, "port": {"number": GATEWAY_HTTP_PORT}}},
                }
            ]
        }
    }
    if alb.host is not None:
        rule = {"host": alb.host, **rule}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "kubeflow", "namespace": GATEWAY_NAMESPACE, "annotations": annotations},
        "spec": {"ingressClassName": "alb", "rules": [rule]},
    }


def authentication(alb: Alb) -> list[Manifest]:
    """What the ALB's authenticate action reads in the cluster besides the Ingress (the OIDC client's Secret, and
    the RBAC that lets the load balancer controller read it); empty without one."""
    return alb_auth.manifests(alb.auth, GATEWAY_NAMESPACE) if alb.auth is not None else []


def gateway_exposure(objects: list[Manifest]) -> Exposed:
    """What an ALB with `ip` targets connects to: the gateway's pods (its Service's selector), on the port behind
    the Service port the Ingress uses and on the health check's port."""
    services = [
        o
        for o in objects
        if o["kind"] == "Service"
        and o["metadata"]["name"] == GATEWAY_SERVICE
        and o["metadata"].get("namespace") == GATEWAY_NAMESPACE
    ]
    if len(services) != 1:
        raise ValueError(
            f"the ALB needs the Service {GATEWAY_NAMESPACE}/{GATEWAY_SERVICE}; the rendered objects hold "
            f"{len(services)}"
        )
    ports = [p for p in services[0]["spec"]["ports"] if p["port"] == GATEWAY_HTTP_PORT]
    if len(ports) != 1:
        raise ValueError(
            f"the ALB sends requests to port {GATEWAY_HTTP_PORT} of {GATEWAY_SERVICE}, which it does not serve"
        )
    service, target = services[0], ports[0].get("targetPort", ports[0]["port"])
    if not isinstance(target, int):
        raise ValueError(
            f"{GATEWAY_SERVICE}: port {GATEWAY_HTTP_PORT} targets {target!r}; the allowance needs a number"
        )
    return Exposed(GATEWAY_NAMESPACE, dict(service["spec"]["selector"]), (target, int(GATEWAY_HEALTH[0])))


def ip_blocks(cidrs: Iterable[str]) -> list[dict[str, Any]]:
    """NetworkPolicy peers for address ranges."""
    return [netpol.cidr(block) for block in cidrs]


def load_balancer_allowance(exposed: Exposed, source_cidrs: tuple[str, ...]) -> Manifest:
    """A policy admitting the ALB's requests and health checks, which come from its addresses in its subnets (not
    from a pod), to the gateway's pods: upstream's policies admit only pods of the gateway's own namespace. With no
    `source_cidrs`, the peers are a placeholder the registration fills with the VPC's CIDRs."""
    sources: Any = ip_blocks(source_cidrs) or LOAD_BALANCER_SOURCES_PLACEHOLDER
    return netpol.policy(
        exposed.namespace,
        ALLOW_LOAD_BALANCER,
        selects=exposed.selector,
        ingress=[{"from": sources, "ports": netpol.ports(*exposed.ports)}],
    )


def readiness_gates(objects: list[Manifest]) -> list[Manifest]:
    """Label the gateway's namespace for the load balancer controller's pod readiness gates."""
    key_, value = READINESS_GATE_LABEL

    def change(obj: Manifest) -> Manifest:
        obj["metadata"].setdefault("labels", {})[key_] = value
        return obj

    return replace(objects, {("Namespace", "", GATEWAY_NAMESPACE): change})


#: Where the cluster's OIDC issuer goes (a Pulumi output: the registration puts its value in).
OIDC_ISSUER_PLACEHOLDER = "<<kubeflow-input:oidc-issuer>>"
CLUSTER_TOKEN_AUTHENTICATION = ("RequestAuthentication", "istio-system", "m2m-token-issuer")


ALLOW_IN_CLUSTER = "allow-in-cluster-clients"


@dataclass(frozen=True)
class ClusterTokenSpec:
    """Which service-account tokens the gateway accepts, and which namespaces' pods may reach it in the cluster."""

    audiences: tuple[str, ...] = ("pipelines.kubeflow.org",)
    namespaces: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.audiences:
            raise ValueError("cluster tokens need at least one audience: without one, any cluster token is accepted")


def cluster_token_issuer(objects: list[Manifest], spec: ClusterTokenSpec | None = None) -> list[Manifest]:
    """Point the gateway's check of service-account tokens at this cluster's issuer (upstream leaves a template),
    accepting only the given audiences (upstream sets none, so an IRSA token would pass)."""
    spec = spec or ClusterTokenSpec()

    def change(obj: Manifest) -> Manifest:
        (rule,) = obj["spec"]["jwtRules"]
        rule["issuer"] = OIDC_ISSUER_PLACEHOLDER
        rule["audiences"] = list(spec.audiences)
        return obj

    return replace(objects, {CLUSTER_TOKEN_AUTHENTICATION: change})


def in_cluster_allowance(exposed: Exposed, namespaces: Iterable[str]) -> Manifest:
    """A policy admitting pods of the given namespaces to the gateway's pods on its HTTP port: upstream's policies
    admit only the gateway's own namespace, so a pipeline calling the gateway by its Service would be dropped."""
    names = sorted(set(namespaces))
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": ALLOW_IN_CLUSTER, "namespace": exposed.namespace},
        "spec": {
            "podSelector": {"matchLabels": dict(exposed.selector)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [
                        {
                            "namespaceSelector": {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": names}
                                ]
                            }
                        }
                    ],
                    "ports": [{"port": exposed.ports[0], "protocol": "TCP"}],
                }
            ],
        },
    }


def cookies(objects: list[Manifest], *, secure: bool) -> list[Manifest]:
    """oauth2-proxy marks its session cookie Secure exactly when the gateway is behind HTTPS (the ALB): a Secure
    cookie over a plain-HTTP port-forward never comes back, and sign-in loops."""

    def change(obj: Manifest) -> Manifest:
        obj["data"]["FORCE_HTTPS"] = "true" if secure else "false"
        return obj

    return replace(objects, {OAUTH2_PROXY_PARAMETERS: change})
