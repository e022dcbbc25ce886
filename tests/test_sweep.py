"""The teardown sweep against moto: it deletes exactly this cluster's leftovers, in dependency order, once, and
keeps the data of claims when the stack says so."""

from __future__ import annotations

from typing import Any

import pytest
from moto import mock_aws

from components.sweep import NETWORK_KINDS, Kind, Sweeper, SweepTarget, Timeouts
from tests.sweep_world import FakeClock, World, build_world, by_kind, present, refuse, rewrite

STATEFUL = (Kind.VOLUME, Kind.FILE_SYSTEM)


@pytest.fixture
def world():
    with mock_aws():
        yield build_world()


def _without(kinds: dict[Kind, set[str]], removed: dict[Kind, set[str]]) -> dict[Kind, set[str]]:
    return {kind: ids - removed.get(kind, set()) for kind, ids in kinds.items() if ids - removed.get(kind, set())}


def test_destroy_deletes_every_leftover_of_the_cluster_and_nothing_else(world: World):
    report = world.sweeper().run()

    assert world.remaining(world.ours) == {}
    assert world.missing(world.theirs) == {}
    deleted = by_kind(report.deleted)
    assert deleted.pop(Kind.SECURITY_GROUP_RULE)  # rules of other groups are revoked, not the groups
    assert deleted == world.ours
    assert report.failed == ()
    assert report.clean


def test_deletions_follow_the_dependency_order(world: World):
    kinds = [found.kind for found in world.sweeper().run().deleted]

    order = list(Kind)
    assert kinds == sorted(kinds, key=order.index)
    first = {kind: kinds.index(kind) for kind in reversed(kinds)}
    last = {kind: index for index, kind in enumerate(kinds)}
    # Nodes go before the volumes they held, load balancers before their target groups and security groups, the
    # GuardDuty endpoint before its group, and every rule naming a group before that group.
    assert last[Kind.INSTANCE] < first[Kind.VOLUME]
    assert last[Kind.LOAD_BALANCER] < first[Kind.TARGET_GROUP] < first[Kind.SECURITY_GROUP]
    assert last[Kind.VPC_ENDPOINT] < first[Kind.SECURITY_GROUP]
    assert last[Kind.SECURITY_GROUP_RULE] < first[Kind.SECURITY_GROUP]


def test_a_second_run_finds_nothing_and_changes_nothing(world: World):
    sweeper = world.sweeper()
    sweeper.run()
    after_first = present(world.clients)

    assert sweeper.plan().delete == ()
    second = sweeper.run()

    assert second.deleted == ()
    assert second.failed == ()
    assert present(world.clients) == after_first


def test_dry_run_lists_exactly_what_run_deletes_and_deletes_nothing(world: World):
    before = present(world.clients)

    plan = world.sweeper().plan()

    assert present(world.clients) == before
    report = world.sweeper().run()
    assert [(f.kind, f.id) for f in plan.delete] == [(f.kind, f.id) for f in report.deleted]
    assert plan.as_json()["delete"] == [f.as_json() for f in plan.delete]


def test_only_the_rules_naming_the_controllers_groups_are_revoked_from_other_groups(world: World):
    world.sweeper().run()

    (group,) = world.clients.ec2.describe_security_groups(GroupIds=[world.names["node_group"]])["SecurityGroups"]
    rules = [(p["IpProtocol"], p.get("FromPort"), p["UserIdGroupPairs"], p["IpRanges"]) for p in group["IpPermissions"]]
    assert rules == [("tcp", 443, [], [{"CidrIp": "10.20.0.0/16"}])]


def test_instance_profiles_are_emptied_and_deleted_and_their_role_stays(world: World):
    world.sweeper().run()

    iam = world.clients.iam
    assert iam.get_role(RoleName=world.names["node_role"])["Role"]["RoleName"] == world.names["node_role"]
    assert iam.list_instance_profiles_for_role(RoleName=world.names["node_role"])["InstanceProfiles"] == []


def test_a_claim_volume_still_attached_to_a_system_node_is_detached_and_deleted_and_the_node_stays(world: World):
    report = world.sweeper().run()

    assert world.names["attached_volume"] in by_kind(report.deleted)[Kind.VOLUME]
    assert world.names["system_node"] in present(world.clients)[Kind.INSTANCE]


def test_a_karpenter_profile_that_names_no_region_is_kept_with_the_reason(world: World):
    report = world.sweeper().run()

    (kept,) = [k for k in report.kept if k.found.kind is Kind.INSTANCE_PROFILE]
    assert kept.found.id == world.names["profile_region_unknown"]
    assert "another region" in kept.reason
    assert world.names["profile_region_unknown"] in present(world.clients)[Kind.INSTANCE_PROFILE]


@pytest.mark.parametrize("policy", ["protect", "retain"])
def test_protect_and_retain_keep_the_claims_data_and_sweep_everything_else(world: World, policy: str):
    report = world.sweeper(policy).run()

    assert world.missing(world.claims) == {}
    assert world.remaining(_without(world.ours, world.claims)) == {}
    stateful = [k for k in report.kept if k.found.kind in STATEFUL]
    assert by_kind(k.found for k in stateful) == world.claims
    assert all(f"statefulResources is {policy!r}" in k.reason for k in stateful)
    assert not by_kind(report.deleted).keys() & set(STATEFUL)
    # moto lists no interfaces for file systems, so the file system's subnet is what is named as blocking.
    assert [(k.found.kind, k.found.id) for k in report.blockers] == [(Kind.SUBNET, world.subnets[0])]
    assert report.ok
    assert not report.clean
    assert any("Back up what you need" in line for line in report.advice)
    assert any("cannot be deleted while those file systems exist" in line for line in report.advice)


def test_the_interfaces_of_a_kept_file_system_are_named_as_blocking_the_network(world: World):
    (dynamic,) = world.claims[Kind.FILE_SYSTEM]

    def with_interfaces(params: dict[str, Any], response: dict[str, Any]) -> None:
        for fs in response.get("FileSystems", ()):
            if fs["FileSystemId"] == dynamic:
                fs["NetworkInterfaceIds"] = ["eni-0aaaaaaaaaaaaaaaa", "eni-0bbbbbbbbbbbbbbbb"]

    rewrite(world.clients.fsx, "DescribeFileSystems", with_interfaces)
    plan = world.sweeper("protect").plan()

    assert [(k.found.kind, k.found.id) for k in plan.blockers] == [
        (Kind.NETWORK_INTERFACE, "eni-0aaaaaaaaaaaaaaaa"),
        (Kind.NETWORK_INTERFACE, "eni-0bbbbbbbbbbbbbbbb"),
    ]
    assert all(dynamic in k.reason for k in plan.blockers)


def test_a_second_protected_run_deletes_nothing_and_keeps_the_same(world: World):
    first = world.sweeper("protect").run()
    second = world.sweeper("protect").run()

    assert second.deleted == ()
    assert second.kept == first.kept


def test_destroy_after_protect_deletes_what_protect_kept(world: World):
    world.sweeper("protect").run()

    report = world.sweeper("destroy").run()

    assert by_kind(report.deleted) == world.claims
    assert world.remaining(world.ours) == {}


def test_in_a_shared_vpc_only_interfaces_tagged_for_the_cluster_go_and_guardduty_stays(world: World):
    report = world.sweeper(owns_vpc=False).run()

    now = present(world.clients)
    assert world.names["cni_tagged_interface"] not in now[Kind.NETWORK_INTERFACE]
    assert world.names["cni_untagged_interface"] in now[Kind.NETWORK_INTERFACE]
    assert world.names["guardduty_endpoint"] in now[Kind.VPC_ENDPOINT]
    assert world.names["guardduty_group"] in now[Kind.SECURITY_GROUP]
    assert by_kind(report.deleted)[Kind.NETWORK_INTERFACE] == {world.names["cni_tagged_interface"]}
    assert any("not the stack's own" in line for line in report.advice)


def test_without_a_vpc_only_what_tags_name_is_swept(world: World):
    report = world.sweeper(vpc=None).run()

    vpc_scoped = {Kind.NETWORK_INTERFACE, Kind.VPC_ENDPOINT}
    assert world.remaining({k: v for k, v in world.ours.items() if k in vpc_scoped}) == {
        k: v for k, v in world.ours.items() if k in vpc_scoped
    }
    tagged: dict[Kind, set[str]] = {
        k: v for k, v in world.ours.items() if k not in vpc_scoped and k is not Kind.SECURITY_GROUP
    }
    assert world.remaining(tagged) == {}
    assert world.names["guardduty_group"] in present(world.clients)[Kind.SECURITY_GROUP]
    assert world.names["lb_group"] not in present(world.clients)[Kind.SECURITY_GROUP]
    assert any("No VPC" in line for line in report.advice)


def test_a_file_system_already_being_deleted_is_waited_for_not_deleted_again(world: World):
    (dynamic,) = world.claims[Kind.FILE_SYSTEM]
    polls = []

    def deleting_until_the_second_poll(params: dict[str, Any], response: dict[str, Any]) -> None:
        if not params.get("FileSystemIds"):  # the listing: the CSI driver already started deleting it
            for fs in response["FileSystems"]:
                if fs["FileSystemId"] == dynamic:
                    fs["Lifecycle"] = "DELETING"
            return
        polls.append(params["FileSystemIds"])
        response["FileSystems"] = [{"FileSystemId": dynamic, "Lifecycle": "DELETING"}] if len(polls) < 2 else []

    rewrite(world.clients.fsx, "DescribeFileSystems", deleting_until_the_second_poll)
    deletes = refuse(world.clients.fsx, "DeleteFileSystem", "BadRequest")
    clock = FakeClock()

    report = world.sweeper(clock=clock).run()

    assert deletes.calls == []
    assert polls == [[dynamic], [dynamic]]
    assert dynamic in by_kind(report.deleted)[Kind.FILE_SYSTEM]
    assert clock.sleeps == [Timeouts().poll_interval]


def test_a_network_sweep_after_the_cluster_deletes_only_what_holds_the_vpc(world: World):
    clock = FakeClock()
    sweeper = Sweeper(world.clients, world.target(), kinds=NETWORK_KINDS, clock=clock, sleep=clock.sleep)

    report = sweeper.run()

    assert set(by_kind(report.deleted)) == {
        Kind.VPC_ENDPOINT,
        Kind.NETWORK_INTERFACE,
        Kind.SECURITY_GROUP_RULE,
        Kind.SECURITY_GROUP,
    }
    assert world.remaining(world.ours).keys() == world.ours.keys() - NETWORK_KINDS
    with pytest.raises(ValueError, match="vpc"):
        Sweeper(world.clients, world.target(), kinds={Kind.VPC})


def test_the_target_takes_the_policy_as_a_string_and_refuses_what_is_not_a_target():
    assert SweepTarget("ml-dev", "us-west-2", "retain").keeps_data
    assert not SweepTarget("ml-dev", "us-west-2", "destroy").keeps_data
    with pytest.raises(ValueError, match="'delete' is not a valid StatefulResources"):
        SweepTarget("ml-dev", "us-west-2", "delete")
    with pytest.raises(ValueError, match="vpc_id"):
        SweepTarget("ml-dev", "us-west-2", "destroy", vpc_id="subnet-0123456789abcdef0")
    with pytest.raises(ValueError, match="cluster_name"):
        SweepTarget("", "us-west-2", "destroy")
    with pytest.raises(ValueError, match="poll_interval"):
        Timeouts(poll_interval=0)
