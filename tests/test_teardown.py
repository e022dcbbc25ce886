"""`pulumi destroy` order, by construction: every ordering that matters is an edge of the recorded graph.

The engine deletes a resource before what it depends on (its provider included), so "A is deleted before B" is
"A depends on B". Each test names the ordering and why it matters.
"""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from components.sweep.resource import _SweepProvider, run_sweep

SWEEP = "pulumi-python:dynamic:Resource"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
STACKS = ["dev", "prod"]


def one(inventory, type_, name):
    return inventory.one(type_, name)


def release(inventory, chart):
    return next(r for r in inventory.of_type(RELEASE) if r.inputs["name"] == chart)


def addon(inventory, name):
    return next(r for r in inventory.of_type("aws:eks/addon:Addon") if r.inputs["addonName"] == name)


@pytest.fixture(params=STACKS)
def stack(request):
    return request.getfixturevalue(request.param)


@pytest.mark.stack
def test_everything_in_the_cluster_is_deleted_before_the_sweep_runs(stack):
    sweep = one(stack, SWEEP, "cluster-sweep")
    in_cluster = [r for r in stack.resources if r.type.startswith("kubernetes:") and not r.type.startswith("pulumi:")]
    assert in_cluster
    assert [r.name for r in in_cluster if not stack.depends_on(r, sweep)] == []


@pytest.mark.stack
def test_the_sweep_runs_before_the_nodes_add_ons_cluster_and_network_it_cleans_up_for(stack):
    sweep = one(stack, SWEEP, "cluster-sweep")
    for kept in (
        stack.one("aws:eks/nodeGroup:NodeGroup"),
        addon(stack, "coredns"),
        addon(stack, "aws-ebs-csi-driver"),
        addon(stack, "vpc-cni"),
        stack.one("aws:eks/cluster:Cluster"),
        stack.one("aws:ec2/vpc:Vpc"),
    ):
        assert stack.depends_on(sweep, kept), kept.name
    assert one(stack, SWEEP, "cluster-sweep").inputs["kinds"] == sorted(
        [
            "instance",
            "launch-template",
            "instance-profile",
            "load-balancer",
            "target-group",
            "volume",
            "vpc-endpoint",
            "network-interface",
            "security-group",
        ]
    )


@pytest.mark.stack
def test_the_network_sweep_runs_after_the_cluster_and_before_the_vpc(stack):
    network_sweep = one(stack, SWEEP, "cluster-network-sweep")
    assert stack.depends_on(stack.one("aws:eks/cluster:Cluster"), network_sweep)
    assert stack.depends_on(stack.one("aws:eks/nodeGroup:NodeGroup"), network_sweep)
    assert stack.depends_on(network_sweep, stack.one("aws:ec2/vpc:Vpc"))
    assert network_sweep.inputs["kinds"] == ["network-interface", "security-group", "vpc-endpoint"]


@pytest.mark.stack
def test_namespaces_go_while_the_controllers_and_drivers_that_clean_up_after_their_contents_still_run(stack):
    lb_controller = release(stack, "aws-load-balancer-controller")
    ebs = addon(stack, "aws-ebs-csi-driver")
    namespaces = stack.of_type(NAMESPACE)
    assert {n.inputs["metadata"]["name"] for n in namespaces} >= {"gpu-operator", "monitoring", "team-a"}
    for namespace in namespaces:
        assert stack.depends_on(namespace, lb_controller), namespace.name
        assert stack.depends_on(namespace, ebs), namespace.name
    fsx_driver = release(stack, "aws-fsx-csi-driver")
    for team in (n for n in namespaces if n.inputs["metadata"]["name"].startswith("team-")):
        assert stack.depends_on(team, fsx_driver)


@pytest.mark.stack
def test_kubeflow_is_deleted_before_karpenter_drains_the_nodes_its_controllers_run_on(stack):
    pools = [
        r
        for r in stack.of_type("kubernetes:karpenter.sh/v1:NodePool")
        if not r.inputs["spec"]["template"]["spec"].get("taints")
    ]
    assert pools
    workloads = [
        r
        for r in stack.of_type("kubernetes:apps/v1:Deployment") + stack.of_type("kubernetes:apps/v1:StatefulSet")
        if r.name.startswith("kubeflow-")
    ]
    profiles = stack.of_type("kubernetes:kubeflow.org/v1:Profile")
    assert workloads
    assert profiles
    for pool in pools:
        # the profile controller still runs while team Profiles (and their namespaces' finalizers) are cleared
        assert [r.name for r in workloads + profiles if not stack.depends_on(r, pool)] == [], pool.name
    gpu_pools = [r for r in stack.of_type("kubernetes:karpenter.sh/v1:NodePool") if r not in pools]
    assert gpu_pools
    assert not any(stack.depends_on(r, pool) for r in workloads for pool in gpu_pools)


@pytest.mark.stack
def test_the_nodes_join_with_egress_and_are_deleted_before_the_nat_routes(stack):
    group = stack.one("aws:eks/nodeGroup:NodeGroup")
    for route in (
        r for r in stack.of_type("aws:ec2/routeTableAssociation:RouteTableAssociation") if "private" in r.name
    ):
        assert stack.depends_on(group, route), route.name
    for nat in stack.of_type("aws:ec2/natGateway:NatGateway"):
        assert stack.depends_on(group, nat)


@pytest.mark.stack
def test_the_file_system_waits_for_its_servers_lustre_rules_and_nothing_of_the_cluster(stack):
    file_system = stack.one("aws:fsx/lustreFileSystem:LustreFileSystem")
    rules = [r for r in stack.resources if r.type.startswith("aws:vpc/securityGroup") and r.name.startswith("storage-")]
    assert len(rules) == 8
    # FSx checks the servers' own rules when it creates the file system: it waits for them.
    servers = [r for r in rules if r.name.endswith("-from-self") or r.name.endswith("-to-self")]
    assert len(servers) == 3
    assert all(stack.depends_on(file_system, r) for r in servers)
    # The client rules name the cluster's security group (an output of the cluster component, which the engine
    # waits for as a whole); the file system needs none of them to be made.
    eks = stack.one("eks:index:Cluster")
    assert not stack.depends_on(file_system, eks)
    assert not stack.depends_on(file_system, stack.one("aws:eks/cluster:Cluster"))
    assert all(stack.depends_on(r, eks) for r in rules if r not in servers)


@pytest.mark.stack
def test_the_file_system_goes_in_the_clusters_level_of_the_engines_schedule(stack):
    """The engine deletes a resource as late as its chain down to the network allows: the file system waits for the
    private route tables so that its chain is the cluster's, and its minutes of delete hide the cluster's."""
    from components.tools.preview.destroy_estimate import estimate

    file_system = stack.one("aws:fsx/lustreFileSystem:LustreFileSystem")
    for table in (r for r in stack.of_type("aws:ec2/routeTable:RouteTable") if "private" in r.name):
        assert stack.depends_on(file_system, table), table.name
    # Made alongside the cluster: nothing the cluster makes is needed first, and the nodes do not wait for it.
    assert not stack.depends_on(file_system, stack.one("eks:index:Cluster"))
    assert not stack.depends_on(stack.one("aws:eks/nodeGroup:NodeGroup"), file_system)
    level = next(b for b in estimate(stack).batches if file_system in b.resources)
    assert stack.one("aws:eks/cluster:Cluster") in level.resources


@pytest.mark.stack
def test_the_network_sweep_goes_before_the_subnets_its_interfaces_hold(stack):
    """Not left to the schedule: AWS refuses a subnet that still holds an interface (the provider retries 20 min)."""
    network_sweep = one(stack, SWEEP, "cluster-network-sweep")
    subnets = stack.of_type("aws:ec2/subnet:Subnet")
    assert subnets
    assert [s.name for s in subnets if not stack.depends_on(network_sweep, s)] == []


@pytest.mark.stack
def test_kubeflows_namespaces_go_while_the_fsx_driver_runs(stack):
    """Their teams' fsx-lustre claims go with them while the FSx CSI driver can still delete the file systems."""
    fsx_driver = release(stack, "aws-fsx-csi-driver")
    kubeflow = [n for n in stack.of_type(NAMESPACE) if n.name.startswith("kubeflow-")]
    assert kubeflow
    assert [n.name for n in kubeflow if not stack.depends_on(n, fsx_driver)] == []


@pytest.mark.stack
def test_only_what_owns_something_in_aws_or_holds_data_is_deleted_on_its_own(stack):
    """Everything else in the cluster goes with the EKS cluster, with no delete call of its own."""
    cluster = stack.one("eks:index:Cluster")
    in_cluster = [r for r in stack.resources if r.type.startswith("kubernetes:") and "providers" not in r.type]
    own = {r.type.rsplit(":", 1)[-1] for r in in_cluster if r.deleted_with is None}
    # (a volume whose spec is known only at deploy time may delete what it names: it keeps its own delete)
    allowed = {"NodePool", "EC2NodeClass", "PersistentVolumeClaim", "PersistentVolume", "Namespace", "Profile"}
    assert own <= allowed | {"Release"}, own
    charts = {r.inputs["name"] for r in stack.of_type(RELEASE) if r.deleted_with is None}
    assert charts == {"karpenter", "aws-load-balancer-controller", "aws-fsx-csi-driver", "kube-prometheus-stack"}
    with_cluster = [r for r in in_cluster if r.deleted_with is not None]
    # a claim on a static volume goes with its namespace, whose own delete removes it
    assert {r.deleted_with for r in with_cluster} - {n.urn for n in stack.of_type(NAMESPACE)} == {cluster.urn}
    assert len(with_cluster) > 400
    for kind in ("NodePool", "EC2NodeClass", "Profile"):
        assert all(r.deleted_with is None for r in in_cluster if r.type.endswith(f":{kind}")), kind


@pytest.mark.stack
def test_claims_file_systems_are_swept_after_the_fsx_driver_and_before_their_security_group(stack):
    """With the file system, whether or not the class is on (dev's is off): see test_sweep_lifetime."""
    fsx_sweep = one(stack, SWEEP, "storage-fsx-sweep")
    assert fsx_sweep.inputs["kinds"] == ["file-system"]
    assert stack.depends_on(release(stack, "aws-fsx-csi-driver"), fsx_sweep)
    assert stack.depends_on(fsx_sweep, stack.one("aws:ec2/securityGroup:SecurityGroup", "storage-fsx"))


def test_prometheus_keeps_its_volume_where_the_stack_keeps_data_and_deletes_it_where_it_does_not(dev, prod):
    for inventory, class_name, reclaim, when_deleted in (
        (prod, "gp3-retain", "Retain", "Retain"),
        (dev, "gp3", "Delete", "Delete"),
    ):
        values = release(inventory, "kube-prometheus-stack").inputs["values"]["prometheus"]["prometheusSpec"]
        assert values["storageSpec"]["volumeClaimTemplate"]["spec"]["storageClassName"] == class_name
        assert values["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] == when_deleted
        storage_class = next(
            r
            for r in inventory.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
            if r.inputs["metadata"]["name"] == class_name
        )
        assert storage_class.inputs["reclaimPolicy"] == reclaim
        # the claim goes while the EBS CSI driver runs (it deletes or releases the volume)
        assert inventory.depends_on(release(inventory, "kube-prometheus-stack"), storage_class)
        assert inventory.depends_on(storage_class, addon(inventory, "aws-ebs-csi-driver"))


def test_the_sweep_resource_never_asks_to_be_replaced_and_touches_nothing_until_deleted():
    provider = _SweepProvider()
    olds = {"clusterName": "c", "region": "us-west-2", "statefulResources": "destroy", "kinds": ["instance"]}
    created = provider.create(olds)
    assert created.id == "sweep-c"
    diff = provider.diff(created.id, olds, {**olds, "statefulResources": "protect"})
    assert diff.changes
    assert not diff.replaces
    assert provider.update(created.id, olds, {**olds, "region": "eu-west-1"}).outs["region"] == "eu-west-1"


@mock_aws
def test_the_sweep_resource_deletes_this_clusters_leftovers_when_destroyed():
    ec2 = boto3.client("ec2", region_name="us-west-2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    image = "ami-0123456789abcdef0"  # moto launches any image id (the suite loads no catalogue of images)

    def launch(cluster):
        tags = [
            {"Key": "karpenter.sh/nodepool", "Value": "gpu"},
            {"Key": "eks:eks-cluster-name", "Value": cluster},
            {"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"},
        ]
        return ec2.run_instances(
            ImageId=image,
            MinCount=1,
            MaxCount=1,
            SubnetId=subnet,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )["Instances"][0]["InstanceId"]

    ours, theirs = launch("ml-dev"), launch("other")
    props = {
        "clusterName": "ml-dev",
        "region": "us-west-2",
        "statefulResources": "destroy",
        "vpcId": vpc,
        "ownsVpc": True,
        "profile": None,
        "kinds": ["instance"],
    }
    run_sweep(props, aws=boto3.Session(region_name="us-west-2"))
    states = {
        i["InstanceId"]: i["State"]["Name"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
    }
    assert states[ours] == "terminated"
    assert states[theirs] == "running"


@pytest.mark.stack
def test_a_teams_namespace_goes_with_its_claim_before_the_volume_and_the_file_system_it_mounts(stack):
    """Deleting the claim first would wait on its pvc-protection finalizer for pods only the namespace removes."""
    team = next(r for r in stack.of_type(NAMESPACE) if r.inputs["metadata"]["name"] == "team-a")
    claim = next(
        r
        for r in stack.of_type("kubernetes:core/v1:PersistentVolumeClaim")
        if r.inputs["metadata"]["namespace"] == "team-a"
    )
    volume = one(stack, "kubernetes:core/v1:PersistentVolume", "storage-pv-team-a")
    assert claim.deleted_with == team.urn
    assert stack.depends_on(team, volume)
    assert stack.depends_on(volume, stack.one("aws:fsx/lustreFileSystem:LustreFileSystem"))


@pytest.mark.stack
def test_what_aws_deletes_with_its_parent_is_not_deleted_one_by_one(stack):
    file_system = stack.one("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert stack.one("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation").deleted_with == file_system.urn
    eks = stack.one("eks:index:Cluster")
    assert {a.inputs["addonName"]: a.deleted_with for a in stack.of_type("aws:eks/addon:Addon")} == dict.fromkeys(
        ("vpc-cni", "kube-proxy", "coredns", "aws-ebs-csi-driver", "eks-node-monitoring-agent"), eks.urn
    )
    assert stack.one("aws:eks/accessEntry:AccessEntry").deleted_with == eks.urn


def test_the_published_destroy_estimate_is_what_the_graph_gives(dev):
    """The published figure (README and docs/teardown.md); a change to the graph that moves it must update both."""
    from components.tools.preview.destroy_estimate import estimate

    from .conftest import REPO

    minutes = round(estimate(dev).seconds / 60)
    assert f"about {minutes} minutes" in (REPO / "docs" / "teardown.md").read_text()
    assert f"about {minutes} minutes for dev" in (REPO / "README.md").read_text()


@pytest.mark.stack
def test_prod_torn_down_on_purpose_the_up_releases_protection_and_retain_keeps_only_the_stores(prod):
    """docs/teardown.md: set statefulResources to destroy and `pulumi up` (protection off, nothing replaced), then
    destroy; under retain only the stateful stores stay in AWS."""
    from tests.conftest import run_stack

    protected = {r.urn for r in prod.resources if r.protect}
    assert prod.one("eks:index:Cluster").urn in protected
    released = run_stack("prod", {"statefulResources": "destroy"})
    assert [r.name for r in released.resources if r.protect or r.retain_on_delete] == []
    assert released.one("aws:eks/cluster:Cluster").inputs.get("deletionProtection") is False
    # the same resources as before but the kept-volume class: the up creates nothing new in AWS
    gone = {r.urn for r in prod.resources} - {r.urn for r in released.resources}
    assert [prod.by_urn(u).name for u in gone] == ["storage-gp3-retain"]
    assert {r.urn for r in released.resources} <= {r.urn for r in prod.resources}
    retained = run_stack("prod", {"statefulResources": "retain"})
    kept = {r.type.split(":")[1].split("/")[0] for r in retained.resources if r.retain_on_delete}
    # buckets (and their settings), the file system, keys and log groups: the sweep --check lists them as kept
    assert kept == {"s3", "fsx", "kms", "cloudwatch"}
    assert not retained.one("eks:index:Cluster").retain_on_delete
