"""The sweep as a step of `pulumi destroy`: a resource that does nothing until it is deleted, then sweeps.

Placed in the graph so that everything that must be gone before it runs depends on it (the in-cluster layer, through
the Kubernetes provider), and everything that must outlive it is its dependency (the cluster's nodes and add-ons,
the network). Creating or updating it touches nothing in AWS.

**When its delete runs.** The engine calls a resource's delete in `pulumi destroy`, but also in a `pulumi up` when
the program no longer declares it (a config change that drops it, or a removed part), when its URN changes (a rename
or a new parent, without an alias), and when it is replaced. In those `pulumi up` cases the delete runs in that same
run, with the properties of the last one, while the cluster lives on: a sweep would then terminate Karpenter's nodes
or (under `statefulResources: destroy`) delete mounted claim file systems. The delete is told nothing about why it
runs, so no input can switch a sweep off in time once the program has stopped declaring it. Hence:

- **A sweep is declared whenever the part it cleans up for exists**, never by an option inside the part: the
  cluster's two sweeps with the cluster; the sweep of claims' file systems with `storage.fsx`, whether or not
  `storageClass` is on (file systems made under the class outlive it: once it is off the CSI controller has no role
  to delete them, and on destroy they would hold the FSx security group). A config change then changes at most its
  inputs, which is an update; only `pulumi destroy`, or removing the whole part, deletes it.
- **It is never replaced** (its diff never asks to), and its URN is pinned by a test: a rename must ship with an
  alias to the old URN.
- **A sweep the cluster waits for** (the network sweep, deleted after the cluster in destroy) refuses to act while the
  EKS cluster still exists, and fails the run with what to do instead. The other sweeps run while the cluster still
  exists in destroy too (before its nodes, before the FSx security group), so nothing in AWS tells them apart from a
  live cluster: they rely on the two rules above.

The provider is stored in the state by reference (its module and class name, as dill pickles an importable class),
so a delete runs the installed code of `components.sweep.resource._SweepProvider`: keep that path, or every stack's
destroy fails to load it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi.dynamic as dynamic

from ..config.types import StatefulResources
from .model import STEP_KINDS, Kind, SweepTarget

#: Bounded waits add up to far less (see sweep.model.Timeouts); this only keeps Pulumi from giving up first.
DELETE_TIMEOUT = "90m"


@dataclass(frozen=True)
class SweepArgs:
    """What to sweep: this cluster's leftovers of `kinds`, in `region`, with the stack's stateful policy."""

    cluster_name: pulumi.Input[str]
    region: str
    stateful_resources: StatefulResources
    #: Whether the VPC is the stack's own (it may then clear GuardDuty's endpoint and every unattached CNI interface
    #: in it); False for a VPC brought with network.existing, which other clusters may share. No default: a sweep
    #: never assumes a VPC is its to clear.
    owns_vpc: bool
    vpc_id: pulumi.Input[str] | None = None
    profile: str | None = None
    kinds: Collection[Kind] = field(default=STEP_KINDS)
    #: True for a sweep the EKS cluster depends on (so destroy deletes the cluster first): its delete then refuses
    #: to act while the cluster still exists.
    after_cluster: bool = False


class _SweepProvider(dynamic.ResourceProvider):
    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        return dynamic.CreateResult(id_=f"sweep-{props['clusterName']}", outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        changed = {k: v for k, v in news.items() if olds.get(k) != v}
        return dynamic.DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        return dynamic.UpdateResult(outs=news)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        run_sweep(props)


class SweepRefused(RuntimeError):
    """A sweep is being deleted while what it cleans up after is still there."""


def run_sweep(props: dict[str, Any], *, aws: Any = None) -> None:
    """Sweep as the resource's properties say; raise with the report unless nothing failed or blocks the network.
    `aws` replaces the boto3 session made from the properties (tests pass moto's)."""
    import boto3  # the program itself never needs it; only the provider's delete does

    from .sweeper import Sweeper

    session = aws or boto3.Session(profile_name=props.get("profile") or None, region_name=props["region"])
    if props.get("afterCluster"):
        _refuse_while_cluster_exists(session, props["clusterName"], props["region"])
    target = SweepTarget(
        props["clusterName"],
        props["region"],
        props["statefulResources"],
        vpc_id=props.get("vpcId") or None,
        owns_vpc=bool(props.get("ownsVpc", True)),
    )
    Sweeper(session, target, kinds={Kind(k) for k in props["kinds"]}).run().raise_unless_clean()


def _refuse_while_cluster_exists(session: Any, cluster_name: str, region: str) -> None:
    """In `pulumi destroy` the cluster is deleted before this sweep (it depends on the sweep), so a cluster that is
    still there, and not being deleted, means the delete comes from a `pulumi up` that renamed or replaced it."""
    from .clients import AWS_ERRORS, describe, error_code

    try:
        status = session.client("eks", region_name=region).describe_cluster(name=cluster_name)["cluster"]["status"]
    except AWS_ERRORS as error:
        if error_code(error) == "ResourceNotFoundException":
            return
        raise SweepRefused(
            f"refusing to sweep: could not tell whether EKS cluster {cluster_name!r} is gone ({describe(error)})"
        ) from error
    if status == "DELETING":
        return
    raise SweepRefused(
        f"refusing to sweep: EKS cluster {cluster_name!r} still exists ({status}). This sweep acts only once the "
        "cluster is deleted, as `pulumi destroy` does first; here it is being deleted while the cluster stays, "
        "which a rename or move without an alias, or `--replace`, causes. Give it an alias to its old URN, or, "
        "to drop it without sweeping, `pulumi state delete` its URN."
    )


class Sweep(dynamic.Resource):
    """Deletes what the cluster's controllers left in AWS, when `pulumi destroy` reaches it."""

    def __init__(self, name: str, args: SweepArgs, opts: pulumi.ResourceOptions | None = None):
        props = {
            "clusterName": args.cluster_name,
            "region": args.region,
            "statefulResources": args.stateful_resources.value,
            "vpcId": args.vpc_id,
            "ownsVpc": args.owns_vpc,
            "profile": args.profile,
            "kinds": sorted(kind.value for kind in args.kinds),
            "afterCluster": args.after_cluster,
        }
        super().__init__(
            _SweepProvider(),
            name,
            props,
            pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(delete=DELETE_TIMEOUT))
            ),
        )


def sweep_step(name: str, args: SweepArgs, *, parent: pulumi.Resource, after: Sequence[pulumi.Resource] = ()) -> Sweep:
    """A Sweep in its place in `pulumi destroy`: a child of the component whose teardown it belongs to, run once
    everything that depends on it is deleted, and deleted (so run) before anything in `after`: what its leftovers
    still hold on to, or what must stay until they are gone."""
    return Sweep(name, args, pulumi.ResourceOptions(parent=parent, depends_on=list(after)))
