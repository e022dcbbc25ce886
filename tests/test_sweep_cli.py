"""`python -m components.tools.sweep`: a stack's cluster and VPC from its stack file, a dry run unless --yes, a sweep
that lists what it will delete first, the leak check for CI after `pulumi destroy`, and exit status 2 for what no
sweep should start from."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from components.sweep import Found, Kind
from components.tools.sweep.__main__ import main
from tests.conftest import REPO
from tests.sweep_world import REGION, World, build_world, by_kind, present

DEV_CLUSTER = "eks-ml-platform-dev"  # the dev stack file names no cluster: project-stack


@pytest.fixture
def aws():
    with mock_aws():
        yield


@pytest.fixture
def dev(aws) -> World:
    return build_world(DEV_CLUSTER, stack="dev")


def _run(capsys, *args: str, **kwargs: Any) -> tuple[int, str, str]:
    code = main(["--project-dir", str(REPO), *args], **kwargs)
    out, err = capsys.readouterr()
    return code, out, err


def _project(tmp_path: Path, stack: str, config: dict[str, Any]) -> Path:
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def _byo_config(world: World, **extra: Any) -> dict[str, Any]:
    return {
        "aws:region": REGION,
        "eks-ml-platform:environment": "dev",
        "eks-ml-platform:owner": "ml-platform",
        "eks-ml-platform:cluster": {
            "name": world.cluster,
            "endpoint": {"public": True, "publicCidrs": ["203.0.113.0/24"]},
        },
        "eks-ml-platform:network": {
            "availabilityZones": ["us-west-2a", "us-west-2b"],
            "existing": {"vpcId": world.vpc, "privateSubnetIds": list(world.subnets)},
        },
        **extra,
    }


def _found(item: dict[str, str]) -> Found:
    return Found(Kind(item["kind"]), item["id"], item["label"])


def test_dry_run_finds_the_stacks_vpc_by_its_subnets_and_lists_without_deleting(dev: World, capsys):
    before = present(dev.clients)

    code, out, _ = _run(capsys, "--stack", "dev", "--dry-run", "--json")

    assert code == 0
    plan = json.loads(out)
    assert plan["target"] == {
        "clusterName": DEV_CLUSTER,
        "region": REGION,
        "statefulResources": "destroy",
        "vpcId": dev.vpc,
        "ownsVpc": True,
    }
    listed = by_kind(_found(item) for item in plan["delete"])
    listed.pop(Kind.SECURITY_GROUP_RULE)
    assert listed == dev.ours
    assert present(dev.clients) == before


def test_without_yes_the_sweep_is_a_dry_run_that_says_nothing_was_deleted_and_how_to_delete(dev: World, capsys):
    before = present(dev.clients)

    code, out, err = _run(capsys, "--stack", "dev")

    assert code == 0
    assert present(dev.clients) == before
    assert out.startswith(f"Dry run of the sweep of cluster '{DEV_CLUSTER}'")
    for ids in dev.ours.values():
        assert all(i in out for i in ids)
    assert "Nothing was deleted" in err
    assert f"--project-dir {REPO} --stack dev --yes" in err.splitlines()[-1]


def test_an_explicit_dry_run_deletes_nothing_either_and_says_so(dev: World, capsys):
    before = present(dev.clients)

    code, _, err = _run(capsys, "--stack", "dev", "--dry-run")

    assert code == 0
    assert present(dev.clients) == before
    assert "Nothing was deleted" in err
    assert "--dry-run" not in err.splitlines()[-1]  # the command it gives deletes


def test_with_yes_the_sweep_lists_what_it_will_delete_then_deletes_it_and_exits_0(dev: World, capsys):
    code, out, err = _run(capsys, "--stack", "dev", "--yes")

    assert code == 0
    assert dev.remaining(dev.ours) == {}
    assert dev.missing(dev.theirs) == {}
    assert out.startswith(f"Sweep of cluster '{DEV_CLUSTER}' in {REGION} ({dev.vpc}; statefulResources: destroy)")
    assert f"VPC: {dev.vpc} (its subnets' discovery tag)" in err
    announced = err.index(f"About to sweep of cluster '{DEV_CLUSTER}'")
    assert announced < err.index("instance: deleting")  # the first deletion's progress line
    listing = err[announced : err.index("instance: deleting")]
    assert "Will delete (" in listing
    for kind, ids in dev.ours.items():
        assert all(i in listing for i in ids), kind
    assert "Nothing was deleted" not in err


@pytest.mark.parametrize("other", ["--dry-run", "--check"])
def test_yes_cannot_be_combined_with_a_mode_that_deletes_nothing(other, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--stack", "dev", "--yes", other])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_leak_check_lists_what_still_names_the_cluster_after_the_sweep(dev: World, capsys):
    assert _run(capsys, "--stack", "dev", "--yes")[0] == 0

    code, out, _ = _run(capsys, "--stack", "dev", "--check", "--json")

    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False
    # What the sweep leaves to `pulumi destroy` (and EKS): the system node, its launch template, a volume that is
    # not a claim's, the discovery-tagged subnets and the VPC.
    assert by_kind(_found(item) for item in report["leaks"]) == {
        Kind.INSTANCE: {dev.names["system_node"]},
        Kind.LAUNCH_TEMPLATE: {dev.names["system_template"]},
        Kind.VOLUME: {dev.names["owned_volume"]},
        Kind.SUBNET: set(dev.subnets),
        Kind.VPC: {dev.vpc},
    }
    assert [item["id"] for item in report["retained"]] == [dev.names["profile_region_unknown"]]


def test_the_leak_check_fails_on_the_leftovers_before_any_sweep(dev: World, capsys):
    code, out, _ = _run(capsys, "--stack", "dev", "--check", "--json")

    assert code == 1
    leaks = by_kind(_found(item) for item in json.loads(out)["leaks"])
    for kind, ids in dev.ours.items():
        assert ids <= leaks[kind], kind


def test_the_leak_check_passes_when_only_another_stacks_objects_remain(aws, capsys):
    build_world("ml-other-team", project="other-project")

    code, out, err = _run(capsys, "--stack", "dev", "--check")

    assert code == 0
    assert out.rstrip().endswith("No leaks.")
    assert "VPC: none (no VPC of the stack found (already deleted?))" in err


def test_under_protect_the_claims_are_kept_reported_as_blocking_and_not_counted_as_leaks(aws, capsys):
    prod = build_world("eks-ml-platform-prod", stack="prod")

    code, out, _ = _run(capsys, "--stack", "prod", "--yes")

    assert code == 1  # the kept file system holds its subnet: `pulumi destroy` could not delete the network
    assert prod.missing(prod.claims) == {}
    assert "Blocking the network (1):" in out
    assert "statefulResources is 'protect'" in out

    code, out, _ = _run(capsys, "--stack", "prod", "--check", "--json")
    report = json.loads(out)
    assert by_kind(_found(item) for item in report["retained"] if item["kind"] != "instance-profile") == prod.claims
    claims = set().union(*prod.claims.values())
    assert not {item["id"] for item in report["leaks"]} & claims


def test_a_shared_vpc_is_taken_from_the_config_and_never_counted_as_a_leak(aws, tmp_path: Path, capsys):
    world = build_world("ml-byo", project="someone-else")
    project = _project(tmp_path, "byo", _byo_config(world, **{"aws:profile": "ml-team"}))
    sessions: list[dict[str, Any]] = []

    def session(**kwargs: Any) -> boto3.Session:
        sessions.append(kwargs)
        return boto3.Session(region_name=kwargs["region_name"])

    code = main(["--project-dir", str(project), "--stack", "byo", "--yes"], session_factory=session)
    err = capsys.readouterr().err

    assert code == 0
    assert sessions == [{"profile_name": "ml-team", "region_name": REGION}]
    assert "VPC: " + world.vpc + " (network.existing.vpcId)" in err
    now = present(world.clients)
    assert world.names["cni_untagged_interface"] in now[Kind.NETWORK_INTERFACE]
    assert world.names["guardduty_endpoint"] in now[Kind.VPC_ENDPOINT]
    assert world.names["cni_tagged_interface"] not in now[Kind.NETWORK_INTERFACE]

    main(["--project-dir", str(project), "--stack", "byo", "--check", "--json"], session_factory=session)
    leaks = by_kind(_found(item) for item in json.loads(capsys.readouterr()[0])["leaks"])
    assert Kind.VPC not in leaks
    assert leaks[Kind.SUBNET] == set(world.subnets)  # the discovery tags destroy should have removed


def test_two_vpcs_that_look_like_the_stacks_stop_the_sweep_with_exit_2(dev: World, capsys):
    tags = {"project": "eks-ml-platform", "stack": "dev", "managed-by": "pulumi"}
    stack_tags = [{"Key": key, "Value": value} for key, value in tags.items()]
    stray = dev.clients.ec2.create_vpc(
        CidrBlock="10.40.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": stack_tags}]
    )["Vpc"]["VpcId"]
    before = present(dev.clients)

    code, _, err = _run(capsys, "--stack", "dev", "--yes")

    assert code == 2
    assert dev.vpc in err
    assert stray in err
    assert "several VPCs" in err
    assert present(dev.clients) == before


def test_an_invalid_stack_config_exits_2_with_every_problem(aws, tmp_path: Path, capsys):
    config = {"aws:region": REGION, "eks-ml-platform:environment": "dev", "eks-ml-platform:netwrk": {}}
    project = _project(tmp_path, "bad", config)

    code = main(["--project-dir", str(project), "--stack", "bad"])
    _, err = capsys.readouterr()

    assert code == 2
    assert err.startswith("Stack 'bad': ")
    assert "netwrk" in err
    assert "owner" in err


def test_a_missing_stack_file_exits_2(aws, capsys):
    code, _, err = _run(capsys, "--stack", "nosuchstack")

    assert code == 2
    assert "Pulumi.nosuchstack.yaml" in err


def test_dry_run_and_check_cannot_be_combined(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--stack", "dev", "--dry-run", "--check"])
    assert exited.value.code == 2


def _no_credentials(**kwargs: Any) -> boto3.Session:
    """A session that finds no credentials anywhere (and so never asks the instance metadata service)."""
    import botocore.session

    core = botocore.session.Session()
    core.get_component("credential_provider").providers = []
    return boto3.Session(botocore_session=core, region_name=kwargs.get("region_name"))


@pytest.mark.parametrize("mode", ["--check", "--dry-run"])
def test_without_credentials_the_sweep_exits_3_not_1_and_json_mode_prints_json(mode: str, capsys):
    code, out, _ = _run(capsys, "--stack", "dev", mode, "--json", session_factory=_no_credentials)

    assert code == 3  # not 1: nothing was found to be left, the check could not look
    document = json.loads(out)
    assert document["ok"] is False
    assert document["exit"] == 3
    assert "NoCredentialsError" in document["error"]


def test_without_credentials_the_text_mode_says_so_on_stderr(capsys):
    code, out, err = _run(capsys, "--stack", "dev", "--check", session_factory=_no_credentials)

    assert (code, out) == (3, "")
    assert err.startswith("error: could not look for the stack's VPC: NoCredentialsError")


def test_a_leak_check_that_could_not_list_a_kind_exits_3_when_nothing_else_is_left(aws, capsys, monkeypatch):
    build_world("ml-other-team", project="other-project")  # nothing of dev is left
    from components.sweep import leaks as leak_module

    real = leak_module.find_leaks

    def one_kind_unlisted(aws_clients: Any, target: Any) -> Any:
        report = real(aws_clients, target)
        failure = leak_module.Failure(Found(Kind.VOLUME, "*", "EBS volumes"), "AccessDenied: not allowed")
        return leak_module.LeakReport(report.target, report.leaks, report.retained, (failure,))

    monkeypatch.setattr("components.tools.sweep.__main__.find_leaks", one_kind_unlisted)
    code, out, _ = _run(capsys, "--stack", "dev", "--check", "--json")

    assert code == 3
    assert json.loads(out)["failed"][0]["error"] == "AccessDenied: not allowed"


def test_an_invalid_stack_config_in_json_mode_is_a_json_document_with_exit_2(aws, tmp_path: Path, capsys):
    config = {"aws:region": REGION, "eks-ml-platform:environment": "dev", "eks-ml-platform:netwrk": {}}
    project = _project(tmp_path, "bad", config)

    code = main(["--project-dir", str(project), "--stack", "bad", "--check", "--json"])
    document = json.loads(capsys.readouterr()[0])

    assert code == 2
    assert document["exit"] == 2
    assert "netwrk" in document["error"]
