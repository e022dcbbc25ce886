"""Kubernetes NetworkPolicy semantics, as the Kubernetes docs (Concepts, Network Policies) state them, over
endpoints the model knows: whether a connection from one endpoint to another on a port is allowed.

- A pod is isolated for ingress (egress) when some policy of its namespace selects it (`podSelector`) and lists
  `Ingress` (`Egress`) in `policyTypes`; without `policyTypes` a policy always has `Ingress`, and `Egress` when it
  has an `egress` section. A pod no policy isolates allows everything in that direction.
- An isolated pod allows what at least one rule of one selecting policy allows (policies add up); a connection
  needs the source's egress and the destination's ingress both to allow it.
- A rule with no peers allows every peer, with no ports every port. A peer is a `podSelector` (pods of the policy's
  namespace), a `namespaceSelector` (all pods of the matching namespaces), both (pods matching the one in namespaces
  matching the other), or an `ipBlock` (addresses in `cidr` and in none of `except`).
- A port entry matches its protocol (TCP when unset) and its port: a number (up to `endPort` when given), a name
  (the destination pod's container port of that name), or every port when unset.
- Host-network pods are outside the policies' scope (the docs leave their behaviour undefined; the VPC CNI
  enforces policies on pod interfaces only): they are never isolated, and peers select them only by address.
  `ipBlock` peers also match pod addresses: with the VPC CNI pods take VPC addresses, and the agent matches
  address ranges against them like any other.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...kubeflow.objects import matches
from ...network_policies import NAME_LABEL


@dataclass(frozen=True)
class Endpoint:
    """One end of a connection: a pod (its namespace and labels), or something outside every namespace (the control
    plane, a node, a load balancer) when `namespace` is None."""

    what: str
    address: str
    namespace: str | None = None
    namespace_labels: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    #: Container ports by name, for policies that name a port.
    named_ports: Mapping[str, int] = field(default_factory=dict)
    host_network: bool = False

    @property
    def is_pod(self) -> bool:
        return self.namespace is not None and not self.host_network

    def namespace_label_set(self) -> Mapping[str, str]:
        return {**self.namespace_labels, NAME_LABEL: self.namespace or ""}


def _types(policy: Mapping[str, Any]) -> list[str]:
    spec = policy.get("spec") or {}
    if spec.get("policyTypes"):
        return list(spec["policyTypes"])
    return ["Ingress", "Egress"] if "egress" in spec else ["Ingress"]


def selecting(policies: Iterable[Mapping[str, Any]], pod: Endpoint, direction: str) -> list[Mapping[str, Any]]:
    """The policies that isolate `pod` in `direction` ("Ingress" or "Egress")."""
    if not pod.is_pod:
        return []
    return [
        p
        for p in policies
        if p.get("kind") == "NetworkPolicy"
        and p["metadata"].get("namespace") == pod.namespace
        and direction in _types(p)
        and matches((p.get("spec") or {}).get("podSelector"), pod.labels)
    ]


def in_block(address: str, block: Mapping[str, Any]) -> bool:
    ip = ipaddress.ip_address(address)
    if ip not in ipaddress.ip_network(block["cidr"], strict=False):
        return False
    return not any(ip in ipaddress.ip_network(e, strict=False) for e in block.get("except") or ())


def peer_matches(peer: Mapping[str, Any], policy_namespace: str, other: Endpoint) -> bool:
    if "ipBlock" in peer:
        return in_block(other.address, peer["ipBlock"])
    if not other.is_pod:
        return False
    if "namespaceSelector" in peer:
        if not matches(peer["namespaceSelector"], other.namespace_label_set()):
            return False
    elif other.namespace != policy_namespace:
        return False
    return matches(peer.get("podSelector"), other.labels)


def port_matches(entries: Iterable[Mapping[str, Any]] | None, destination: Endpoint, port: int, protocol: str) -> bool:
    listed = list(entries or ())
    if not listed:
        return True
    for entry in listed:
        if entry.get("protocol", "TCP") != protocol:
            continue
        wanted = entry.get("port")
        if wanted is None:
            return True
        if isinstance(wanted, str):
            if destination.named_ports.get(wanted) == port:
                return True
            continue
        if wanted == port or (entry.get("endPort") is not None and wanted <= port <= entry["endPort"]):
            return True
    return False


def _side_allows(
    policies: list[Mapping[str, Any]],
    direction: str,
    pod: Endpoint,
    other: Endpoint,
    destination: Endpoint,
    port: int,
    protocol: str,
) -> bool:
    key = "from" if direction == "Ingress" else "to"
    chosen = selecting(policies, pod, direction)
    if not chosen:
        return True
    for policy in chosen:
        for rule in (policy.get("spec") or {}).get(direction.lower()) or ():
            peers = rule.get(key)
            peer_ok = not peers or any(peer_matches(peer, policy["metadata"]["namespace"], other) for peer in peers)
            if peer_ok and port_matches(rule.get("ports"), destination, port, protocol):
                return True
    return False


def allowed(
    policies: Iterable[Mapping[str, Any]], source: Endpoint, destination: Endpoint, port: int, protocol: str = "TCP"
) -> bool:
    """Whether the policies let `source` open a connection to `destination` on `port`."""
    listed = list(policies)
    return _side_allows(listed, "Egress", source, destination, destination, port, protocol) and _side_allows(
        listed, "Ingress", destination, source, destination, port, protocol
    )


def refusal(
    policies: Iterable[Mapping[str, Any]], source: Endpoint, destination: Endpoint, port: int, protocol: str = "TCP"
) -> str | None:
    """None when the policies let the connection through; else the side that refuses it and the policies that
    isolate that side (none of whose rules allows the connection)."""
    listed = list(policies)
    for direction, pod, other in (("Egress", source, destination), ("Ingress", destination, source)):
        if _side_allows(listed, direction, pod, other, destination, port, protocol):
            continue
        names = ", ".join(
            sorted(
                f"NetworkPolicy {p['metadata']['namespace']}/{p['metadata']['name']}"
                for p in selecting(listed, pod, direction)
            )
        )
        return f"its {direction.lower()} side is isolated by {names}, and no rule of them allows it"
    return None
