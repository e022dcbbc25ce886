"""The EKS cluster (on pulumi-eks), its managed add-ons and the system node group that hosts the controllers."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from ..config.types import Identity
from ..scheduling import SYSTEM_PLACEMENT
from ..sweep.model import NETWORK_KINDS, STEP_KINDS, Kind
from ..sweep.resource import SweepArgs, sweep_step
from .addons import (
    AddonSite,
    metrics_server_addon,
    networking_addons,
    node_health_addon,
    pod_identity_agent_addon,
    workload_addons,
)
from .args import ClusterArgs as ClusterArgs  # public here since 0.3 (the package's lazy exports name this module)
from .control_plane import CREATOR_TAG, control_plane, private_endpoint_ingress
from .handle import MUTABLE_DATA, ClusterHandle, pod_identity_target
from .system_nodes import system_node_group


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


class Cluster(pulumi.ComponentResource):
    """EKS with API access entries, OIDC, KMS-encrypted secrets, control-plane logs, pinned managed add-ons and a
    tainted system node group."""

    handle: ClusterHandle
    eks_cluster: eks.Cluster

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:cluster:Cluster", name, None, opts)
        config = args.config
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition

        network_sweep = self._network_sweep(name, args)
        self.eks_cluster = cluster = control_plane(name, args, network_sweep=network_sweep, parent=self)
        private_endpoint_ingress(name, config.endpoint, cluster.cluster_security_group_id, self)
        # The name of the aws.eks.Cluster inside pulumi-eks's component, not of the component: what uses it then
        # depends on that resource itself, and the engine deletes node groups, add-ons and access entries before
        # the EKS cluster (a dependency on the component alone leaves them unordered against its children).
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        site = AddonSite(name, self, cluster, cluster.eks_cluster.name, config.kubernetes_version, partition)
        agent = pod_identity_agent_addon(site) if args.identity is Identity.POD_IDENTITY else None
        if agent is not None:
            site = _with_pod_identity(site, agent, region=args.region, account_id=account_id)
        networking = networking_addons(site)
        self.system_node_group = system_node_group(
            name, args, site.cluster_name, partition, networking=networking, network_sweep=network_sweep, parent=self
        )
        coredns, ebs_csi_driver = workload_addons(site, self.system_node_group)
        node_health = node_health_addon(site)
        metrics_server = metrics_server_addon(site, self.system_node_group, SYSTEM_PLACEMENT)
        add_ons = [
            *networking,
            coredns,
            ebs_csi_driver,
            node_health,
            metrics_server,
            *([agent] if agent is not None else []),
        ]

        # Deleted once everything in the cluster is (all of it uses the provider below, which depends on it), and
        # before the nodes, add-ons and cluster it names: what the controllers made in AWS and did not clean up.
        self.sweep = sweep_step(
            f"{name}-sweep",
            _sweep_args(args, IN_CLUSTER_SWEEP, site.cluster_name),
            parent=self,
            after=[self.system_node_group, *add_ons],
        )
        self.handle = self._handle(
            args,
            site,
            account_id=account_id,
            kubernetes_provider=_kubernetes_provider(name, cluster, args.aws_profile, sweep=self.sweep, parent=self),
            coredns=coredns,
            ebs_csi_driver=ebs_csi_driver,
            agent=agent,
        )
        self.register_outputs(
            {
                "name": site.cluster_name,
                "oidcProviderArn": cluster.oidc_provider_arn,
                "systemNodeGroup": self.system_node_group.node_group_name,
            }
        )

    def _network_sweep(self, name: str, args: ClusterArgs) -> pulumi.Resource:
        """The sweep deleted after the cluster and its nodes, before the network: what only the VPC still holds then
        (interfaces the CNI freed as the nodes went, GuardDuty's endpoint). Its vpc_id and the subnets are its edges to
        the network; NAT and routes may go while the cluster is being deleted. It refuses to act while the cluster
        exists: only destroy (or dropping the whole cluster) gets it that far."""
        return sweep_step(
            f"{name}-network-sweep",
            _sweep_args(args, NETWORK_KINDS, args.cluster_name, after_cluster=True),
            parent=self,
            # why: the interfaces it deletes keep the subnets from being deleted.
            after=list(args.network_subnets),
        )

    def _handle(
        self,
        args: ClusterArgs,
        site: AddonSite,
        *,
        account_id: pulumi.Output[str],
        kubernetes_provider: k8s.Provider,
        coredns: aws.eks.Addon,
        ebs_csi_driver: aws.eks.Addon,
        agent: aws.eks.Addon | None,
    ) -> ClusterHandle:
        """What the parts built on the cluster read of it."""
        cluster = self.eks_cluster
        return ClusterHandle(
            name=site.cluster_name,
            kubernetes_version=args.config.kubernetes_version,
            region=args.region,
            partition=site.partition,
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


def _with_pod_identity(
    site: AddonSite, agent: aws.eks.Addon, *, region: str, account_id: pulumi.Output[str]
) -> AddonSite:
    """The add-ons' site with their roles given as EKS Pod Identity associations, which the add-ons make."""
    target = pod_identity_target(
        cluster_name=site.cluster_name,
        region=region,
        partition=site.partition,
        account_id=account_id,
        agent=agent,
        associate=False,
    )
    return dataclasses.replace(site, pod_identity=target)


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
