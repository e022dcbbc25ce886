"""Stack configuration of the network: a VPC to create, or an existing one."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated

from pydantic import Field, StrictStr, model_validator
from pydantic.alias_generators import to_camel

from ..config.types import Cidr, ConfigModel, NatGateways, SubnetId, VpcId, prefix_between
from ..config.validation import FieldProblems
from . import plan as network_plan


class ExistingVpc(ConfigModel):
    """Bring your own VPC: nothing network-related is created except the discovery tags on the given subnets."""

    vpc_id: VpcId = Field(description="the VPC to use instead of creating one")
    private_subnet_ids: tuple[SubnetId, ...] = Field(
        min_length=2,
        description="the node subnets, one per AZ in the order of `availabilityZones`; tagged "
        "`karpenter.sh/discovery=<cluster>`. Load balancers find public subnets by their `kubernetes.io/role/elb` "
        "tag, which stays the VPC owner's",
    )

    @model_validator(mode="after")
    def _distinct(self) -> ExistingVpc:
        if len(set(self.private_subnet_ids)) != len(self.private_subnet_ids):
            raise FieldProblems([("privateSubnetIds", "lists a subnet more than once")])
        return self


class NetworkConfig(ConfigModel):
    """The VPC: created from `cidr`, or taken as it is from `existing`."""

    cidr: Annotated[Cidr, prefix_between(network_plan.MIN_VPC_PREFIX, network_plan.MAX_VPC_PREFIX)] = Field(
        default=IPv4Network("10.0.0.0/16"),
        description="VPC CIDR. Private subnets get the first three quarters (one per AZ; pods take VPC addresses), "
        "public subnets /p+6 blocks of the last quarter; refused with `existing`",
    )
    availability_zones: tuple[StrictStr, ...] = Field(
        min_length=2,
        max_length=network_plan.MAX_AZS,
        description="AZs of the region, one public and one private subnet in each; required with `existing` (no "
        "default then)",
    )
    nat_gateways: NatGateways = Field(
        default=NatGateways.SINGLE,
        description="`single`: one NAT gateway for the VPC (cheap; one AZ's outage cuts egress); `perAz`: one per AZ "
        "(no cross-AZ egress when an AZ fails); refused with `existing`",
    )
    existing: ExistingVpc | None = Field(
        default=None,
        description="bring your own VPC: nothing network-related is created except the discovery tags on its "
        "subnets; none: the stack creates the VPC",
    )

    @property
    def owns_vpc(self) -> bool:
        """Whether the VPC is the stack's own (it creates it): the teardown sweep may then clear anything left in it;
        in a VPC brought with `existing` only what names the stack's cluster."""
        return self.existing is None

    @model_validator(mode="after")
    def _check(self) -> NetworkConfig:
        problems: list[tuple[str, str]] = []
        if len(set(self.availability_zones)) != len(self.availability_zones):
            problems.append(("availabilityZones", "lists an availability zone more than once"))
        if self.existing is not None:
            if len(self.existing.private_subnet_ids) != len(self.availability_zones):
                problems.append(
                    (
                        "existing.privateSubnetIds",
                        (
                            f"lists {len(self.existing.private_subnet_ids)} subnets for {len(self.availability_zones)} "
                            "availability zones; give one per AZ, in the order of availabilityZones"
                        ),
                    )
                )
            for key in ("cidr", "nat_gateways"):
                if key in self.model_fields_set:
                    problems.append((to_camel(key), "is not used when network.existing is set; remove it"))
        if problems:
            raise FieldProblems(problems)
        return self
