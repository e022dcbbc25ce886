"""A sweep deletes only on `pulumi destroy`: a config change that stops needing it leaves it declared (an update at
most), the network sweep refuses while its cluster exists, and the sweeps' URNs do not move.

The engine is played here as it decides for the sweeps: a resource the new program declares under its URN (or an
alias of it) is diffed and updated; one it no longer declares is deleted in that same `pulumi up`, with its last
state; `pulumi destroy` deletes each, dependents first. The provider is loaded as the engine's dynamic-provider host
loads the one the state holds (`__provider`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any

import boto3
import dill
import pytest
from moto import mock_aws
from pulumi.dynamic.dynamic import serialize_provider

from components.sweep import Kind
from components.sweep.resource import SweepRefused, _SweepProvider
from components.tools.preview.inventory import Inventory, Recorded
from tests.conftest import PROJECT, run_stack, stack_config
from tests.sweep_world import REGION, World, build_world, present

SWEEP = "pulumi-python:dynamic:Resource"
DEV_CLUSTER = "eks-ml-platform-dev"  # the dev stack file names no cluster: project-stack

#: Every sweep of the two stacks, by URN. A sweep whose URN changes without an alias to the old one is deleted by
#: the next `pulumi up`, and its delete sweeps the live cluster: moving one needs `aliases=[<old URN>]`.
SWEEP_URNS = {
    stack: {
        f"urn:pulumi:{stack}::{PROJECT}::eksml:cluster:Cluster$pulumi-python:dynamic:Resource::cluster-sweep",
        f"urn:pulumi:{stack}::{PROJECT}::eksml:cluster:Cluster$pulumi-python:dynamic:Resource::cluster-network-sweep",
        f"urn:pulumi:{stack}::{PROJECT}::eksml:storage:Storage$pulumi-python:dynamic:Resource::storage-fsx-sweep",
    }
    for stack in ("dev", "prod")
}


def _state(resource: Recorded, vpc: str) -> dict[str, Any]:
    """The sweep's properties as the state holds them (create and update store their inputs), in the moto world's
    VPC instead of the mocks' made-up one."""
    return {**resource.inputs, "vpcId": vpc}


def _provider() -> Any:
    """The provider as the engine's dynamic-provider host loads it from the state (the mocks do not record it: it
    is a secret). dill stores the class by reference, so the host runs the installed code."""
    return dill.loads(base64.b64decode(serialize_provider(_SweepProvider())))  # noqa: S301 (serialized just here)


def _sweeps(inventory: Inventory) -> list[Recorded]:
    return inventory.of_type(SWEEP)


def engine_up(old: Inventory, new: Inventory, vpc: str) -> list[str]:
    """`pulumi up` from a stack deployed with `old` to the program `new`, for the sweeps; returns what it deleted."""
    state = {r.urn: _state(r, vpc) for r in _sweeps(old)}
    kept = set()
    for resource in _sweeps(new):
        matched = [urn for urn in (resource.urn, *new.alias_urns(resource)) if urn in state]
        if not matched:
            continue  # created: a sweep's create touches nothing
        olds, news = state[matched[0]], _state(resource, vpc)
        provider = _provider()
        diff = provider.diff(f"sweep-{olds['clusterName']}", olds, news)
        assert not diff.replaces, f"{resource.urn} would be replaced: {diff.replaces}"
        if diff.changes:
            provider.update(f"sweep-{olds['clusterName']}", olds, news)
        kept.add(matched[0])
    deleted = sorted(set(state) - kept)
    for urn in deleted:
        _provider().delete(f"sweep-{state[urn]['clusterName']}", state[urn])
    return deleted


def engine_destroy(inventory: Inventory, vpc: str) -> list[str]:
    """`pulumi destroy` of the sweeps, each after every sweep that depends on it; returns their names in order."""
    order = _dependents_first(inventory, _sweeps(inventory))
    for resource in order:
        props = _state(resource, vpc)
        _provider().delete(f"sweep-{props['clusterName']}", props)
    return [r.name for r in order]


def _dependents_first(inventory: Inventory, sweeps: Iterable[Recorded]) -> list[Recorded]:
    left, order = list(sweeps), []
    while left:
        ready = [r for r in left if not any(inventory.depends_on(other, r) for other in left if other is not r)]
        assert ready, "the sweeps depend on each other in a circle"
        order += ready
        left = [r for r in left if r not in ready]
    return order


@pytest.fixture(scope="module")
def dev_with_fsx_class(kubeflow_tree: None) -> Inventory:
    """dev as deployed with `storage.fsx.storageClass: true` (what the dev stack file then turns off)."""
    storage = json.loads(stack_config("dev")[f"{PROJECT}:storage"])
    storage["fsx"]["storageClass"] = True
    return run_stack("dev", {"storage": storage})


@pytest.fixture
def dev_world() -> Any:
    with mock_aws():
        yield build_world(DEV_CLUSTER, stack="dev")


@pytest.mark.stack
def test_turning_the_fsx_class_off_deletes_no_sweep_and_no_claims_file_system(dev_with_fsx_class, dev, dev_world):
    world: World = dev_world
    assert world.claims[Kind.FILE_SYSTEM], "the world holds a file system of a claim of the class"
    before = present(world.clients)

    deleted = engine_up(dev_with_fsx_class, dev, world.vpc)

    assert deleted == []
    assert present(world.clients) == before


@pytest.mark.stack
def test_destroy_still_sweeps_everything_including_claims_file_systems_the_class_left(dev, dev_world):
    world: World = dev_world

    order = engine_destroy(dev, world.vpc)

    assert sorted(order) == ["cluster-network-sweep", "cluster-sweep", "storage-fsx-sweep"]
    assert order[-1] == "cluster-network-sweep"  # after the cluster, which waits for the other two
    assert world.remaining(world.ours) == {}
    assert world.missing(world.theirs) == {}


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_sweep_keeps_its_urn_or_an_alias_to_it(stack, request):
    inventory = request.getfixturevalue(stack)
    pinned = SWEEP_URNS[stack]
    known = {urn for r in _sweeps(inventory) for urn in (r.urn, *inventory.alias_urns(r))}
    assert pinned <= known, f"sweeps moved without an alias: {sorted(pinned - known)}"
    for resource in _sweeps(inventory):
        # A new sweep is listed in SWEEP_URNS, so that moving it later is caught too.
        assert resource.urn in pinned or inventory.alias_urns(resource) & pinned, f"not in SWEEP_URNS: {resource.urn}"


@pytest.mark.stack
def test_the_network_sweep_refuses_while_its_cluster_exists_and_sweeps_once_it_is_gone(dev, dev_world):
    world: World = dev_world
    network_sweep = dev.one(SWEEP, "cluster-network-sweep")
    props = _state(network_sweep, world.vpc)
    eks = boto3.client("eks", region_name=REGION)
    role = f"arn:aws:iam::123456789012:role/{DEV_CLUSTER}-cluster"
    eks.create_cluster(name=DEV_CLUSTER, roleArn=role, resourcesVpcConfig={"subnetIds": list(world.subnets)})
    before = present(world.clients)

    with pytest.raises(SweepRefused, match="still exists"):
        _provider().delete("sweep", props)
    assert present(world.clients) == before

    eks.delete_cluster(name=DEV_CLUSTER)
    _provider().delete("sweep", props)
    assert world.names["guardduty_endpoint"] not in present(world.clients)[Kind.VPC_ENDPOINT]


def test_the_state_holds_the_provider_by_reference_so_a_delete_runs_the_installed_code():
    """What the module docstring promises: a fix to the provider (the refusal above) reaches stacks deployed before
    it, and renaming the class or its module would break their destroy."""
    serialized = base64.b64decode(serialize_provider(_SweepProvider()))
    assert b"components.sweep.resource" in serialized
    assert b"_SweepProvider" in serialized
    assert len(serialized) < 200  # a reference, not the pickled code


class _DevInAws:
    """The AWS side of dev that destroy deletes (EKS cluster, node group, FSx, network), made in the moto world beside
    its leftovers, and deleted resource by resource as the engine would: `delete` takes a recorded resource."""

    def __init__(self, dev: Inventory, world: World):
        self.world, self.ec2 = world, world.clients.ec2
        self.eks, self.fsx = boto3.client("eks", region_name=REGION), world.clients.fsx
        ec2, vpc = self.ec2, world.vpc
        self.ids: dict[str, str] = {}
        private = {
            f"network-private-{zone}": s for zone, s in zip(("us-west-2a", "us-west-2b"), world.subnets, strict=True)
        }
        for index, subnet in enumerate(dev.of_type("aws:ec2/subnet:Subnet")):
            zone = subnet.inputs["availabilityZone"]
            self.ids[subnet.urn] = (
                private.get(subnet.name)
                or ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.20.{100 + index}.0/24", AvailabilityZone=zone)["Subnet"][
                    "SubnetId"
                ]
            )
        igw = self.ids[dev.one("aws:ec2/internetGateway:InternetGateway").urn] = ec2.create_internet_gateway()[
            "InternetGateway"
        ]["InternetGatewayId"]
        ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
        for address in dev.of_type("aws:ec2/eip:Eip"):
            self.ids[address.urn] = ec2.allocate_address(Domain="vpc")["AllocationId"]
        for nat in dev.of_type("aws:ec2/natGateway:NatGateway"):
            public = next(s for s in dev.of_type("aws:ec2/subnet:Subnet") if s.urn in nat.dependencies)
            address = next(a for a in dev.of_type("aws:ec2/eip:Eip") if a.urn in nat.dependencies)
            self.ids[nat.urn] = ec2.create_nat_gateway(
                SubnetId=self.ids[public.urn], AllocationId=self.ids[address.urn]
            )["NatGateway"]["NatGatewayId"]
        role = "arn:aws:iam::123456789012:role/cluster"
        cluster = dev.one("aws:eks/cluster:Cluster")
        self.eks.create_cluster(name=DEV_CLUSTER, roleArn=role, resourcesVpcConfig={"subnetIds": list(world.subnets)})
        self.ids[cluster.urn] = DEV_CLUSTER
        group = dev.one("aws:eks/nodeGroup:NodeGroup")
        self.ids[group.urn] = self.eks.create_nodegroup(
            clusterName=DEV_CLUSTER, nodegroupName="system", nodeRole=role, subnets=list(world.subnets)
        )["nodegroup"]["nodegroupName"]
        # The world's system node and its launch template are the node group's: EKS and Pulumi delete them.
        self.ids[dev.one("aws:ec2/launchTemplate:LaunchTemplate", "cluster-system").urn] = world.names[
            "system_template"
        ]
        fsx_group = dev.one("aws:ec2/securityGroup:SecurityGroup", "storage-fsx")
        self.ids[fsx_group.urn] = ec2.create_security_group(GroupName="fsx", Description="fsx", VpcId=vpc)["GroupId"]
        file_system = dev.one("aws:fsx/lustreFileSystem:LustreFileSystem")
        self.ids[file_system.urn] = self.fsx.create_file_system(
            FileSystemType="LUSTRE",
            StorageCapacity=1200,
            SubnetIds=[world.subnets[0]],
            SecurityGroupIds=[self.ids[fsx_group.urn]],
        )["FileSystem"]["FileSystemId"]
        self.deleted: list[str] = []

    def delete(self, resource: Recorded) -> None:
        ec2, id_ = self.ec2, self.ids.get(resource.urn)
        if resource.type == SWEEP:
            _provider().delete("sweep", _state(resource, self.world.vpc))
        elif id_ is None:
            return  # not modelled here: nothing of it is tagged for the cluster in EC2, ELB or FSx
        elif resource.type == "aws:eks/nodeGroup:NodeGroup":
            self.eks.delete_nodegroup(clusterName=DEV_CLUSTER, nodegroupName=id_)
            ec2.terminate_instances(InstanceIds=[self.world.names["system_node"]])  # EKS terminates its nodes
        elif resource.type == "aws:ec2/launchTemplate:LaunchTemplate":
            ec2.delete_launch_template(LaunchTemplateId=id_)
        elif resource.type == "aws:eks/cluster:Cluster":
            self.eks.delete_cluster(name=id_)  # EKS refuses while a node group is left
        elif resource.type == "aws:fsx/lustreFileSystem:LustreFileSystem":
            self.fsx.delete_file_system(FileSystemId=id_)
        elif resource.type == "aws:ec2/securityGroup:SecurityGroup":
            ec2.delete_security_group(GroupId=id_)
        elif resource.type == "aws:ec2/natGateway:NatGateway":
            ec2.delete_nat_gateway(NatGatewayId=id_)
        elif resource.type == "aws:ec2/eip:Eip":
            ec2.release_address(AllocationId=id_)
        elif resource.type == "aws:ec2/internetGateway:InternetGateway":
            ec2.detach_internet_gateway(InternetGatewayId=id_, VpcId=self.world.vpc)
            ec2.delete_internet_gateway(InternetGatewayId=id_)
        elif resource.type == "aws:ec2/subnet:Subnet":
            ec2.delete_subnet(SubnetId=id_)
        self.deleted.append(resource.name)


@pytest.mark.stack
def test_destroying_dev_in_the_estimates_order_leaves_nothing_tagged_for_the_cluster(dev, dev_world):
    """The destroy estimate's levels replayed against AWS (moto): dev's EKS cluster, node group, file system and
    network made beside what controllers left behind, then every delete in the engine's order, the sweeps' included.
    Nothing tagged for the cluster is left, and nothing of another cluster is touched."""
    from components.sweep.leaks import find_leaks
    from components.tools.preview.destroy_estimate import estimate

    world: World = dev_world
    # A volume tagged for the cluster that nothing of dev makes (not the CSI driver's): the sweep rightly leaves it,
    # and the leak check would rightly report it.
    world.clients.ec2.delete_volume(VolumeId=world.names["owned_volume"])
    aws = _DevInAws(dev, world)
    vpc = dev.one("aws:ec2/vpc:Vpc")
    for batch in estimate(dev).batches:
        for resource in batch.resources:
            if resource.urn not in batch.free and resource.urn != vpc.urn:
                aws.delete(resource)
        if vpc in batch.resources:
            world.clients.ec2.delete_vpc(VpcId=world.vpc)
            aws.deleted.append(vpc.name)

    assert {"cluster-sweep", "storage-fsx-sweep", "cluster-network-sweep", "network-vpc"} <= set(aws.deleted)
    assert world.remaining(world.ours) == {}
    left_alone = {
        kind: ids - {world.names["system_node"], world.names["system_template"], world.names["owned_volume"]}
        for kind, ids in world.theirs.items()
    }
    assert world.missing(left_alone) == {}
    leaks = find_leaks(world.clients, world.target())
    assert leaks.ok, (leaks.leaks, leaks.failed)
