"""`pulumi destroy` order, by construction: every ordering that matters is an edge of the recorded graph.

The engine deletes a resource before what it depends on (its provider included), so "A is deleted before B" is
"A depends on B". Each test names the ordering and why it matters.
"""

from __future__ import annotations

import dataclasses

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
        addon(stack, "metrics-server"),
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


def unordered(inventory) -> list[str]:
    """Each ordering of the teardown that must hold by an edge of the graph, with what breaks it: empty when all
    hold. The engine deletes A before B when A depends on B (directly, or through what it depends on)."""
    found = []

    def before(first, then, why):
        if not inventory.depends_on(first, then):
            found.append(f"{first.name} ({first.type.rsplit(':', 1)[-1]}) before {then.name}: {why}")

    # Namespaces the stack creates go, with what teams put in them, while what deletes its AWS side still runs:
    # load balancers (the LB controller), EBS volumes (the EBS CSI driver), file systems of fsx-lustre claims (the
    # FSx CSI driver).
    cleaners = [inventory.release("aws-load-balancer-controller"), addon(inventory, "aws-ebs-csi-driver")]
    cleaners += [r for r in inventory.of_type(RELEASE) if r.inputs["name"] == "aws-fsx-csi-driver"]
    for namespace in inventory.of_type(NAMESPACE):
        for cleaner in cleaners:
            before(namespace, cleaner, "what is put in it is cleaned up in AWS")
    # Every node and what launches nodes goes before the NAT gateways, their addresses and the internet gateway:
    # the nodes reach AWS (and drain) through them.
    egress = [
        *inventory.of_type("aws:ec2/natGateway:NatGateway"),
        *inventory.of_type("aws:ec2/eip:Eip"),
        *inventory.of_type("aws:ec2/internetGateway:InternetGateway"),
    ]
    for nodes in (*inventory.of_type("aws:eks/nodeGroup:NodeGroup"), inventory.release("karpenter")):
        for gateway in egress:
            before(nodes, gateway, "the nodes keep their way out until they are gone")
    # The FSx file system goes after every team namespace that mounts it (its pods stop first).
    for file_system in inventory.of_type("aws:fsx/lustreFileSystem:LustreFileSystem"):
        for namespace in inventory.of_type(NAMESPACE):
            if namespace.inputs["metadata"]["name"].startswith("team-"):
                before(namespace, file_system, "its pods mount the file system")
    return found


@pytest.mark.stack
def test_every_teardown_ordering_is_an_edge_of_the_recorded_graph(stack):
    assert unordered(stack) == []
    # what the orderings cover, so that the check above cannot pass empty
    assert {n.inputs["metadata"]["name"] for n in stack.of_type(NAMESPACE)} >= {
        "gpu-operator",
        "monitoring",
        "node-exporter",
        "cert-manager",
        "team-a",
    }
    assert stack.release("aws-fsx-csi-driver")


@pytest.mark.stack
@pytest.mark.parametrize(
    ("first", "then"),
    [
        (("kubernetes:core/v1:Namespace", "cert-manager-namespace"), (RELEASE, "storage-fsx-csi")),
        (("kubernetes:core/v1:Namespace", "observability-node-exporter-namespace"), (RELEASE, "ingress")),
        (("aws:ec2/natGateway:NatGateway", None), ("aws:ec2/internetGateway:InternetGateway", None)),
        (("kubernetes:core/v1:Namespace", "storage-ns-team-a"), ("aws:fsx/lustreFileSystem:LustreFileSystem", None)),
    ],
)
def test_a_missing_edge_is_caught(dev, first, then):
    """The check above fails when one edge the program records is taken out of the graph."""
    from components.tools.preview.inventory import Inventory

    a, b = dev.one(*first), dev.one(*then)
    assert b.urn in a.dependencies
    seeded = [
        dataclasses.replace(r, dependencies=tuple(d for d in r.dependencies if d != b.urn)) if r == a else r
        for r in dev.resources
    ]
    missing = unordered(Inventory(seeded, dev.stack_outputs))
    assert missing, (a.name, b.name)
    assert all(f" before {b.name}:" in m for m in missing), missing


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
def test_the_control_plane_does_not_wait_for_the_nat_gateways(stack):
    """No edge orders the NAT gateways, their addresses or the internet gateway after the EKS cluster: the control
    plane's interfaces in the subnets carry only its traffic with the nodes, and every node is gone (by the edges
    above) before the cluster is deleted; such an edge would hold every `pulumi up` back until the NAT gateways
    exist (about two minutes) and change nothing in destroy."""
    cluster = stack.one("aws:eks/cluster:Cluster")
    for gateway in (
        *stack.of_type("aws:ec2/natGateway:NatGateway"),
        stack.one("aws:ec2/internetGateway:InternetGateway"),
    ):
        assert not stack.depends_on(cluster, gateway), gateway.name


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
def test_the_file_system_goes_in_the_system_node_groups_level_of_the_engines_schedule(stack):
    """The engine deletes a resource as late as its chain down to the network allows: the file system waits for the
    private subnets' egress, as the system nodes do, so its chain is theirs and its minutes of delete run beside
    the node group's, not in a level of their own."""
    from components.tools.preview.destroy_estimate import estimate

    file_system = stack.one("aws:fsx/lustreFileSystem:LustreFileSystem")
    for route in (
        r for r in stack.of_type("aws:ec2/routeTableAssociation:RouteTableAssociation") if "private" in r.name
    ):
        assert stack.depends_on(file_system, route), route.name
    # Made alongside the cluster: nothing the cluster makes is needed first, and the nodes do not wait for it.
    assert not stack.depends_on(file_system, stack.one("eks:index:Cluster"))
    assert not stack.depends_on(stack.one("aws:eks/nodeGroup:NodeGroup"), file_system)
    level = next(b for b in estimate(stack).batches if file_system in b.resources)
    assert stack.one("aws:eks/nodeGroup:NodeGroup") in level.resources


@pytest.mark.stack
def test_the_network_sweep_goes_before_the_subnets_its_interfaces_hold(stack):
    """Not left to the schedule: AWS refuses a subnet that still holds an interface (the provider retries 20 min)."""
    network_sweep = one(stack, SWEEP, "cluster-network-sweep")
    subnets = stack.of_type("aws:ec2/subnet:Subnet")
    assert subnets
    assert [s.name for s in subnets if not stack.depends_on(network_sweep, s)] == []


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
    # (and prometheus-adapter, whose uninstall takes its APIService: tests/test_teardown_waits.py)
    assert charts == {"karpenter", "aws-load-balancer-controller", "aws-fsx-csi-driver", "prometheus-adapter"}
    with_cluster = [r for r in in_cluster if r.deleted_with is not None]
    # a claim on a static volume, and kube-prometheus-stack with Prometheus' claim, go with their namespace, whose
    # own delete removes them
    assert {r.deleted_with for r in with_cluster} - {n.urn for n in stack.of_type(NAMESPACE)} == {cluster.urn}
    assert len(with_cluster) > 400
    for kind in ("NodePool", "EC2NodeClass", "Profile"):
        assert all(r.deleted_with is None for r in in_cluster if r.type.endswith(f":{kind}")), kind


@pytest.mark.stack
def test_a_release_uninstalled_on_its_own_goes_before_its_namespace(stack):
    """Helm keeps a release's record as a Secret in the release's namespace: a namespace deleted first takes the
    record, and the uninstall then fails with "release: not found", failing `pulumi destroy` (the engine tier saw
    prometheus-adapter's do so when its namespace won the race)."""
    from components.tools.preview.destroy_estimate import estimate

    levels = estimate(stack).levels()
    namespaces = {n.inputs["metadata"]["name"]: n for n in stack.of_type(NAMESPACE)}
    own = [r for r in stack.of_type(RELEASE) if r.deleted_with is None and r.inputs["namespace"] in namespaces]
    assert own
    late = [r.inputs["name"] for r in own if levels[r.urn] >= levels[namespaces[r.inputs["namespace"]].urn]]
    assert late == []


@pytest.mark.stack
def test_claims_file_systems_are_swept_after_the_fsx_driver_and_before_their_security_group(stack):
    """With the file system, whether or not the class is on (dev's is off): see test_sweep_lifetime."""
    fsx_sweep = one(stack, SWEEP, "storage-fsx-sweep")
    assert fsx_sweep.inputs["kinds"] == ["file-system"]
    assert stack.depends_on(stack.release("aws-fsx-csi-driver"), fsx_sweep)
    assert stack.depends_on(fsx_sweep, stack.one("aws:ec2/securityGroup:SecurityGroup", "storage-fsx"))


def test_prometheus_keeps_its_volume_where_the_stack_keeps_data_and_deletes_it_where_it_does_not(dev, prod):
    for inventory, class_name, reclaim, when_deleted in (
        (prod, "gp3-retain", "Retain", "Retain"),
        (dev, "gp3", "Delete", "Delete"),
    ):
        values = inventory.release("kube-prometheus-stack").inputs["values"]["prometheus"]["prometheusSpec"]
        assert values["storageSpec"]["volumeClaimTemplate"]["spec"]["storageClassName"] == class_name
        assert values["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] == when_deleted
        storage_class = next(
            r
            for r in inventory.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
            if r.inputs["metadata"]["name"] == class_name
        )
        assert storage_class.inputs["reclaimPolicy"] == reclaim
        # the claim goes with its namespace (no uninstall of its own), while the EBS CSI driver runs (it deletes
        # or releases the volume)
        prometheus = inventory.release("kube-prometheus-stack")
        monitoring = next(n for n in inventory.of_type(NAMESPACE) if n.inputs["metadata"]["name"] == "monitoring")
        assert prometheus.deleted_with == monitoring.urn
        assert monitoring.deleted_with is None
        assert inventory.depends_on(prometheus, storage_class)
        assert inventory.depends_on(monitoring, addon(inventory, "aws-ebs-csi-driver"))


def test_the_sweep_resource_never_asks_to_be_replaced_and_touches_nothing_until_deleted():
    provider = _SweepProvider()
    olds = {"clusterName": "c", "region": "us-west-2", "statefulResources": "destroy", "kinds": ["instance"]}
    created = provider.create(olds)
    assert created.id == "sweep-c"
    diff = provider.diff(created.id, olds, {**olds, "statefulResources": "protect"})
    assert diff.changes
    assert not diff.replaces
    updated = provider.update(created.id, olds, {**olds, "region": "eu-west-1"})
    assert updated.outs is not None
    assert updated.outs["region"] == "eu-west-1"


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
def test_a_teams_namespace_goes_with_its_claim_beside_the_volume_and_before_the_file_system_it_mounts(stack):
    """Deleting the claim first would wait on its pvc-protection finalizer for pods only the namespace removes; the
    volume's own pv-protection finalizer holds its delete until the namespace has taken the claim, so the two need
    no edge (one would cost destroy a level)."""
    team = next(r for r in stack.of_type(NAMESPACE) if r.inputs["metadata"]["name"] == "team-a")
    claim = next(
        r
        for r in stack.of_type("kubernetes:core/v1:PersistentVolumeClaim")
        if r.inputs["metadata"]["namespace"] == "team-a"
    )
    volume = one(stack, "kubernetes:core/v1:PersistentVolume", "storage-pv-team-a")
    file_system = stack.one("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert claim.deleted_with == team.urn
    assert stack.depends_on(team, file_system)
    assert stack.depends_on(volume, file_system)
    assert not stack.depends_on(team, volume)
    assert volume.inputs["spec"]["persistentVolumeReclaimPolicy"] == "Retain"


@pytest.mark.stack
def test_what_aws_deletes_with_its_parent_is_not_deleted_one_by_one(stack):
    file_system = stack.one("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert stack.one("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation").deleted_with == file_system.urn
    eks = stack.one("eks:index:Cluster")
    assert {a.inputs["addonName"]: a.deleted_with for a in stack.of_type("aws:eks/addon:Addon")} == dict.fromkeys(
        ("vpc-cni", "kube-proxy", "coredns", "aws-ebs-csi-driver", "eks-node-monitoring-agent", "metrics-server"),
        eks.urn,
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
def test_prod_torn_down_on_purpose_the_up_releases_protection_and_retain_keeps_only_the_stores(prod, stack_once):
    """docs/teardown.md: set statefulResources to destroy and `pulumi up` (protection off, nothing replaced), then
    destroy; under retain only the stateful stores stay in AWS."""
    protected = {r.urn for r in prod.resources if r.protect}
    assert prod.one("eks:index:Cluster").urn in protected
    released = stack_once("prod", {"statefulResources": "destroy"})
    assert [r.name for r in released.resources if r.protect or r.retain_on_delete] == []
    assert released.one("aws:eks/cluster:Cluster").inputs.get("deletionProtection") is False
    # the same resources as before but the kept-volume class: the up creates nothing new in AWS
    gone = {r.urn for r in prod.resources} - {r.urn for r in released.resources}
    assert [prod.by_urn(u).name for u in gone] == ["storage-gp3-retain"]
    # Prometheus' values move to the gp3 class; the claim it has keeps gp3-retain (a claim's class cannot change),
    # and goes with the monitoring namespace, its volume then left to the sweep, which deletes it under destroy
    # (docs/teardown.md, "Prometheus' claim when prod is torn down on purpose").
    for inventory, class_name in ((prod, "gp3-retain"), (released, "gp3")):
        prometheus = inventory.release("kube-prometheus-stack")
        spec = prometheus.inputs["values"]["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]
        assert spec["spec"]["storageClassName"] == class_name
        monitoring = next(n for n in inventory.of_type(NAMESPACE) if n.inputs["metadata"]["name"] == "monitoring")
        assert prometheus.deleted_with == monitoring.urn
    assert one(released, SWEEP, "cluster-sweep").inputs["statefulResources"] == "destroy"
    assert "volume" in one(released, SWEEP, "cluster-sweep").inputs["kinds"]
    assert {r.urn for r in released.resources} <= {r.urn for r in prod.resources}
    retained = stack_once("prod", {"statefulResources": "retain"})
    kept = {r.type.split(":")[1].split("/")[0] for r in retained.resources if r.retain_on_delete}
    # buckets (and their settings), the file system, keys and log groups: the sweep --check lists them as kept
    assert kept == {"s3", "fsx", "kms", "cloudwatch"}
    assert not retained.one("eks:index:Cluster").retain_on_delete
