"""What the sweep works on and what it reports: frozen values, no AWS calls."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..config.types import StatefulResources

_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")


class Kind(StrEnum):
    """What a found object is. The order is the order of deletion (leak-check-only kinds last)."""

    INSTANCE = "instance"
    LAUNCH_TEMPLATE = "launch-template"
    INSTANCE_PROFILE = "instance-profile"
    LOAD_BALANCER = "load-balancer"
    TARGET_GROUP = "target-group"
    VOLUME = "volume"
    FILE_SYSTEM = "file-system"
    VPC_ENDPOINT = "vpc-endpoint"
    NETWORK_INTERFACE = "network-interface"
    SECURITY_GROUP_RULE = "security-group-rule"
    SECURITY_GROUP = "security-group"
    SUBNET = "subnet"
    VPC = "vpc"


#: The kinds each step of the sweep deletes, in the order the steps run (rules go in the step of their groups).
STEP_KINDS = (
    Kind.INSTANCE,
    Kind.LAUNCH_TEMPLATE,
    Kind.INSTANCE_PROFILE,
    Kind.LOAD_BALANCER,
    Kind.TARGET_GROUP,
    Kind.VOLUME,
    Kind.FILE_SYSTEM,
    Kind.VPC_ENDPOINT,
    Kind.NETWORK_INTERFACE,
    Kind.SECURITY_GROUP,
)
#: What can still hold the VPC once the cluster and its nodes are deleted: interfaces the CNI freed as the node
#: group went, GuardDuty's endpoint (which GuardDuty may recreate while the cluster exists), and groups that those
#: kept in use. A second sweep of these alone belongs between the cluster and the network.
NETWORK_KINDS = frozenset({Kind.VPC_ENDPOINT, Kind.NETWORK_INTERFACE, Kind.SECURITY_GROUP})


@dataclass(frozen=True)
class Found:
    """One AWS object. `detail` holds what deleting it needs; it is not part of its identity."""

    kind: Kind
    id: str
    label: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind.value, "id": self.id, "label": self.label}


@dataclass(frozen=True)
class Kept:
    """An object of the cluster the sweep leaves in place, and why."""

    found: Found
    reason: str

    def as_json(self) -> dict[str, str]:
        return {**self.found.as_json(), "reason": self.reason}


@dataclass(frozen=True)
class Failure:
    """An object (or, with id `*`, a whole kind that could not be listed) the sweep could not delete."""

    found: Found
    error: str

    def as_json(self) -> dict[str, str]:
        return {**self.found.as_json(), "error": self.error}


@dataclass(frozen=True, init=False)
class SweepTarget:
    """Whose leftovers to sweep.

    `vpc_id` scopes what only the VPC identifies (CNI interfaces, the GuardDuty endpoint); without it those are not
    swept. `owns_vpc` is False for a VPC the stack did not create (network.existing): other clusters may live there,
    so only interfaces tagged with this cluster's name are taken, and the VPC's GuardDuty endpoint is left alone.
    `stateful_policy` is the stack's `statefulResources` (a string is accepted).
    """

    cluster_name: str
    region: str
    stateful_policy: StatefulResources
    vpc_id: str | None = None
    owns_vpc: bool = True

    # Written out (not generated) so that its signature says what it takes: the policy as the stack file spells it
    # too, as the sweep's resource passes it from its props.
    def __init__(
        self,
        cluster_name: str,
        region: str,
        stateful_policy: StatefulResources | str,
        vpc_id: str | None = None,
        owns_vpc: bool = True,
    ) -> None:
        object.__setattr__(self, "cluster_name", cluster_name)
        object.__setattr__(self, "region", region)
        object.__setattr__(self, "stateful_policy", StatefulResources(stateful_policy))
        object.__setattr__(self, "vpc_id", vpc_id)
        object.__setattr__(self, "owns_vpc", owns_vpc)
        if not self.cluster_name:
            raise ValueError("cluster_name must not be empty")
        if not self.region:
            raise ValueError("region must not be empty")
        if self.vpc_id is not None and not _VPC_ID.match(self.vpc_id):
            raise ValueError(f"vpc_id: expected a VPC id like 'vpc-0abc...', got {self.vpc_id!r}")

    @property
    def keeps_data(self) -> bool:
        """Under protect and retain, volumes and file systems of claims (they hold data) are never deleted."""
        return self.stateful_policy is not StatefulResources.DESTROY

    def as_json(self) -> dict[str, Any]:
        return {
            "clusterName": self.cluster_name,
            "region": self.region,
            "statefulResources": self.stateful_policy.value,
            "vpcId": self.vpc_id,
            "ownsVpc": self.owns_vpc,
        }


@dataclass(frozen=True)
class Timeouts:
    """Upper bounds, in seconds, on each wait; every wait polls every `poll_interval` seconds.

    Defaults follow how long AWS usually takes: instances terminate in a minute or two, a load balancer's interfaces
    linger for minutes after it is deleted (its security groups stay `DependencyViolation` until they go), and an
    FSx for Lustre deletion takes up to half an hour.
    """

    instances: float = 600.0
    load_balancers: float = 300.0
    volumes: float = 300.0
    file_systems: float = 1800.0
    endpoints: float = 600.0
    #: Retrying deletes refused while something still uses the object (DependencyViolation, ResourceInUse).
    dependencies: float = 900.0
    poll_interval: float = 10.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")


@dataclass(frozen=True)
class SweepPlan:
    """What `run()` would do now. Interfaces of instances still running show up only once those are terminated."""

    target: SweepTarget
    delete: tuple[Found, ...]
    keep: tuple[Kept, ...]
    #: Kept objects' network interfaces, which keep the subnets and the VPC from being deleted.
    blockers: tuple[Kept, ...]
    #: Kinds that could not be listed.
    failed: tuple[Failure, ...]
    advice: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "target": self.target.as_json(),
            "delete": [f.as_json() for f in self.delete],
            "keep": [k.as_json() for k in self.keep],
            "blockers": [k.as_json() for k in self.blockers],
            "failed": [f.as_json() for f in self.failed],
            "advice": list(self.advice),
        }


@dataclass(frozen=True)
class SweepReport:
    """What a run did: deleted, kept (with why), blocking the VPC, and could not delete (with the error)."""

    target: SweepTarget
    deleted: tuple[Found, ...]
    kept: tuple[Kept, ...]
    blockers: tuple[Kept, ...]
    failed: tuple[Failure, ...]
    advice: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Nothing failed (kept objects are fine: the stateful policy asked for them)."""
        return not self.failed

    @property
    def clean(self) -> bool:
        """Nothing failed and nothing kept stands in the way of deleting the cluster's network."""
        return self.ok and not self.blockers

    def raise_unless_clean(self) -> None:
        if not self.clean:
            raise SweepFailed(self)

    def as_json(self) -> dict[str, Any]:
        return {
            "target": self.target.as_json(),
            "deleted": [f.as_json() for f in self.deleted],
            "kept": [k.as_json() for k in self.kept],
            "blockers": [k.as_json() for k in self.blockers],
            "failed": [f.as_json() for f in self.failed],
            "advice": list(self.advice),
        }


# ------------------------------------------------------------------------------------------ as text for people
# (the JSON form is each value's `as_json`)


def _heading(target: SweepTarget, what: str) -> str:
    vpc = target.vpc_id or "no VPC"
    shared = "" if target.owns_vpc else ", not the stack's own"
    return (
        f"{what} of cluster {target.cluster_name!r} in {target.region} ({vpc}{shared}; "
        f"statefulResources: {target.stateful_policy.value})"
    )


def _found_lines(items: Sequence[Found]) -> list[str]:
    return [f"  {f.kind.value:<20} {f.id}  {f.label}".rstrip() for f in items]


def _kept_lines(items: Sequence[Kept]) -> list[str]:
    return [f"  {k.found.kind.value:<20} {k.found.id}  {k.found.label}: {k.reason}" for k in items]


def _failure_lines(items: Sequence[Failure]) -> list[str]:
    return [f"  {f.found.kind.value:<20} {f.found.id}  {f.error}" for f in items]


def _section(title: str, lines: list[str]) -> list[str]:
    return ["", f"{title} ({len(lines)}):", *lines] if lines else []


def _advice(advice: Sequence[str]) -> list[str]:
    return ["", "What to do:", *(f"  - {line}" for line in advice)] if advice else []


def plan_text(plan: SweepPlan, *, about_to_delete: bool = False) -> str:
    """The plan as a dry run shows it, or, `about_to_delete`, as a sweep announces it before it deletes."""
    if about_to_delete:
        lines = [_heading(plan.target, "About to sweep")]
        lines += _section("Will delete", _found_lines(plan.delete))
        lines += _section("Will keep", _kept_lines(plan.keep))
        lines += _section("Will block deleting the network", _kept_lines(plan.blockers))
    else:
        lines = [_heading(plan.target, "Dry run of the sweep")]
        lines += _section("Would delete", _found_lines(plan.delete))
        lines += _section("Would keep", _kept_lines(plan.keep))
        lines += _section("Would block deleting the network", _kept_lines(plan.blockers))
    lines += _section("Could not list", _failure_lines(plan.failed))
    if not (plan.delete or plan.keep or plan.failed):
        lines += ["", "Nothing of the cluster's is left to sweep."]
    return "\n".join(lines + _advice(plan.advice))


def report_text(report: SweepReport) -> str:
    lines = [_heading(report.target, "Sweep")]
    lines += _section("Deleted", _found_lines(report.deleted))
    lines += _section("Kept", _kept_lines(report.kept))
    lines += _section("Blocking the network", _kept_lines(report.blockers))
    lines += _section("Could not delete", _failure_lines(report.failed))
    if not (report.deleted or report.kept or report.failed):
        lines += ["", "Nothing of the cluster's was left to sweep."]
    return "\n".join(lines + _advice(report.advice))


class SweepFailed(RuntimeError):
    """Raised by `SweepReport.raise_unless_clean`; the message is the report's text."""

    def __init__(self, report: SweepReport):
        super().__init__(report_text(report))
        self.report = report
