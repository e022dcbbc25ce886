"""A team stack's Profile on a platform whose Kubeflow Pipelines keep artifacts in S3 (pure): its pipeline root under
its prefix of the platform's Kubeflow bucket, the prefix kept clear of the platform's Kubeflow teams' and its API
server's, and nothing new on a SeaweedFS platform."""

from __future__ import annotations

import json

import pytest
import yaml

from components.config.errors import ConfigError
from components.team.config import TeamConfig
from components.team.offer import offered_pipelines, parse_offer
from components.team.plan import plan_team

from .conftest import REPO

PLATFORM = json.loads((REPO / "examples" / "team-stack" / "platform-outputs.prod.json").read_text())
BUCKET = PLATFORM["buckets"]["datasets"]
KUBEFLOW = {"owner": "lead@example.org"}
S3 = {
    "artifacts": "s3",
    "bucket": "datasets",
    "serverPrefix": "kubeflow/pipelines",
    "teamPrefixes": {"research": "teams/research"},
}


def offer(**changes):
    outputs = {**PLATFORM, **changes}
    return parse_offer({k: v for k, v in outputs.items() if v is not None}, stack="acme/eks-ml-platform/prod")


def team(**changes) -> TeamConfig:
    return TeamConfig.model_validate({"name": "vision", "quota": {"gpus": 8}, **changes})


def problems(team_config: TeamConfig, platform=None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        plan_team(team_config, platform or offer())
    return [str(issue) for issue in caught.value.issues]


def test_the_prod_platform_offers_its_pipelines_bucket_and_its_teams_prefixes():
    assert PLATFORM["kubeflowPipelines"] == S3


def test_the_offer_is_what_the_platform_config_says():
    from components.kubeflow.config import KubeflowConfig

    config = KubeflowConfig.model_validate(
        {
            "enabled": True,
            "adminEmail": "a@example.org",
            "bucket": "artifacts",
            "pipelines": {"artifacts": "s3"},
            "teams": {"nlp": {"owner": "a@example.org", "s3Prefix": "groups/nlp"}},
        }
    )
    assert offered_pipelines(config) == {
        "artifacts": "s3",
        "bucket": "artifacts",
        "serverPrefix": "kubeflow/pipelines",
        "teamPrefixes": {"nlp": "groups/nlp"},
    }
    seaweedfs = config.model_copy(update={"pipelines": config.pipelines.model_copy(update={"artifacts": "seaweedfs"})})
    assert offered_pipelines(seaweedfs) == {"artifacts": "seaweedfs"}


# ------------------------------------------------------------------------------------------------ on S3


def test_a_profile_gets_its_pipeline_root_under_its_prefix_of_the_kubeflow_bucket_read_with_irsa():
    plan = plan_team(team(kubeflow=KUBEFLOW), offer())
    # no `storage`: the prefix a platform team would get, in the Kubeflow bucket, with its key
    assert (plan.bucket, plan.s3_prefix) == (BUCKET, "teams/vision")
    assert plan.bucket_kms_key_arn == PLATFORM["bucketKmsKeyArns"]["datasets"]
    assert plan.pipelines is not None
    assert set(plan.pipelines) == {"kfp-launcher", "metadata-grpc-configmap", "artifact-repositories"}
    assert {o["metadata"]["namespace"] for o in plan.pipelines.values()} == {"vision"}
    launcher = plan.pipelines["kfp-launcher"]["data"]
    assert launcher["defaultPipelineRoot"] == f"s3://{BUCKET}/teams/vision/pipelines"
    provider = yaml.safe_load(launcher["providers"])["s3"]["default"]
    assert provider["credentials"] == {"fromEnv": True}  # the web identity of default-editor, no key Secret
    assert (provider["endpoint"], provider["region"]) == ("s3.us-west-2.amazonaws.com", PLATFORM["region"])
    argo = json.loads(plan.pipelines["artifact-repositories"]["data"]["default-namespaced"])["s3"]
    assert (argo["bucket"], argo["useSDKCreds"]) == (BUCKET, True)
    assert argo["keyFormat"].startswith("teams/vision/pipelines/logs/")


def test_a_profiles_own_prefix_is_its_pipeline_root():
    plan = plan_team(team(kubeflow=KUBEFLOW, storage={"bucket": "datasets", "prefix": "groups/cv"}), offer())
    assert plan.s3_prefix == "groups/cv"
    assert plan.pipelines is not None
    assert plan.pipelines["kfp-launcher"]["data"]["defaultPipelineRoot"] == f"s3://{BUCKET}/groups/cv/pipelines"


def test_asking_for_s3_is_fine_where_the_platform_keeps_artifacts_there():
    assert plan_team(team(kubeflow={**KUBEFLOW, "artifacts": "s3"}), offer()).pipelines is not None


# ------------------------------------------------------------------------------------------------ elsewhere


@pytest.mark.parametrize("pipelines", [{"artifacts": "seaweedfs"}, None], ids=["seaweedfs", "older-platform"])
def test_on_a_platform_without_s3_artifacts_nothing_changes(pipelines):
    plan = plan_team(team(kubeflow=KUBEFLOW), offer(kubeflowPipelines=pipelines))
    assert plan.pipelines is None
    assert (plan.bucket, plan.s3_prefix) == (None, None)  # no storage, no bucket: as before
    with_storage = plan_team(
        team(kubeflow=KUBEFLOW, storage={"bucket": "datasets"}), offer(kubeflowPipelines=pipelines)
    )
    assert (with_storage.s3_prefix, with_storage.pipelines) == ("teams/vision", None)


def test_without_a_profile_the_team_gets_no_pipelines_config():
    plan = plan_team(team(storage={"bucket": "datasets"}), offer())
    assert plan.pipelines is None
    assert plan_team(team(), offer()).bucket is None


# ------------------------------------------------------------------------------------------------ refused


def test_a_prefix_from_the_name_that_is_a_platform_teams_is_refused_naming_the_name():
    platform = offer(kubeflowPipelines={**S3, "teamPrefixes": {"research": "teams/vision"}})
    (problem,) = problems(team(kubeflow=KUBEFLOW), platform)
    assert problem.startswith("team.name: the team's prefix 'teams/vision' (its name's) overlaps 'teams/vision', ")
    assert "platform's Kubeflow team research (its kubeflow.teams.research.s3Prefix)" in problem
    assert problem.endswith("set storage.prefix to another prefix")


@pytest.mark.parametrize(
    ("prefix", "what"),
    [
        ("teams/research", "overlaps 'teams/research', the prefix of the platform's Kubeflow team research"),
        ("teams/research/vision", "overlaps 'teams/research', the prefix of the platform's Kubeflow team research"),
        ("teams", "overlaps 'teams/research', the prefix of the platform's Kubeflow team research"),
        ("kubeflow", "overlaps 'kubeflow/pipelines', where the Pipelines API server keeps every team's pipelines"),
        ("kubeflow/pipelines/x", "overlaps 'kubeflow/pipelines', where the Pipelines API server keeps"),
    ],
)
def test_a_chosen_prefix_overlapping_a_platform_teams_or_the_servers_is_refused_naming_the_key(prefix, what):
    for kubeflow in ({"kubeflow": KUBEFLOW}, {}):  # a role without a Profile reaches the same objects
        (problem,) = problems(team(storage={"bucket": "datasets", "prefix": prefix}, **kubeflow))
        assert problem.startswith(f"team.storage.prefix: {prefix!r} {what}")


def test_a_prefix_beside_the_platform_teams_is_fine():
    plan_team(team(kubeflow=KUBEFLOW, storage={"bucket": "datasets", "prefix": "teams/research-2"}), offer())


def test_a_profile_must_keep_its_prefix_in_the_kubeflow_bucket_and_may_not_cut_https_out():
    found = problems(team(kubeflow=KUBEFLOW, storage={"bucket": "artifacts"}, network={"httpsEgress": False}))
    assert sorted(found) == [
        (
            "team.network.httpsEgress: the platform's Pipelines keep artifacts in S3: the team's runs need HTTPS out "
            "(S3, and STS for their role); remove it"
        ),
        (
            "team.storage.bucket: the platform's Pipelines keep artifacts in its bucket 'datasets' (its "
            "kubeflow.bucket), and a Profile's runs write under the team's prefix there; use bucket 'datasets'"
        ),
    ]
    # without a Profile, another bucket is the team's to choose
    assert plan_team(team(storage={"bucket": "artifacts"}), offer()).bucket == PLATFORM["buckets"]["artifacts"]


@pytest.mark.parametrize(
    ("pipelines", "where"),
    [
        ({"artifacts": "seaweedfs"}, "its kubeflow.pipelines.artifacts is seaweedfs"),
        (None, "it exports no kubeflowPipelines output, so keeps none in S3"),
    ],
)
def test_asking_for_s3_where_the_platform_has_no_pipelines_bucket_is_refused_naming_the_key(pipelines, where):
    found = problems(team(kubeflow={**KUBEFLOW, "artifacts": "s3"}), offer(kubeflowPipelines=pipelines))
    assert found == [
        f"team.kubeflow.artifacts: asks for s3, but the platform's Pipelines keep their artifacts elsewhere ({where})"
    ]


def test_asking_for_seaweedfs_on_an_s3_platform_is_refused_with_the_other_problems():
    found = problems(
        team(kubeflow={**KUBEFLOW, "artifacts": "seaweedfs"}, storage={"bucket": "datasets", "prefix": "kubeflow"})
    )
    assert sorted(p.split(":")[0] for p in found) == ["team.kubeflow.artifacts", "team.storage.prefix"]


def test_an_s3_offer_naming_no_bucket_of_the_platform_is_refused_naming_the_key():
    (problem,) = problems(team(kubeflow=KUBEFLOW), offer(kubeflowPipelines={**S3, "bucket": "gone"}))
    assert problem.startswith("team.kubeflow: the platform's Pipelines keep artifacts in S3, but its outputs name no ")
    assert f"'gone' is not one of its buckets {sorted(PLATFORM['buckets'])}" in problem
