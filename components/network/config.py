"""Stack configuration of the network: a VPC to create, or an existing one."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated

from pydantic import Field, StrictStr, model_validator
from pydantic.alias_generators import to_camel

from components.config.types import Cidr, ConfigModel, NatGateways, SubnetId, VpcId, prefix_between
from components.config.validation import FieldProblems
from components.network import plan as network_plan


class ExistingVpc(ConfigModel):
    """Bring your own VPC: nothing network-related is created except the discovery tags on the given subnets."""

    vpc_id: VpcId
    #: Load balancers find public subnets by their `kubernetes.io/role/elb` tag, which stays the VPC owner's.
    private_subnet_ids: tuple[SubnetId, ...] = Field(min_length=2)

    @model_validator(mode="after")
    def _distinct(self) -> ExistingVpc:
        if len(set(self.private_subnet_ids)) != len(self.private_subnet_ids):
            raise FieldProblems([("privateSubnetIds", "lists a subnet more than once")])
        return self


class NetworkConfig(ConfigModel):
    """The VPC: created from `cidr`, or taken as it is from `existing`."""

    cidr: Annotated[Cidr, prefix_between(network_plan.MIN_VPC_PREFIX, network_plan.MAX_VPC_PREFIX)] = IPv4Network(
        "10.0.0.0/16"
    )
    availability_zones: tuple[StrictStr, ...] = Field(min_length=2, max_length=network_plan.MAX_AZS)
    nat_gateways: NatGateways = NatGateways.SINGLE
    existing: ExistingVpc | None = None

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
                        f"lists {len(self.existing.private_subnet_ids)} subnets for {len(self.availability_zones)} "
                        "availability zones; give one per AZ, in the order of availabilityZones",
                    )
                )
            for key in ("cidr", "nat_gateways"):
                if key in self.model_fields_set:
                    problems.append((to_camel(key), "is not used when network.existing is set; remove it"))
        if problems:
            raise FieldProblems(problems)
        return self
