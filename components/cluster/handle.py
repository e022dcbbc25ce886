"""What other components need from the cluster, as one typed value: the platform's own Cluster builds it, and a
team stack reads it from the platform stack's outputs or from AWS (`attach`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.identity.irsa import IrsaRole, IrsaRoleArgs
from components.scheduling import Placement


@dataclass(frozen=True)
class ClusterHandle:
    """What other components need from the cluster: pass this, not strings."""

    name: pulumi.Output[str]
    kubernetes_version: str
    region: str
    partition: pulumi.Output[str]
    #: The account the stack deploys to (the AWS provider's credentials).
    account_id: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_issuer: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    vpc_id: pulumi.Output[str]
    private_subnet_ids: pulumi.Output[Sequence[str]]
    availability_zones: tuple[str, ...]
    kubernetes_provider: k8s.Provider
    #: Controllers that must run on the system nodes depend on this, so they are deleted before it.
    system_node_group: aws.eks.NodeGroup
    #: Where controllers run: the system node group's label and the toleration of its taint.
    system_placement: Placement
    #: The EBS CSI driver: what uses EBS volumes depends on it, so volumes are deleted while it still runs.
    ebs_csi_driver: aws.eks.Addon
    #: Cluster DNS: controllers resolve AWS endpoints and Services through it.
    coredns: aws.eks.Addon
    #: The EKS cluster itself: what EKS deletes with it names it as `deleted_with`.
    eks_cluster: pulumi.Resource | None = None
    #: The AWS CLI profile the stack acts as (None: ambient credentials), for what calls AWS itself.
    aws_profile: str | None = None

    @classmethod
    def from_stack_reference(cls, stack: str | pulumi.StackReference, **kwargs: Any) -> ClusterHandle:
        """The handle of the cluster a platform stack created, from its outputs (see `attach.from_stack_reference`)."""
        from components.cluster.attach import from_stack_reference  # attach builds on this module

        return from_stack_reference(stack, **kwargs)

    @classmethod
    def from_existing(cls, *, cluster_name: str, region: str, **kwargs: Any) -> ClusterHandle:
        """The handle of an existing cluster, read from AWS (see `attach.from_existing`)."""
        from components.cluster.attach import from_existing

        return from_existing(cluster_name=cluster_name, region=region, **kwargs)

    @property
    def system_ready(self) -> tuple[pulumi.Resource, ...]:
        """What a controller on the system nodes needs before it can start (nodes to run on, cluster DNS), and must
        be deleted before: depend on all of it."""
        return (self.system_node_group, self.coredns)

    def irsa_role(
        self,
        name: str,
        *,
        namespace: str,
        service_account: str,
        managed_policy_arns: Mapping[str, pulumi.Input[str]] | None = None,
        inline_policies: Mapping[str, pulumi.Input[str]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> IrsaRole:
        """An IRSA role for one service account of this cluster."""
        return IrsaRole(
            name,
            IrsaRoleArgs(
                oidc_provider_arn=self.oidc_provider_arn,
                oidc_issuer=self.oidc_issuer,
                namespace=namespace,
                service_account=service_account,
                managed_policy_arns=managed_policy_arns or {},
                inline_policies=inline_policies or {},
            ),
            opts,
        )
