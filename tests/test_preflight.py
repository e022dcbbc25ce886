"""Preflight: identity, region and cluster access, names left by earlier stacks, the report and the command line,
and the whole run of the shipped prod stack against moto (Stubber for the quota codes moto does not serve)."""

from __future__ import annotations

import json

import boto3
import pytest

from components.tools.preflight import __main__ as cli
from components.tools.preflight import reads
from components.tools.preflight.checks_access import (
    cluster_access_check,
    creator_principal,
    identity_check,
    interruption_queue_check,
    log_group_check,
    region_check,
)
from components.tools.preflight.clients import Clients
from components.tools.preflight.quotas import (
    ELASTIC_IPS,
    FSX_STORAGE,
    NAT_GATEWAYS_PER_AZ,
    VCPU_CLASSES,
    VPCS_PER_REGION,
    Quota,
)
from components.tools.preflight.reads import Identity
from components.tools.preflight.report import render_json, render_markdown, render_table
from components.tools.preflight.results import Status, exit_code
from components.tools.preflight.runner import name_checks, placeholder_checks, run_preflight
from tests import preflight_world
from tests.preflight_world import (
    ACCOUNT,
    PROJECT,
    REPO,
    answer_ebs_default_key,
    create_admin_role,
    create_spot_role,
    fake_credentials,
    platform_config,
    with_quotas,
)

# The moto world's fixtures, requested by name below: bound here, not imported, since every parameter of the
# same name would shadow an import.
credentials = preflight_world.credentials
clients = preflight_world.clients
account = preflight_world.account

#: Each vCPU quota by class and capacity type (HPC instances have no spot quota).
QUOTA: dict[str, Quota] = {
    f"{c.key}-{kind}": q
    for c in VCPU_CLASSES
    for kind, q in (("on-demand", c.on_demand), ("spot", c.spot))
    if q is not None
}


# ----------------------------------------------------------------------------------------- identity, region


def test_the_caller_of_the_stacks_partition_passes(clients):
    result = identity_check(reads.caller_identity(clients.sts), "us-west-2")
    assert result.status is Status.PASS
    assert (
        result.evidence
        == f"arn:aws:sts::{ACCOUNT}:user/moto (account {ACCOUNT}, partition aws); stack region us-west-2"
    )


def test_credentials_of_another_partition_fail():
    result = identity_check(Identity(ACCOUNT, f"arn:aws:iam::{ACCOUNT}:user/ci"), "cn-north-1")
    assert result.status is Status.FAIL
    assert "partition aws-cn" in result.fix


def test_the_root_user_warns():
    assert identity_check(Identity(ACCOUNT, f"arn:aws:iam::{ACCOUNT}:root"), "us-west-2").status is Status.WARN


def real_values(stack: str):
    """A shipped stack with its placeholders (documentation CIDR, example.org e-mails, the connector's example issuer,
    client and domain) replaced by real values."""
    from components.platform.parse import parse_config
    from tests.preflight_world import PROJECT, read_stack_config

    raw, _ = read_stack_config(REPO, PROJECT, stack)
    real = {
        key: (value if isinstance(value, str) else json.dumps(value))
        .replace("203.0.113.0/24", "8.8.4.0/24")
        .replace("example.org", "corp.test")
        .replace("login.example.com", "login.corp.test")
        .replace("replace-with-your-client-id", "0oa1b2c3")
        .replace("arn:aws:iam::123456789012:", "arn:aws:iam::210987654321:")
        for key, value in raw.items()
    }
    return parse_config(real, project=PROJECT, stack=stack)


def test_placeholders_fail_and_real_values_pass():
    names = [r.name for r in placeholder_checks(platform_config("dev"))]
    assert names == [
        "placeholder/cluster.endpoint.publicCidrs",
        "placeholder/cluster.adminPrincipals.platform-admins",
        "placeholder/kubeflow.adminEmail",
        "placeholder/kubeflow.auth.connectors.corp.issuer",
        "placeholder/kubeflow.auth.connectors.corp.clientId",
        "placeholder/kubeflow.auth.connectors.corp.emailDomains",
        "placeholder/kubeflow.teams.ml-research.owner",
    ]
    assert placeholder_checks(real_values("dev")) == []


def test_without_credentials_the_identity_check_errs_and_the_run_exits_3(no_aws_credentials):
    results = run_preflight(real_values("dev"), Clients.from_session(boto3.Session(region_name="us-west-2")))
    assert [(r.name, r.status) for r in results] == [("identity", Status.ERROR)]
    assert exit_code(results) == 3


def test_an_enabled_region_passes_and_one_not_opted_in_fails(clients):
    assert region_check("us-west-2", reads.region_opt_in(clients.ec2, "us-west-2")).status is Status.PASS
    result = region_check("me-south-1", reads.region_opt_in(clients.ec2, "me-south-1"))
    assert result.status is Status.FAIL
    assert result.fix == "enable it: aws account enable-region --region-name me-south-1"
    assert region_check("us-west-9", reads.region_opt_in(clients.ec2, "us-west-9")).status is Status.FAIL


# -------------------------------------------------------------------------------------------- cluster access


def _access(clients, config):
    identity = reads.caller_identity(clients.sts)
    found = {key: reads.principal_exists(clients.iam, arn) for key, arn in config.cluster.admin_principals.items()}
    return cluster_access_check(config, identity, found)


def test_admins_that_exist_and_a_public_endpoint_pass(clients):
    create_admin_role(clients)
    result = _access(clients, platform_config("dev"))
    assert result.status is Status.PASS
    assert "adminPrincipals.platform-admins exists" in result.evidence
    assert "public endpoint open to 203.0.113.0/24" in result.evidence


def test_a_private_only_endpoint_warns_that_pulumi_up_must_run_inside_the_network(clients):
    create_admin_role(clients)
    result = _access(clients, platform_config("prod"))
    assert result.status is Status.WARN
    assert "run it from inside the VPC" in result.fix


def test_an_admin_principal_that_does_not_exist_fails(clients):
    result = _access(clients, platform_config("dev"))
    assert result.status is Status.FAIL
    assert f"arn:aws:iam::{ACCOUNT}:role/PlatformAdmin does not exist" in result.evidence


def test_an_admin_principal_of_another_account_warns():
    config = platform_config(
        "dev",
        {
            "cluster": {
                "endpoint": {"public": True, "publicCidrs": ["203.0.113.0/24"]},
                "adminPrincipals": {"ops": "arn:aws:iam::999999999999:role/Ops"},
            },
            # the default system node group (two 2-vCPU nodes) does not hold dev's controllers with Kueue's
            "kueue": {"enabled": False},
        },
    )
    result = cluster_access_check(config, Identity(ACCOUNT, f"arn:aws:iam::{ACCOUNT}:user/ci"), {"ops": None})
    assert result.status is Status.WARN


def test_an_assumed_role_session_is_recorded_as_its_role():
    arn = f"arn:aws:sts::{ACCOUNT}:assumed-role/AWSReservedSSO_Admin_0123/alice@example.com"
    assert creator_principal(arn) == f"arn:aws:iam::{ACCOUNT}:role/AWSReservedSSO_Admin_0123"


# ----------------------------------------------------------------------------------------------------- names

OURS = {"project": PROJECT, "stack": "dev"}
THEIRS = {"project": PROJECT, "stack": "staging"}


def _names(clients):
    return {r.name: r for r in name_checks(platform_config("dev"), clients)}


def _cluster(clients, tags):
    clients.eks.create_cluster(
        name="eks-ml-platform-dev", roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks", resourcesVpcConfig={}, tags=tags
    )


def test_free_names_pass(clients):
    assert {name: r.status for name, r in _names(clients).items()} == {
        "name/cluster": Status.PASS,
        "name/log-group": Status.PASS,
        "name/interruption-queue": Status.PASS,
    }


def test_a_cluster_of_another_stack_with_the_same_name_fails(clients):
    _cluster(clients, THEIRS)
    result = _names(clients)["name/cluster"]
    assert result.status is Status.FAIL
    assert "stack=staging" in result.evidence
    assert result.fix.endswith("aws eks delete-cluster --name eks-ml-platform-dev")


def test_the_stacks_own_cluster_passes_as_an_update(clients):
    _cluster(clients, OURS)
    assert _names(clients)["name/cluster"].status is Status.PASS


def test_a_leftover_control_plane_log_group_fails(clients):
    clients.logs.create_log_group(logGroupName="/aws/eks/eks-ml-platform-dev/cluster")
    result = _names(clients)["name/log-group"]
    assert result.status is Status.FAIL
    assert "ResourceAlreadyExistsException" in result.evidence
    assert log_group_check(platform_config("dev"), OURS).status is Status.PASS


def test_an_interruption_queue_of_this_stack_without_its_cluster_is_a_leftover(clients):
    clients.sqs.create_queue(QueueName="karpenter-interruption-a1b2c3d", tags=OURS)
    clients.sqs.create_queue(QueueName="karpenter-interruption-0f0f0f0", tags=THEIRS)
    result = _names(clients)["name/interruption-queue"]
    assert result.status is Status.WARN
    assert "karpenter-interruption-a1b2c3d" in result.evidence
    assert "0f0f0f0" not in result.evidence


def test_queues_of_other_stacks_and_this_stacks_own_while_deployed_pass(clients):
    clients.sqs.create_queue(QueueName="karpenter-interruption-0f0f0f0", tags=THEIRS)
    assert "1 of other stacks" in _names(clients)["name/interruption-queue"].evidence
    clients.sqs.create_queue(QueueName="eks-ml-platform-dev-karpenter-interruption-a1b2c3d", tags=OURS)
    _cluster(clients, OURS)
    result = _names(clients)["name/interruption-queue"]
    assert result.status is Status.PASS
    assert interruption_queue_check(platform_config("dev"), {}, None).status is Status.PASS


def test_a_read_the_identity_may_not_make_is_an_error_row_naming_the_call(clients):
    from botocore.stub import Stubber

    eks = boto3.client("eks", region_name="us-west-2")
    stubber = Stubber(eks)
    stubber.add_client_error("describe_cluster", "AccessDeniedException", "not authorized")
    with stubber:
        from dataclasses import replace

        result = {r.name: r for r in name_checks(platform_config("dev"), replace(clients, eks=eks))}["name/cluster"]
    assert result.status is Status.ERROR
    assert result.evidence == "could not check: DescribeCluster answered AccessDeniedException: not authorized"


# ------------------------------------------------------------------------------- the shipped prod stack, whole

#: The table of docs/preflight-and-cost.md: moto's us-west-2, with the stack's admin role created and nothing else; the
#: quotas moto does not serve answered as a new account might have them (0 vCPUs for G and VT and for P).
PROD_QUOTAS = [
    (QUOTA["standard-on-demand"], 64.0),
    (QUOTA["standard-spot"], 64.0),
    (QUOTA["g-vt-on-demand"], 0.0),
    (QUOTA["g-vt-spot"], 0.0),
    (QUOTA["p-on-demand"], 0.0),
    (VPCS_PER_REGION, 5.0),
    (ELASTIC_IPS, 5.0),
    (NAT_GATEWAYS_PER_AZ, 5.0),
    (FSX_STORAGE["PERSISTENT_2"], 100800.0),
]


def prod_against_moto(clients):
    create_admin_role(clients)
    answer_ebs_default_key(clients.ec2, "alias/aws/ebs")
    stubbed, stubber = with_quotas(clients, PROD_QUOTAS)
    results = run_preflight(platform_config("prod"), stubbed)
    stubber.assert_no_pending_responses()
    return results


# A whole preflight of a stack is slow under moto (seconds): it answers every pool's describe_instance_types with
# its whole catalogue.
@pytest.fixture(scope="module")
def prod_results():
    with pytest.MonkeyPatch.context() as monkeypatch:
        fake_credentials(monkeypatch)
        with account() as clients:
            return prod_against_moto(clients)


@pytest.mark.slow
def test_the_prod_stack_on_a_new_account_fails_on_gpu_quotas_and_the_spot_role(prod_results):
    statuses = {r.name: r.status for r in prod_results}
    assert {name for name, status in statuses.items() if status is Status.FAIL} == {
        "placeholder/cluster.adminPrincipals.platform-admins",
        "placeholder/kubeflow.adminEmail",
        "placeholder/kubeflow.auth.connectors.corp.issuer",
        "placeholder/kubeflow.auth.connectors.corp.clientId",
        "placeholder/kubeflow.auth.connectors.corp.emailDomains",
        "placeholder/kubeflow.teams.research.owner",
        # with 0 vCPUs of G and P quota, no GPU pool can launch anything
        "nodepool/inference-a10g-on-demand",
        "nodepool/inference-a10g-spot",
        "nodepool/inference-t4-spot",
        "nodepool/training",
        "quota/g-vt-spot",
        "quota/g-vt-on-demand",
        "quota/p-on-demand",
        "spot-service-linked-role",
    }
    assert {name for name, status in statuses.items() if status is Status.WARN} == {
        "cluster-access",
        "quota/standard-on-demand",
        "quota/standard-spot",
    }
    assert [name for name in statuses if name.startswith("nodepool/")] == [
        "nodepool/cpu-general",
        "nodepool/inference-a10g-on-demand",
        "nodepool/inference-a10g-spot",
        "nodepool/inference-t4-spot",
        "nodepool/training",
    ]
    assert exit_code(prod_results) == 1


@pytest.mark.slow
def test_the_prod_stack_passes_once_the_spot_role_exists_and_the_quotas_are_raised(clients):
    create_admin_role(clients)
    create_spot_role(clients)
    answer_ebs_default_key(clients.ec2, "alias/aws/ebs")
    # 6 × 4 (system) + 1000 (cpu-general); 1024 (32 × g5.8xlarge) + 512 (16 × g4dn.8xlarge); 768; 512
    raised = {
        "standard-on-demand": 1024.0,
        "standard-spot": 1000.0,
        "g-vt-spot": 1536.0,
        "p-on-demand": 768.0,
        "g-vt-on-demand": 512.0,
    }
    answers = [
        (quota, raised.get(next((k for k, q in QUOTA.items() if q == quota), ""), value))
        for quota, value in PROD_QUOTAS
    ]
    stubbed, _ = with_quotas(clients, answers)
    results = run_preflight(real_values("prod"), stubbed)
    assert {r.name for r in results if r.status is not Status.PASS} == {"cluster-access"}  # the private endpoint
    assert exit_code(results) == 0


@pytest.mark.slow
def test_the_report_renders_as_a_table_markdown_and_json(prod_results):
    results = prod_results
    table = render_table(results, title="Preflight of stack 'prod'")
    assert "FAIL  spot-service-linked-role" in table
    assert table.rstrip().endswith(f"{sum(r.status is Status.PASS for r in results)} PASS, 3 WARN, 14 FAIL, 0 ERROR")
    assert render_markdown(results).splitlines()[0] == "| status | check | evidence | fix |"
    document = json.loads(render_json(results, stack="prod", region="us-west-2"))
    assert document["summary"]["FAIL"] == 14
    assert {"name", "status", "evidence", "fix"} == set(document["checks"][0])


@pytest.mark.slow
def test_the_command_line_exits_1_on_a_failure_and_prints_json(clients, monkeypatch, capsys):
    create_admin_role(clients)
    answer_ebs_default_key(clients.ec2, "alias/aws/ebs")
    stubbed, _ = with_quotas(clients, PROD_QUOTAS)
    monkeypatch.setattr(cli.Clients, "from_session", classmethod(lambda cls, session: stubbed))
    assert cli.main(["--stack", "prod", "--project-dir", str(REPO), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["stack"] == "prod"
    # The checks of run_preflight, and the connector's client secret the shipped stack file does not set.
    assert document["summary"]["FAIL"] == 15
    names = [c["name"] for c in document["checks"] if c["status"] == "FAIL"]
    assert "secret/kubeflowOidcClientSecret" in names


def test_the_command_line_exits_2_on_an_invalid_stack(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: eks-ml-platform\n")
    (tmp_path / "Pulumi.broken.yaml").write_text("config:\n  aws:region: us-west-2\n")
    assert cli.main(["--stack", "broken", "--project-dir", str(tmp_path)]) == 2
    assert "  - environment: is required" in capsys.readouterr().err
    assert cli.main(["--stack", "missing", "--project-dir", str(tmp_path)]) == 2


def test_a_profile_this_machine_does_not_have_is_an_identity_error(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    (tmp_path / "Pulumi.yaml").write_text("name: eks-ml-platform\n")
    stack = (
        (REPO / "Pulumi.dev.yaml")
        .read_text()
        .replace("  aws:region: us-west-2\n", "  aws:region: us-west-2\n  aws:profile: nowhere\n")
    )
    (tmp_path / "Pulumi.dev.yaml").write_text(stack)
    # the placeholders of the shipped dev stack fail (1) whatever AWS answers
    assert cli.main(["--stack", "dev", "--project-dir", str(tmp_path), "--json"]) == 1
    *placeholders, check = json.loads(capsys.readouterr().out)["checks"]
    assert {p["status"] for p in placeholders} == {"FAIL"}
    assert (check["name"], check["status"]) == ("identity", "ERROR")
    assert "nowhere" in check["evidence"]


# ------------------------------------------------------------------------------------ launchability and errors

TRAINING_ONLY_P5 = {
    "kubeflow": {"enabled": False},
    "karpenter": {
        "nodeClasses": {"gpu-training": {"preset": "gpu-training"}},
        "nodePools": {
            "training": {
                "preset": "gpu-training",
                "instanceFamilies": ["p5"],
                "instanceSizes": ["48xlarge"],
                "limits": {"nvidia.com/gpu": "4"},
            }
        },
    },
}


def test_a_pool_whose_limit_is_below_every_allowed_type_fails(clients):
    from components.tools.preflight.runner import capacity_checks

    config = platform_config("dev", TRAINING_ONLY_P5)
    stubbed, _ = with_quotas(clients, [(QUOTA["standard-on-demand"], 64.0)])
    results = {r.name: r for r in capacity_checks(config, stubbed)}
    result = results["nodepool/training"]
    assert result.status is Status.FAIL
    assert "limits 4 nvidia.com/gpu: every allowed type exceeds them (p5.48xlarge brings 8 nvidia.com/gpu)" in (
        result.evidence
    )


def test_an_endpoint_error_is_one_error_row_and_the_run_goes_on(clients, capsys, monkeypatch):
    from botocore.exceptions import EndpointConnectionError

    def unreachable(**_):
        raise EndpointConnectionError(endpoint_url="https://fsx.us-west-2.amazonaws.com/")

    create_admin_role(clients)
    answer_ebs_default_key(clients.ec2, "alias/aws/ebs")
    clients.fsx.meta.events.register("before-call.fsx.DescribeFileSystems", unreachable)
    # An API the partition lacks, as a server answers it
    clients.logs.meta.events.register(
        "before-call.cloudwatch-logs.DescribeLogGroups",
        lambda **_: (
            __import__("botocore.awsrequest").awsrequest.AWSResponse("https://logs", 400, {}, None),
            {"Error": {"Code": "UnknownOperationException", "Message": "not served in this partition"}},
        ),
    )
    stubbed, _ = with_quotas(clients, PROD_QUOTAS)
    monkeypatch.setattr(cli.Clients, "from_session", classmethod(lambda cls, session: stubbed))
    monkeypatch.setattr(cli, "run_preflight", lambda config, c: run_preflight(real_values("prod"), c))
    assert cli.main(["--stack", "prod", "--project-dir", str(REPO), "--json"]) == 1
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["quota/fsx-storage"]["status"] == "ERROR"
    assert "Could not connect to the endpoint URL" in checks["quota/fsx-storage"]["evidence"]
    assert checks["name/log-group"]["status"] == "ERROR"
    assert "UnknownOperationException: not served in this partition" in checks["name/log-group"]["evidence"]
    assert checks["name/cluster"]["status"] == "PASS"  # the run went on
    errors = [name for name, c in checks.items() if c["status"] == "ERROR"]
    assert errors == ["quota/fsx-storage", "name/log-group"]


def test_errors_without_a_failure_exit_3():
    from components.tools.preflight.results import CheckResult

    assert exit_code([CheckResult("x", Status.PASS, ""), CheckResult("y", Status.ERROR, "")]) == 3
    assert exit_code([CheckResult("y", Status.ERROR, ""), CheckResult("z", Status.FAIL, "")]) == 1
    assert exit_code([CheckResult("x", Status.WARN, "")]) == 0
