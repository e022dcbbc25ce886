"""What the stateful policy keeps, what kept objects block, and what the sweep tells the user to do about it."""

from __future__ import annotations

from collections.abc import Sequence

from .model import Failure, Found, Kept, Kind, SweepTarget

#: What the sweep never deletes under protect and retain: volumes and file systems of claims hold data.
STATEFUL_KINDS = (Kind.VOLUME, Kind.FILE_SYSTEM)


def kept_for_policy(found: Found, target: SweepTarget) -> Kept:
    return Kept(found, f"statefulResources is {target.stateful_policy.value!r}: it holds a claim's data")


def blockers_of(found: Found) -> list[Kept]:
    """What a kept file system holds in the VPC: its interfaces, or (when AWS does not list them) its subnets.

    A kept EBS volume blocks nothing: volumes live in an AZ, not in the VPC.
    """
    if found.kind is not Kind.FILE_SYSTEM:
        return []
    reason = f"used by the kept file system {found.id}"
    interfaces = found.detail.get("network_interface_ids", ())
    if interfaces:
        return [Kept(Found(Kind.NETWORK_INTERFACE, eni, f"of {found.id}"), reason) for eni in interfaces]
    return [Kept(Found(Kind.SUBNET, subnet, f"of {found.id}"), reason) for subnet in found.detail.get("subnet_ids", ())]


def advice(
    target: SweepTarget, *, kept: Sequence[Kept], blockers: Sequence[Kept], failed: Sequence[Failure]
) -> tuple[str, ...]:
    lines = []
    stateful = [k for k in kept if k.found.kind in STATEFUL_KINDS]
    if stateful:
        volumes = sum(k.found.kind is Kind.VOLUME for k in stateful)
        lines.append(
            f"Kept {volumes} EBS volume(s) and {len(stateful) - volumes} FSx file system(s) of the cluster's claims "
            f"because statefulResources is {target.stateful_policy.value!r}. Back up what you need (EBS snapshot, "
            "FSx backup or export to S3), then delete them yourself (aws ec2 delete-volume, aws fsx "
            "delete-file-system) or set statefulResources to 'destroy' and sweep again. The sweep never touches EBS "
            "snapshots."
        )
    if blockers:
        lines.append(
            f"{len(blockers)} network interface(s) or subnet(s) of kept file systems stay in use: the network "
            "(subnets, security groups, VPC) cannot be deleted while those file systems exist, so `pulumi destroy` "
            "would stop there. Delete the file systems first, or keep the network too."
        )
    if target.vpc_id is None:
        lines.append("No VPC was given or found: CNI network interfaces and the GuardDuty endpoint were not looked for")
    elif not target.owns_vpc:
        lines.append(
            "The VPC is not the stack's own (network.existing): only network interfaces tagged with the cluster's "
            "name were swept; untagged CNI interfaces and the VPC's GuardDuty endpoint are left to its owner."
        )
    if failed:
        lines.append(
            f"{len(failed)} object(s) could not be deleted or listed (see the errors). Fix the cause and run the "
            "sweep again: it only acts on what is still there."
        )
    return tuple(lines)
