"""The one builder of NetworkPolicy objects (pure): default deny, then each allowance as a policy of its own, so a
namespace's policies read as a list of the paths it opens.

Policies add up: a pod that some policy selects for a direction takes only what one of the selecting policies'
rules allows in that direction (Kubernetes docs, Network Policies). The cluster enforces them through the VPC
CNI's network policy agent (`enableNetworkPolicy`, components/cluster/addons.py).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Manifest = dict[str, Any]
Peer = dict[str, Any]
Rule = dict[str, Any]

#: The label the API server sets on every namespace to its name (Kubernetes 1.22+): what a peer selects it by.
NAME_LABEL = "kubernetes.io/metadata.name"
#: Cluster DNS as the EKS coredns add-on labels its pods.
DNS_NAMESPACE = "kube-system"
DNS_POD = {"k8s-app": "kube-dns"}
#: Prometheus' and Alertmanager's pods as the Prometheus operator labels them.
PROMETHEUS_POD = {"app.kubernetes.io/name": "prometheus"}
ALERTMANAGER_POD = {"app.kubernetes.io/name": "alertmanager"}
#: Every address: the peer of an allowance whose bound is its port, not its source.
ANYWHERE = "0.0.0.0/0"


def selector(labels: Mapping[str, str] | None) -> dict[str, Any]:
    """A label selector: all (`{}`) without labels."""
    return {"matchLabels": dict(labels)} if labels else {}


def pods(labels: Mapping[str, str] | None = None) -> Peer:
    """Pods of the policy's own namespace (all of them without labels)."""
    return {"podSelector": selector(labels)}


def namespace(name: str, labels: Mapping[str, str] | None = None) -> Peer:
    """Pods of the namespace `name` (all of them without labels)."""
    peer: Peer = {"namespaceSelector": {"matchLabels": {NAME_LABEL: name}}}
    if labels:
        peer["podSelector"] = selector(labels)
    return peer


def cidr(block: str) -> Peer:
    return {"ipBlock": {"cidr": block}}


def ports(*numbers: int | str, protocol: str = "TCP") -> list[dict[str, Any]]:
    return [{"protocol": protocol, "port": number} for number in numbers]


def rule(peers: Sequence[Peer] | None = None, on: Sequence[Mapping[str, Any]] | None = None, *, to: bool) -> Rule:
    """One rule: from (`to=False`) or to (`to=True`) `peers` (every source or destination when None), on the ports
    `on` (every port when None)."""
    body: Rule = {}
    if peers is not None:
        body["to" if to else "from"] = list(peers)
    if on is not None:
        body["ports"] = [dict(p) for p in on]
    return body


def policy(
    namespace_: str,
    name: str,
    *,
    selects: Mapping[str, str] | None = None,
    ingress: Iterable[Rule] | None = None,
    egress: Iterable[Rule] | None = None,
) -> Manifest:
    """A policy for the pods of `namespace_` with the labels `selects` (all without), isolating each direction it is
    given rules for (an empty list isolates it with nothing allowed)."""
    spec: dict[str, Any] = {"podSelector": selector(selects), "policyTypes": []}
    for kind, rules in (("Ingress", ingress), ("Egress", egress)):
        if rules is None:
            continue
        spec["policyTypes"].append(kind)
        listed = [dict(r) for r in rules]
        if listed:
            spec[kind.lower()] = listed
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace_},
        "spec": spec,
    }


def deny_all(namespace_: str) -> Manifest:
    """Isolates every pod of the namespace both ways: only what another policy allows gets in or out."""
    return policy(namespace_, "deny-all", ingress=[], egress=[])


def allow_dns(namespace_: str) -> Manifest:
    """Every pod may ask cluster DNS (both protocols: answers too large for UDP come over TCP)."""
    dns = [namespace(DNS_NAMESPACE, DNS_POD)]
    on = ports(53, protocol="UDP") + ports(53)
    return policy(namespace_, "allow-dns", egress=[rule(dns, on, to=True)])


def allow_https_egress(namespace_: str, *, selects: Mapping[str, str] | None = None) -> Manifest:
    """HTTPS to anywhere: the Kubernetes API (EKS serves it on 443, from addresses not known before the cluster
    exists), STS for IRSA and the AWS APIs controllers call."""
    return policy(
        namespace_, "allow-https-egress", selects=selects, egress=[rule([cidr(ANYWHERE)], ports(443), to=True)]
    )


#: The EKS Pod Identity agent, a host-network DaemonSet serving credentials on this link-local address and port (the
#: SDKs read `AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.23/v1/credentials`;
#: https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html, pod-id-how-it-works.html).
POD_IDENTITY_AGENT_CIDR = "169.254.170.23/32"
POD_IDENTITY_AGENT_PORT = 80


def allow_pod_identity_agent(namespace_: str) -> Manifest:
    """Pods may ask the node's EKS Pod Identity agent for credentials (that address and port only): without it a
    namespace's egress deny leaves its pods with no AWS credentials under EKS Pod Identity."""
    peers = [cidr(POD_IDENTITY_AGENT_CIDR)]
    return policy(namespace_, "allow-pod-identity-agent", egress=[rule(peers, ports(POD_IDENTITY_AGENT_PORT), to=True)])


#: The team namespace's annotation listing the egress its config asks for (`{name: {cidr, ports, protocol}}`, JSON):
#: what the platform model judges the namespace's policies against.
EGRESS_ANNOTATION = "eksml.io/egress"


#: The EC2 instance metadata service: the node role's credentials (EC2 User Guide, "Access instance metadata").
IMDS_CIDR = "169.254.169.254/32"


def allow_egress(namespace_: str, name: str, block: str, on: Sequence[int], protocol: str = "TCP") -> Manifest:
    """Pods may connect to `block` on the ports `on` (a team's `network.egress.<name>`), never to the instance
    metadata service within it (a range like 0.0.0.0/0 on port 80 would otherwise hand pods the node role)."""
    peer = cidr(block)
    network = ipaddress.ip_network(block, strict=False)
    imds = ipaddress.IPv4Network(IMDS_CIDR)
    if isinstance(network, ipaddress.IPv4Network) and imds.subnet_of(network) and network.prefixlen < imds.prefixlen:
        peer = {"ipBlock": {"cidr": block, "except": [IMDS_CIDR]}}
    return policy(namespace_, f"allow-egress-{name}", egress=[rule([peer], ports(*on, protocol=protocol), to=True)])


def allow_prometheus(namespace_: str, monitoring_namespace: str) -> Manifest:
    """Prometheus may scrape every pod of the namespace (which ports it scrapes is the monitors' choice)."""
    source = [namespace(monitoring_namespace, PROMETHEUS_POD)]
    return policy(namespace_, "allow-prometheus", ingress=[rule(source, to=False)])


def allow_webhooks(
    namespace_: str,
    webhook_ports: Sequence[int],
    *,
    selects: Mapping[str, str] | None = None,
    source_cidr: str | None = None,
    name: str = "allow-webhooks",
) -> Manifest:
    """The API server may call the namespace's webhooks (and aggregated APIs) on their ports. EKS's control plane
    calls them from its network interfaces in the cluster's subnets: from the VPC's range when known, else from
    anywhere, on these ports only."""
    peers = [cidr(source_cidr)] if source_cidr is not None else None
    return policy(namespace_, name, selects=selects, ingress=[rule(peers, ports(*webhook_ports), to=False)])


#: Marks what belongs to a team: its namespace (whichever part of the platform makes it), its NodePool's nodes.
TEAM_LABEL = "eksml.io/team"


def allow_same_namespace(namespace_: str) -> Manifest:
    """The namespace's pods may reach each other both ways (multi-node training's rendezvous, a pipeline's steps)."""
    own = [pods()]
    return policy(namespace_, "allow-same-namespace", ingress=[rule(own, to=False)], egress=[rule(own, to=True)])


def system_namespace(
    namespace_: str,
    *,
    monitoring_namespace: str | None = None,
    webhook_ports: Sequence[int] = (),
    webhook_pods: Mapping[str, str] | None = None,
    extra: Iterable[Manifest] = (),
) -> dict[str, Manifest]:
    """A platform controller's namespace's policies, keyed by name: default deny; DNS; HTTPS out (the Kubernetes
    API, the AWS APIs); with monitoring, Prometheus' scrapes; the API server to `webhook_pods` on `webhook_ports`
    (webhooks and aggregated APIs); then `extra`, the paths only that controller uses."""
    found = [deny_all(namespace_), allow_dns(namespace_), allow_https_egress(namespace_)]
    if monitoring_namespace is not None:
        found.append(allow_prometheus(namespace_, monitoring_namespace))
    if webhook_ports:
        found.append(allow_webhooks(namespace_, webhook_ports, selects=webhook_pods))
    found.extend(extra)
    return {p["metadata"]["name"]: p for p in found}


def team_namespace(
    namespace_: str,
    *,
    monitoring_namespace: str | None,
    https_egress: bool = True,
    pod_identity: bool = False,
    webhook_ports: Sequence[int] = (),
    vpc_cidr: str | None = None,
    extra: Iterable[Manifest] = (),
) -> dict[str, Manifest]:
    """A team namespace's policies, keyed by name, whichever part makes the namespace (a team stack, Kubeflow's
    teams, the FSx namespaces): default deny; the namespace's own pods to each other; DNS; with `https_egress`,
    HTTPS out (STS for IRSA, S3, the Kubernetes API); with `pod_identity` (its pods' credentials come from EKS Pod
    Identity), the node's Pod Identity agent; with monitoring, Prometheus' scrapes; the control plane to the
    team's webhooks on `webhook_ports`; then `extra`, what the namespace's owner adds (a Kubeflow Profile's paths)."""
    found = [deny_all(namespace_), allow_same_namespace(namespace_), allow_dns(namespace_)]
    if https_egress:
        found.append(allow_https_egress(namespace_))
    if pod_identity:
        found.append(allow_pod_identity_agent(namespace_))
    if monitoring_namespace is not None:
        found.append(allow_prometheus(namespace_, monitoring_namespace))
    if webhook_ports:
        found.append(allow_webhooks(namespace_, webhook_ports, source_cidr=vpc_cidr))
    found.extend(extra)
    named = {p["metadata"]["name"]: p for p in found}
    if len(named) != len(found):
        raise ValueError(f"namespace {namespace_}: two NetworkPolicies share a name")
    return named
