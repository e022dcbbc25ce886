"""Pipelines on S3 (`kubeflow.pipelines.artifacts: s3`) and Kubeflow's volume sizes (`kubeflow.volumes`): the config
refuses what cannot work, the rendered object-store config uses the keys the pinned tree reads, and IAM (evaluated on
the rendered policies) keeps each team to its own prefix."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from components import versions
from components.config.errors import ConfigError
from components.identity.team_policy import team_s3_policy
from components.kubeflow import (
    credentials,
    entries,
    pipelines,
    pipelines_iam,
    pipelines_store,
    plan,
    references,
    register,
    render,
    transform,
)
from components.kubeflow.config import KubeflowConfig, settings
from components.kubeflow.objects import containers
from components.platform.parse import parse_config
from tests.iam_evaluator import ALLOW, IMPLICIT_DENY, decide
from tests.kubeflow_support import template_of

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
KFP = REFERENCE / "community-distribution" / "applications" / "pipeline" / "upstream"
NS = "eks-ml-platform"
#: The teams' owners sign in as static users (a team's owner who cannot sign in is refused).
MINIMAL = {
    "enabled": True,
    "adminEmail": "platform@example.org",
    "auth": {"staticUsers": {"a": "a@example.org", "b": "b@example.org", "o": "o@example.org"}},
}
TEAMS = {
    "team-a": {"owner": "a@example.org", "s3Prefix": "teams/a"},
    "team-b": {"owner": "b@example.org", "s3Prefix": "teams/b"},
}
BUCKET = "eks-ml-platform-datasets-0a1b2c3"
KEY = "arn:aws:kms:us-west-2:123456789012:key/0f1e2d3c-aaaa-bbbb-cccc-0123456789ab"
STORE = pipelines_store.S3Store("us-west-2", {"team-a": "teams/a", "team-b": "teams/b"})

#: The UI reads AWS artifacts with IRSA only at an endpoint this matches (aws-helper.ts `isAWSS3Endpoint`, 2.16.1).
UI_AWS_ENDPOINT_PATTERN = r"s3.{0,}\.amazonaws\.com\.?.{0,}"
#: The keys a `kfp-launcher` S3 provider may carry (backend/src/v2/config/s3.go `S3ProviderDefault`, json tags) and
#: those of its `credentials` (`S3Credentials`); the launcher parses `providers` with sigs.k8s.io/yaml (env.go).
LAUNCHER_S3_KEYS = frozenset({"endpoint", "credentials", "region", "disableSSL", "forcePathStyle", "maxRetries"})
LAUNCHER_CREDENTIAL_KEYS = frozenset({"fromEnv", "secretRef"})


def parse(**changes) -> KubeflowConfig:
    return KubeflowConfig.model_validate({**MINIMAL, **changes})


def refused(**changes) -> str:
    with pytest.raises(ValidationError) as error:
        parse(**changes)
    return str(error.value).replace("\n", " ")


# ------------------------------------------------------------------------------------------------ config


def test_seaweedfs_stays_the_default_and_s3_is_chosen_by_name():
    assert parse().pipelines.artifacts == "seaweedfs"
    assert parse(pipelines={"artifacts": "s3"}).pipelines.artifacts == "s3"


@pytest.mark.parametrize(
    ("changes", "where", "what"),
    [
        ({"pipelines": {"artifacts": "minio"}}, "pipelines.artifacts", "'s3' or 'seaweedfs'"),
        ({"volumes": {"pipelinesDatabase": "50GB"}}, "volumes.pipelinesDatabase", "quantity of bytes"),
        ({"volumes": {"pipelinesDatabase": "1.5Gi"}}, "volumes.pipelinesDatabase", "quantity of bytes"),
        ({"volumes": {"pipelinesDatabase": "512Mi"}}, "volumes.pipelinesDatabase", "1Gi to 16Ti"),
        ({"volumes": {"pipelinesDatabase": "17Ti"}}, "volumes.pipelinesDatabase", "1Gi to 16Ti"),
        ({"volumes": {"mysql": "50Gi"}}, "volumes.mysql", "Extra inputs"),
        ({"volumes": {"katibDatabase": "20Gi"}}, "volumes.katibDatabase", "Katib (components.katib)"),
        (
            {"pipelines": {"artifacts": "s3"}, "volumes": {"pipelinesArtifacts": "50Gi"}},
            "volumes.pipelinesArtifacts",
            "not installed",
        ),
        (
            {"pipelines": {"artifacts": "s3"}, "teams": {"ops": {"owner": "o@example.org", "s3Prefix": "kubeflow"}}},
            "teams.ops.s3Prefix",
            "overlaps 'kubeflow/pipelines'",
        ),
        (
            {
                "pipelines": {"artifacts": "s3"},
                "teams": {"ops": {"owner": "o@example.org", "s3Prefix": "kubeflow/pipelines/ops"}},
            },
            "teams.ops.s3Prefix",
            "overlaps 'kubeflow/pipelines'",
        ),
    ],
)
def test_wrong_pipelines_and_volume_settings_are_refused_naming_the_key(changes, where, what):
    text = refused(**changes)
    assert where in text or where.replace(".", " ") in text, text
    assert what in text, text


def test_a_team_prefix_beside_the_servers_is_fine_in_s3_mode():
    config = parse(pipelines={"artifacts": "s3"}, teams={"ops": {"owner": "o@example.org", "s3Prefix": "kubeflow-ops"}})
    assert config.teams["ops"].s3_prefix == "kubeflow-ops"


def test_volume_sizes_name_their_claims_the_registry_in_its_teams_namespace():
    config = parse(
        components={"katib": True, "hub": True},
        hubRegistryTeam="team-a",
        teams=TEAMS,
        volumes={"pipelinesDatabase": "50Gi", "katibDatabase": "20Gi", "hubRegistryDatabase": "15Gi"},
    )
    assert config.volume_sizes() == {
        ("kubeflow", "mysql-pv-claim"): "50Gi",
        ("kubeflow", "katib-mysql"): "20Gi",
        ("team-a", "metadata-postgres"): "15Gi",
    }


def _raw(**kubeflow) -> dict[str, str]:
    return {
        "aws:region": "us-west-2",
        f"{NS}:environment": "dev",
        f"{NS}:owner": "ml-platform",
        f"{NS}:cluster": json.dumps({"endpoint": {"public": True, "publicCidrs": ["203.0.113.0/24"]}}),
        f"{NS}:storage": json.dumps({"buckets": {"artifacts": {}}}),
        f"{NS}:kubeflow": json.dumps({**MINIMAL, **kubeflow}),
    }


def test_s3_artifacts_need_the_bucket_even_without_teams():
    with pytest.raises(ConfigError) as caught:
        parse_config(_raw(pipelines={"artifacts": "s3"}), project=NS, stack="test")
    found = {issue.path: issue.message for issue in caught.value.issues}
    assert "kubeflow.bucket" in found
    assert "Pipelines' artifacts" in found["kubeflow.bucket"]
    assert parse_config(_raw(), project=NS, stack="test").kubeflow.pipelines.artifacts == "seaweedfs"


def test_s3_settings_need_the_region():
    with pytest.raises(ValueError, match="region"):
        settings(parse(pipelines={"artifacts": "s3"}), storage_class="gp3", gpu_node_pools=(), gpu_scheduler=None)


# ------------------------------------------------------------------------------------------------ rendered objects

needs_tree = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")


def _build(render_cache, config: KubeflowConfig) -> list[dict[str, Any]]:
    facts = settings(config, storage_class="gp3-retain", gpu_node_pools=(), gpu_scheduler=None, region="us-west-2")
    rendered = render.render(REFERENCE, entries.selected(), cache_dir=render_cache)
    return [item.manifest for item in plan.build(rendered, facts)]


@pytest.fixture(scope="module")
def s3_objects(render_cache) -> list[dict[str, Any]]:
    config = parse(pipelines={"artifacts": "s3"}, teams=TEAMS, volumes={"pipelinesDatabase": "50Gi"})
    objects = _build(render_cache, config)
    values = pipelines.values(STORE, BUCKET)
    values[pipelines.SERVER_ROLE_PLACEHOLDER] = "arn:aws:iam::123456789012:role/server"
    values[pipelines.UI_ROLE_PLACEHOLDER] = "arn:aws:iam::123456789012:role/ui"
    resolved = []
    for obj in objects:
        text = json.dumps(obj)
        if any(p in text for p in values):
            obj = register.resolve(obj, values)
        resolved.append(obj)
    return resolved


@pytest.fixture(scope="module")
def seaweedfs_objects(render_cache) -> list[dict[str, Any]]:
    return _build(render_cache, parse(teams=TEAMS))


def env_of(objects, name) -> dict[str, dict[str, Any]]:
    deployment = transform.find(objects, "Deployment", "kubeflow", name)
    (container,) = [c for c in containers(template_of(deployment)["spec"]) if c["name"].startswith(name)]
    return {e["name"]: e for e in container["env"]}


@needs_tree
def test_the_api_server_reaches_s3_over_tls_with_the_keys_the_pinned_server_reads(s3_objects, seaweedfs_objects):
    pinned = (KFP / "base" / "pipeline" / "ml-pipeline-apiserver-deployment.yaml").read_text()
    env = env_of(s3_objects, "ml-pipeline")
    for key in ("OBJECTSTORECONFIG_HOST", "OBJECTSTORECONFIG_PORT", "OBJECTSTORECONFIG_SECURE"):
        assert f"name: {key}" in pinned  # the same variables upstream sets, now pointed at S3
    assert env["OBJECTSTORECONFIG_HOST"]["value"] == "s3.us-west-2.amazonaws.com"
    assert (env["OBJECTSTORECONFIG_PORT"]["value"], env["OBJECTSTORECONFIG_SECURE"]["value"]) == ("443", "true")
    assert env["OBJECTSTORECONFIG_REGION"]["value"] == "us-west-2"
    assert env["OBJECTSTORECONFIG_PIPELINEPATH"]["value"] == pipelines_store.SERVER_PREFIX
    # IRSA only: static keys take precedence over it, so none may be left (upstream's SeaweedFS mode has them).
    assert "OBJECTSTORECONFIG_ACCESSKEY" in env_of(seaweedfs_objects, "ml-pipeline")
    assert not {"OBJECTSTORECONFIG_ACCESSKEY", "OBJECTSTORECONFIG_SECRETACCESSKEY"} & set(env)
    assert not {"MINIO_ACCESS_KEY", "MINIO_SECRET_KEY"} & set(env_of(s3_objects, "ml-pipeline-ui"))
    # The bucket comes from the key the pinned deployment reads it from.
    (bucket_ref,) = [e for e in env.values() if e["name"] == "OBJECTSTORECONFIG_BUCKETNAME"]
    key = bucket_ref["valueFrom"]["configMapKeyRef"]
    assert (key["name"], key["key"]) == ("pipeline-install-config", "bucketName")
    assert (
        transform.find(s3_objects, "ConfigMap", "kubeflow", "pipeline-install-config")["data"]["bucketName"] == BUCKET
    )


#: The env the KFP 2.16.1 UI server reads (kubeflow/pipelines@67a73cf809f7c76fee33c749f302f2bceedd8fab,
#: frontend/server/configs.ts `loadConfigs`), the part of it about object stores and logs.
UI_READS = frozenset(
    {
        "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY", "MINIO_PORT", "MINIO_HOST", "MINIO_NAMESPACE", "MINIO_SSL",
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_S3_ENDPOINT", "AWS_SSL",
        "ARGO_ARCHIVE_LOGS", "ARGO_ARCHIVE_ARTIFACTORY", "ARGO_ARCHIVE_BUCKETNAME", "ARGO_KEYFORMAT",
        "ARGO_ARTIFACT_REPOSITORIES_LOOKUP",
    }
)  # fmt: skip
#: The object-store settings the 2.16.1 API server reads (client_manager.go `buildConfigFromEnvVars` and
#: `initBlobObjectStore`), as env through viper's "." -> "_" replacer (main.go `initConfig`).
SERVER_READS = frozenset(
    "OBJECTSTORECONFIG_" + key.upper()
    for key in ("BucketName", "Host", "Port", "Secure", "Region", "AccessKey", "SecretAccessKey", "PipelinePath")
)


@needs_tree
def test_the_pipelines_release_whose_source_the_contract_is_read_from_is_the_one_kubeflow_deploys(s3_objects):
    # The env and config names above were read in kubeflow/pipelines at versions.KUBEFLOW_PIPELINES: a Kubeflow pin
    # that deploys another Pipelines release makes them unproven until they are read again there.
    tags = {
        c["image"].rsplit(":", 1)[1]
        for o in s3_objects
        if o["kind"] == "Deployment" and o["metadata"]["name"] in ("ml-pipeline", "ml-pipeline-ui")
        for c in template_of(o)["spec"]["containers"]
        if "/kfp-" in c["image"]
    }
    assert tags == {versions.KUBEFLOW_PIPELINES.version}


@needs_tree
def test_the_ui_reads_s3_with_irsa_at_the_endpoint_and_region_the_pinned_frontend_needs(s3_objects, seaweedfs_objects):
    env = env_of(s3_objects, "ml-pipeline-ui")
    given = {name: e["value"] for name, e in env.items() if name in pipelines.ui_env(STORE)}
    assert set(given) <= UI_READS  # a misspelled name would be ignored by the UI
    # Its defaults (s3.amazonaws.com, us-east-1) would sign for the wrong region; the regional endpoint must match
    # isAWSS3Endpoint or the UI never asks the provider chain (web identity) for credentials.
    assert (given["AWS_S3_ENDPOINT"], given["AWS_REGION"], given["AWS_SSL"]) == (
        "s3.us-west-2.amazonaws.com",
        "us-west-2",
        "true",
    )
    assert re.search(UI_AWS_ENDPOINT_PATTERN, given["AWS_S3_ENDPOINT"], re.IGNORECASE)
    # Static keys take precedence over the provider chain: none may reach the UI.
    assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY"} & set(env)
    # The log-archive fallback cannot address a team's prefix: off in S3 mode, as upstream's stays on with SeaweedFS.
    assert given["ARGO_ARCHIVE_LOGS"] == "false"
    upstream = env_of(seaweedfs_objects, "ml-pipeline-ui")
    assert upstream["ARGO_ARCHIVE_LOGS"]["value"] == "true"
    assert "AWS_S3_ENDPOINT" not in upstream


def test_the_ui_endpoint_is_one_the_frontend_takes_irsa_for_in_every_partition():
    for region in ("us-west-2", "cn-north-1", "us-gov-west-1"):
        endpoint = pipelines.ui_env(pipelines_store.S3Store(region, {}))["AWS_S3_ENDPOINT"]
        assert re.search(UI_AWS_ENDPOINT_PATTERN, endpoint, re.IGNORECASE), endpoint
    assert not re.search(UI_AWS_ENDPOINT_PATTERN, "seaweedfs.kubeflow", re.IGNORECASE)


@needs_tree
def test_the_api_server_is_given_only_settings_the_pinned_server_reads(s3_objects):
    env = env_of(s3_objects, "ml-pipeline")
    given = set(pipelines.server_env(STORE)) | {n for n in env if n.startswith("OBJECTSTORECONFIG_")}
    assert given <= SERVER_READS
    assert {name: env[name]["value"] for name in pipelines.server_env(STORE)} == pipelines.server_env(STORE)


def test_a_teams_launcher_config_uses_only_the_keys_the_pinned_launcher_parses():
    provider = yaml.safe_load(pipelines.launcher_providers(STORE))
    assert set(provider) == {"s3"}
    default = provider["s3"]["default"]
    assert set(default) <= LAUNCHER_S3_KEYS
    assert set(default["credentials"]) <= LAUNCHER_CREDENTIAL_KEYS
    # fromEnv: the launcher opens the bucket with the SDK's default chain (the team role's web identity).
    assert default["credentials"] == {"fromEnv": True}


@needs_tree
def test_s3_mode_refuses_the_per_namespace_artifact_proxy_it_does_not_install(render_cache):
    rendered = render.render(REFERENCE, entries.selected(), cache_dir=render_cache)
    objects = references.stable_names(transform.cleanup([o for objs in rendered.values() for o in objs]))
    config = transform.find(objects, "ConfigMap", "kubeflow", "pipeline-install-config")
    assert config["data"]["ARTIFACTS_PROXY_ENABLED"] == "false"  # upstream's default, which S3 mode keeps
    config["data"]["ARTIFACTS_PROXY_ENABLED"] = "true"
    with pytest.raises(ValueError, match="ARTIFACTS_PROXY_ENABLED='true'"):
        pipelines.apply(objects, STORE)


@needs_tree
def test_the_server_and_ui_accounts_carry_their_roles(s3_objects):
    for account, role in ((pipelines.SERVER_ACCOUNT, "server"), (pipelines.UI_ACCOUNT, "ui")):
        sa = transform.find(s3_objects, "ServiceAccount", "kubeflow", account)
        assert sa["metadata"]["annotations"][pipelines.IRSA_ANNOTATION].endswith(f"role/{role}")


@needs_tree
def test_seaweedfs_and_its_keys_are_not_installed_in_s3_mode(s3_objects, seaweedfs_objects):
    def seaweed(objects):
        return {(o["kind"], o["metadata"]["name"]) for o in objects if "seaweedfs" in o["metadata"]["name"]}

    assert ("Deployment", "seaweedfs") in seaweed(seaweedfs_objects)
    assert seaweed(s3_objects) == set()
    text = json.dumps(s3_objects)
    for gone in ("mlpipeline-minio-artifact", "seaweedfs.", "kubeflow-pipelines-profile-controller"):
        assert gone not in text


@needs_tree
def test_s3_mode_installs_no_metacontroller_and_uses_no_seaweedfs_credential(s3_objects, seaweedfs_objects):
    def metacontroller(objects):
        return [o for o in objects if "metacontroller" in json.dumps(o)]

    assert {o["kind"] for o in metacontroller(seaweedfs_objects)} >= {"StatefulSet", "CustomResourceDefinition"}
    assert metacontroller(s3_objects) == []
    for unused in pipelines.UNUSED_CREDENTIALS:
        assert credentials.placeholder(unused) in json.dumps(seaweedfs_objects)
        assert credentials.placeholder(unused) not in json.dumps(s3_objects)


@needs_tree
def test_s3_mode_refuses_to_leave_metacontroller_out_while_something_needs_it(render_cache):
    rendered = render.render(REFERENCE, entries.selected(), cache_dir=render_cache)
    objects = references.stable_names(transform.cleanup([o for objs in rendered.values() for o in objs]))
    composite = {
        "apiVersion": "metacontroller.k8s.io/v1alpha1",
        "kind": "CompositeController",
        "metadata": {"name": "someone-elses"},
        "spec": {},
    }
    with pytest.raises(ValueError, match="these need it: CompositeController someone-elses"):
        pipelines.apply([*objects, composite], STORE)


@needs_tree
def test_each_team_gets_the_per_namespace_config_the_profile_controller_would_write(s3_objects):
    sync = (KFP / "base" / "installs" / "multi-user" / "pipelines-profile-controller" / "sync.py").read_text()
    upstream_names = set(re.findall(r'"kind": "ConfigMap",\s*"metadata": \{\s*"name": "([a-z-]+)"', sync))
    assert upstream_names == {"kfp-launcher", "metadata-grpc-configmap", "artifact-repositories"}
    pinned_launcher = yaml.safe_load((KFP / "base" / "pipeline" / "kfp-launcher-configmap.yaml").read_text())
    for team, prefix in (("team-a", "teams/a"), ("team-b", "teams/b")):
        mine = {o["metadata"]["name"]: o for o in s3_objects if o["metadata"].get("namespace") == team}
        assert upstream_names <= set(mine)
        launcher = mine["kfp-launcher"]["data"]
        assert set(pinned_launcher["data"]) <= set(launcher)  # defaultPipelineRoot, as the pinned ConfigMap names it
        assert launcher["defaultPipelineRoot"] == f"s3://{BUCKET}/{prefix}/pipelines"
        s3 = yaml.safe_load(launcher["providers"])["s3"]["default"]
        assert s3["credentials"] == {"fromEnv": True}  # IRSA: no secretRef
        assert (s3["endpoint"], s3["region"], s3["disableSSL"]) == ("s3.us-west-2.amazonaws.com", "us-west-2", False)
        repositories = mine["artifact-repositories"]
        assert repositories["metadata"]["annotations"][pipelines.ARGO_REPOSITORY_ANNOTATION] == "default-namespaced"
        argo = json.loads(repositories["data"]["default-namespaced"])["s3"]
        assert argo["useSDKCreds"] is True
        assert "accessKeySecret" not in argo
        assert (argo["bucket"], argo["keyFormat"].split("/{{")[0]) == (BUCKET, f"{prefix}/pipelines/logs")
        assert mine["metadata-grpc-configmap"]["data"]["METADATA_GRPC_SERVICE_HOST"] in sync


@needs_tree
def test_argos_default_repository_needs_no_key_secret(s3_objects):
    default = transform.find(s3_objects, "ConfigMap", "kubeflow", "workflow-controller-configmap")
    repository = json.loads(default["data"]["artifactRepository"])
    assert repository["s3"]["useSDKCreds"] is True
    assert "accessKeySecret" not in repository["s3"]
    assert repository["archiveLogs"] is False


@needs_tree
def test_the_configured_size_replaces_upstreams_and_the_rest_keep_theirs(s3_objects, seaweedfs_objects):
    assert transform.find(s3_objects, "PersistentVolumeClaim", "kubeflow", "mysql-pv-claim")["spec"]["resources"][
        "requests"
    ] == {"storage": "50Gi"}
    mysql = transform.find(seaweedfs_objects, "PersistentVolumeClaim", "kubeflow", "mysql-pv-claim")
    assert mysql["spec"]["resources"]["requests"] == {"storage": "20Gi"}
    assert mysql["spec"]["storageClassName"] == "gp3-retain"


def test_sizing_a_claim_that_is_not_rendered_is_an_error():
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "x", "namespace": "kubeflow"}}
    with pytest.raises(ValueError, match="kubeflow/mysql-pv-claim"):
        transform.volume_sizes([claim], {("kubeflow", "mysql-pv-claim"): "50Gi"})


# ------------------------------------------------------------------------------------------------ IAM


def team_policy(team: str) -> dict[str, Any]:
    prefix = STORE.team_prefixes[team]
    return team_s3_policy(partition="aws", region="us-west-2", bucket=BUCKET, prefix=prefix, kms_key_arn=KEY)


def obj(key: str) -> str:
    return f"arn:aws:s3:::{BUCKET}/{key}"


def test_a_teams_runs_read_and_write_its_own_pipeline_root_and_not_another_teams():
    a = team_policy("team-a")
    root_a, root_b = STORE.team_root("team-a"), STORE.team_root("team-b")
    for action in ("s3:PutObject", "s3:GetObject"):
        assert decide(a, action, obj(f"{root_a}/run-1/model")) == ALLOW
        assert decide(a, action, obj(f"{root_b}/run-1/model")) == IMPLICIT_DENY
        assert decide(a, action, obj(f"{pipelines_store.SERVER_PREFIX}/p-1")) == IMPLICIT_DENY
    bucket = f"arn:aws:s3:::{BUCKET}"
    assert decide(a, "s3:ListBucket", bucket, {"s3:prefix": f"{root_a}/run-1/"}) == ALLOW
    assert decide(a, "s3:ListBucket", bucket, {"s3:prefix": f"{root_b}/run-1/"}) == IMPLICIT_DENY


def test_the_api_server_keeps_pipeline_definitions_and_reads_no_teams_data():
    server = pipelines_iam.server_policy(STORE, bucket=BUCKET, kms_key_arn=KEY)
    for action in ("s3:PutObject", "s3:GetObject", "s3:DeleteObject"):
        assert decide(server, action, obj(f"{pipelines_store.SERVER_PREFIX}/p-1")) == ALLOW
    assert decide(server, "s3:GetObject", obj(f"{STORE.team_root('team-a')}/run-1/model")) == IMPLICIT_DENY
    # its start-up check that the bucket exists (HEAD bucket carries no prefix)
    assert decide(server, "s3:ListBucket", f"arn:aws:s3:::{BUCKET}") == ALLOW
    kms = {"kms:ViaService": "s3.us-west-2.amazonaws.com", "kms:EncryptionContext:aws:s3:arn": f"arn:aws:s3:::{BUCKET}"}
    assert decide(server, "kms:GenerateDataKey", KEY, kms) == ALLOW
    assert decide(server, "kms:GenerateDataKey", KEY, {**kms, "kms:ViaService": "ec2.us-west-2.amazonaws.com"}) == (
        IMPLICIT_DENY
    )


def test_the_ui_reads_what_it_shows_every_teams_runs_and_writes_nothing():
    ui = pipelines_iam.ui_policy(STORE, bucket=BUCKET, kms_key_arn=KEY)
    for team in ("team-a", "team-b"):
        artifact = obj(f"{STORE.team_root(team)}/run-1/metrics.json")
        assert decide(ui, "s3:GetObject", artifact) == ALLOW
        assert decide(ui, "s3:PutObject", artifact) == IMPLICIT_DENY
        assert decide(ui, "s3:ListBucket", f"arn:aws:s3:::{BUCKET}", {"s3:prefix": f"{STORE.team_root(team)}/r/"}) == (
            ALLOW
        )
    # a team's data outside its pipeline root is not the UI's to read, even in a folder named like one
    assert decide(ui, "s3:GetObject", obj("teams/a/datasets/train.csv")) == IMPLICIT_DENY
    assert decide(ui, "s3:GetObject", obj("teams/a/datasets/pipelines/train.csv")) == IMPLICIT_DENY
    assert decide(ui, "s3:ListBucket", f"arn:aws:s3:::{BUCKET}", {"s3:prefix": "teams/a/x/pipelines/"}) == (
        IMPLICIT_DENY
    )
    assert decide(ui, "kms:GenerateDataKey", KEY, {"kms:ViaService": "s3.us-west-2.amazonaws.com"}) == IMPLICIT_DENY
