"""How long `pulumi destroy` of a stack takes, estimated from the offline preview's graph.

    python -m components.tools.preview.destroy_estimate --stack dev

The engine deletes in batches: each batch holds every resource that nothing still to be deleted depends on (its
dependents, the children of a component, the users of a provider), and a batch finishes before the next one starts
(pulumi/pkg/resource/deploy: the step generator's ScheduleDeletes returns antichains the executor runs in turn).
So the time is the sum, over batches, of the slowest delete in each; that slowest resource per batch is the
critical path. Resources with `deleted_with` whose target goes in the same destroy are never deleted one by one.

Delete times are typical figures for an idle stack, not measurements of this one; the table says where each comes
from. Drains of busy NodePools, large file systems and a sweep with much to delete take longer.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from components.tools.preview.inventory import Inventory, Recorded

#: Seconds a delete typically takes, by type (anything else: DEFAULT_SECONDS). Sources: the AWS docs' and the
#: providers' stated durations, and the default delete timeouts terraform-provider-aws sets for slow types.
DELETE_SECONDS: Mapping[str, int] = MappingProxyType(
    {
        # EKS: the control plane takes 5-10 minutes to delete; a managed node group drains and terminates its
        # nodes and deletes its Auto Scaling group (about 5 minutes); add-ons uninstall in about a minute.
        "aws:eks/cluster:Cluster": 540,
        "aws:eks/nodeGroup:NodeGroup": 300,
        "aws:eks/addon:Addon": 60,
        "aws:eks/accessEntry:AccessEntry": 5,
        # FSx: a file system deletes in several minutes; a data repository association detaches in a few.
        "aws:fsx/lustreFileSystem:LustreFileSystem": 420,
        "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": 240,
        # Network: NAT gateways sit in "deleting" for about a minute; an internet gateway detaches; VPC endpoints.
        "aws:ec2/natGateway:NatGateway": 75,
        "aws:ec2/internetGateway:InternetGateway": 20,
        "aws:ec2/vpcEndpoint:VpcEndpoint": 30,
        "aws:ec2/subnet:Subnet": 10,
        "aws:ec2/vpc:Vpc": 10,
        "aws:ec2/securityGroup:SecurityGroup": 10,
        "aws:s3/bucket:Bucket": 30,  # force_destroy empties it first (dev)
        # In the cluster: Helm uninstalls and waits for its resources; a namespace waits for its contents;
        # NodePools and their classes wait for Karpenter to drain and terminate nodes (idle: none, or a few).
        "kubernetes:helm.sh/v3:Release": 60,
        "kubernetes:core/v1:Namespace": 45,
        "kubernetes:karpenter.sh/v1:NodePool": 120,
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass": 30,
        "kubernetes:core/v1:PersistentVolumeClaim": 10,
        "kubernetes:core/v1:PersistentVolume": 10,
        # The sweeps list their kinds and find nothing when the controllers cleaned up (each list is one call).
        "pulumi-python:dynamic:Resource": 30,
    }
)
DEFAULT_SECONDS = 3
#: Components and providers: nothing to delete in AWS.
INSTANT = ("eksml:", "eks:index:", "pulumi:providers:")


def delete_seconds(resource: Recorded) -> int:
    if resource.type.startswith(INSTANT):
        return 0
    return DELETE_SECONDS.get(resource.type, DEFAULT_SECONDS)


@dataclass(frozen=True)
class Batch:
    resources: tuple[Recorded, ...]

    @property
    def slowest(self) -> Recorded:
        return max(self.resources, key=lambda r: (delete_seconds(r), r.urn))

    @property
    def seconds(self) -> int:
        return delete_seconds(self.slowest)


@dataclass(frozen=True)
class Estimate:
    batches: tuple[Batch, ...]
    #: Left to their `deleted_with` target: never deleted one by one.
    skipped: tuple[Recorded, ...]

    @property
    def seconds(self) -> int:
        return sum(batch.seconds for batch in self.batches)

    def critical_path(self) -> list[tuple[int, Recorded]]:
        """The slowest delete of every batch that takes time, in order."""
        return [(b.seconds, b.slowest) for b in self.batches if b.seconds > 0]


def _must_outlive(resource: Recorded) -> set[str]:
    """What a resource must be deleted before: what it depends on, its parent, its provider."""
    found = set(resource.dependencies)
    if resource.parent:
        found.add(resource.parent)
    if resource.provider:
        found.add(resource.provider)
    return found


def estimate(inventory: Inventory) -> Estimate:
    """The engine's delete batches for a full destroy of what the inventory holds."""
    urns = {r.urn for r in inventory.resources}
    skipped = tuple(r for r in inventory.resources if r.deleted_with and r.deleted_with in urns)
    remaining = {r.urn: r for r in inventory.resources if r not in skipped}
    # Who still waits to be deleted before each resource may go.
    waiting_on: dict[str, set[str]] = {urn: set() for urn in remaining}
    for resource in remaining.values():
        for target in _must_outlive(resource) & set(remaining):
            waiting_on[target].add(resource.urn)
    batches = []
    while remaining:
        ready = sorted(urn for urn in remaining if not waiting_on[urn] & set(remaining))
        if not ready:
            raise ValueError(f"the delete graph has a cycle among {sorted(remaining)[:5]}")
        batches.append(Batch(tuple(remaining.pop(urn) for urn in ready)))
    return Estimate(tuple(batches), skipped)


def report(estimate_: Estimate, stack: str) -> str:
    minutes = estimate_.seconds / 60
    lines = [
        (
            f"Estimated `pulumi destroy` of stack '{stack}': about {minutes:.0f} minutes in {len(estimate_.batches)} "
            f"batches ({len(estimate_.skipped)} resources go with their deleted_with target)"
        ),
        "Critical path (the slowest delete of each batch that takes time):",
    ]
    for seconds, resource in estimate_.critical_path():
        lines.append(f"  {seconds:5d} s  {resource.name} ({resource.type})")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from components.tools.commands import INVALID_STACK, add_stack_arguments, read_stack
    from components.tools.preview import run_preview

    parser = argparse.ArgumentParser(
        prog="python -m components.tools.preview.destroy_estimate", description=__doc__.split("\n\n")[0]
    )
    add_stack_arguments(parser)
    args = parser.parse_args(argv)
    inventory = read_stack(args, run_preview)
    if inventory is None:
        return INVALID_STACK
    print(report(estimate(inventory), args.stack))
    return 0


if __name__ == "__main__":
    sys.exit(main())
