"""The system node group: on-demand, tainted nodes on a pinned AMI release, which the platform's controllers run on
(Karpenter never runs on capacity it manages)."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from .. import versions
from ..identity.roles import node_role as node_role_with_policies
from ..scheduling import SYSTEM_PLACEMENT, SYSTEM_TAINT
from .args import ClusterArgs
from .create_order import created_after


def system_node_group(
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
