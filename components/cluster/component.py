"""The EKS cluster (on pulumi-eks), its managed add-ons and the system node group that hosts the controllers."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from .. import versions
from ..config.types import Identity, StatefulResources
from ..identity.documents import same_principal
from ..identity.irsa import node_role as node_role_with_policies
from ..scheduling import SYSTEM_PLACEMENT, SYSTEM_TAINT
from ..sweep.model import Kind
from ..sweep.resource import SweepArgs, sweep_step
from ..sweep.sweeper import NETWORK_KINDS, STEP_KINDS
from .addons import (
    AddonSite,
    metrics_server_addon,
    networking_addons,
    node_health_addon,
    pod_identity_agent_addon,
    workload_addons,
)
from .config import ClusterConfig, EndpointAccess
from .create_order import created_after
from .handle import MUTABLE_DATA, ClusterHandle, pod_identity_target

#: EKS admin access for the principals listed in config.
CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
#: The cluster remembers who created it: pulumi-eks always lets EKS give the creator an admin access entry
#: (bootstrapClusterCreatorAdminPermissions, pulumi-eks issue #2373), so a second entry for the same principal fails
#: with ResourceInUseException. Read back on later runs, so an update by another identity (CI) still skips it.
CREATOR_TAG = "eksml.io/created-by"


def cluster_creator(cluster_name: str, provider: aws.Provider) -> str | None:
    """Who created the cluster (read from its tag), or, before it exists, who is about to: the caller's user or role
    (for an assumed role, the role itself, through its session context). What `ClusterArgs.creator_arn` takes;
    `provider` is the AWS provider the cluster is created with."""
    invoke = pulumi.InvokeOptions(provider=provider)
    if cluster_name in aws.eks.get_clusters(opts=invoke).names:
        return aws.eks.get_cluster(name=cluster_name, opts=invoke).tags.get(CREATOR_TAG)
    caller = aws.get_caller_identity(opts=invoke).arn
    return aws.iam.get_session_context(arn=caller, opts=invoke).issuer_arn


#: The teardown sweep between the in-cluster layer and the cluster: everything but file systems, which Storage sweeps
#: before their security group goes.
IN_CLUSTER_SWEEP = frozenset(STEP_KINDS) - {Kind.FILE_SYSTEM}


def stateful_options(policy: StatefulResources) -> pulumi.ResourceOptions:
    """What `pulumi destroy` may do to a stateful resource, as resource options."""
    return pulumi.ResourceOptions(
        protect=policy is StatefulResources.PROTECT, retain_on_delete=policy is StatefulResources.RETAIN
    )


@dataclass(frozen=True)
class ClusterArgs:
    """What the cluster is made from. Fields without a default are required."""

    #: The EKS cluster's name (also its log group's and its subnets' discovery tag value).
    cluster_name: str
    #: Version, endpoint access, control-plane logs, admin principals and the system node group (`ClusterConfig`).
    config: ClusterConfig
    #: The VPC the cluster and its nodes use (`Network.vpc_id`).
    vpc_id: pulumi.Input[str]
    #: Its private subnets, one per zone, where the nodes run (`Network.private_subnet_ids`).
    private_subnet_ids: pulumi.Input[Sequence[str]]
    #: The zones of those subnets, in their order (`Network.availability_zones`).
    availability_zones: tuple[str, ...]
    #: The AWS region, as the AWS provider has it.
    region: str
    #: What `pulumi destroy` does to the secrets key and log group (protect, retain or destroy); PROTECT also turns on
    #: the cluster's deletion protection.
    stateful_resources: StatefulResources
    #: Tags for what EC2 launches on our behalf (instances and volumes of the system node group): the provider's
    #: default tags do not reach those.
    instance_tags: Mapping[str, str]
    #: Whether the VPC was made for this cluster (`Network.owns_vpc`; False for one brought with network.existing,
    #: where other clusters may live). No default, since a wrong True is harmful: the teardown sweep then also takes
    #: the VPC's untagged CNI interfaces and its GuardDuty endpoint and group; with False only what names this cluster.
    owns_vpc: bool
    #: The AWS CLI profile the kubeconfig authenticates with (so Kubernetes and Helm act as the same identity as
    #: the AWS provider); None: the ambient credentials.
    aws_profile: str | None = None
    #: What the cluster and its nodes need from the network first (NAT routes: `Network.egress`), so that on destroy
    #: they are deleted before it. Default: none (a VPC whose egress the program does not manage).
    network_ready: Sequence[pulumi.Resource] = ()
    #: Subnets the stack made (`Network.subnets`): the network sweep deletes the interfaces left in them, so it
    #: depends on them and destroy deletes it before them (AWS refuses a subnet that still holds an interface; the
    #: provider only retries for 20 minutes). Default: none (subnets the program does not manage).
    network_subnets: Sequence[pulumi.Resource] = ()
    #: The IAM principal (user or role ARN) that created, or is about to create, the cluster (`cluster_creator`):
    #: EKS gives it admin access itself, so it gets no entry of ours, and the cluster is tagged with it so later runs
    #: by another identity know. None: unknown (a cluster created before the tag existed), no tag, every entry made.
    creator_arn: str | None = None
    #: How pods get AWS credentials: IRSA, or EKS Pod Identity (then the `eks-pod-identity-agent` add-on is installed,
    #: the add-ons' roles are given as Pod Identity associations, and `handle.workload_role` makes Pod Identity roles).
    #: Default: IRSA.
    identity: Identity = Identity.IRSA


class Cluster(pulumi.ComponentResource):
    """EKS with API access entries, OIDC, KMS-encrypted secrets, control-plane logs, pinned managed add-ons and a
    tainted system node group."""

    handle: ClusterHandle
    eks_cluster: eks.Cluster

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:cluster:Cluster", name, None, opts)
        config = args.config
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition

        # Deleted after the cluster and its nodes, before the network: what only the VPC still holds then (interfaces
        # the CNI freed as the nodes went, GuardDuty's endpoint).
        # Its vpc_id and the subnets are its edges to the network; NAT and routes may go while the cluster is being
        # deleted.
        # It refuses to act while the cluster exists: only destroy (or dropping the whole cluster) gets it that far.
        network_sweep = sweep_step(
            f"{name}-network-sweep",
            _sweep_args(args, NETWORK_KINDS, args.cluster_name, after_cluster=True),
            parent=self,
            # why: the interfaces it deletes keep the subnets from being deleted.
            after=list(args.network_subnets),
        )
        self.eks_cluster = cluster = _control_plane(name, args, network_sweep=network_sweep, parent=self)
        _private_endpoint_ingress(name, config.endpoint, cluster.cluster_security_group_id, self)
        # The name of the aws.eks.Cluster inside pulumi-eks's component, not of the component: what uses it then
        # depends on that resource itself, and the engine deletes node groups, add-ons and access entries before
        # the EKS cluster (a dependency on the component alone leaves them unordered against its children).
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        site = AddonSite(name, self, cluster, cluster.eks_cluster.name, config.kubernetes_version, partition)
        agent = None
        if args.identity is Identity.POD_IDENTITY:
            agent = pod_identity_agent_addon(site)
            target = pod_identity_target(
                cluster_name=site.cluster_name,
                region=args.region,
                partition=partition,
                account_id=account_id,
                agent=agent,
                associate=False,
            )
            site = dataclasses.replace(site, pod_identity=target)
        networking = networking_addons(site)
        self.system_node_group = _system_node_group(
            name, args, site.cluster_name, partition, networking=networking, network_sweep=network_sweep, parent=self
        )
        coredns, ebs_csi_driver = workload_addons(site, self.system_node_group)
        node_health = node_health_addon(site)
        metrics_server = metrics_server_addon(site, self.system_node_group, SYSTEM_PLACEMENT)

        # Deleted once everything in the cluster is (all of it uses the provider below, which depends on it), and
        # before the nodes, add-ons and cluster it names: what the controllers made in AWS and did not clean up.
        self.sweep = sweep_step(
            f"{name}-sweep",
            _sweep_args(args, IN_CLUSTER_SWEEP, site.cluster_name),
            parent=self,
            after=[
                self.system_node_group,
                *networking,
                coredns,
                ebs_csi_driver,
                node_health,
                metrics_server,
                *([agent] if agent is not None else []),
            ],
        )
        kubernetes_provider = _kubernetes_provider(name, cluster, args.aws_profile, sweep=self.sweep, parent=self)
        self.handle = ClusterHandle(
            name=site.cluster_name,
            kubernetes_version=config.kubernetes_version,
            region=args.region,
            partition=partition,
            account_id=account_id,
            endpoint=cluster.kubeconfig_json.apply(_endpoint_from_kubeconfig),
            oidc_provider_arn=cluster.oidc_provider_arn,
            oidc_issuer=cluster.oidc_issuer,
            cluster_security_group_id=cluster.cluster_security_group_id,
            vpc_id=pulumi.Output.from_input(args.vpc_id),
            private_subnet_ids=pulumi.Output.from_input(args.private_subnet_ids),
            availability_zones=args.availability_zones,
            kubernetes_provider=kubernetes_provider,
            system_node_group=self.system_node_group,
            system_placement=SYSTEM_PLACEMENT,
            ebs_csi_driver=ebs_csi_driver,
            coredns=coredns,
            eks_cluster=cluster,
            aws_profile=args.aws_profile,
            identity=args.identity,
            pod_identity_agent=agent,
        )
        self.register_outputs(
            {
                "name": site.cluster_name,
                "oidcProviderArn": cluster.oidc_provider_arn,
                "systemNodeGroup": self.system_node_group.node_group_name,
            }
        )


# ------------------------------------------------------------------------------------------------ control plane


def _sweep_args(
    args: ClusterArgs, kinds: Collection[Kind], cluster_name: pulumi.Input[str], *, after_cluster: bool = False
) -> SweepArgs:
    return SweepArgs(
        cluster_name=cluster_name,
        region=args.region,
        stateful_resources=args.stateful_resources,
        vpc_id=args.vpc_id,
        owns_vpc=args.owns_vpc,
        profile=args.aws_profile,
        kinds=kinds,
        after_cluster=after_cluster,
    )


def _control_plane(
    name: str, args: ClusterArgs, *, network_sweep: pulumi.Resource, parent: pulumi.Resource
) -> eks.Cluster:
    """The EKS cluster with its secrets key and control-plane log group; no nodes and no add-ons of its own."""
    config, endpoint = args.config, args.config.endpoint
    stateful = pulumi.ResourceOptions.merge(
        pulumi.ResourceOptions(parent=parent), stateful_options(args.stateful_resources)
    )
    secrets_key = aws.kms.Key(
        f"{name}-secrets",
        description=f"Envelope encryption of Kubernetes secrets in EKS cluster {args.cluster_name}",
        enable_key_rotation=True,
        deletion_window_in_days=30 if args.stateful_resources is not StatefulResources.DESTROY else 7,
        opts=stateful,
    )
    # EKS writes control-plane logs to this exact group and creates it (without expiry, outside the stack) if it
    # does not exist; owning it gives it a retention and makes destroy remove it.
    log_group = aws.cloudwatch.LogGroup(
        f"{name}-control-plane",
        name=f"/aws/eks/{args.cluster_name}/cluster",
        retention_in_days=config.log_retention_days,
        opts=stateful,
    )
    return eks.Cluster(
        f"{name}-eks",
        name=args.cluster_name,
        version=config.kubernetes_version,
        vpc_id=args.vpc_id,
        private_subnet_ids=args.private_subnet_ids,
        endpoint_private_access=endpoint.private,
        endpoint_public_access=endpoint.public,
        public_access_cidrs=[str(cidr) for cidr in endpoint.public_cidrs] if endpoint.public else None,
        kubernetes_service_ip_address_range=str(config.service_cidr),
        encryption_config_key_arn=secrets_key.arn,
        enabled_cluster_log_types=[log.value for log in config.log_types],
        # Where the stack keeps what it stores (prod), a replacing change must not delete the cluster either.
        deletion_protection=args.stateful_resources is StatefulResources.PROTECT,
        authentication_mode=eks.AuthenticationMode.API,
        access_entries=_admin_access_entries(args, parent),
        cluster_tags={CREATOR_TAG: args.creator_arn} if args.creator_arn else None,
        create_oidc_provider=True,
        provider_credential_opts=eks.KubeconfigOptionsArgs(profile_name=args.aws_profile) if args.aws_profile else None,
        # Nodes come from the system node group and from Karpenter; the managed add-ons are created by this
        # component, pinned, so EKS must not bootstrap its own unmanaged copies and pulumi-eks must not add its own.
        skip_default_node_group=True,
        skip_default_security_groups=True,
        create_instance_role=False,
        bootstrap_self_managed_addons=False,
        use_default_vpc_cni=True,
        coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
        kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(enabled=False),
        opts=pulumi.ResourceOptions(
            parent=parent,
            # why: EKS would otherwise create the log group itself, unmanaged, and it would outlive destroy.
            depends_on=[log_group, network_sweep],
            protect=args.stateful_resources is StatefulResources.PROTECT,
        ),
    )


def _admin_access_entries(args: ClusterArgs, parent: pulumi.Resource) -> dict[str, eks.AccessEntryArgs]:
    """Cluster admin for each configured principal but the cluster's creator (see CREATOR_TAG)."""
    entries = {
        key: eks.AccessEntryArgs(
            principal_arn=principal,
            access_policies={
                "cluster-admin": eks.AccessPolicyAssociationArgs(
                    policy_arn=CLUSTER_ADMIN_POLICY,
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                )
            },
        )
        for key, principal in sorted(args.config.admin_principals.items())
        if args.creator_arn is None or not same_principal(principal, args.creator_arn)
    }
    skipped = sorted(set(args.config.admin_principals) - set(entries))
    if skipped:
        pulumi.log.info(
            f"cluster.adminPrincipals {', '.join(skipped)}: the cluster's creator, admitted by EKS itself; "
            "no second access entry",
            parent,
        )
    return entries


def _private_endpoint_ingress(
    name: str, endpoint: EndpointAccess, cluster_security_group_id: pulumi.Input[str], parent: pulumi.Resource
) -> None:
    """HTTPS into the cluster security group (which fronts the private API endpoint) from each configured range and
    security group, keyed by the range or group itself."""
    # key -> (address range, security group): one of the two
    sources: dict[str, tuple[str | None, str | None]] = {
        str(cidr).replace(".", "-").replace("/", "-"): (str(cidr), None) for cidr in endpoint.private_cidrs
    }
    sources.update({group: (None, group) for group in endpoint.private_security_groups})
    for key, (cidr, group) in sorted(sources.items()):
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-api-from-{key}",
            security_group_id=cluster_security_group_id,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="Kubernetes API (private endpoint)",
            cidr_ipv4=cidr,
            referenced_security_group_id=group,
            opts=pulumi.ResourceOptions(parent=parent),
        )


def _endpoint_from_kubeconfig(kubeconfig_json: str) -> str:
    # pulumi-eks exposes the endpoint only inside the kubeconfig and the nested eksCluster resource; the kubeconfig
    # is a plain output, so it is read from there.
    return json.loads(kubeconfig_json)["clusters"][0]["cluster"]["server"]


def _kubernetes_provider(
    name: str, cluster: eks.Cluster, aws_profile: str | None, *, sweep: pulumi.Resource, parent: pulumi.Resource
) -> k8s.Provider:
    return k8s.Provider(
        f"{name}-k8s",
        # pulumi-eks's kubeconfig_json carries no profile (on purpose, pulumi-eks #1082): without this, Kubernetes
        # and Helm would act as whatever the ambient credential chain finds, not as the stack's aws:profile.
        kubeconfig=cluster.get_kubeconfig(profile_name=aws_profile) if aws_profile else cluster.kubeconfig_json,
        # Objects whose namespace is not set go to 'default' explicitly, never to the kubeconfig's context.
        namespace="default",
        enable_config_map_mutable=MUTABLE_DATA,
        enable_secret_mutable=MUTABLE_DATA,
        # why: on destroy, every object in the cluster goes before the sweep (and so before what it names).
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[sweep]),
    )


# ------------------------------------------------------------------------------------------------ system nodes


def _system_node_group(
    name: str,
    args: ClusterArgs,
    cluster_name: pulumi.Output[str],
    partition: pulumi.Output[str],
    *,
    networking: Sequence[pulumi.CustomResource],
    network_sweep: pulumi.Resource,
    parent: pulumi.Resource,
) -> aws.eks.NodeGroup:
    """The on-demand, tainted node group the controllers run on, on a pinned AMI release."""
    config, group = args.config, args.config.system_node_group
    node_role, node_policies = node_role_with_policies(
        f"{name}-system-node",
        partition=partition,
        description=f"System node group of EKS cluster {args.cluster_name}",
        opts=pulumi.ResourceOptions(parent=parent),
    )
    launch_template = _system_launch_template(name, args, parent)
    return aws.eks.NodeGroup(
        f"{name}-system",
        # Nodes come up with networking only once the vpc-cni and kube-proxy add-ons exist; those go with the
        # cluster on destroy, so the wait is for create only (an edge would add their levels to every destroy).
        cluster_name=created_after(cluster_name, *networking),
        node_role_arn=node_role.arn,
        subnet_ids=args.private_subnet_ids,
        capacity_type="ON_DEMAND",
        ami_type="AL2023_x86_64_STANDARD",
        # Follows the control plane's version; the AMI release is pinned, so patches arrive with a pin bump.
        version=config.kubernetes_version,
        release_version=versions.system_node_ami(config.kubernetes_version).version,
        instance_types=list(group.instance_types),
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(
            min_size=group.min_size, max_size=group.max_size, desired_size=group.desired_size
        ),
        update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
        node_repair_config=aws.eks.NodeGroupNodeRepairConfigArgs(enabled=True),
        labels=dict(SYSTEM_PLACEMENT.node_selector),
        taints=[aws.eks.NodeGroupTaintArgs(key=SYSTEM_TAINT.key, value=SYSTEM_TAINT.value, effect="NO_SCHEDULE")],
        launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
            id=launch_template.id, version=launch_template.latest_version.apply(str)
        ),
        opts=pulumi.ResourceOptions(
            parent=parent,
            # why: nodes join only with egress and the node policies attached; on destroy the group goes before
            # them.
            depends_on=[*node_policies, *args.network_ready, network_sweep],
        ),
    )


def _system_launch_template(name: str, args: ClusterArgs, parent: pulumi.Resource) -> aws.ec2.LaunchTemplate:
    """IMDSv2 only, encrypted gp3 root volumes, and the stack's tags on what EC2 launches."""
    return aws.ec2.LaunchTemplate(
        f"{name}-system",
        description=f"System node group of EKS cluster {args.cluster_name}",
        update_default_version=True,
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled",
            http_tokens="required",
            # 1: pods outside the host network cannot reach instance credentials; controllers use IRSA.
            http_put_response_hop_limit=1,
        ),
        block_device_mappings=[
            aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name="/dev/xvda",
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=args.config.system_node_group.disk_size_gib,
                    volume_type="gp3",
                    encrypted="true",
                    delete_on_termination="true",
                ),
            )
        ],
        tag_specifications=[
            aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=dict(args.instance_tags))
            for kind in ("instance", "volume")
        ],
        opts=pulumi.ResourceOptions(parent=parent),
    )
