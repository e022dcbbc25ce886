"""What other components need from the cluster, as one typed value: the platform's own Cluster builds it, and a
team stack reads it from the platform stack's outputs or from AWS (`from_stack_reference`, `from_existing`)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from .. import k8s_objects
from ..config.types import Identity
from ..identity.documents import eks_cluster_arn
from ..identity.roles import PodIdentityTarget, WorkloadRole, WorkloadRoleArgs
from ..scheduling import SYSTEM_PLACEMENT, Placement
from . import attach

#: `enableConfigMapMutable` and `enableSecretMutable` of every Kubernetes provider the package makes: a ConfigMap or
#: Secret whose data changes is updated in place, not deleted and created again (the provider's default;
#: pulumi-kubernetes #1926 for ConfigMaps, #2291 and its v4.18.0 release notes for Secrets). One marked
#: `immutable: true`, or a Secret whose `type` changes, is still replaced, as the API server requires. Changing these
#: options updates the provider in place (only a change of cluster replaces it: its `clusterIdentifier` docs).
MUTABLE_DATA = True


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
    #: How pods get AWS credentials: every role `workload_role` makes follows it. Default: IRSA.
    identity: Identity = Identity.IRSA
    #: The `eks-pod-identity-agent` add-on (with `Identity.POD_IDENTITY`): associations wait for it.
    pod_identity_agent: pulumi.Resource | None = None

    def kubernetes_options(self, parent: pulumi.Resource) -> pulumi.ResourceOptions:
        """Options for the objects a part puts in the cluster: the cluster's provider, and `deleted_with` the EKS
        cluster (when this stack owns it), so that destroy makes no delete call for what vanishes with the cluster.
        `k8s_objects.create` and `helm.release` take `deleted_with` off what must be deleted on its own (see
        `k8s_objects.needs_own_delete`)."""
        return pulumi.ResourceOptions(parent=parent, provider=self.kubernetes_provider, deleted_with=self.eks_cluster)

    @classmethod
    def from_stack_reference(
        cls,
        stack: str | pulumi.StackReference,
        *,
        aws_profile: str | None = None,
        provider: aws.Provider | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> ClusterHandle:
        """The handle of the cluster a platform stack (`org/project/stack`, or a StackReference to it) created, from
        its outputs."""
        values = attach.stack_outputs(stack, opts=opts)
        return _handle("platform", values=values, aws_profile=aws_profile, provider=provider, opts=opts)

    @classmethod
    def from_existing(
        cls,
        *,
        cluster_name: str,
        region: str,
        aws_profile: str | None = None,
        system_node_group: str | None = None,
        identity: Identity = Identity.IRSA,
        provider: aws.Provider | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> ClusterHandle:
        """The handle of an existing cluster, read from AWS (see `attach.existing_outputs`). `identity`: how its
        pods get AWS credentials (AWS does not say which the cluster's owner chose); `Identity.POD_IDENTITY` needs the
        `eks-pod-identity-agent` add-on on the cluster."""
        values = attach.existing_outputs(
            cluster_name=cluster_name, region=region, system_node_group=system_node_group, provider=provider
        )
        values["identity"] = identity.value
        return _handle("cluster", values=values, aws_profile=aws_profile, provider=provider, opts=opts)

    @property
    def system_ready(self) -> tuple[pulumi.Resource, ...]:
        """What a controller on the system nodes needs before it can start (nodes to run on, cluster DNS), and must
        be deleted before: depend on all of it."""
        return (self.system_node_group, self.coredns)

    def on_system_nodes(self, parent: pulumi.Resource) -> pulumi.ResourceOptions:
        """`kubernetes_options` for what runs on the system nodes (a controller's release): it waits for
        `system_ready`, and on destroy goes before the nodes and CoreDNS it runs on."""
        return pulumi.ResourceOptions.merge(
            self.kubernetes_options(parent), pulumi.ResourceOptions(depends_on=list(self.system_ready))
        )

    def owned_namespace(
        self,
        name: str,
        namespace: str,
        *,
        parent: pulumi.Resource,
        pod_security: str,
        cleanup_controllers: Sequence[pulumi.Resource] = (),
        policies: Mapping[str, Mapping[str, Any]] | None = None,
        serves_to_the_end: bool = False,
    ) -> k8s.core.v1.Namespace:
        """`k8s_objects.owned_namespace` of a part: it goes on destroy while the EBS CSI driver and
        `cleanup_controllers` (what deletes the AWS side of what is put in it) still run; with `serves_to_the_end`
        (a controller's namespace that other namespaces' deletes need), with the cluster."""
        return k8s_objects.owned_namespace(
            name,
            namespace,
            pod_security=pod_security,
            cleaners=[self.ebs_csi_driver, *cleanup_controllers],
            opts=self.kubernetes_options(parent),
            policies=policies,
            serves_to_the_end=serves_to_the_end,
        )

    def workload_role(
        self,
        name: str,
        *,
        namespace: str,
        service_account: str,
        managed_policy_arns: Mapping[str, pulumi.Input[str]] | None = None,
        inline_policies: Mapping[str, pulumi.Input[str]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> WorkloadRole:
        """A role for one service account of this cluster, through IRSA or EKS Pod Identity as the cluster's
        `identity` says; annotate the service account with the role's `service_account_annotations`."""
        return WorkloadRole(
            name,
            WorkloadRoleArgs(
                oidc_provider_arn=self.oidc_provider_arn,
                oidc_issuer=self.oidc_issuer,
                namespace=namespace,
                service_account=service_account,
                managed_policy_arns=managed_policy_arns or {},
                inline_policies=inline_policies or {},
                pod_identity=self.pod_identity_target() if self.identity is Identity.POD_IDENTITY else None,
            ),
            opts,
        )

    def irsa_role(self, name: str, **kwargs: Any) -> WorkloadRole:
        """Deprecated (0.4): `workload_role`, its new name (it makes Pod Identity roles too)."""
        warnings.warn("ClusterHandle.irsa_role is deprecated: use workload_role", DeprecationWarning, stacklevel=2)
        return self.workload_role(name, **kwargs)

    def pod_identity_target(self, *, associate: bool = True) -> PodIdentityTarget:
        """This cluster as the place EKS Pod Identity roles are used in (`associate`: see PodIdentityTarget)."""
        return pod_identity_target(
            cluster_name=self.name,
            region=self.region,
            partition=self.partition,
            account_id=self.account_id,
            agent=self.pod_identity_agent,
            associate=associate,
        )


def pod_identity_target(
    *,
    cluster_name: pulumi.Input[str],
    region: str,
    partition: pulumi.Input[str],
    account_id: pulumi.Input[str],
    agent: pulumi.Resource | None,
    associate: bool = True,
) -> PodIdentityTarget:
    """A cluster as the place EKS Pod Identity roles are used in."""
    arn = pulumi.Output.all(partition, account_id, cluster_name).apply(
        lambda v: eks_cluster_arn(partition=v[0], region=region, account_id=v[1], cluster_name=v[2])
    )
    return PodIdentityTarget(
        cluster_name=cluster_name, cluster_arn=arn, account_id=account_id, agent=agent, associate=associate
    )


def _handle(
    name: str,
    *,
    values: dict[str, Any],
    aws_profile: str | None,
    provider: aws.Provider | None,
    opts: pulumi.ResourceOptions | None,
) -> ClusterHandle:
    """The handle of a cluster this program did not create, from the outputs a platform stack gives (`values`, or
    the same read from AWS): its add-ons and system node group are read, not managed, and its Kubernetes provider
    authenticates with `aws_profile`."""
    cluster_name = values["clusterName"]
    account_id, partition = attach.arn_account_and_partition(values["oidcProviderArn"])
    try:
        identity = Identity(values["identity"])
    except ValueError:
        raise attach.AttachError(
            f"the platform's output identity is {values['identity']!r}; expected one of {[i.value for i in Identity]}"
        ) from None
    read = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(provider=provider))

    def addon(key: str, addon_name: str) -> aws.eks.Addon:
        return aws.eks.Addon.get(f"{name}-{key}", id=f"{cluster_name}:{addon_name}", opts=read)

    return ClusterHandle(
        name=pulumi.Output.from_input(cluster_name),
        kubernetes_version=str(values["kubernetesVersion"]),
        region=str(values["region"]),
        partition=pulumi.Output.from_input(partition),
        account_id=pulumi.Output.from_input(account_id),
        endpoint=pulumi.Output.from_input(values["clusterEndpoint"]),
        oidc_provider_arn=pulumi.Output.from_input(values["oidcProviderArn"]),
        oidc_issuer=pulumi.Output.from_input(str(values["oidcIssuer"]).removeprefix("https://")),
        cluster_security_group_id=pulumi.Output.from_input(values["clusterSecurityGroupId"]),
        vpc_id=pulumi.Output.from_input(values["vpcId"]),
        private_subnet_ids=pulumi.Output.from_input(list(values["privateSubnetIds"])),
        availability_zones=tuple(values["availabilityZones"]),
        kubernetes_provider=_attached_provider(f"{name}-k8s", values, aws_profile, opts),
        system_node_group=aws.eks.NodeGroup.get(
            f"{name}-system", id=f"{cluster_name}:{values['systemNodeGroup']}", opts=read
        ),
        system_placement=SYSTEM_PLACEMENT,
        ebs_csi_driver=addon("ebs-csi", "aws-ebs-csi-driver"),
        coredns=addon("coredns", "coredns"),
        eks_cluster=None,
        aws_profile=aws_profile,
        identity=identity,
        # The platform's agent, not this program's: its associations need not wait for it.
        pod_identity_agent=None,
    )


def _attached_provider(
    name: str, values: dict[str, Any], aws_profile: str | None, opts: pulumi.ResourceOptions | None
) -> k8s.Provider:
    """The Kubernetes provider of a cluster attached from the platform's outputs (`values`), authenticating with
    `aws_profile`."""
    return k8s.Provider(
        name,
        kubeconfig=attach.kubeconfig(
            cluster_name=values["clusterName"],
            endpoint=values["clusterEndpoint"],
            certificate_authority=values["clusterCertificateAuthority"],
            region=values["region"],
            profile=aws_profile,
        ),
        # Objects whose namespace is not set go to 'default' explicitly, never to a kubeconfig context.
        namespace="default",
        enable_config_map_mutable=MUTABLE_DATA,
        enable_secret_mutable=MUTABLE_DATA,
        opts=opts,
    )
