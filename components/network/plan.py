"""Pure subnet planning for the platform VPC: no resources, only address arithmetic.

Layout of a VPC CIDR of prefix length p:

- the first three quarters (/p+2) are the private subnets, one per AZ: the VPC CNI gives every pod a VPC address,
  so the private subnets, where nodes and pods live, get nearly all of the space;
- the last quarter is cut into sixteen /p+6 blocks, and the first block per AZ is that AZ's public subnet: only
  NAT gateways and internet-facing load balancers live there.

The plan for an AZ depends only on the CIDR and the AZ's position, so adding a third AZ never moves the first two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network

#: Allowed VPC prefix lengths: /16 is the largest VPC AWS allows; /22 still leaves /28 public subnets, the smallest
#: subnet AWS allows.
MIN_VPC_PREFIX = 16
MAX_VPC_PREFIX = 22
#: Three quarters of the VPC are private subnets, so at most three AZs.
MAX_AZS = 3


@dataclass(frozen=True)
class SubnetPair:
    """The public and private subnet of one availability zone."""

    availability_zone: str
    private: IPv4Network
    public: IPv4Network


def plan_subnets(cidr: IPv4Network, availability_zones: Sequence[str]) -> tuple[SubnetPair, ...]:
    """One public and one private subnet per AZ, in AZ order."""
    if not MIN_VPC_PREFIX <= cidr.prefixlen <= MAX_VPC_PREFIX:
        raise ValueError(f"VPC prefix /{cidr.prefixlen} is outside /{MIN_VPC_PREFIX}../{MAX_VPC_PREFIX}")
    if not 1 <= len(availability_zones) <= MAX_AZS:
        raise ValueError(f"{len(availability_zones)} availability zones given; 1 to {MAX_AZS} are supported")
    quarters = list(cidr.subnets(prefixlen_diff=2))
    public_blocks = list(quarters[3].subnets(prefixlen_diff=4))
    return tuple(
        SubnetPair(availability_zone=az, private=quarters[index], public=public_blocks[index])
        for index, az in enumerate(availability_zones)
    )
