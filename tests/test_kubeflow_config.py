"""The proposed `kubeflow:` stack config: what it accepts, what it refuses (with the key at fault), what it turns
into; and the command line and the render benchmark hook."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from components.kubeflow import __main__ as cli
from components.kubeflow import bench, entries, fetch
from components.kubeflow.config import KubeflowConfig, selected_entries, settings

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
CERTIFICATE = "arn:aws:acm:us-west-2:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-0123456789ab"
#: The company's identity provider: everyone at example.org signs in through it.
CORP = {
    "name": "Corp SSO",
    "issuer": "https://login.example.org/oauth2/default",
    "clientId": "kubeflow",
    "clientSecretKey": "kubeflowOidcClientSecret",
    "emailDomains": ["example.org"],
}
MINIMAL = {"enabled": True, "adminEmail": "platform@example.org", "auth": {"connectors": {"corp": CORP}}}


def parse(**changes) -> KubeflowConfig:
    return KubeflowConfig.model_validate({**MINIMAL, **changes})


def test_off_by_default_and_nothing_else_may_be_set_while_off():
    assert KubeflowConfig().enabled is False
    with pytest.raises(ValidationError, match="teams do nothing while enabled is false"):
        KubeflowConfig.model_validate({"teams": {}})


def test_the_defaults_are_the_default_set_port_forward_and_hourly_culling():
    config = parse()
    assert selected_entries(config) == entries.DEFAULT
    assert config.access.mode == "port-forward"
    result = settings(config, storage_class="gp3", gpu_node_pools=("gpu-training",), gpu_scheduler="gpu-binpack")
    assert (result.notebook_idle_minutes, result.access, result.teams) == (60, None, ())


def test_optional_components_add_their_entries():
    config = parse(
        components={"katib": True, "spark": True, "knative": True, "hub": True},
        hubRegistryTeam="vision",
        teams={"vision": {"owner": "lead@example.org", "s3Prefix": "teams/vision"}},
    )
    chosen = selected_entries(config)
    for entry in (
        entries.KATIB,
        entries.SPARK,
        entries.KNATIVE,
        entries.CLUSTER_LOCAL_GATEWAY,
        entries.HUB_CATALOG,
        entries.HUB_REGISTRY,
    ):
        assert entry in chosen


def test_teams_become_teams_keyed_by_name():
    config = parse(
        teams={
            "vision": {"owner": "lead@example.org", "gpuQuota": 8, "s3Prefix": "teams/vision", "fsxClaim": "fsx-lustre"}
        }
    )
    (team,) = settings(config, storage_class="gp3", gpu_node_pools=(), gpu_scheduler=None).teams
    assert (team.name, team.owner, team.gpu_ceiling, team.s3_prefix, team.fsx_claim, team.role_arn) == (
        "vision",
        "lead@example.org",
        8,
        "teams/vision",
        "fsx-lustre",
        None,
    )


def test_an_alb_needs_its_certificate_and_port_forward_takes_no_alb_keys():
    config = parse(
        access={
            "mode": "alb",
            "certificateArn": CERTIFICATE,
            "scheme": "internet-facing",
            "allowedCidrs": ["203.0.113.0/24"],
            "host": "kubeflow.example.org",
        }
    )
    alb = settings(config, storage_class="gp3", gpu_node_pools=(), gpu_scheduler=None, tags={"stack": "dev"}).access
    assert alb is not None
    assert (alb.certificate_arn, alb.scheme, alb.allowed_cidrs) == (CERTIFICATE, "internet-facing", ("203.0.113.0/24",))
    with pytest.raises(ValidationError, match="certificateArn is required"):
        parse(access={"mode": "alb"})
    with pytest.raises(ValidationError, match="scheme only apply to mode alb"):
        parse(access={"scheme": "internal"})


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"adminEmail": None}, "adminEmail is required"),
        ({"teams": {"Vision": {"owner": "a@example.org", "s3Prefix": "p"}}}, "DNS label"),
        ({"teams": {"vision": {"owner": "not-an-email", "s3Prefix": "p"}}}, "teams.vision.owner"),
        ({"teams": {"vision": {"owner": "a@example.org", "s3Prefix": "/p/"}}}, "teams.vision.s3Prefix"),
        ({"teams": {"vision": {"owner": "a@example.org", "s3Prefix": "p", "gpuQuota": -1}}}, "teams.vision.gpuQuota"),
        ({"teams": {"vision": {"owner": "a@example.org", "s3Prefix": "p", "quota": 1}}}, "teams.vision.quota"),
        ({"hubRegistryTeam": "vision"}, "hubRegistryTeam needs components.hub"),
        ({"components": {"hub": True}, "hubRegistryTeam": "vision"}, "is not one of the teams"),
        ({"components": {"kserve": "yes"}}, "components.kserve"),
        ({"notebooks": {"idleMinutes": 1}}, "notebooks.idleMinutes"),
        ({"access": {"mode": "alb", "certificateArn": "arn:aws:iam::1:role/x"}}, "access.certificateArn"),
    ],
)
def test_wrong_values_are_refused_naming_the_key(changes, where):
    with pytest.raises(ValidationError) as error:
        parse(**changes)
    text = str(error.value).replace("\n", " ")
    assert where in text or where.replace(".", " ") in text, text


@pytest.mark.render
@pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")
def test_the_benchmark_hook_times_cold_and_warm_renders():
    # Two small entries keep the test quick; `python -m components.kubeflow bench` times the default set.
    timings = bench.measure(REFERENCE, (entries.CERT_MANAGER_ISSUER, entries.KUBEFLOW_ROLES), build=False)
    assert timings["objects"] == 3 + 6
    assert timings["warm_s"] < timings["cold_s"]
    assert set(timings) == {"verify_s", "cold_s", "warm_s", "objects"}


def test_the_fetch_command_reports_a_failed_download_without_a_traceback(tmp_path, monkeypatch, capsys):
    def offline(url, destination):
        raise OSError("Network is unreachable")

    monkeypatch.setattr(fetch, "download_https", offline)
    assert cli.main(["fetch", "--cache", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: could not download https://github.com/kubeflow/community-distribution/archive/")
    assert "Network is unreachable" in error
    assert "Traceback" not in error
