"""The sweep as a step of `pulumi destroy`: a resource that does nothing until it is deleted, then sweeps.

Placed in the graph so that everything that must be gone before it runs depends on it (the in-cluster layer, through
the Kubernetes provider), and everything that must outlive it is its dependency (the cluster's nodes and add-ons,
the network). Creating or updating it touches nothing in AWS; it never asks to be replaced, since a replacement would
run the sweep against a live cluster.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi.dynamic as dynamic

from components.config.types import StatefulResources

from .model import Kind, SweepTarget
from .sweeper import STEP_KINDS

#: Bounded waits add up to far less (see sweep.model.Timeouts); this only keeps Pulumi from giving up first.
DELETE_TIMEOUT = "90m"


@dataclass(frozen=True)
class SweepArgs:
    """What to sweep: this cluster's leftovers of `kinds`, in `region`, with the stack's stateful policy."""

    cluster_name: pulumi.Input[str]
    region: str
    stateful_resources: StatefulResources
    vpc_id: pulumi.Input[str] | None = None
    #: False for a VPC brought with network.existing: other clusters may share it.
    owns_vpc: bool = True
    profile: str | None = None
    kinds: Collection[Kind] = field(default=STEP_KINDS)


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


def run_sweep(props: dict[str, Any], *, aws: Any = None) -> None:
    """Sweep as the resource's properties say; raise with the report unless nothing failed or blocks the network.
    `aws` replaces the boto3 session made from the properties (tests pass moto's)."""
    import boto3  # the program itself never needs it; only the provider's delete does

    from .sweeper import Sweeper

    session = aws or boto3.Session(profile_name=props.get("profile") or None, region_name=props["region"])
    target = SweepTarget(
        props["clusterName"],
        props["region"],
        props["statefulResources"],
        vpc_id=props.get("vpcId") or None,
        owns_vpc=bool(props.get("ownsVpc", True)),
    )
    Sweeper(session, target, kinds={Kind(k) for k in props["kinds"]}).run().raise_unless_clean()


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
