"""The network component: subnets, their discovery tags, NAT per environment, and bring-your-own VPC."""

from __future__ import annotations

import pytest

from tests.conftest import run_stack

SUBNET = "aws:ec2/subnet:Subnet"
NAT = "aws:ec2/natGateway:NatGateway"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"


def _subnets(inventory, kind):
    return sorted((s for s in inventory.of_type(SUBNET) if f"-{kind}-" in s.name), key=lambda s: s.name)


def test_private_subnets_are_tagged_for_karpenter_and_internal_load_balancers(dev):
    private = _subnets(dev, "private")
    assert [s.inputs["availabilityZone"] for s in private] == ["us-west-2a", "us-west-2b"]
    for subnet in private:
        assert subnet.inputs["tags"]["karpenter.sh/discovery"] == "eks-ml-platform-dev"
        assert subnet.inputs["tags"]["kubernetes.io/role/internal-elb"] == "1"
        assert "kubernetes.io/role/elb" not in subnet.inputs["tags"]


def test_public_subnets_are_tagged_for_internet_facing_load_balancers_only(dev):
    public = _subnets(dev, "public")
    assert len(public) == 2
    for subnet in public:
        assert subnet.inputs["tags"]["kubernetes.io/role/elb"] == "1"
        assert "karpenter.sh/discovery" not in subnet.inputs["tags"]
        assert subnet.inputs["mapPublicIpOnLaunch"] is False


def test_subnet_cidrs_follow_the_plan(dev):
    assert [s.inputs["cidrBlock"] for s in _subnets(dev, "private")] == ["10.20.0.0/18", "10.20.64.0/18"]
    assert [s.inputs["cidrBlock"] for s in _subnets(dev, "public")] == ["10.20.192.0/22", "10.20.196.0/22"]


def test_dev_has_one_nat_gateway_shared_by_all_private_subnets(dev):
    assert len(dev.of_type(NAT)) == 1
    private_tables = [t for t in dev.of_type(ROUTE_TABLE) if "-private-" in t.name]
    assert len(private_tables) == 2
    nat_ids = {t.inputs["routes"][0]["natGatewayId"] for t in private_tables}
    assert len(nat_ids) == 1


def test_prod_has_a_nat_gateway_per_zone_each_routing_its_own_zone(prod):
    nats = prod.of_type(NAT)
    assert sorted(n.name.rsplit("-nat-", 1)[1] for n in nats) == ["us-west-2a", "us-west-2b", "us-west-2c"]
    tables = {t.name.rsplit("-private-", 1)[1]: t for t in prod.of_type(ROUTE_TABLE) if "-private-" in t.name}
    assert len({t.inputs["routes"][0]["natGatewayId"] for t in tables.values()}) == 3
    for zone, table in tables.items():
        nat = prod.one(NAT, f"network-nat-{zone}")
        assert nat.urn in table.dependencies


def test_private_routes_go_only_through_nat_and_public_routes_through_the_internet_gateway(dev):
    for table in dev.of_type(ROUTE_TABLE):
        (route,) = table.inputs["routes"]
        assert route["cidrBlock"] == "0.0.0.0/0"
        if "-private-" in table.name:
            assert "gatewayId" not in route
        else:
            assert route["gatewayId"].startswith("igw-")


def test_default_security_group_is_emptied(dev):
    group = dev.one("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
    assert not group.inputs.get("ingress")
    assert not group.inputs.get("egress")


@pytest.mark.stack
def test_existing_vpc_is_used_as_it_is_and_only_tagged_for_discovery():
    inventory = run_stack(
        "dev",
        {
            "network": {
                "availabilityZones": ["us-west-2a", "us-west-2b"],
                "existing": {
                    "vpcId": "vpc-0123456789abcdef0",
                    "privateSubnetIds": ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"],
                },
            }
        },
    )
    assert not inventory.of_type("aws:ec2/vpc:Vpc")
    assert not inventory.of_type(SUBNET)
    assert not inventory.of_type(NAT)
    tags = [t for t in inventory.of_type("aws:ec2/tag:Tag") if t.inputs["resourceId"].startswith("subnet-")]
    assert sorted((t.inputs["resourceId"], t.inputs["key"], t.inputs["value"]) for t in tags) == [
        ("subnet-0aaaaaaaaaaaaaaaa", "karpenter.sh/discovery", "eks-ml-platform-dev"),
        ("subnet-0bbbbbbbbbbbbbbbb", "karpenter.sh/discovery", "eks-ml-platform-dev"),
    ]
    cluster = inventory.one("eks:index:Cluster")
    assert cluster.inputs["vpcId"] == "vpc-0123456789abcdef0"
    assert cluster.inputs["privateSubnetIds"] == ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"]
    # other clusters may live in it: the teardown sweeps take only what names this cluster
    sweeps = inventory.of_type("pulumi-python:dynamic:Resource")
    assert {s.name for s in sweeps} == {"cluster-sweep", "cluster-network-sweep", "storage-fsx-sweep"}
    assert {s.inputs["ownsVpc"] for s in sweeps} == {False}


def test_the_teardown_sweeps_may_clear_a_vpc_the_stack_created(dev):
    """The cluster's sweeps may clear the VPC the stack made; the file systems' sweep takes only what is tagged for
    the cluster, whoever owns the VPC."""
    sweeps = {s.name: s.inputs["ownsVpc"] for s in dev.of_type("pulumi-python:dynamic:Resource")}
    assert sweeps == {"cluster-sweep": True, "cluster-network-sweep": True, "storage-fsx-sweep": False}


def test_dataset_and_image_layer_reads_reach_s3_through_a_gateway_endpoint_on_every_private_route_table(prod):
    endpoint = prod.one("aws:ec2/vpcEndpoint:VpcEndpoint", "network-s3")
    assert endpoint.inputs["serviceName"] == "com.amazonaws.us-west-2.s3"
    assert endpoint.inputs["vpcEndpointType"] == "Gateway"
    private_tables = [r for r in prod.of_type("aws:ec2/routeTable:RouteTable") if "private" in r.name]
    assert len(private_tables) == 3
    assert sorted(endpoint.inputs["routeTableIds"]) == sorted(r.id for r in private_tables)


def test_china_regions_name_the_s3_service_with_their_prefix():
    from components.network.component import s3_gateway_service

    assert s3_gateway_service("cn-north-1") == "cn.com.amazonaws.cn-north-1.s3"
