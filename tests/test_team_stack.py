"""The example team stack (examples/team-stack), previewed offline against the recorded platform outputs like the
platform's own stack: what it creates, its identity's exact trust, destroy order, config errors, policies; its dev
stack with the team's Kubeflow Profile."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
import yaml

from components.kubeflow import entries, render
from components.tools.preview import main, read_project_name, read_stack_config
from components.tools.preview.program import run_program

from .conftest import KUBEFLOW_TREE, REFCHECK, REPO
from .kueue_support import kueue_crds_file
from .test_preview import SNAPSHOTS

pytestmark = pytest.mark.stack

TEAM_STACK = REPO / "examples" / "team-stack"
PLATFORM_STACK = "acme/eks-ml-platform/prod"
OUTPUTS = TEAM_STACK / "platform-outputs.prod.json"
REFERENCE = ["--stack-reference", f"{PLATFORM_STACK}={OUTPUTS}"]
PROFILE = "kubernetes:kubeflow.org/v1:Profile"


def preview_args(out, *extra: str, stack: str = "prod") -> list[str]:
    reference = ["--stack-reference", f"acme/eks-ml-platform/{stack}={TEAM_STACK / f'platform-outputs.{stack}.json'}"]
    return ["--project-dir", str(TEAM_STACK), "--stack", stack, "--out", str(out), *reference, *extra]


def run_team(stack: str, team_changes: dict[str, Any] | None = None, drop: tuple[str, ...] = ()):
    project = read_project_name(TEAM_STACK)
    config, secret_keys = read_stack_config(TEAM_STACK, project, stack)
    if team_changes or drop:
        team = {**json.loads(config[f"{project}:team"]), **(team_changes or {})}
        config = {**config, f"{project}:team": json.dumps({k: v for k, v in team.items() if k not in drop})}
    outputs = json.loads((TEAM_STACK / f"platform-outputs.{stack}.json").read_text())
    return run_program(TEAM_STACK, project, stack, config, secret_keys, {f"acme/eks-ml-platform/{stack}": outputs})


@pytest.fixture(scope="module")
def team():
    return run_team("prod")


def run_team_with_profile():
    """The prod team with a Profile (its pods then run as default-editor), on the prod platform, whose Pipelines keep
    their artifacts in S3."""
    return run_team("prod", {"kubeflow": {"owner": "vision-lead@example.org"}}, drop=("serviceAccount",))


@pytest.fixture(scope="module")
def team_s3():
    return run_team_with_profile()


@pytest.fixture(scope="module")
def team_dev():
    """The example's dev stack: the team's Kubeflow Profile on the dev platform."""
    return run_team("dev")


def test_the_team_stack_previews_offline_with_no_policy_violations(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(preview_args(out, "--policy-config", str(TEAM_STACK / "policy-config.json"))) == 0
    printed = capsys.readouterr().out
    assert "no violations" in printed
    assert "Cost:" not in printed
    assert {p.name for p in (out / "manifests").iterdir()} == {
        "namespace.yaml",
        "identity.yaml",
        "pool.yaml",
        "queues.yaml",
    }
    assert {p.name for p in (out / "iam").iterdir()} == {"identity-role.trust.json", "identity-s3.json"}
    # the report draws the team's parts and its destroy; its cost is the platform's, so it has no cost section
    report = (out / "report.html").read_text()
    assert all(f">{part}</text>" in report for part in ("identity", "namespace", "pool"))
    assert re.search(r"pulumi destroy: \d+\.\d minutes in \d+ levels", report), report[:300]
    assert 'id="cost"' not in report


def test_only_the_stack_wide_rules_the_platform_satisfies_need_the_team_policy_config(tmp_path, capsys):
    """The queue and the GPU operator are the platform's: the plan checks them in its outputs instead."""
    assert main(preview_args(tmp_path / "out")) == 1
    printed = capsys.readouterr().out
    rules = {line.split()[1] for line in printed.splitlines() if line.startswith("  mandatory ")}
    assert rules == {"spot-needs-interruption-queue", "gpu-pools-need-operator-and-dcgm"}
    assert json.loads((TEAM_STACK / "policy-config.json").read_text()) == dict.fromkeys(rules, "disabled")
    assert (tmp_path / "out" / "report.html").exists()  # a preview that fails a policy still writes its folder


def test_the_team_role_trusts_exactly_its_service_account_of_the_platforms_cluster(team):
    trust = json.loads(team.one("aws:iam/role:Role").inputs["assumeRolePolicy"])
    platform = json.loads(OUTPUTS.read_text())
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Federated": platform["oidcProviderArn"]}
    assert statement["Condition"] == {
        "StringEquals": {
            f"{platform['oidcIssuer']}:sub": "system:serviceaccount:vision:vision-jobs",
            f"{platform['oidcIssuer']}:aud": "sts.amazonaws.com",
        }
    }
    account = team.one("kubernetes:core/v1:ServiceAccount")
    assert account.inputs["metadata"]["namespace"] == "vision"
    assert account.inputs["metadata"]["name"] == "vision-jobs"
    assert account.inputs["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == team.stack_outputs["roleArn"]


def test_the_team_reaches_its_prefix_of_the_platforms_bucket_with_its_key(team):
    policy = json.loads(team.one("aws:iam/rolePolicy:RolePolicy").inputs["policy"])
    platform = json.loads(OUTPUTS.read_text())
    bucket = platform["buckets"]["datasets"]
    assert policy["Statement"][1]["Resource"] == f"arn:aws:s3:::{bucket}/teams/vision/*"
    assert policy["Statement"][2]["Resource"] == platform["bucketKmsKeyArns"]["datasets"]


def test_destroy_removes_the_namespace_with_its_claims_before_the_volume_they_bind(team):
    namespace = team.one("kubernetes:core/v1:Namespace")
    volume = team.one("kubernetes:core/v1:PersistentVolume")
    assert team.depends_on(namespace, volume)
    for claim in team.of_type("kubernetes:core/v1:PersistentVolumeClaim"):
        assert claim.deleted_with == namespace.urn
        assert team.depends_on(claim, namespace)
    for kind in ("ResourceQuota", "LimitRange", "ServiceAccount"):
        assert team.one(f"kubernetes:core/v1:{kind}").deleted_with == namespace.urn


def test_everything_in_the_cluster_goes_through_the_platforms_kubernetes_provider(team):
    provider = team.one("pulumi:providers:kubernetes")
    in_cluster = [r for r in team.resources if r.type.startswith("kubernetes:") and not r.type.startswith("pulumi:")]
    assert in_cluster
    assert all(r.provider == provider.urn for r in in_cluster)


def test_the_team_pool_waits_for_its_drain_on_delete(team):
    pool = team.one("kubernetes:karpenter.sh/v1:NodePool")
    assert pool.inputs["metadata"]["name"] == "team-vision"
    assert pool.delete_timeout is not None


def test_a_bad_team_config_exits_2_naming_each_key_and_creates_nothing(tmp_path, capsys):
    project = tmp_path / "team"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        (project / name).write_text((TEAM_STACK / name).read_text())
    stack_file = yaml.safe_load((TEAM_STACK / "Pulumi.prod.yaml").read_text())
    stack_file["config"]["team-vision:team"]["nodePool"]["limits"] = {"nvidia.com/gpu": "64"}
    stack_file["config"]["team-vision:team"]["name"] = "team-a"
    (project / "Pulumi.prod.yaml").write_text(yaml.safe_dump(stack_file))
    out = tmp_path / "out"
    assert main(["--project-dir", str(project), "--stack", "prod", "--out", str(out), *REFERENCE]) == 2
    error = capsys.readouterr().err
    assert "team.name: the platform already creates the namespace 'team-a'" in error
    assert "team.nodePool.limits.nvidia.com/gpu: 64 is more than the platform allows" in error
    assert "Traceback" not in error
    assert not out.exists()


def test_a_team_stack_in_another_region_than_its_platform_is_refused(tmp_path, capsys):
    project = tmp_path / "team"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        (project / name).write_text((TEAM_STACK / name).read_text())
    stack_file = yaml.safe_load((TEAM_STACK / "Pulumi.prod.yaml").read_text())
    stack_file["config"]["aws:region"] = "eu-west-1"
    (project / "Pulumi.prod.yaml").write_text(yaml.safe_dump(stack_file))
    assert main(["--project-dir", str(project), "--stack", "prod", "--out", str(tmp_path / "o"), *REFERENCE]) == 2
    assert "aws:region: the platform runs in us-west-2" in capsys.readouterr().err


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_team_resource_names_match_the_snapshot(stack, request):
    """As the platform's: a rename replaces the resource; it must be deliberate."""
    team = request.getfixturevalue({"prod": "team", "dev": "team_dev"}[stack])
    actual = "".join(f"{r.type} {r.name}\n" for r in sorted(team.resources, key=lambda r: (r.type, r.name)))
    snapshot = SNAPSHOTS / f"team-{stack}-resources.txt"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(actual)
    assert actual == snapshot.read_text(), "resource names changed; rerun with UPDATE_SNAPSHOTS=1 if intended"


# ---------------------------------------------------------------------------- Kubeflow Pipelines on S3 (prod)


def test_the_profiles_runs_write_under_the_teams_prefix_of_the_platforms_kubeflow_bucket(team_s3):
    """The prod platform keeps Pipelines' artifacts in S3 and writes no team stack's namespace config: the team stack
    writes the three ConfigMaps the platform writes into its own teams' namespaces."""
    platform = json.loads(OUTPUTS.read_text())
    bucket = platform["buckets"][platform["kubeflowPipelines"]["bucket"]]
    namespace = team_s3.one("kubernetes:core/v1:Namespace")
    config_maps = {c.inputs["metadata"]["name"]: c for c in team_s3.of_type("kubernetes:core/v1:ConfigMap")}
    assert set(config_maps) == {"kfp-launcher", "metadata-grpc-configmap", "artifact-repositories"}
    for config_map in config_maps.values():
        assert config_map.inputs["metadata"]["namespace"] == "vision"
        assert config_map.deleted_with == namespace.urn
        assert team_s3.depends_on(config_map, namespace)
    launcher = config_maps["kfp-launcher"].inputs["data"]
    assert launcher["defaultPipelineRoot"] == f"s3://{bucket}/teams/vision/pipelines"
    assert yaml.safe_load(launcher["providers"])["s3"]["default"]["credentials"] == {"fromEnv": True}
    argo = json.loads(config_maps["artifact-repositories"].inputs["data"]["default-namespaced"])["s3"]
    assert (argo["bucket"], argo["useSDKCreds"]) == (bucket, True)
    assert argo["keyFormat"].startswith("teams/vision/pipelines/logs/")


def test_the_team_stacks_role_and_the_platforms_kubeflow_teams_roles_keep_to_their_own_prefixes(team_s3):
    """IAM evaluated on the rendered policy: the team stack's role writes its pipeline root and not the platform's
    team research's, whose role (the platform's builder, for the prefix the platform exports) cannot write the team
    stack's; the team stack's policy is that same builder's for its prefix."""
    from components.identity.team_policy import team_s3_policy
    from components.kubeflow.pipelines_store import SERVER_PREFIX
    from tests.iam_evaluator import ALLOW, IMPLICIT_DENY, decide

    platform = json.loads(OUTPUTS.read_text())
    offered = platform["kubeflowPipelines"]
    bucket = platform["buckets"][offered["bucket"]]
    key = platform["bucketKmsKeyArns"][offered["bucket"]]

    def platform_team_policy(name: str, prefix: str) -> dict[str, Any]:
        return team_s3_policy(partition="aws", region=platform["region"], bucket=bucket, prefix=prefix, kms_key_arn=key)

    trust = json.loads(team_s3.one("aws:iam/role:Role").inputs["assumeRolePolicy"])
    (statement,) = trust["Statement"]
    assert statement["Condition"]["StringEquals"][f"{platform['oidcIssuer']}:sub"] == (
        "system:serviceaccount:vision:default-editor"  # what the Profile's pipeline runs use, and nothing else
    )
    vision = json.loads(team_s3.one("aws:iam/rolePolicy:RolePolicy").inputs["policy"])
    research = platform_team_policy("research", offered["teamPrefixes"]["research"])
    assert vision == platform_team_policy("vision", "teams/vision")

    def obj(path: str) -> str:
        return f"arn:aws:s3:::{bucket}/{path}"

    for action in ("s3:PutObject", "s3:GetObject"):
        assert decide(vision, action, obj("teams/vision/pipelines/run-1/model")) == ALLOW
        assert decide(vision, action, obj("teams/research/pipelines/run-1/model")) == IMPLICIT_DENY
        assert decide(vision, action, obj(f"{SERVER_PREFIX}/p-1")) == IMPLICIT_DENY
        assert decide(research, action, obj("teams/research/pipelines/run-1/model")) == ALLOW
        assert decide(research, action, obj("teams/vision/pipelines/run-1/model")) == IMPLICIT_DENY
    listing = {"s3:prefix": "teams/research/pipelines/"}
    assert decide(vision, "s3:ListBucket", f"arn:aws:s3:::{bucket}", listing) == IMPLICIT_DENY
    assert decide(research, "s3:ListBucket", f"arn:aws:s3:::{bucket}", listing) == ALLOW


def test_a_team_stack_prefix_within_a_platform_teams_exits_2_naming_the_key(tmp_path, capsys):
    project = tmp_path / "team"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        (project / name).write_text((TEAM_STACK / name).read_text())
    stack_file = yaml.safe_load((TEAM_STACK / "Pulumi.prod.yaml").read_text())
    stack_file["config"]["team-vision:team"]["storage"]["prefix"] = "teams/research/vision"
    (project / "Pulumi.prod.yaml").write_text(yaml.safe_dump(stack_file))
    out = tmp_path / "out"
    assert main(["--project-dir", str(project), "--stack", "prod", "--out", str(out), *REFERENCE]) == 2
    error = capsys.readouterr().err
    assert (
        "team.storage.prefix: 'teams/research/vision' overlaps 'teams/research', the prefix of the platform's" in error
    )
    assert not out.exists()


# --------------------------------------------------------------------------------------------- Kubeflow (dev)


def test_on_the_seaweedfs_platform_the_team_stack_writes_no_pipelines_config(team_dev):
    """The dev platform keeps Pipelines' artifacts in SeaweedFS, whose profile controller writes each Profile
    namespace's config itself."""
    assert team_dev.of_type("kubernetes:core/v1:ConfigMap") == []


def test_the_dev_team_stack_previews_its_profile_with_no_policy_violations(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(preview_args(out, "--policy-config", str(TEAM_STACK / "policy-config.json"), stack="dev")) == 0
    assert "no violations" in capsys.readouterr().out
    assert {p.name for p in (out / "manifests").iterdir()} == {
        "namespace.yaml",
        "identity.yaml",
        "profile.yaml",
        "queues.yaml",
    }


def test_the_profile_points_the_controller_at_the_teams_role_and_quota(team_dev):
    profile = team_dev.one(PROFILE)
    assert profile.inputs["metadata"] == {"name": "vision"}
    spec = profile.inputs["spec"]
    assert spec["owner"] == {"kind": "User", "name": "vision-lead@example.org"}
    # quota.gpus 2, and as many again to borrow through the platform's Kueue
    # and no Neuron device: the team has no Neuron pool, and the platform's are in no team's share
    assert spec["resourceQuotaSpec"] == {
        "hard": {
            "requests.nvidia.com/gpu": "4",
            "requests.aws.amazon.com/neuron": "0",
            "requests.aws.amazon.com/neuroncore": "0",
            "requests.aws.amazon.com/neurondevice": "0",
        }
    }
    (plugin,) = spec["plugins"]
    assert plugin == {
        "kind": "AwsIamForServiceAccount",
        "spec": {"awsIamRole": team_dev.stack_outputs["roleArn"], "annotateOnly": True},
    }
    assert profile.provider == team_dev.one("pulumi:providers:kubernetes").urn
    namespace = team_dev.one("kubernetes:core/v1:Namespace").inputs["metadata"]
    assert namespace["annotations"] == {"owner": spec["owner"]["name"]}  # else the controller refuses to adopt it


def test_the_profiles_pods_run_as_default_editor_which_alone_may_assume_the_role(team_dev):
    trust = json.loads(team_dev.one("aws:iam/role:Role").inputs["assumeRolePolicy"])
    issuer = json.loads((TEAM_STACK / "platform-outputs.dev.json").read_text())["oidcIssuer"]
    (statement,) = trust["Statement"]
    assert statement["Condition"]["StringEquals"][f"{issuer}:sub"] == "system:serviceaccount:vision:default-editor"
    account = team_dev.one("kubernetes:core/v1:ServiceAccount").inputs["metadata"]
    assert (account["namespace"], account["name"]) == ("vision", "default-editor")
    assert team_dev.stack_outputs["serviceAccount"] == "default-editor"


def test_the_profile_comes_after_the_namespace_and_service_account_and_goes_before_them(team_dev):
    """The controller adopts only an existing namespace and keeps an existing default-editor; cluster-scoped, the
    Profile is not deleted with the namespace, so destroy deletes it first."""
    profile = team_dev.one(PROFILE)
    assert team_dev.depends_on(profile, team_dev.one("kubernetes:core/v1:Namespace"))
    assert team_dev.depends_on(profile, team_dev.one("kubernetes:core/v1:ServiceAccount"))
    assert profile.deleted_with is None


def test_the_teams_notebooks_get_the_pipelines_token_pod_default_the_platforms_teams_get(team_dev):
    pod_defaults = {
        p.inputs["metadata"]["name"]: p for p in team_dev.of_type("kubernetes:kubeflow.org/v1alpha1:PodDefault")
    }
    assert set(pod_defaults) == {"access-ml-pipeline", "notebook-protection", "kueue-queue"}
    assert pod_defaults["kueue-queue"].inputs["spec"]["labels"] == {"kueue.x-k8s.io/queue-name": "gpu"}
    pod_default = pod_defaults["access-ml-pipeline"]
    namespace = team_dev.one("kubernetes:core/v1:Namespace")
    assert pod_default.inputs["metadata"] == {
        "name": "access-ml-pipeline",
        "namespace": namespace.inputs["metadata"]["name"],
    }
    token = pod_default.inputs["spec"]["volumes"][0]["projected"]["sources"][0]["serviceAccountToken"]
    assert token["audience"] == "pipelines.kubeflow.org"
    assert pod_default.deleted_with == namespace.urn  # no finalizer, nothing outside the cluster: it goes with it


def test_a_profile_against_a_platform_without_kubeflow_exits_2_naming_the_key(tmp_path, capsys):
    outputs = json.loads((TEAM_STACK / "platform-outputs.dev.json").read_text())
    outputs["kubeflowEnabled"] = False
    recorded = tmp_path / "outputs.json"
    recorded.write_text(json.dumps(outputs))
    args = ["--project-dir", str(TEAM_STACK), "--stack", "dev", "--out", str(tmp_path / "out")]
    assert main([*args, "--stack-reference", f"acme/eks-ml-platform/dev={recorded}"]) == 2
    error = capsys.readouterr().err
    assert "team.kubeflow: the platform runs no Kubeflow (its kubeflow.enabled)" in error
    assert "Traceback" not in error
    assert not (tmp_path / "out").exists()


@pytest.mark.refcheck
@pytest.mark.subprocess
def test_the_dev_team_preview_and_its_profile_pass_refcheck(tmp_path, capsys):
    """The Profile against Kubeflow's CRD and the PodDefault against the one the platform's Kubeflow installs (from
    the pinned tree: their schemas make an unknown field an error), the rest against Kubernetes."""
    out = tmp_path / "out"
    main(preview_args(out, "--policy-config", str(TEAM_STACK / "policy-config.json"), stack="dev"))
    rendered = render.render(KUBEFLOW_TREE, (entries.DASHBOARD,), cache_dir=tmp_path / "renders")
    crds = tmp_path / "pod-default-crd.yaml"
    crds.write_text(
        yaml.safe_dump_all(
            [
                o
                for o in rendered[entries.DASHBOARD.path]
                if o["kind"] == "CustomResourceDefinition" and o["spec"]["names"]["kind"] == "PodDefault"
            ]
        )
    )
    queue_crds, _ = kueue_crds_file(tmp_path)
    result = subprocess.run(
        [
            sys.executable,
            str(REFCHECK),
            str(out / "manifests"),
            str(crds),
            str(queue_crds),
            "--k8s-version",
            "1.35",
            "--strict",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().endswith(" 0 errors"), result.stdout
    assert "profile" in {p.stem for p in (out / "manifests").iterdir()}


@pytest.mark.refcheck
@pytest.mark.subprocess
def test_the_team_preview_passes_refcheck(tmp_path, capsys, prod):
    """Every object against the upstream schemas and CEL rules; the pool's node class is the platform's, not here."""
    out = tmp_path / "out"
    main(preview_args(out, "--policy-config", str(TEAM_STACK / "policy-config.json")))
    queue_crds, _ = kueue_crds_file(tmp_path)
    result = subprocess.run(
        [sys.executable, str(REFCHECK), str(out / "manifests"), str(queue_crds), "--k8s-version", "1.34,1.35", "-v"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout.strip().endswith(" 0 errors")
    (warning,) = [line for line in result.stdout.splitlines() if line.startswith(("ERROR", "WARN"))]
    assert warning.endswith("nodeClassRef EC2NodeClass/gpu is not among the checked objects")
    platform_classes = {
        r.inputs["metadata"]["name"] for r in prod.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    }
    assert "gpu" in platform_classes


def test_a_team_quota_no_pool_can_fill_is_refused_naming_what_the_pools_allow(tmp_path, capsys):
    """dev's platform allows 4 GPUs (gpu-inference) and the dev team has no pool of its own: 12 would stay Pending."""
    project = tmp_path / "team"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        (project / name).write_text((TEAM_STACK / name).read_text())
    stack_file = yaml.safe_load((TEAM_STACK / "Pulumi.dev.yaml").read_text())
    stack_file["config"]["team-vision:team"]["quota"]["gpus"] = 12
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack_file))
    assert main([*preview_args(tmp_path / "o", stack="dev")[2:], "--project-dir", str(project)]) == 2
    err = capsys.readouterr().err
    assert (
        "team.quota.gpus: asks for 12 GPUs at once, more than every pool it can use allows together (4: the "
        "platform's GPU pools gpu-inference: 4; the team's own pool 0)"
    ) in err


def test_a_team_guarantee_past_the_platforms_reserve_is_refused_at_preview_naming_the_keys(tmp_path, capsys):
    """dev keeps 2 of its pool's 4 GPUs for team stacks (kueue.teamStackGpus): 3 fit the pool but not the reserve, so
    Kueue would guarantee more than the pool launches while ml-research claims its 2."""
    project = tmp_path / "team"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        (project / name).write_text((TEAM_STACK / name).read_text())
    stack_file = yaml.safe_load((TEAM_STACK / "Pulumi.dev.yaml").read_text())
    stack_file["config"]["team-vision:team"]["quota"]["gpus"] = 3
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack_file))
    assert main([*preview_args(tmp_path / "o", stack="dev")[2:], "--project-dir", str(project)]) == 2
    err = capsys.readouterr().err
    assert "team.quota.gpus: 3 GPUs leaves 3 guaranteed on the platform's shared GPU pools" in err
    assert "(its kueue.teamStackGpus, 2)" in err
