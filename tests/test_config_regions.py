"""A region that does not exist is refused wherever a region is named (a platform stack's and a team stack's
`aws:region`, the cost command's `--region`), with the region a typo was meant to be."""

from __future__ import annotations

import json

import pytest

from components.config.errors import ConfigError
from components.platform.parse import parse_config
from components.regions import known_regions, nearest_regions, region_problem
from components.team.config import parse_team_config
from components.tools.cost import __main__ as cost_cli

NS = "eks-ml-platform"
TEAM = "team-vision"


def _platform_problems(region: str) -> dict[str, str]:
    raw = {"aws:region": region, f"{NS}:environment": "prod", f"{NS}:owner": "ml-platform"}
    try:
        parse_config(raw, project=NS, stack="prod")
    except ConfigError as error:
        return {issue.path: issue.message for issue in error.issues}
    return {}


def _team_problems(region: str) -> dict[str, str]:
    raw = {
        "aws:region": region,
        f"{TEAM}:platformStack": "acme/eks-ml-platform/prod",
        f"{TEAM}:owner": "vision-leads",
        f"{TEAM}:team": json.dumps({"name": "vision", "quota": {"gpus": 1}}),
    }
    try:
        parse_team_config(raw, project=TEAM, stack="prod")
    except ConfigError as error:
        return {issue.path: issue.message for issue in error.issues}
    return {}


def test_the_regions_are_those_of_the_partitions_the_package_supports():
    regions = known_regions()
    assert {"us-east-1", "us-west-2", "eu-central-1", "ap-southeast-4", "cn-north-1", "us-gov-west-1"} <= regions
    # pseudo-regions of global endpoints, and partitions whose ARNs and DNS suffixes the package does not know
    assert not {"aws-global", "aws-cn-global", "us-iso-east-1", "us-isob-east-1"} & regions


def test_a_typo_of_the_platforms_region_is_refused_with_the_region_it_was_meant_to_be():
    # one swap from us-east-1, three letters from us-west-1: the nearest is the one offered
    assert _platform_problems("us-esat-1") == {
        "aws:region": "expected an AWS region like 'us-west-2', got 'us-esat-1'; did you mean 'us-east-1'?"
    }


def test_a_region_of_the_right_shape_that_does_not_exist_is_refused():
    found = _platform_problems("us-east-7")
    assert list(found) == ["aws:region"]  # its zones, us-east-7a..c, are not reported as well
    assert found["aws:region"].endswith("did you mean 'us-east-1' or 'us-east-2'?")
    assert "no aws, aws-cn, aws-us-gov region of that name in botocore" in region_problem("ap-southeast-9")  # type: ignore[operator]


def test_regions_that_exist_are_taken():
    assert _platform_problems("eu-central-1") == {}
    assert _team_problems("us-gov-west-1") == {}


def test_a_typo_of_a_team_stacks_region_is_refused_naming_the_key():
    assert _team_problems("eu-wset-1") == {
        "aws:region": "expected an AWS region like 'us-west-2', got 'eu-wset-1'; did you mean 'eu-west-1'?"
    }


def test_the_cost_commands_region_is_checked_the_same_way(capsys):
    with pytest.raises(SystemExit) as exited:
        cost_cli.main(["--by-team", "--from", "2026-06-01", "--to", "2026-07-01", "--region", "us-wset-2"])
    assert exited.value.code == 2
    assert "did you mean 'us-west-2'?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("uswest2", ["us-west-2"]), ("us-west-2", ["us-west-2"]), ("eu-west-7", ["eu-west-1", "eu-west-2", "eu-west-3"])],
)
def test_the_regions_a_typo_is_nearest_are_offered(typed, meant):
    assert nearest_regions(typed) == meant


def test_nothing_is_offered_for_a_name_far_from_every_region_or_near_too_many():
    assert nearest_regions("mars-north-1") == []
    assert nearest_regions("ap-southeast-9") == []  # as near to seven regions: no guess
