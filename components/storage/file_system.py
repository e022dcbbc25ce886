"""The FSx for Lustre file system and its servers' network rules: everything of FSx that needs only the network.

It is made before the cluster so that the system node group can wait for it: on destroy the file system (as slow to
delete as the cluster) then goes in the cluster's batch instead of one of its own. `Storage` adds, once the cluster
exists, what needs it: the nodes' rules, the link to a bucket, the CSI driver and the team volumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from ..cluster.args import stateful_options
from ..config.types import StatefulResources
from . import lustre
from .config import FsxConfig


@dataclass(frozen=True)
class FsxFileSystemArgs:
    """Fields without a default are required."""

    #: The file system's settings (`StorageConfig.fsx`).
    config: FsxConfig
    #: What `pulumi destroy` does to the file system and its log group: protect, retain or destroy.
    stateful_resources: StatefulResources
    #: The cluster whose name tags the file system and its security group.
    cluster_name: str
    #: The VPC of the security group (`Network.vpc_id`).
    vpc_id: pulumi.Input[str]
    #: The AZ the file system lives in (FSx for Lustre serves one AZ; `Network.availability_zones[0]` is the usual).
    zone: str
    #: The private subnet of that AZ (`Network.private_subnet_by_zone[zone]`).
    subnet_id: pulumi.Input[str]
    #: What the file system waits for, and so outlives on destroy, besides its servers' rules. Default: none. The
    #: stack passes the private subnets' egress (`Network.egress`: NAT gateways, route associations), as the system
    #: node group has: the engine deletes a resource as late as its longest chain down to the network allows, so the
    #: file system (minutes to delete) then goes in the node group's level instead of a level of its own; the routes
    #: are ready long before the cluster, so create waits for nothing that matters.
    after: Sequence[pulumi.Resource] = ()


class FsxFileSystem(pulumi.ComponentResource):
    """One FSx for Lustre file system in one private subnet, with the security group its servers and clients use."""

    config: FsxConfig
    file_system: aws.fsx.LustreFileSystem
    #: The servers' security group: `Storage` admits the cluster's nodes to it, and the FSx StorageClass's file
    #: systems use it too.
    security_group: aws.ec2.SecurityGroup
    #: The rules between the file servers themselves (the claims' sweep runs before they go).
    server_rules: tuple[pulumi.Resource, ...]
    zone: str
    subnet_id: pulumi.Input[str]

    def __init__(self, name: str, args: FsxFileSystemArgs, opts: pulumi.ResourceOptions | None = None):
        """Children are named `name` (the file system, its security group and log group) and `<name>-...` (rules)."""
        super().__init__("eksml:storage:FsxFileSystem", name, None, opts)
        self.config, self.zone, self.subnet_id = args.config, args.zone, args.subnet_id
        stateful = pulumi.ResourceOptions.merge(
            pulumi.ResourceOptions(parent=self), stateful_options(args.stateful_resources)
        )
        self.security_group, rules = lustre.security_group(
            name, vpc_id=args.vpc_id, cluster_name=args.cluster_name, parent=self
        )
        self.server_rules = tuple(rules)
        logs = lustre.log_group(name, stateful) if args.config.log_level != "DISABLED" else None
        self.file_system = lustre.file_system(
            name,
            args.config,
            cluster_name=args.cluster_name,
            subnet_id=args.subnet_id,
            group=self.security_group,
            rules=rules,
            logs=logs,
            stateful_resources=args.stateful_resources,
            stateful=stateful,
            after=args.after,
        )
        self.register_outputs({"fileSystemId": self.file_system.id, "zone": self.zone})
