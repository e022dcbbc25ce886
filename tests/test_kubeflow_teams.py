"""A Kubeflow team: namespace, Profile and PodDefaults valid against the pinned CRDs, and an IAM role only the
team's pipelines and notebooks can assume, for the team's prefix only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from components.identity.team_policy import team_s3_policy
from components.kubeflow import entries, render, teams
from components.kubeflow.teams import Team

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")

VISION = Team(
    name="vision",
    owner="lead@example.org",
    gpu_ceiling=8,
    s3_prefix="teams/vision",
    role_arn="arn:aws:iam::123456789012:role/vision",
    fsx_claim="fsx-lustre",
)


@pytest.fixture(scope="module")
def schemas(render_cache) -> dict[tuple[str, str], dict[str, Any]]:
    """The openAPIV3Schema of each served CRD version of the dashboard entry (Profile, PodDefault)."""
    rendered = render.render(REFERENCE, [entries.DASHBOARD], cache_dir=render_cache)
    found = {}
    for crd in rendered[entries.DASHBOARD.path]:
        if crd["kind"] != "CustomResourceDefinition":
            continue
        for version in crd["spec"]["versions"]:
            found[(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])] = version["schema"][
                "openAPIV3Schema"
            ]
    return found


SHARE = teams.FsxShare(1200, file_system_id="fs-0123456789abcdef0", dns_name="fs.example", mount_name="abcdefgh")


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def test_the_namespace_names_its_owner_and_carries_the_profile_labels_from_the_start():
    (namespace,) = by_kind(teams.manifests(VISION, SHARE), "Namespace")
    assert namespace["metadata"]["annotations"] == {"owner": "lead@example.org"}
    assert namespace["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kubeflow-profile"
    assert namespace["metadata"]["labels"]["istio-injection"] == "enabled"


def test_a_team_namespace_enforces_baseline_and_warns_and_audits_restricted():
    (namespace,) = by_kind(teams.manifests(VISION, SHARE), "Namespace")
    levels = {k: v for k, v in namespace["metadata"]["labels"].items() if k.startswith("pod-security.kubernetes.io/")}
    assert levels == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/audit": "restricted",
    }


def test_the_profile_caps_gpus_and_annotates_the_service_account_only(schemas):
    (profile,) = by_kind(teams.manifests(VISION, SHARE), "Profile")
    jsonschema.validate(profile, schemas[("kubeflow.org/v1", "Profile")])
    assert profile["apiVersion"] == "kubeflow.org/v1"
    assert profile["spec"]["owner"] == {"kind": "User", "name": "lead@example.org"}
    # no Neuron device on the platform's Neuron pools: they are in no team's share (docs/gpu.md)
    assert profile["spec"]["resourceQuotaSpec"] == {
        "hard": {
            "requests.nvidia.com/gpu": "8",
            "requests.aws.amazon.com/neuron": "0",
            "requests.aws.amazon.com/neuroncore": "0",
            "requests.aws.amazon.com/neurondevice": "0",
        }
    }
    assert profile["spec"]["plugins"] == [
        {"kind": "AwsIamForServiceAccount", "spec": {"awsIamRole": VISION.role_arn, "annotateOnly": True}}
    ]


def test_without_a_role_arn_the_profile_carries_the_placeholder_the_registration_resolves():
    team = Team(name="nlp", owner="nlp@example.org", gpu_ceiling=0, s3_prefix="teams/nlp")
    (profile,) = by_kind(teams.manifests(team), "Profile")
    assert profile["spec"]["plugins"][0]["spec"]["awsIamRole"] == teams.role_arn_placeholder("nlp")
    assert by_kind(teams.manifests(team), "PodDefault")[0]["metadata"]["name"] == "access-ml-pipeline"
    # No FSx claim, no FSx PodDefault: the pipelines token and the notebooks' protection from disruption only.
    assert [d["metadata"]["name"] for d in by_kind(teams.manifests(team), "PodDefault")] == [
        "access-ml-pipeline",
        "notebook-protection",
    ]


def test_an_fsx_claim_binds_a_retained_static_volume_of_the_share_and_needs_one():
    volume, claim = by_kind(teams.manifests(VISION, SHARE), "PersistentVolume") + by_kind(
        teams.manifests(VISION, SHARE), "PersistentVolumeClaim"
    )
    assert volume["metadata"]["name"] == "fsx-lustre-vision"
    assert volume["spec"]["claimRef"] == {"namespace": "vision", "name": "fsx-lustre"}
    assert volume["spec"]["csi"]["volumeHandle"] == "fs-0123456789abcdef0"
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"  # the claim's deletion never touches the share
    assert claim["spec"]["volumeName"] == "fsx-lustre-vision"
    assert claim["spec"]["storageClassName"] == ""
    with pytest.raises(ValueError, match="an FSx claim needs the platform's file system"):
        teams.manifests(VISION)


def test_the_pod_defaults_are_valid_and_give_pipelines_access_and_the_fsx_share(schemas):
    defaults = {p["metadata"]["name"]: p for p in by_kind(teams.manifests(VISION, SHARE), "PodDefault")}
    for pod_default in defaults.values():
        jsonschema.validate(pod_default, schemas[("kubeflow.org/v1alpha1", "PodDefault")])
        assert pod_default["metadata"]["namespace"] == "vision"
    pipelines = defaults["access-ml-pipeline"]["spec"]
    assert pipelines["selector"] == {"matchLabels": {"access-ml-pipeline": "true"}}
    token = pipelines["volumes"][0]["projected"]["sources"][0]["serviceAccountToken"]
    assert token["audience"] == "pipelines.kubeflow.org"
    assert pipelines["env"] == [
        {"name": "KF_PIPELINES_SA_TOKEN_PATH", "value": "/var/run/secrets/kubeflow/pipelines/token"}
    ]
    assert defaults["mount-fsx"]["spec"]["volumes"] == [
        {"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-lustre"}}
    ]


def test_the_role_reaches_only_the_teams_prefix():
    policy = team_s3_policy(partition="aws", region="", bucket="ml-data", prefix=VISION.s3_prefix)
    listing, objects = policy["Statement"]
    assert listing["Action"] == "s3:ListBucket"
    assert listing["Resource"] == "arn:aws:s3:::ml-data"
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["teams/vision", "teams/vision/*"]}}
    assert objects["Resource"] == "arn:aws:s3:::ml-data/teams/vision/*"
    assert sorted(objects["Action"]) == ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    assert all(
        s["Effect"] == "Allow" and "*" not in s["Resource"].split(":::")[1].split("/")[0] for s in policy["Statement"]
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": "Vision"}, "DNS label"),
        ({"gpu_ceiling": -1}, "negative"),
        ({"s3_prefix": "/teams/vision"}, "s3_prefix"),
        ({"s3_prefix": "teams/*"}, "s3_prefix"),
        ({"s3_prefix": ""}, "s3_prefix"),
    ],
)
def test_a_team_that_cannot_be_isolated_is_refused(changes, message):
    fields = {"name": "vision", "owner": "lead@example.org", "gpu_ceiling": 1, "s3_prefix": "teams/vision", **changes}
    with pytest.raises(ValueError, match=message):
        Team(**fields)
