"""The sweep when AWS says no or is slow: every failure is reported with its error, the rest goes on, retries and
waits stop at their bounds (on a fake clock: no test waits), and a later run finishes the job."""

from __future__ import annotations

from typing import Any

import pytest
from moto import mock_aws

from components.sweep import Kind, SweepFailed, Timeouts, report_text
from tests.sweep_world import FakeClock, World, build_world, by_kind, present, refuse, rewrite

DEFAULTS = Timeouts()


@pytest.fixture
def world():
    with mock_aws():
        yield build_world()


def _failures(report) -> dict[tuple[Kind, str], str]:
    return {(f.found.kind, f.found.id): f.error for f in report.failed}


def test_a_refused_delete_is_reported_with_its_error_and_everything_else_is_swept(world: World):
    alb, web = world.names["alb"], world.names["web_target_group"]
    refuse(world.clients.elbv2, "DeleteLoadBalancer", "AccessDenied", times=1)
    clock = FakeClock()

    report = world.sweeper(clock=clock).run()

    failures = _failures(report)
    assert failures[(Kind.LOAD_BALANCER, alb)].startswith("AccessDenied: ")
    # Its listener still uses the target group: refused as in use, retried until the bound, then reported.
    assert failures[(Kind.TARGET_GROUP, web)].startswith("ResourceInUse: ")
    assert f"after {DEFAULTS.dependencies:g} s" in failures[(Kind.TARGET_GROUP, web)]
    assert set(failures) == {(Kind.LOAD_BALANCER, alb), (Kind.TARGET_GROUP, web)}
    not_groups: dict[Kind, set[str]] = {
        kind: ids for kind, ids in world.ours.items() if kind is not Kind.SECURITY_GROUP
    }
    assert world.remaining(not_groups) == {Kind.LOAD_BALANCER: {alb}, Kind.TARGET_GROUP: {web}}
    assert not report.ok
    assert any("run the sweep again" in line for line in report.advice)

    again = world.sweeper().run()

    assert again.failed == ()
    assert by_kind(again.deleted)[Kind.LOAD_BALANCER] == {alb}
    assert world.remaining(world.ours) == {}


def test_a_group_refused_while_in_use_is_retried_until_it_is_free(world: World):
    group = world.names["lb_group"]
    refused = refuse(
        world.clients.ec2, "DeleteSecurityGroup", "DependencyViolation", when=lambda p: p["GroupId"] == group, times=3
    )
    clock = FakeClock()

    report = world.sweeper(clock=clock).run()

    assert len(refused.calls) == 3
    assert report.failed == ()
    assert group in by_kind(report.deleted)[Kind.SECURITY_GROUP]
    assert clock.sleeps == [DEFAULTS.poll_interval] * 3


def test_a_group_still_in_use_at_the_bound_is_reported_after_a_bounded_number_of_retries(world: World):
    group = world.names["lb_group"]
    refuse(world.clients.ec2, "DeleteSecurityGroup", "DependencyViolation", when=lambda p: p["GroupId"] == group)
    clock = FakeClock()

    report = world.sweeper(clock=clock).run()

    error = _failures(report)[(Kind.SECURITY_GROUP, group)]
    assert error.startswith("DependencyViolation: ")
    assert f"after {DEFAULTS.dependencies:g} s" in error
    assert len(clock.sleeps) == DEFAULTS.dependencies / DEFAULTS.poll_interval
    assert group in present(world.clients)[Kind.SECURITY_GROUP]
    # The other groups did not wait for it.
    assert world.names["backend_group"] in by_kind(report.deleted)[Kind.SECURITY_GROUP]


def test_instances_that_never_finish_terminating_are_reported_once_the_wait_is_over(world: World):
    nodes = world.ours[Kind.INSTANCE]

    def still_shutting_down(params: dict[str, Any], response: dict[str, Any]) -> None:
        asked = {i for f in params.get("Filters", ()) if f["Name"] == "instance-id" for i in f["Values"]}
        if asked:  # the sweep's wait, not its listing
            instances = [{"InstanceId": i, "State": {"Name": "shutting-down"}} for i in sorted(asked & nodes)]
            response["Reservations"] = [{"Instances": instances}]

    rewrite(world.clients.ec2, "DescribeInstances", still_shutting_down)
    clock = FakeClock()

    report = world.sweeper(clock=clock).run()

    failures = _failures(report)
    for node in nodes:
        assert failures[(Kind.INSTANCE, node)] == (
            f"deletion started but still shutting-down after {DEFAULTS.instances:g} s"
        )
    assert clock.sleeps[: int(DEFAULTS.instances / DEFAULTS.poll_interval)] == [DEFAULTS.poll_interval] * 60
    assert clock.now >= DEFAULTS.instances
    # The steps after it ran all the same.
    assert world.remaining({Kind.LOAD_BALANCER: world.ours[Kind.LOAD_BALANCER]}) == {}


def test_shorter_timeouts_bound_the_wait_sooner(world: World):
    def never_gone(params: dict[str, Any], response: dict[str, Any]) -> None:
        if params.get("FileSystemIds"):
            response["FileSystems"] = [{"FileSystemId": params["FileSystemIds"][0], "Lifecycle": "DELETING"}]

    rewrite(world.clients.fsx, "DescribeFileSystems", never_gone)
    clock = FakeClock()
    report = world.sweeper(clock=clock, timeouts=Timeouts(file_systems=60, poll_interval=20)).run()

    (dynamic,) = world.claims[Kind.FILE_SYSTEM]
    assert _failures(report)[(Kind.FILE_SYSTEM, dynamic)] == "deletion started but still DELETING after 60 s"
    assert clock.sleeps == [20, 20, 20]


def test_a_kind_that_cannot_be_listed_is_reported_and_the_others_are_swept(world: World):
    refusal = refuse(world.clients.fsx, "DescribeFileSystems", "AccessDeniedException")

    plan = world.sweeper().plan()
    report = world.sweeper().run()
    refusal.stop()

    for result in (plan, report):
        (failure,) = result.failed
        assert (failure.found.kind, failure.found.id) == (Kind.FILE_SYSTEM, "*")
        assert failure.error.startswith("AccessDeniedException: ")
    assert world.remaining(world.ours) == {Kind.FILE_SYSTEM: world.ours[Kind.FILE_SYSTEM]}


def test_an_endpoint_deletion_refused_in_the_response_is_a_failure(world: World):
    endpoint = world.names["guardduty_endpoint"]

    def refused(params: dict[str, Any], response: dict[str, Any]) -> None:
        response["Unsuccessful"] = [
            {"ResourceId": endpoint, "Error": {"Code": "OperationNotPermitted", "Message": "owned by GuardDuty"}}
        ]

    rewrite(world.clients.ec2, "DeleteVpcEndpoints", refused)

    report = world.sweeper().run()

    assert _failures(report)[(Kind.VPC_ENDPOINT, endpoint)] == "OperationNotPermitted: owned by GuardDuty"


def test_a_role_already_removed_from_a_profile_does_not_stop_its_deletion(world: World):
    def listed_with_a_removed_role(params: dict[str, Any], response: dict[str, Any]) -> None:
        response["InstanceProfile"]["Roles"].append({"RoleName": "RemovedMeanwhile"})

    rewrite(world.clients.iam, "GetInstanceProfile", listed_with_a_removed_role)

    report = world.sweeper().run()

    assert by_kind(report.deleted)[Kind.INSTANCE_PROFILE] == world.ours[Kind.INSTANCE_PROFILE]
    assert report.failed == ()


def test_an_unclean_report_raises_with_its_text_for_the_teardown_step(world: World):
    refuse(world.clients.ec2, "DeleteNetworkInterface", "UnauthorizedOperation")
    report = world.sweeper().run()

    with pytest.raises(SweepFailed) as raised:
        report.raise_unless_clean()

    assert raised.value.report is report
    assert str(raised.value) == report_text(report)
    assert "Could not delete (3):" in str(raised.value)
    assert "UnauthorizedOperation" in str(raised.value)


def test_a_clean_report_does_not_raise(world: World):
    world.sweeper().run().raise_unless_clean()
