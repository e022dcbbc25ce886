"""A team's S3 prefix (`kubeflow.teams.<team>.s3Prefix`, a team stack's `storage.prefix`) is refused when it is too
long for what the platform makes of it: the keys Pipelines write below it (S3 keys are at most 1,024 bytes) and the IAM
policies that name it (a role's inline policies are at most 10,240 characters)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from components.config.errors import ConfigError
from components.identity.documents import ROLE_INLINE_POLICY_CHARS, policy_size
from components.identity.team_policy import team_s3_policy
from components.kubeflow import pipelines
from components.kubeflow.pipelines_store import PREFIX_MAX_LENGTH, S3_KEY_BYTES, S3Store
from components.platform.parse import parse_config
from components.team.config import parse_team_config

NS = "eks-ml-platform"
TEAM = "team-vision"
#: Everyone at corp.internal signs in through it, the teams' owners too.
CONNECTOR = {
    "name": "Corp SSO",
    "issuer": "https://login.corp.internal/oauth2/default",
    "clientId": "kubeflow",
    "clientSecretKey": "kubeflowOidcClientSecret",
    "emailDomains": ["corp.internal"],
}


def _prefix(length: int) -> str:
    """A valid prefix of `length` characters, in segments as a person would write one."""
    text = "/".join(["segment"] * (length // 8 + 1))[:length]
    return text.rstrip("/") + "x" * (length - len(text.rstrip("/")))


def _platform_problems(teams: dict[str, str], artifacts: str = "seaweedfs") -> dict[str, str]:
    kubeflow = {
        "enabled": True,
        "adminEmail": "platform@corp.internal",
        "pipelines": {"artifacts": artifacts},
        "auth": {"connectors": {"corp": CONNECTOR}},
        "teams": {name: {"owner": f"{name}@corp.internal", "s3Prefix": prefix} for name, prefix in teams.items()},
    }
    raw = {
        "aws:region": "us-west-2",
        f"{NS}:environment": "prod",
        f"{NS}:owner": "ml-platform",
        f"{NS}:kubeflow": json.dumps(kubeflow),
    }
    return _issues(parse_config, raw, NS)


def _team_problems(prefix: str) -> dict[str, str]:
    team = {"name": "vision", "quota": {"gpus": 1}, "storage": {"bucket": "datasets", "prefix": prefix}}
    raw = {
        "aws:region": "us-west-2",
        f"{TEAM}:platformStack": "acme/eks-ml-platform/prod",
        f"{TEAM}:owner": "vision-leads",
        f"{TEAM}:team": json.dumps(team),
    }
    return _issues(parse_team_config, raw, TEAM)


def _issues(parse: Callable[..., object], raw: dict[str, str], project: str) -> dict[str, str]:
    """Each problem `parse` finds in the prod stack file `raw`, by key (none: empty)."""
    try:
        parse(raw, project=project, stack="prod")
    except ConfigError as error:
        return {issue.path: issue.message for issue in error.issues}
    return {}


def _longest_log_key(prefix: str) -> str:
    """The key of a step's archived log under the team's prefix, from the Argo repository the platform renders for the
    team, with the longest workflow and pod names Kubernetes allows (253 characters, DNS subdomains)."""
    found = pipelines.values(S3Store("us-west-2", {"vision": prefix}), "bucket")
    key = json.loads(found[pipelines.repository_placeholder("vision")])["s3"]["keyFormat"]
    for name in ("{{workflow.name}}", "{{pod.name}}"):
        key = key.replace(name, "n" * 253)
    key = key.replace("{{workflow.creationTimestamp.Y}}", "2026")
    for part in ("m", "d"):
        key = key.replace(f"{{{{workflow.creationTimestamp.{part}}}}}", "01")
    return f"{key}/main.log"  # Argo's archived log of the main container


def test_the_longest_prefix_leaves_room_for_the_longest_key_pipelines_write_below_it():
    assert len(_prefix(PREFIX_MAX_LENGTH)) == PREFIX_MAX_LENGTH
    assert len(_longest_log_key(_prefix(PREFIX_MAX_LENGTH)).encode()) == S3_KEY_BYTES
    assert len(_longest_log_key(_prefix(PREFIX_MAX_LENGTH + 1)).encode()) > S3_KEY_BYTES


def test_a_team_role_policy_naming_the_longest_prefix_fits_a_roles_inline_policies():
    longest = team_s3_policy(
        partition="aws-us-gov",
        region="us-gov-west-1",
        bucket="b" * 63,
        prefix=_prefix(PREFIX_MAX_LENGTH),
        kms_key_arn=f"arn:aws-us-gov:kms:us-gov-west-1:123456789012:key/{'k' * 36}",
    )
    assert policy_size(longest) <= ROLE_INLINE_POLICY_CHARS


def test_a_kubeflow_teams_prefix_too_long_for_its_keys_is_refused_naming_the_key():
    assert _platform_problems({"vision": _prefix(PREFIX_MAX_LENGTH)}) == {}
    found = _platform_problems({"vision": _prefix(PREFIX_MAX_LENGTH + 1)})
    assert list(found) == ["kubeflow.teams.vision.s3Prefix"]
    assert found["kubeflow.teams.vision.s3Prefix"].startswith(
        f"expected at most {PREFIX_MAX_LENGTH} characters, got {PREFIX_MAX_LENGTH + 1}: S3 keys are at most 1024 bytes"
    )


def test_a_team_stacks_prefix_too_long_for_its_keys_is_refused_naming_the_key():
    assert _team_problems(_prefix(PREFIX_MAX_LENGTH)) == {}
    found = _team_problems(_prefix(PREFIX_MAX_LENGTH + 1))
    assert list(found) == ["team.storage.prefix"]
    assert f"expected at most {PREFIX_MAX_LENGTH} characters" in found["team.storage.prefix"]


@pytest.mark.parametrize("artifacts", ["s3", "seaweedfs"])
def test_prefixes_that_together_overflow_the_pipelines_ui_roles_policy_are_refused_with_s3_artifacts(artifacts):
    """The UI role reads every team's runs: its one policy names each prefix twice."""
    teams = {f"team-{n}": f"{n}/{_prefix(400)}" for n in range(12)}
    found = _platform_problems(teams, artifacts)
    if artifacts == "seaweedfs":  # no UI role on S3: nothing to overflow
        assert found == {}
        return
    assert list(found) == ["kubeflow.teams"]
    assert "past the 10240 IAM allows a role; shorten the prefixes" in found["kubeflow.teams"]
    assert _platform_problems(dict(list(teams.items())[:3]), artifacts) == {}
