"""The platform VPC: public and private subnets per AZ, NAT, and the tags Karpenter and load balancers look for."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from ..config.types import NatGateways
from .config import NetworkConfig
from .plan import plan_subnets
from .tags import DISCOVERY_TAG, private_subnet_tags, public_subnet_tags


@dataclass(frozen=True)
class NetworkArgs:
    """What the network is made from; every field is required."""

    #: The cluster the subnets are tagged for (`karpenter.sh/discovery`) and named after.
    cluster_name: str
    #: The VPC to create (CIDR, zones, NAT gateways) or the existing one to tag (`NetworkConfig.existing`).
    config: NetworkConfig
    #: The AWS region: it names the S3 gateway endpoint's service.
    region: str


def s3_gateway_service(region: str) -> str:
    """The S3 gateway endpoint service of a region (China's regions put `cn.` in front)."""
    prefix = "cn.com.amazonaws" if region.startswith("cn-") else "com.amazonaws"
    return f"{prefix}.{region}.s3"


class Network(pulumi.ComponentResource):
    """A multi-AZ VPC for the cluster, or an existing one tagged for discovery."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: pulumi.Output[list[str]]
    public_subnet_ids: pulumi.Output[list[str]]
    availability_zones: tuple[str, ...]
    #: The private subnet of each AZ (for things that live in one AZ, like FSx for Lustre).
    private_subnet_by_zone: dict[str, pulumi.Output[str]]
    #: What gives the private subnets their way out (NAT gateways, private routes): nodes and controllers depend on
    #: it, so they join the cluster with egress and are deleted before it goes. Empty for an existing VPC.
    egress: tuple[pulumi.Resource, ...]
    #: The subnets the stack made (none for an existing VPC): what leaves interfaces in them (the network sweep
    #: deletes those) depends on them, so it goes before them.
    subnets: tuple[pulumi.Resource, ...]
    #: The private subnets' route tables (to the NAT gateways); none for an existing VPC.
    private_route_tables: tuple[pulumi.Resource, ...]
    #: False for a VPC brought with `existing` (`ClusterArgs.owns_vpc`: the teardown sweep leaves other owners' objects
    #: in it alone).
    owns_vpc: bool

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:network:Network", name, None, opts)
        self._name = name
        self._existing = args.config.existing
        self.availability_zones = args.config.availability_zones
        self.owns_vpc = args.config.owns_vpc
        if args.config.existing is None:
            self._create(args)
        else:
            self._adopt(args)
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def existing_cidrs(self) -> pulumi.Output[list[str]]:
        """Every CIDR of the existing VPC (primary and secondary), read from AWS: only its owner knows them."""
        assert self._existing is not None
        vpc = aws.ec2.get_vpc_output(id=self._existing.vpc_id, opts=pulumi.InvokeOutputOptions(parent=self))
        return vpc.cidr_block_associations.apply(lambda associations: [a.cidr_block for a in associations])

    def _child(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self)

    def _create(self, args: NetworkArgs) -> None:
        """A new VPC: its subnets in every zone, NAT, the private routes through it, and the S3 gateway endpoint."""
        config = args.config
        vpc, gateway, public_routes = self._vpc(args)
        public_subnets, private_subnets = self._subnets(args, vpc, public_routes)
        nat_zones = (
            config.availability_zones if config.nat_gateways is NatGateways.PER_AZ else config.availability_zones[:1]
        )
        nat_by_zone = self._nat_gateways(args.cluster_name, nat_zones, public_subnets, gateway)
        private_route_tables: list[aws.ec2.RouteTable] = []
        egress: list[pulumi.Resource] = list(nat_by_zone.values())
        for az, subnet in private_subnets.items():
            nat = nat_by_zone.get(az, nat_by_zone[nat_zones[0]])
            routes, association = self._private_routes(args.cluster_name, az, vpc, subnet, nat)
            private_route_tables.append(routes)
            egress.append(association)
        # Dataset reads and ECR image layers (stored in S3) stay off the NAT gateways and their per-GB charge.
        aws.ec2.VpcEndpoint(
            f"{self._name}-s3",
            vpc_id=vpc.id,
            service_name=s3_gateway_service(args.region),
            vpc_endpoint_type="Gateway",
            route_table_ids=[routes.id for routes in private_route_tables],
            tags={"Name": f"{args.cluster_name}-s3"},
            opts=self._child(),
        )

        self.vpc_id = vpc.id
        self.egress = tuple(egress)
        self.subnets = (*public_subnets.values(), *private_subnets.values())
        self.private_route_tables = tuple(private_route_tables)
        self.private_subnet_by_zone = {az: subnet.id for az, subnet in private_subnets.items()}
        self.private_subnet_ids = pulumi.Output.all(*[s.id for s in private_subnets.values()])
        self.public_subnet_ids = pulumi.Output.all(*[s.id for s in public_subnets.values()])

    def _vpc(self, args: NetworkArgs) -> tuple[aws.ec2.Vpc, aws.ec2.InternetGateway, aws.ec2.RouteTable]:
        """The VPC with its default security group emptied, its internet gateway and the public route table."""
        name = self._name
        # Name tags say which cluster a network object belongs to in the console; logical names stay fixed.
        label = args.cluster_name
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=str(args.config.cidr),
            enable_dns_hostnames=True,  # EKS nodes and the private API endpoint need both
            enable_dns_support=True,
            tags={"Name": label},
            opts=self._child(),
        )
        # The default security group of a new VPC allows all traffic between its members; nothing should use it,
        # so it is adopted and emptied.
        aws.ec2.DefaultSecurityGroup(
            f"{name}-default-sg", vpc_id=vpc.id, tags={"Name": f"{label}-default"}, opts=self._child()
        )
        gateway = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags={"Name": label}, opts=self._child())
        public_routes = aws.ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)],
            tags={"Name": f"{label}-public"},
            opts=self._child(),
        )
        return vpc, gateway, public_routes

    def _subnets(
        self, args: NetworkArgs, vpc: aws.ec2.Vpc, public_routes: aws.ec2.RouteTable
    ) -> tuple[dict[str, aws.ec2.Subnet], dict[str, aws.ec2.Subnet]]:
        """A public subnet (routed to the internet gateway) and a private one in each zone, by zone."""
        name, label = self._name, args.cluster_name
        public_subnets: dict[str, aws.ec2.Subnet] = {}
        private_subnets: dict[str, aws.ec2.Subnet] = {}
        for pair in plan_subnets(args.config.cidr, args.config.availability_zones):
            az = pair.availability_zone
            public_subnets[az] = aws.ec2.Subnet(
                f"{name}-public-{az}",
                vpc_id=vpc.id,
                cidr_block=str(pair.public),
                availability_zone=az,
                map_public_ip_on_launch=False,  # only NAT gateways and load balancers live here, with their own IPs
                tags={"Name": f"{label}-public-{az}", **public_subnet_tags()},
                opts=self._child(),
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{az}",
                subnet_id=public_subnets[az].id,
                route_table_id=public_routes.id,
                opts=self._child(),
            )
            private_subnets[az] = aws.ec2.Subnet(
                f"{name}-private-{az}",
                vpc_id=vpc.id,
                cidr_block=str(pair.private),
                availability_zone=az,
                tags={"Name": f"{label}-private-{az}", **private_subnet_tags(args.cluster_name)},
                opts=self._child(),
            )
        return public_subnets, private_subnets

    def _nat_gateways(
        self,
        label: str,
        zones: tuple[str, ...],
        public_subnets: dict[str, aws.ec2.Subnet],
        gateway: aws.ec2.InternetGateway,
    ) -> dict[str, aws.ec2.NatGateway]:
        """A NAT gateway, with its address, in the public subnet of each of `zones`."""
        nat_by_zone: dict[str, aws.ec2.NatGateway] = {}
        for az in zones:
            address = aws.ec2.Eip(
                f"{self._name}-nat-{az}", domain="vpc", tags={"Name": f"{label}-nat-{az}"}, opts=self._child()
            )
            nat_by_zone[az] = aws.ec2.NatGateway(
                f"{self._name}-nat-{az}",
                allocation_id=address.id,
                subnet_id=public_subnets[az].id,
                tags={"Name": f"{label}-nat-{az}"},
                # Without the gateway route, the NAT gateway is created but cannot reach the internet.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[gateway]),
            )
        return nat_by_zone

    def _private_routes(
        self, label: str, az: str, vpc: aws.ec2.Vpc, subnet: aws.ec2.Subnet, nat: aws.ec2.NatGateway
    ) -> tuple[aws.ec2.RouteTable, aws.ec2.RouteTableAssociation]:
        """The route table of a zone's private subnet, out through `nat`, and its association with the subnet."""
        routes = aws.ec2.RouteTable(
            f"{self._name}-private-{az}",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
            tags={"Name": f"{label}-private-{az}"},
            opts=self._child(),
        )
        association = aws.ec2.RouteTableAssociation(
            f"{self._name}-private-{az}", subnet_id=subnet.id, route_table_id=routes.id, opts=self._child()
        )
        return routes, association

    def _adopt(self, args: NetworkArgs) -> None:
        existing = args.config.existing
        assert existing is not None
        # Karpenter finds node subnets by this tag. The tag is added (and removed on destroy) without taking over
        # the subnets themselves. Load balancer role tags stay the VPC owner's business.
        for subnet_id in existing.private_subnet_ids:
            aws.ec2.Tag(
                f"{self._name}-discovery-{subnet_id}",
                resource_id=subnet_id,
                key=DISCOVERY_TAG,
                value=args.cluster_name,
                opts=self._child(),
            )
        self.vpc_id = pulumi.Output.from_input(existing.vpc_id)
        self.egress = ()
        self.subnets = ()
        self.private_route_tables = ()
        self.private_subnet_by_zone = {
            az: pulumi.Output.from_input(subnet_id)
            for az, subnet_id in zip(args.config.availability_zones, existing.private_subnet_ids, strict=True)
        }
        self.private_subnet_ids = pulumi.Output.from_input(list(existing.private_subnet_ids))
        self.public_subnet_ids = pulumi.Output.from_input([])  # an existing VPC's public subnets stay its owner's
