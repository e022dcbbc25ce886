"""An AWS region (moto) holding one cluster's leftovers next to another cluster's and untagged look-alikes.

`build_world` records, per kind, the ids the sweep must delete (`ours`, with `claims` the stateful ones among them)
and those it must leave (`theirs`); `present` lists what exists, so tests compare the two. `refuse` and `rewrite`
change single AWS calls through botocore's event hooks (paginated calls included), and `FakeClock` runs the sweep's
waits without waiting.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.exceptions import ClientError

from components.sweep import Clients, Found, Kind, Sweeper, SweepTarget, Timeouts
from components.sweep.sweeper import DEFAULT_TIMEOUTS
from components.tags import DYNAMIC_FSX_TAG

REGION = "us-west-2"
CLUSTER = "ml-dev"
OTHER = "ml-other"
PROJECT, STACK = "eks-ml-platform", "dev"


def tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": value} for key, value in tags.items()]


def spec(resource_type: str, tags: Mapping[str, str]) -> list[dict[str, Any]]:
    """EC2's TagSpecifications (which must not be given empty)."""
    return [{"ResourceType": resource_type, "Tags": tag_list(tags)}] if tags else []


@dataclass
class World:
    clients: Clients
    cluster: str
    vpc: str
    other_vpc: str
    subnets: tuple[str, str]
    ours: dict[Kind, set[str]] = field(default_factory=lambda: defaultdict(set))
    theirs: dict[Kind, set[str]] = field(default_factory=lambda: defaultdict(set))
    #: The stateful objects among `ours` (volumes and file systems of claims).
    claims: dict[Kind, set[str]] = field(default_factory=lambda: defaultdict(set))
    #: Named objects for assertions beyond presence.
    names: dict[str, str] = field(default_factory=dict)

    def target(self, policy: str = "destroy", *, vpc: str | None = "stack", owns_vpc: bool = True) -> SweepTarget:
        return SweepTarget(self.cluster, REGION, policy, vpc_id=self.vpc if vpc == "stack" else vpc, owns_vpc=owns_vpc)

    def sweeper(
        self,
        policy: str = "destroy",
        clock: FakeClock | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        **target: Any,
    ) -> Sweeper:
        clock = clock or FakeClock()
        return Sweeper(self.clients, self.target(policy, **target), timeouts=timeouts, clock=clock, sleep=clock.sleep)

    def remaining(self, kinds: Mapping[Kind, set[str]]) -> dict[Kind, set[str]]:
        """Those of `kinds` that still exist."""
        now = present(self.clients)
        return {kind: ids & now[kind] for kind, ids in kinds.items() if ids & now[kind]}

    def missing(self, kinds: Mapping[Kind, set[str]]) -> dict[Kind, set[str]]:
        """Those of `kinds` that no longer exist."""
        now = present(self.clients)
        return {kind: ids - now[kind] for kind, ids in kinds.items() if ids - now[kind]}


class FakeClock:
    """`clock` and `sleep` for the sweeper: sleeping moves the clock on at once and is counted."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _event(client: Any, stage: str, operation: str) -> str:
    return f"{stage}.{client.meta.service_model.service_id.hyphenize()}.{operation}"


def refuse(
    client: Any,
    operation: str,
    code: str,
    *,
    when: Callable[[dict[str, Any]], bool] = lambda params: True,
    times: int | None = None,
) -> Refusal:
    """Make `operation` fail with `code` for calls whose parameters match `when` (the first `times` of them)."""
    refusal = Refusal(client, _event(client, "before-parameter-build", operation))

    def handler(params: dict[str, Any], **_: Any) -> None:
        if when(params) and (times is None or len(refusal.calls) < times):
            refusal.calls.append(dict(params))
            raise ClientError({"Error": {"Code": code, "Message": f"refused for the test ({code})"}}, operation)

    refusal.handler = handler
    client.meta.events.register(refusal.event, handler)
    return refusal


@dataclass
class Refusal:
    client: Any
    event: str
    handler: Callable[..., None] | None = None
    #: The parameters of every refused call.
    calls: list[dict[str, Any]] = field(default_factory=list)

    def stop(self) -> None:
        self.client.meta.events.unregister(self.event, self.handler)


def rewrite(client: Any, operation: str, change: Callable[[dict[str, Any], dict[str, Any]], None]) -> None:
    """Let `change(params, response)` edit every parsed response of `operation` in place (to say what AWS would
    say where moto does not)."""
    last: dict[str, Any] = {}

    def remember(params: dict[str, Any], **_: Any) -> None:
        last.clear()
        last.update(params)

    def handler(parsed: dict[str, Any], **_: Any) -> None:
        change(last, parsed)

    client.meta.events.register(_event(client, "before-parameter-build", operation), remember)
    client.meta.events.register(_event(client, "after-call", operation), handler)


def by_kind(items: Iterable[Found]) -> dict[Kind, set[str]]:
    grouped: dict[Kind, set[str]] = defaultdict(set)
    for item in items:
        grouped[item.kind].add(item.id)
    return dict(grouped)


def present(clients: Clients) -> dict[Kind, set[str]]:
    """Every object of the kinds the sweep deals with that exists (not terminated, deleted or deleting)."""
    ec2, elbv2, iam, fsx = clients.ec2, clients.elbv2, clients.iam, clients.fsx
    found: dict[Kind, set[str]] = defaultdict(set)
    for reservation in ec2.describe_instances()["Reservations"]:
        for instance in reservation["Instances"]:
            if instance["State"]["Name"] != "terminated":
                found[Kind.INSTANCE].add(instance["InstanceId"])
    found[Kind.LAUNCH_TEMPLATE] = {lt["LaunchTemplateId"] for lt in ec2.describe_launch_templates()["LaunchTemplates"]}
    found[Kind.INSTANCE_PROFILE] = {p["InstanceProfileName"] for p in iam.list_instance_profiles()["InstanceProfiles"]}
    found[Kind.LOAD_BALANCER] = {lb["LoadBalancerArn"] for lb in elbv2.describe_load_balancers()["LoadBalancers"]}
    found[Kind.TARGET_GROUP] = {tg["TargetGroupArn"] for tg in elbv2.describe_target_groups()["TargetGroups"]}
    found[Kind.VOLUME] = {
        v["VolumeId"] for v in ec2.describe_volumes()["Volumes"] if v["State"] not in ("deleting", "deleted")
    }
    found[Kind.FILE_SYSTEM] = {fs["FileSystemId"] for fs in fsx.describe_file_systems()["FileSystems"]}
    found[Kind.VPC_ENDPOINT] = {
        e["VpcEndpointId"] for e in ec2.describe_vpc_endpoints()["VpcEndpoints"] if e["State"].lower() != "deleted"
    }
    found[Kind.NETWORK_INTERFACE] = {
        eni["NetworkInterfaceId"] for eni in ec2.describe_network_interfaces()["NetworkInterfaces"]
    }
    found[Kind.SECURITY_GROUP] = {g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]}
    return found


def build_world(cluster: str = CLUSTER, *, project: str = PROJECT, stack: str = STACK) -> World:
    """Call inside `mock_aws()`."""
    clients = Clients(**{s: boto3.client(s, region_name=REGION) for s in ("ec2", "elbv2", "iam", "fsx")})
    ec2 = clients.ec2
    stack_tags = {"Name": "network", "project": project, "stack": stack, "managed-by": "pulumi"}
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16", TagSpecifications=spec("vpc", stack_tags))["Vpc"]["VpcId"]
    subnets = tuple(
        ec2.create_subnet(
            VpcId=vpc,
            CidrBlock=cidr,
            AvailabilityZone=zone,
            TagSpecifications=spec("subnet", {"karpenter.sh/discovery": cluster}),
        )["Subnet"]["SubnetId"]
        for cidr, zone in (("10.20.1.0/24", "us-west-2a"), ("10.20.2.0/24", "us-west-2b"))
    )
    other_vpc = ec2.create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]
    other_subnets = tuple(
        ec2.create_subnet(VpcId=other_vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for cidr, zone in (("10.30.1.0/24", "us-west-2a"), ("10.30.2.0/24", "us-west-2b"))
    )
    world = World(clients, cluster, vpc, other_vpc, subnets)
    _compute(world, other_subnets)
    _load_balancing(world, other_subnets)
    _storage(world)
    _vpc_leftovers(world, other_subnets)
    return world


def _compute(world: World, other_subnets: tuple[str, ...]) -> None:
    ec2, iam, c = world.clients.ec2, world.clients.iam, world.cluster
    ami = "ami-0123456789abcdef0"  # moto launches any image id; listing its catalogue would take seconds

    def instance(subnet: str, **tags: str) -> str:
        return ec2.run_instances(
            ImageId=ami, MinCount=1, MaxCount=1, SubnetId=subnet, TagSpecifications=spec("instance", tags)
        )["Instances"][0]["InstanceId"]

    nodepool = "karpenter.sh/nodepool"
    world.ours[Kind.INSTANCE] |= {
        instance(world.subnets[0], **{nodepool: "gpu-inference", "eks:eks-cluster-name": c}),
        instance(world.subnets[1], **{nodepool: "cpu-general", f"kubernetes.io/cluster/{c}": "owned"}),
        instance(world.subnets[0], **{nodepool: "cpu-general", "karpenter.sh/discovery": c}),
    }
    # The managed node group's node carries the cluster's tags but no NodePool: EKS deletes it, not the sweep.
    system_tags = {"eks:cluster-name": c, f"kubernetes.io/cluster/{c}": "owned"}
    world.names["system_node"] = instance(world.subnets[0], **system_tags)
    world.theirs[Kind.INSTANCE] |= {
        world.names["system_node"],
        instance(other_subnets[0], **{nodepool: "gpu", "eks:eks-cluster-name": OTHER}),
        instance(world.subnets[0], **{nodepool: "gpu", f"kubernetes.io/cluster/{OTHER}": "owned"}),
        instance(world.subnets[0], Name="bastion"),
    }

    def template(name: str, **tags: str) -> str:
        return ec2.create_launch_template(
            LaunchTemplateName=name, LaunchTemplateData={}, TagSpecifications=spec("launch-template", tags)
        )["LaunchTemplate"]["LaunchTemplateId"]

    world.ours[Kind.LAUNCH_TEMPLATE].add(template("karpenter.k8s.aws/1111", **{"karpenter.k8s.aws/cluster": c}))
    # The system node group's template (Pulumi's) names the cluster too, but not as Karpenter does.
    world.names["system_template"] = template("system-nodes", **{f"kubernetes.io/cluster/{c}": "owned"})
    world.theirs[Kind.LAUNCH_TEMPLATE] |= {
        template("karpenter.k8s.aws/2222", **{"karpenter.k8s.aws/cluster": OTHER}),
        world.names["system_template"],
    }

    role = iam.create_role(RoleName="KarpenterNodeRole", AssumeRolePolicyDocument="{}")["Role"]["RoleName"]
    world.names["node_role"] = role

    def profile(name: str, path: str, role_name: str | None = None, **tags: str) -> str:
        iam.create_instance_profile(InstanceProfileName=name, Path=path, Tags=tag_list(tags))
        if role_name:
            iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role_name)
        return name

    v1 = {f"kubernetes.io/cluster/{c}": "owned", "eks:eks-cluster-name": c, "karpenter.k8s.aws/ec2nodeclass": "gpu"}
    pre_v1 = {"karpenter.sh/managed-by": c, "karpenter.k8s.aws/ec2nodeclass": "default"}
    region = "topology.kubernetes.io/region"
    world.ours[Kind.INSTANCE_PROFILE] |= {
        profile(f"{c}_1111", f"/karpenter/{REGION}/{c}/uid-1/", role, **v1, **{region: REGION}),
        # Before v1: root path, the managed-by tag.
        profile(f"{c}_2222", "/", **{**pre_v1, region: REGION}),
    }
    world.names["profile_region_unknown"] = profile(f"{c}_5555", "/", **v1)
    world.theirs[Kind.INSTANCE_PROFILE] |= {
        world.names["profile_region_unknown"],
        profile(f"{OTHER}_3333", f"/karpenter/{REGION}/{OTHER}/uid-3/", **{"eks:eks-cluster-name": OTHER}),
        profile(f"{c}_4444", f"/karpenter/eu-west-1/{c}/uid-4/", **v1, **{region: "eu-west-1"}),
        # Named like Karpenter's but not made by it (no node class tag, no /karpenter/ path).
        profile(f"{c}_system", "/", **{f"kubernetes.io/cluster/{c}": "owned"}),
    }


def _group(world: World, vpc: str, name: str, **tags: str) -> str:
    return world.clients.ec2.create_security_group(
        GroupName=name, Description=name, VpcId=vpc, TagSpecifications=spec("security-group", tags)
    )["GroupId"]


def _load_balancing(world: World, other_subnets: tuple[str, ...]) -> None:
    ec2, elbv2, c = world.clients.ec2, world.clients.elbv2, world.cluster
    lbc = {"elbv2.k8s.aws/cluster": c}
    lb_group = _group(world, world.vpc, "k8s-team-a-web", **lbc)
    backend_group = _group(world, world.vpc, "k8s-traffic-ml-dev", **lbc, **{"elbv2.k8s.aws/resource": "backend-sg"})
    node_group = _group(world, world.vpc, "cluster-nodes")  # Pulumi's; the controller adds rules to it
    ec2.authorize_security_group_ingress(
        GroupId=node_group,
        IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": 8080, "ToPort": 8080, "UserIdGroupPairs": [{"GroupId": backend_group}]},
            {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": lb_group}]},
            {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "10.20.0.0/16"}]},
        ],
    )
    world.names.update(node_group=node_group, lb_group=lb_group, backend_group=backend_group)
    world.ours[Kind.SECURITY_GROUP] |= {lb_group, backend_group}

    def load_balancer(name: str, subnets: tuple[str, ...], groups: list[str], tags: Mapping[str, str]) -> str:
        return elbv2.create_load_balancer(Name=name, Subnets=list(subnets), SecurityGroups=groups, Tags=tag_list(tags))[
            "LoadBalancers"
        ][0]["LoadBalancerArn"]

    def target_group(name: str, vpc: str, tags: Mapping[str, str]) -> str:
        return elbv2.create_target_group(Name=name, Protocol="HTTP", Port=80, VpcId=vpc, Tags=tag_list(tags))[
            "TargetGroups"
        ][0]["TargetGroupArn"]

    alb = load_balancer("k8s-teama-web", world.subnets, [lb_group, backend_group], lbc)
    web = target_group("k8s-teama-web", world.vpc, lbc)
    elbv2.create_listener(
        LoadBalancerArn=alb, Protocol="HTTP", Port=80, DefaultActions=[{"Type": "forward", "TargetGroupArn": web}]
    )
    world.names.update(alb=alb, web_target_group=web)
    world.ours[Kind.LOAD_BALANCER].add(alb)
    world.ours[Kind.TARGET_GROUP] |= {web, target_group("k8s-teama-api", world.vpc, lbc)}

    other_group = _group(world, world.other_vpc, "k8s-other", **{"elbv2.k8s.aws/cluster": OTHER})
    world.theirs[Kind.SECURITY_GROUP] |= {node_group, other_group, _group(world, world.vpc, "fsx-lustre")}
    world.theirs[Kind.LOAD_BALANCER] |= {
        load_balancer("k8s-other-web", other_subnets, [other_group], {"elbv2.k8s.aws/cluster": OTHER}),
        load_balancer("hand-made", world.subnets, [], {"team": "a"}),
    }
    world.theirs[Kind.TARGET_GROUP] |= {
        target_group("k8s-other-web", world.other_vpc, {"elbv2.k8s.aws/cluster": OTHER}),
        target_group("hand-made", world.vpc, {"team": "a"}),
    }


def _storage(world: World) -> None:
    ec2, fsx, c = world.clients.ec2, world.clients.fsx, world.cluster

    def volume(**tags: str) -> str:
        created = ec2.create_volume(AvailabilityZone="us-west-2a", Size=10, TagSpecifications=spec("volume", tags))
        return created["VolumeId"]

    csi = {"ebs.csi.aws.com/cluster": "true"}
    claim = {"kubernetes.io/created-for/pvc/namespace": "team-a", "kubernetes.io/created-for/pvc/name": "data"}
    free = volume(**csi, **claim, **{f"kubernetes.io/cluster/{c}": "owned"})
    # Still attached to a node of the system node group (its pod is gone; the node is not).
    attached = volume(**csi, KubernetesCluster=c)
    ec2.attach_volume(VolumeId=attached, InstanceId=world.names["system_node"], Device="/dev/xvdf")
    world.names["attached_volume"] = attached
    world.ours[Kind.VOLUME] |= {free, attached}
    world.claims[Kind.VOLUME] |= {free, attached}
    world.names["owned_volume"] = volume(**{f"kubernetes.io/cluster/{c}": "owned"})  # not the CSI driver's
    world.theirs[Kind.VOLUME] |= {
        volume(**csi, **{f"kubernetes.io/cluster/{OTHER}": "owned"}),
        volume(**csi),  # the driver ran without a cluster id: nothing says whose it is
        world.names["owned_volume"],
        volume(Name="scratch"),
    }

    def file_system(**tags: str) -> str:
        return fsx.create_file_system(
            FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=[world.subnets[0]], Tags=tag_list(tags)
        )["FileSystem"]["FileSystemId"]

    dynamic = file_system(**{DYNAMIC_FSX_TAG: c})
    world.ours[Kind.FILE_SYSTEM].add(dynamic)
    world.claims[Kind.FILE_SYSTEM].add(dynamic)
    world.theirs[Kind.FILE_SYSTEM] |= {file_system(**{DYNAMIC_FSX_TAG: OTHER}), file_system(Name="storage-fsx")}


def _vpc_leftovers(world: World, other_subnets: tuple[str, ...]) -> None:
    ec2, c = world.clients.ec2, world.cluster

    def interface(subnet: str, description: str, **tags: str) -> str:
        return ec2.create_network_interface(
            SubnetId=subnet, Description=description, TagSpecifications=spec("network-interface", tags)
        )["NetworkInterface"]["NetworkInterfaceId"]

    world.names["cni_tagged_interface"] = interface(world.subnets[1], "", **{"cluster.k8s.amazonaws.com/name": c})
    world.names["cni_untagged_interface"] = interface(world.subnets[0], "aws-K8S-i-0123456789abcdef0")
    world.ours[Kind.NETWORK_INTERFACE] |= {
        world.names["cni_tagged_interface"],
        world.names["cni_untagged_interface"],
        interface(world.subnets[0], "", **{"node.k8s.amazonaws.com/instance_id": "i-0123456789abcdef0"}),
    }
    world.theirs[Kind.NETWORK_INTERFACE] |= {
        interface(other_subnets[0], "aws-K8S-i-0fedcba9876543210"),
        interface(world.subnets[0], "aws-K8S-i-0aaaabbbbccccdddd", **{"cluster.k8s.amazonaws.com/name": OTHER}),
        interface(world.subnets[0], "appliance"),
    }

    guardduty = {"GuardDutyManaged": "true"}

    def endpoint(vpc: str, subnet: str, service: str, tags: Mapping[str, str]) -> str:
        return ec2.create_vpc_endpoint(
            VpcId=vpc,
            ServiceName=service,
            VpcEndpointType="Interface",
            SubnetIds=[subnet],
            TagSpecifications=spec("vpc-endpoint", tags),
        )["VpcEndpoint"]["VpcEndpointId"]

    service = f"com.amazonaws.{REGION}.guardduty-data"
    world.names["guardduty_endpoint"] = endpoint(world.vpc, world.subnets[0], service, guardduty)
    world.names["guardduty_group"] = _group(world, world.vpc, "GuardDutyManagedSecurityGroup", **guardduty)
    world.ours[Kind.VPC_ENDPOINT].add(world.names["guardduty_endpoint"])
    world.ours[Kind.SECURITY_GROUP].add(world.names["guardduty_group"])
    world.theirs[Kind.VPC_ENDPOINT] |= {
        endpoint(world.other_vpc, other_subnets[0], service, guardduty),
        endpoint(world.vpc, world.subnets[0], f"com.amazonaws.{REGION}.ecr.api", {}),
    }
    world.theirs[Kind.SECURITY_GROUP].add(_group(world, world.other_vpc, "GuardDutyManagedSecurityGroup", **guardduty))
