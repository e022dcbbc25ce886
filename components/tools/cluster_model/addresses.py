"""The stack's addresses as its preview recorded them, which NetworkPolicies' `ipBlock` peers are judged against: the
VPC's ranges (primary and secondary), the subnets the nodes live in (their pods take addresses there too: the VPC
CNI gives pods VPC addresses, and EKS puts the control plane's network interfaces in the cluster's subnets, the same
private ones), and the public subnets an internet-facing load balancer lives in.

A stack in an existing VPC (`network.existing`) records none of them: only AWS knows that VPC's ranges. The model then
judges in a stand-in VPC and says so (`VpcAddresses.known`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Network
from itertools import chain
from typing import Any

from ...network.tags import EXTERNAL_ELB_TAG, INTERNAL_ELB_TAG

VPC_TYPE = "aws:ec2/vpc:Vpc"
SECONDARY_CIDR_TYPE = "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation"
SUBNET_TYPE = "aws:ec2/subnet:Subnet"
#: What the offline preview records for a value only the deployment knows (components.tools.preview.answers.UNKNOWN):
#: in an `ipBlock`, the CIDRs of an existing VPC, read from AWS at deploy time.
UNKNOWN_VALUE = "[unknown]"
#: The range the model judges in when the preview names no VPC (the network config's default `cidr`).
STAND_IN_CIDR = "10.0.0.0/16"
#: Addresses for "somewhere outside the VPC" (RFC 5737 documentation ranges), the first one outside its ranges.
_OUTSIDE = ("192.0.2.10", "198.51.100.10", "203.0.113.10")


@dataclass(frozen=True)
class VpcAddresses:
    """Where the platform's endpoints take their addresses."""

    #: The VPC's ranges, primary first.
    cidrs: tuple[IPv4Network, ...]
    #: The subnets of the nodes, their pods and the control plane's interfaces (the VPC's ranges when none is known).
    node_subnets: tuple[IPv4Network, ...]
    #: The subnets an internet-facing load balancer lives in (none when unknown: the node subnets serve).
    public_subnets: tuple[IPv4Network, ...] = ()
    #: False for the stand-in, when the preview recorded no VPC.
    known: bool = True

    @classmethod
    def stand_in(cls) -> VpcAddresses:
        """The range the model judges in when no preview names the VPC (unit tests; an existing VPC)."""
        network = IPv4Network(STAND_IN_CIDR)
        return cls((network,), (network,), (), known=False)

    def hosts(self) -> Iterator[str]:
        """Addresses for pods and the control plane, one after another, each given once."""
        return (str(h) for h in chain.from_iterable(s.hosts() for s in self.node_subnets))

    def outside(self) -> str:
        """An address outside every range of the VPC (the internet, as a pod's HTTPS out sees it)."""
        return next(a for a in _OUTSIDE if not any(ipaddress.ip_address(a) in c for c in self.cidrs))

    def describe(self) -> str:
        ranges = ", ".join(str(c) for c in self.cidrs)
        if not self.known:
            return (
                f"no VPC in the preview (an existing one: only AWS knows its ranges): network paths judged in a "
                f"stand-in VPC {ranges}"
            )
        return f"VPC {ranges}"


def _cidr(resource: Mapping[str, Any]) -> IPv4Network | None:
    value = (resource.get("inputs") or {}).get("cidrBlock")
    try:
        return IPv4Network(value) if isinstance(value, str) else None
    except ValueError:
        return None  # not known before deployment (the preview's stand-in for an unknown value)


def from_resources(resources: Iterable[Mapping[str, Any]]) -> VpcAddresses | None:
    """The VPC a stack's preview recorded (its `cidrBlock`, secondary CIDR associations, and subnets by their
    load balancer role tags), or None when it records no VPC."""
    listed = list(resources)
    primary = [c for r in listed if r["type"] == VPC_TYPE and (c := _cidr(r)) is not None]
    if not primary:
        return None
    secondary = [c for r in listed if r["type"] == SECONDARY_CIDR_TYPE and (c := _cidr(r)) is not None]
    cidrs = tuple(dict.fromkeys([*primary, *secondary]))

    def subnets(tag: str) -> tuple[IPv4Network, ...]:
        return tuple(
            c
            for r in listed
            if r["type"] == SUBNET_TYPE
            and tag in ((r.get("inputs") or {}).get("tags") or {})
            and (c := _cidr(r)) is not None
        )

    return VpcAddresses(cidrs, subnets(INTERNAL_ELB_TAG) or cidrs, subnets(EXTERNAL_ELB_TAG))
