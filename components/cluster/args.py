"""What the cluster is made from (`ClusterArgs`), and what `pulumi destroy` may do to its stateful parts
(`stateful_options`, which the storage parts use too)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi

from ..config.types import Identity, StatefulResources
from .config import ClusterConfig


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
