"""The sweep: delete what the cluster's controllers left behind, in dependency order, waiting where AWS is slow."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from .clients import AWS_ERRORS, Clients, describe, is_gone, is_in_use
from .discovery import FILTER_VALUES, LIVE_INSTANCE_STATES, Finder, Selection, chunks
from .model import (
    STEP_KINDS,
    Failure,
    Found,
    Kept,
    Kind,
    SweepPlan,
    SweepReport,
    SweepTarget,
    Timeouts,
)
from .outcome import STATEFUL_KINDS, advice, blockers_of, kept_for_policy

#: The waits AWS usually needs (a frozen value, shared safely as a default).
DEFAULT_TIMEOUTS = Timeouts()


@dataclass
class _Book:
    """What happened so far, in order."""

    deleted: list[Found] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    blockers: list[Kept] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)

    def fail(self, found: Found, error: str) -> None:
        self.failed.append(Failure(found, error))


@dataclass(frozen=True)
class _Step:
    kind: Kind
    find: Callable[[], Selection]
    delete: Callable[[Sequence[Found], _Book], None]


class Sweeper:
    """Finds and deletes one cluster's leftovers. Holds no state between calls: `plan()` and `run()` list afresh.

    `aws` is a `Clients` or a `boto3.Session` (clients are then made for the target's region). `clock` and `sleep`
    drive every wait, so a test can run the waits on a fake clock; `log` receives one line per step. `kinds`
    limits the sweep to some steps (`NETWORK_KINDS`: what only the VPC still holds once the cluster is gone).
    """

    def __init__(
        self,
        aws: Clients | Any,
        target: SweepTarget,
        *,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        log: Callable[[str], None] = lambda line: None,
        kinds: Collection[Kind] = STEP_KINDS,
    ):
        unknown = set(kinds) - set(STEP_KINDS)
        if unknown:
            raise ValueError(f"kinds: the sweep has no step for {sorted(k.value for k in unknown)}")
        self._aws = aws if isinstance(aws, Clients) else Clients.from_session(aws, target.region)
        self.target = target
        self._kinds = frozenset(kinds)
        self._find = Finder(self._aws, target)
        self._timeouts = timeouts
        self._clock = clock
        self._sleep = sleep
        self._log = log

    # ------------------------------------------------------------------------------------------------ public

    def plan(self) -> SweepPlan:
        """What `run()` would delete and keep now. Deletes nothing."""
        book, delete = _Book(), list[Found]()
        for step in self._steps():
            delete.extend(self._select(step, book))
        return SweepPlan(
            self.target, tuple(delete), tuple(book.kept), tuple(book.blockers), tuple(book.failed), self._advice(book)
        )

    def run(self) -> SweepReport:
        """Delete, step by step, what is there at each step. Never raises for AWS errors: they are reported."""
        book = _Book()
        for step in self._steps():
            take = self._select(step, book)
            if take:
                self._log(f"{step.kind.value}: deleting {len(take)}")
                step.delete(take, book)
        return SweepReport(
            self.target,
            tuple(book.deleted),
            tuple(book.kept),
            tuple(book.blockers),
            tuple(book.failed),
            self._advice(book),
        )

    # --------------------------------------------------------------------------------------------- the steps

    def _steps(self) -> tuple[_Step, ...]:
        """In dependency order: nodes before what they use, load balancers before their target groups and groups,
        everything with interfaces in the VPC before the security groups those interfaces use."""
        f = self._find
        steps = (
            _Step(Kind.INSTANCE, f.karpenter_instances, self._terminate_instances),
            _Step(Kind.LAUNCH_TEMPLATE, f.karpenter_launch_templates, self._delete_launch_templates),
            _Step(Kind.INSTANCE_PROFILE, f.karpenter_instance_profiles, self._delete_instance_profiles),
            _Step(Kind.LOAD_BALANCER, f.controller_load_balancers, self._delete_load_balancers),
            _Step(Kind.TARGET_GROUP, f.controller_target_groups, self._delete_target_groups),
            _Step(Kind.VOLUME, f.claim_volumes, self._delete_volumes),
            _Step(Kind.FILE_SYSTEM, f.claim_file_systems, self._delete_file_systems),
            _Step(Kind.VPC_ENDPOINT, f.guardduty_endpoints, self._delete_endpoints),
            _Step(Kind.NETWORK_INTERFACE, f.cni_interfaces, self._delete_interfaces),
            _Step(Kind.SECURITY_GROUP, self._groups_and_rules, self._delete_groups),
        )
        return tuple(step for step in steps if step.kind in self._kinds)

    def _groups_and_rules(self) -> Selection:
        groups = self._find.swept_security_groups().take
        return Selection(take=self._find.referencing_rules(groups) + groups)

    def _select(self, step: _Step, book: _Book) -> tuple[Found, ...]:
        try:
            selection = step.find()
        except AWS_ERRORS as error:
            book.fail(Found(step.kind, "*", f"listing {step.kind.value}s"), describe(error))
            return ()
        book.kept.extend(selection.keep)
        if step.kind not in STATEFUL_KINDS or not self.target.keeps_data:
            return selection.take
        for found in selection.take:
            book.kept.append(kept_for_policy(found, self.target))
            book.blockers.extend(blockers_of(found))
        return ()

    def _terminate_instances(self, found: Sequence[Found], book: _Book) -> None:
        accepted = self._attempt(found, lambda f: self._aws.ec2.terminate_instances(InstanceIds=[f.id]), book)
        self._wait_gone(accepted, self._live_instances, self._timeouts.instances, book)

    def _live_instances(self, found: Sequence[Found]) -> dict[str, str]:
        live = {}
        for batch in chunks([f.id for f in found], FILTER_VALUES):
            filters = [
                {"Name": "instance-id", "Values": list(batch)},
                {"Name": "instance-state-name", "Values": list(LIVE_INSTANCE_STATES)},
            ]
            for page in self._aws.ec2.get_paginator("describe_instances").paginate(Filters=filters):
                for reservation in page["Reservations"]:
                    for instance in reservation["Instances"]:
                        live[instance["InstanceId"]] = instance["State"]["Name"]
        return live

    def _delete_launch_templates(self, found: Sequence[Found], book: _Book) -> None:
        ec2 = self._aws.ec2
        book.deleted.extend(self._attempt(found, lambda f: ec2.delete_launch_template(LaunchTemplateId=f.id), book))

    def _delete_instance_profiles(self, found: Sequence[Found], book: _Book) -> None:
        iam = self._aws.iam

        def delete(profile: Found) -> None:
            # A profile with a role cannot be deleted; removing the role leaves the role itself alone.
            for role in profile.detail.get("roles", ()):
                try:
                    iam.remove_role_from_instance_profile(InstanceProfileName=profile.id, RoleName=role)
                except AWS_ERRORS as error:
                    if not is_gone(error):
                        raise
            iam.delete_instance_profile(InstanceProfileName=profile.id)

        book.deleted.extend(self._attempt(found, delete, book))

    def _delete_load_balancers(self, found: Sequence[Found], book: _Book) -> None:
        elbv2 = self._aws.elbv2
        accepted = self._attempt(found, lambda f: elbv2.delete_load_balancer(LoadBalancerArn=f.id), book)
        self._wait_gone(accepted, self._remaining_load_balancers, self._timeouts.load_balancers, book)

    def _remaining_load_balancers(self, found: Sequence[Found]) -> dict[str, str]:
        remaining = {}
        for lb in found:
            try:
                described = self._aws.elbv2.describe_load_balancers(LoadBalancerArns=[lb.id])["LoadBalancers"]
            except AWS_ERRORS as error:
                if is_gone(error):
                    continue
                raise
            for item in described:
                remaining[lb.id] = item.get("State", {}).get("Code", "present")
        return remaining

    def _delete_target_groups(self, found: Sequence[Found], book: _Book) -> None:
        elbv2 = self._aws.elbv2
        book.deleted.extend(
            self._attempt(found, lambda f: elbv2.delete_target_group(TargetGroupArn=f.id), book, retry_in_use=True)
        )

    def _delete_volumes(self, found: Sequence[Found], book: _Book) -> None:
        # Volumes on terminated nodes are free by now; those still attached sit on nodes the cluster's own node
        # group runs, whose pods the in-cluster teardown already removed.
        attached = [f for f in found if f.detail.get("attachments")]

        def detach(volume: Found) -> None:
            for instance, device, state in volume.detail["attachments"]:
                if state in ("attached", "attaching"):  # one already detaching needs only the wait
                    self._aws.ec2.detach_volume(VolumeId=volume.id, InstanceId=instance, Device=device)

        detached = self._attempt(attached, detach, book)
        failed_detach = {f.id for f in attached} - {f.id for f in detached}
        free, stuck = self._wait(detached, self._unavailable_volumes, self._timeouts.volumes)
        for volume, state in stuck:
            book.fail(volume, f"still {state} (not detached) after {self._timeouts.volumes:g} s")
        ready = [f for f in found if not f.detail.get("attachments")] + free
        ready = [f for f in ready if f.id not in failed_detach]
        book.deleted.extend(self._attempt(ready, lambda f: self._aws.ec2.delete_volume(VolumeId=f.id), book))

    def _unavailable_volumes(self, found: Sequence[Found]) -> dict[str, str]:
        states = {}
        for batch in chunks([f.id for f in found], FILTER_VALUES):
            filters = [{"Name": "volume-id", "Values": list(batch)}]
            for page in self._aws.ec2.get_paginator("describe_volumes").paginate(Filters=filters):
                for volume in page["Volumes"]:
                    if volume["State"] != "available":
                        states[volume["VolumeId"]] = volume["State"]
        return states

    def _delete_file_systems(self, found: Sequence[Found], book: _Book) -> None:
        # Lustre takes no final backup unless asked (SkipFinalBackup defaults to true), which is what `destroy`
        # means; scratch file systems could not take one anyway.
        deleting = [f for f in found if f.detail.get("lifecycle") == "DELETING"]
        to_delete = [f for f in found if f.detail.get("lifecycle") != "DELETING"]
        fsx = self._aws.fsx
        accepted = self._attempt(to_delete, lambda f: fsx.delete_file_system(FileSystemId=f.id), book) + deleting
        self._wait_gone(accepted, self._remaining_file_systems, self._timeouts.file_systems, book)

    def _remaining_file_systems(self, found: Sequence[Found]) -> dict[str, str]:
        remaining = {}
        for fs in found:
            try:
                described = self._aws.fsx.describe_file_systems(FileSystemIds=[fs.id])["FileSystems"]
            except AWS_ERRORS as error:
                if is_gone(error):
                    continue
                raise
            for item in described:
                remaining[fs.id] = item.get("Lifecycle", "present")
        return remaining

    def _delete_endpoints(self, found: Sequence[Found], book: _Book) -> None:
        def delete(endpoint: Found) -> None:
            # This call reports refusals in its response rather than raising them.
            response = self._aws.ec2.delete_vpc_endpoints(VpcEndpointIds=[endpoint.id])
            for item in response.get("Unsuccessful", ()):
                error = item.get("Error", {})
                if error.get("Code") != "InvalidVpcEndpointId.NotFound":
                    raise _refused("DeleteVpcEndpoints", error)

        self._wait_gone(self._attempt(found, delete, book), self._remaining_endpoints, self._timeouts.endpoints, book)

    def _remaining_endpoints(self, found: Sequence[Found]) -> dict[str, str]:
        remaining = {}
        for endpoint in found:
            try:
                described = self._aws.ec2.describe_vpc_endpoints(VpcEndpointIds=[endpoint.id])["VpcEndpoints"]
            except AWS_ERRORS as error:
                if is_gone(error):
                    continue
                raise
            for item in described:
                if str(item.get("State", "")).lower() != "deleted":
                    remaining[endpoint.id] = item.get("State", "present")
        return remaining

    def _delete_interfaces(self, found: Sequence[Found], book: _Book) -> None:
        ec2 = self._aws.ec2
        book.deleted.extend(self._attempt(found, lambda f: ec2.delete_network_interface(NetworkInterfaceId=f.id), book))

    def _delete_groups(self, found: Sequence[Found], book: _Book) -> None:
        ec2 = self._aws.ec2

        def revoke(rule: Found) -> None:
            ingress = rule.detail["direction"] == "ingress"
            revoke_call = ec2.revoke_security_group_ingress if ingress else ec2.revoke_security_group_egress
            revoke_call(GroupId=rule.detail["group_id"], IpPermissions=[dict(p) for p in rule.detail["permissions"]])

        rules = [f for f in found if f.kind is Kind.SECURITY_GROUP_RULE]
        book.deleted.extend(self._attempt(rules, revoke, book))
        groups = [f for f in found if f.kind is Kind.SECURITY_GROUP]
        # A deleted load balancer's interfaces keep using its groups for minutes: DependencyViolation until then.
        book.deleted.extend(
            self._attempt(groups, lambda f: ec2.delete_security_group(GroupId=f.id), book, retry_in_use=True)
        )

    def _advice(self, book: _Book) -> tuple[str, ...]:
        return advice(self.target, kept=book.kept, blockers=book.blockers, failed=book.failed)

    # ------------------------------------------------------------------------------------ calls and waiting

    def _attempt(
        self, found: Sequence[Found], call: Callable[[Found], Any], book: _Book, *, retry_in_use: bool = False
    ) -> list[Found]:
        """Call `call` on each; return those it succeeded on (or that were gone already), record the others.

        With `retry_in_use`, refusals because something still uses the object are retried until
        `timeouts.dependencies` has passed.
        """
        accepted: list[Found] = []
        pending = list(found)
        deadline = self._clock() + self._timeouts.dependencies
        while pending:
            waiting = []
            for item in pending:
                try:
                    call(item)
                except AWS_ERRORS as error:
                    if is_gone(error):
                        accepted.append(item)
                    elif retry_in_use and is_in_use(error):
                        waiting.append((item, error))
                    else:
                        book.fail(item, describe(error))
                else:
                    accepted.append(item)
            if waiting and self._clock() >= deadline:
                for item, refusal in waiting:
                    book.fail(item, f"{describe(refusal)} (still refused after {self._timeouts.dependencies:g} s)")
                break
            if waiting:
                self._sleep(self._timeouts.poll_interval)
            pending = [item for item, _ in waiting]
        return accepted

    def _wait(
        self, found: Sequence[Found], remaining: Callable[[Sequence[Found]], dict[str, str]], timeout: float
    ) -> tuple[list[Found], list[tuple[Found, str]]]:
        """Poll `remaining` (id -> state of those not yet done) until all are done or `timeout` has passed.

        Returns (done, [(not done, last state)]). A failing poll counts as not done, with its error as the state.
        """
        pending, done = list(found), list[Found]()
        deadline = self._clock() + timeout
        while pending:
            try:
                states = remaining(pending)
            except AWS_ERRORS as error:
                return done, [(item, f"unknown ({describe(error)})") for item in pending]
            done.extend(item for item in pending if item.id not in states)
            pending = [item for item in pending if item.id in states]
            if not pending:
                break
            if self._clock() >= deadline:
                return done, [(item, states[item.id]) for item in pending]
            self._sleep(self._timeouts.poll_interval)
        return done, []

    def _wait_gone(
        self,
        found: Sequence[Found],
        remaining: Callable[[Sequence[Found]], dict[str, str]],
        timeout: float,
        book: _Book,
    ) -> None:
        gone, stuck = self._wait(found, remaining, timeout)
        book.deleted.extend(gone)
        for item, state in stuck:
            book.fail(item, f"deletion started but still {state} after {timeout:g} s")


def _refused(operation: str, error: dict[str, Any]) -> ClientError:
    return ClientError(
        {"Error": {"Code": error.get("Code", "Unsuccessful"), "Message": error.get("Message", "")}}, operation
    )
