"""The EKS control plane: the cluster (on pulumi-eks) with its secrets key, its control-plane log group, the admins'
access entries, and HTTPS to its private endpoint. No nodes and no add-ons: those are `system_nodes` and `addons`."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks

from ..config.types import StatefulResources
from ..identity.documents import same_principal
from .args import ClusterArgs, stateful_options
from .config import EndpointAccess

#: EKS admin access for the principals listed in config.
CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
#: The cluster remembers who created it: pulumi-eks always lets EKS give the creator an admin access entry
#: (bootstrapClusterCreatorAdminPermissions, pulumi-eks issue #2373), so a second entry for the same principal fails
#: with ResourceInUseException. Read back on later runs, so an update by another identity (CI) still skips it.
CREATOR_TAG = "eksml.io/created-by"


def control_plane(
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


def private_endpoint_ingress(
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
