"""Which cluster and VPC a stack's sweep is about, from its parsed configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...platform.config import PlatformConfig
from ...sweep.model import SweepTarget
from ...sweep.selectors import DISCOVERY_TAG
from ...tags import standard_tags

#: The provider's default tags that say which stack created an object (`owner` and `cost-center` may change).
STACK_TAG_KEYS = ("project", "stack", "managed-by")


@dataclass(frozen=True)
class VpcLocation:
    vpc_id: str | None
    #: False when the stack was given an existing VPC, which it must not treat as its own.
    owns_vpc: bool
    #: How it was found, for the report.
    how: str


class VpcLookupError(Exception):
    """More than one VPC looks like the stack's: sweeping the wrong one is worse than not sweeping."""


def locate_vpc(ec2: Any, config: PlatformConfig) -> VpcLocation:
    """The stack's VPC: the one configured (network.existing), or the one the stack created.

    A created VPC is found by its private subnets' `karpenter.sh/discovery=<cluster>` tag and by the stack tags the
    provider put on the VPC itself (which still find it when `pulumi destroy` got as far as deleting the subnets).
    All answers must agree on one VPC.
    """
    existing = config.network.existing
    if existing is not None:
        return VpcLocation(existing.vpc_id, owns_vpc=False, how="network.existing.vpcId")
    by_subnets = {
        subnet["VpcId"]
        for page in ec2.get_paginator("describe_subnets").paginate(
            Filters=[{"Name": f"tag:{DISCOVERY_TAG}", "Values": [config.cluster_name]}]
        )
        for subnet in page["Subnets"]
    }
    tags = standard_tags(project=config.project, stack=config.stack, owner=config.owner)
    stack_filters = [{"Name": f"tag:{key}", "Values": [tags[key]]} for key in STACK_TAG_KEYS]
    pages = ec2.get_paginator("describe_vpcs").paginate(Filters=stack_filters)
    by_tags = {vpc["VpcId"] for page in pages for vpc in page["Vpcs"]}
    found = by_subnets | by_tags
    if len(found) > 1:
        raise VpcLookupError(
            f"several VPCs look like stack {config.stack!r}'s: {', '.join(sorted(found))} (subnets tagged "
            f"{DISCOVERY_TAG}={config.cluster_name}: {sorted(by_subnets)}; VPCs tagged "
            f"{', '.join(f'{k}={tags[k]}' for k in STACK_TAG_KEYS)}: {sorted(by_tags)}); remove the stray tags"
        )
    if not found:
        return VpcLocation(None, owns_vpc=True, how="no VPC of the stack found (already deleted?)")
    how = "its subnets' discovery tag" if by_subnets else "its stack tags"
    return VpcLocation(found.pop(), owns_vpc=True, how=how)


def target_for(config: PlatformConfig, vpc: VpcLocation) -> SweepTarget:
    return SweepTarget(
        cluster_name=config.cluster_name,
        region=config.region,
        stateful_policy=config.stateful_resources,
        vpc_id=vpc.vpc_id,
        owns_vpc=vpc.owns_vpc,
    )
