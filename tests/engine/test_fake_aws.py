"""The fake `aws` provider plugin (engine/providers/aws.py), started as the engine starts it and spoken to over
gRPC: it must answer what the offline preview's mocks answer, and refuse where the real provider refuses; and every
fake plugin started from the script the engine runs serves its SDK's version."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from components import aws_names
from components.tools.preview.answers import DEFAULT_CALLER, PlatformMocks
from components.tools.recover import LOOKUP_KEYS
from engine import aws_cli
from engine.faults import aws_commands, runbook_block
from engine.providers import write_plugin_dirs
from engine.providers.account import ACCOUNT, ACCOUNT_ENV, UNIQUE_NAMES
from engine.providers.aws import SLOW_CREATE_ENV
from engine.providers.common import to_dict, to_struct

from .fake_plugins import REGION, UNKNOWN, check, create, diff, secret, start, start_fake, urn

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def aws() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    plugin = start_fake("aws")
    plugin.stub.Configure(provider_pb2.ConfigureRequest(args=to_struct({"region": REGION})))
    yield plugin.stub
    plugin.stop()


# ----------------------------------------------------------------------------------------------------- plugins


@pytest.mark.parametrize(("name", "distribution"), [("aws", "pulumi_aws"), ("random", "pulumi_random")])
def test_a_plugin_started_from_its_written_script_serves_the_version_of_its_sdk(
    name: str, distribution: str, tmp_path: Path
) -> None:
    script = write_plugin_dirs(tmp_path / "plugins", sys.executable)[name] / f"pulumi-resource-{name}"
    # Started from another directory with no PYTHONPATH, as the engine starts it.
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    plugin = start([str(script), "127.0.0.1:1"], environment, cwd=tmp_path)
    try:
        info = plugin.stub.GetPluginInfo(empty_pb2.Empty())
        assert info.version == metadata.version(distribution)
    finally:
        plugin.stop()


# --------------------------------------------------------------------------------------------------------- aws


@pytest.mark.parametrize(
    "type_",
    [
        "aws:iam/role:Role",
        "aws:sqs/queue:Queue",
        "aws:s3/bucket:Bucket",
        "aws:cloudwatch/eventRule:EventRule",
        "aws:eks/nodeGroup:NodeGroup",  # the provider allows 255, AWS 63: refused in preview all the same
    ],
)
def test_check_refuses_an_auto_name_exactly_where_aws_names_does(
    aws: provider_pb2_grpc.ResourceProviderStub, type_: str
) -> None:
    rule = aws_names.NAME_RULES[type_]
    longest = "n" * aws_names.longest_logical_name(type_)

    fits = check(aws, type_, longest, {})
    assert list(fits.failures) == []
    assert to_dict(fits.inputs)[rule.property] == aws_names.auto_name(type_, longest)

    with pytest.raises(aws_names.NameTooLong) as refused:
        aws_names.auto_name(type_, longest + "n")
    too_long = check(aws, type_, longest + "n", {})
    assert [(failure.property, failure.reason) for failure in too_long.failures] == [
        (rule.property, str(refused.value))
    ]


def test_check_refuses_an_explicit_name_past_the_limit_and_keeps_one_that_fits(
    aws: provider_pb2_grpc.ResourceProviderStub,
) -> None:
    assert [failure.property for failure in check(aws, "aws:iam/role:Role", "node", {"name": "r" * 65}).failures] == [
        "name"
    ]
    fits = check(aws, "aws:iam/role:Role", "node", {"name": "r" * 64})
    assert list(fits.failures) == []
    assert to_dict(fits.inputs)["name"] == "r" * 64


def test_check_keeps_the_auto_name_the_state_holds(aws: provider_pb2_grpc.ResourceProviderStub) -> None:
    kept = check(aws, "aws:iam/role:Role", "karpenter-node", {}, olds={"name": "karpenter-node-1234567"})
    assert to_dict(kept.inputs)["name"] == "karpenter-node-1234567"
    first, again = (check(aws, "aws:iam/role:Role", "karpenter-node", {}) for _ in range(2))
    assert to_dict(first.inputs)["name"] == to_dict(again.inputs)["name"] == "karpenter-node-ec02031"


@pytest.mark.parametrize(
    ("type_", "name", "inputs"),
    [
        ("aws:ec2/vpc:Vpc", "network-vpc", {"cidrBlock": "10.20.0.0/16"}),
        ("aws:iam/role:Role", "karpenter-node", {"assumeRolePolicy": "{}"}),
        ("aws:s3/bucket:Bucket", "storage-Datasets", {"forceDestroy": True}),
        ("aws:kms/key:Key", "cluster-secrets", {"enableKeyRotation": True, "deletionWindowInDays": 7}),
        ("aws:fsx/lustreFileSystem:LustreFileSystem", "storage-fsx", {"storageCapacity": 1200}),
        ("aws:ec2/launchTemplate:LaunchTemplate", "cluster-system", {"updateDefaultVersion": True}),
        ("aws:sqs/queue:Queue", "karpenter-interruption", {"messageRetentionSeconds": 300}),
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "api-from-x", {"fromPort": 443}),
    ],
)
def test_check_and_create_answer_what_the_mocks_answer(
    aws: provider_pb2_grpc.ResourceProviderStub,
    mocks: PlatformMocks,
    type_: str,
    name: str,
    inputs: dict[str, Any],
) -> None:
    expected_id, expected = mocks.new_resource(pulumi_mocks.MockResourceArgs(type_, name, inputs, custom=True))
    checked = check(aws, type_, name, inputs)
    assert list(checked.failures) == []
    for preview in (True, False):  # the same in `pulumi preview` as in `pulumi up`
        created = create(aws, type_, name, checked.inputs, preview=preview)
        assert (created.id, to_dict(created.properties)) == (expected_id, expected)


def test_the_inner_eks_cluster_is_created_as_the_mocks_describe_it(
    aws: provider_pb2_grpc.ResourceProviderStub, mocks: PlatformMocks
) -> None:
    inputs = {"name": "eks-ml-platform-dev", "version": "1.35"}
    checked = check(aws, "aws:eks/cluster:Cluster", "cluster-eks-eksCluster", inputs)
    created = create(aws, "aws:eks/cluster:Cluster", "cluster-eks-eksCluster", checked.inputs)
    _, _, described = mocks.eks_inner_cluster(urn="", component_name="cluster-eks", inputs=inputs)
    assert created.id == described["id"] == "eks-ml-platform-dev"
    assert to_dict(created.properties)["arn"] == described["arn"]


def test_diff_reports_no_change_for_the_same_inputs_an_update_for_tags_and_a_replacement_for_the_name(
    aws: provider_pb2_grpc.ResourceProviderStub,
) -> None:
    type_, name = "aws:sqs/queue:Queue", "karpenter-interruption"
    checked = check(aws, type_, name, {"messageRetentionSeconds": 300, "tags": {"team": "a"}}).inputs
    outputs = create(aws, type_, name, checked).properties
    again = check(aws, type_, name, {"messageRetentionSeconds": 300, "tags": {"team": "a"}}, to_dict(checked)).inputs
    assert diff(aws, type_, name, outputs, checked, again).changes == provider_pb2.DiffResponse.DIFF_NONE

    retagged = diff(aws, type_, name, outputs, checked, to_struct({**to_dict(checked), "tags": {"team": "b"}}))
    assert (retagged.changes, list(retagged.diffs), list(retagged.replaces)) == (
        provider_pb2.DiffResponse.DIFF_SOME,
        ["tags"],
        [],
    )
    renamed = diff(aws, type_, name, outputs, checked, to_struct({**to_dict(checked), "name": "interruption"}))
    assert list(renamed.replaces) == ["name"]
    assert renamed.detailedDiff["name"].kind == provider_pb2.PropertyDiff.UPDATE_REPLACE


def test_unknown_inputs_pass_through_a_preview(aws: provider_pb2_grpc.ResourceProviderStub) -> None:
    subnet = check(aws, "aws:ec2/subnet:Subnet", "network-private-a", {"vpcId": UNKNOWN, "cidrBlock": "10.20.0.0/19"})
    assert to_dict(subnet.inputs)["vpcId"] == UNKNOWN
    assert (
        to_dict(create(aws, "aws:ec2/subnet:Subnet", "network-private-a", subnet.inputs, preview=True).properties)[
            "vpcId"
        ]
        == UNKNOWN
    )

    # A name not known yet is checked once known; what derives from it is unknown too.
    role = check(aws, "aws:iam/role:Role", "node", {"name": UNKNOWN})
    assert list(role.failures) == []
    outputs = to_dict(create(aws, "aws:iam/role:Role", "node", role.inputs, preview=True).properties)
    assert (outputs["name"], outputs["arn"]) == (UNKNOWN, UNKNOWN)


def test_a_secret_input_stays_secret_in_the_outputs(aws: provider_pb2_grpc.ResourceProviderStub) -> None:
    policy = secret('{"Statement": []}')
    checked = check(aws, "aws:sqs/queuePolicy:QueuePolicy", "interruption", {"queueUrl": "u", "policy": policy})
    outputs = to_dict(create(aws, "aws:sqs/queuePolicy:QueuePolicy", "interruption", checked.inputs).properties)
    assert outputs["policy"] == policy


def test_read_finds_the_state_unchanged(aws: provider_pb2_grpc.ResourceProviderStub) -> None:
    checked = check(aws, "aws:ec2/vpc:Vpc", "network-vpc", {"cidrBlock": "10.20.0.0/16"}).inputs
    created = create(aws, "aws:ec2/vpc:Vpc", "network-vpc", checked)
    read = aws.Read(
        provider_pb2.ReadRequest(
            id=created.id, urn=urn("aws:ec2/vpc:Vpc", "network-vpc"), properties=created.properties, inputs=checked
        )
    )
    assert (read.id, to_dict(read.properties), to_dict(read.inputs)) == (
        created.id,
        to_dict(created.properties),
        to_dict(checked),
    )


def test_another_stacks_read_finds_the_add_on_a_stack_made_in_the_account_until_it_is_deleted(
    tmp_path: Path,
) -> None:
    """A team stack reads the platform's add-ons with `.get` by the id pulumi-aws gives them (`<cluster>:<name>`):
    two provider processes (two stacks' `pulumi up`) share what exists in the account, as AWS does."""
    account = {"EKSML_ENGINE_ACCOUNT": str(tmp_path / "account")}
    addon = "aws:eks/addon:Addon"
    inputs = {"clusterName": "eks-ml-platform-dev", "addonName": "coredns", "addonVersion": "v1.12.4-eksbuild.1"}
    platform, team = start_fake("aws", account), start_fake("aws", account)
    try:
        for plugin in (platform, team):
            plugin.stub.Configure(provider_pb2.ConfigureRequest(args=to_struct({"region": REGION})))
        created = create(
            platform.stub, addon, "cluster-coredns", check(platform.stub, addon, "cluster-coredns", inputs).inputs
        )
        assert created.id == "eks-ml-platform-dev:coredns"

        def read() -> provider_pb2.ReadResponse:
            request = provider_pb2.ReadRequest(id=created.id, urn=urn(addon, "platform-coredns"))
            return team.stub.Read(request)

        assert to_dict(read().properties)["addonVersion"] == "v1.12.4-eksbuild.1"
        platform.stub.Delete(provider_pb2.DeleteRequest(id=created.id, urn=urn(addon, "cluster-coredns")))
        with pytest.raises(grpc.RpcError, match="do not answer a read"):
            read()
    finally:
        platform.stop()
        team.stop()


def test_invoke_answers_get_caller_identity_as_the_mocks_do(
    aws: provider_pb2_grpc.ResourceProviderStub, mocks: PlatformMocks
) -> None:
    token = "aws:index/getCallerIdentity:getCallerIdentity"
    answer = aws.Invoke(provider_pb2.InvokeRequest(tok=token, args=to_struct({})))
    assert to_dict(getattr(answer, "return")) == mocks.answer(pulumi_mocks.MockCallArgs(token, {}, ""))


def test_invoke_of_a_function_the_mocks_do_not_answer_fails_loudly(aws: provider_pb2_grpc.ResourceProviderStub) -> None:
    with pytest.raises(grpc.RpcError) as failed:
        aws.Invoke(provider_pb2.InvokeRequest(tok="aws:ec2/getAmi:getAmi", args=to_struct({"owners": ["amazon"]})))
    assert "do not answer aws:ec2/getAmi:getAmi" in str(failed.value.details())


def test_an_access_entry_for_the_clusters_creator_is_refused_when_created(
    aws: provider_pb2_grpc.ResourceProviderStub,
) -> None:
    type_ = "aws:eks/accessEntry:AccessEntry"
    creator = check(aws, type_, "me", {"clusterName": "eks-ml-platform-dev", "principalArn": DEFAULT_CALLER}).inputs
    create(aws, type_, "me", creator, preview=True)  # AWS is not asked in preview
    with pytest.raises(grpc.RpcError) as refused:
        create(aws, type_, "me", creator)
    assert "ResourceInUseException" in str(refused.value.details())

    other = {"clusterName": "eks-ml-platform-dev", "principalArn": "arn:aws:iam::123456789012:role/karpenter-node"}
    assert create(aws, type_, "node", check(aws, type_, "node", other).inputs).id


def test_the_provider_needs_a_region_from_its_config() -> None:
    plugin = start_fake("aws")
    try:
        missing = plugin.stub.CheckConfig(provider_pb2.CheckRequest(urn="urn:x::y::pulumi:providers:aws::aws"))
        assert [failure.property for failure in missing.failures] == ["region"]
        # Configure's variables name stack config keys `<package>:config:<key>`.
        plugin.stub.Configure(provider_pb2.ConfigureRequest(variables={"aws:config:region": "eu-west-1"}))
        answer = plugin.stub.Invoke(
            provider_pb2.InvokeRequest(tok="aws:index/getPartition:getPartition", args=to_struct({}))
        )
        assert to_dict(getattr(answer, "return"))["partition"] == "aws"
        checked = check(plugin.stub, "aws:kms/key:Key", "k", {})
        assert to_dict(create(plugin.stub, "aws:kms/key:Key", "k", checked.inputs).properties)["arn"].startswith(
            "arn:aws:kms:eu-west-1:"
        )
    finally:
        plugin.stop()


# ------------------------------------------------------------------------------------------- names AWS keeps unique

CLUSTER = "eks-ml-platform-dev"
CLUSTER_TAKEN = f"Cluster already exists with name: {CLUSTER}"
NODE_ROLE = "arn:aws:iam::123456789012:role/karpenter-node"


@pytest.fixture
def account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    """A fake provider keeping what it makes in an account folder, which this process reads too."""
    folder = {ACCOUNT_ENV: str(tmp_path / "account")}
    monkeypatch.setenv(ACCOUNT_ENV, folder[ACCOUNT_ENV])
    plugin = start_fake("aws", folder)
    plugin.stub.Configure(provider_pb2.ConfigureRequest(args=to_struct({"region": REGION})))
    yield plugin.stub
    plugin.stop()


@pytest.mark.parametrize(
    ("type_", "inputs", "refusal"),
    [
        (
            "aws:cloudwatch/logGroup:LogGroup",
            {"name": f"/aws/eks/{CLUSTER}/cluster", "retentionInDays": 90},
            "CreateLogGroup, https response error StatusCode: 400, ResourceAlreadyExistsException",
        ),
        (
            "aws:eks/cluster:Cluster",
            {"name": CLUSTER, "version": "1.35"},
            f"CreateCluster, https response error StatusCode: 409, ResourceInUseException: {CLUSTER_TAKEN}",
        ),
        (
            "aws:eks/addon:Addon",
            {"clusterName": CLUSTER, "addonName": "coredns"},
            "CreateAddon, https response error StatusCode: 409, ResourceInUseException",
        ),
        (
            "aws:eks/accessEntry:AccessEntry",
            {"clusterName": CLUSTER, "principalArn": NODE_ROLE},
            "CreateAccessEntry, https response error StatusCode: 409, ResourceInUseException",
        ),
    ],
)
def test_a_fixed_name_the_account_holds_is_refused_as_aws_refuses_it_until_it_is_deleted(
    account: provider_pb2_grpc.ResourceProviderStub, type_: str, inputs: dict[str, Any], refusal: str
) -> None:
    """What a create the state never learned leaves behind: the next `up` creates it again, under another logical
    name or the same, and AWS refuses the name; once the leftover is deleted, the create goes through."""
    first = create(account, type_, "first", check(account, type_, "first", inputs).inputs)
    again = check(account, type_, "again", inputs).inputs
    create(account, type_, "again", again, preview=True)  # AWS is not asked in preview
    with pytest.raises(grpc.RpcError) as refused:
        create(account, type_, "again", again)
    assert refusal in str(refused.value.details())

    account.Delete(provider_pb2.DeleteRequest(id=first.id, urn=urn(type_, "first")))
    assert create(account, type_, "again", again).id


def test_an_auto_named_type_is_not_refused_a_second_create(account: provider_pb2_grpc.ResourceProviderStub) -> None:
    """AWS never sees the same auto-name twice (its suffix is random); the fake's is deterministic, so it must not
    refuse what AWS would take."""
    role = check(account, "aws:iam/role:Role", "karpenter-node", {"assumeRolePolicy": "{}"}).inputs
    assert (
        create(account, "aws:iam/role:Role", "karpenter-node", role).id
        == create(account, "aws:iam/role:Role", "karpenter-node", role).id
    )


# ------------------------------------------------------------------------- a create in flight when the CLI goes

LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
LOG_GROUP_NAME = f"/aws/eks/{CLUSTER}/cluster"


def test_a_slow_create_is_made_in_the_account_though_its_caller_is_gone_and_its_name_is_then_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = str(tmp_path / "account")
    monkeypatch.setenv(ACCOUNT_ENV, folder)
    slow = {ACCOUNT_ENV: folder, SLOW_CREATE_ENV: f"{LOG_GROUP}::cluster-control-plane=30"}
    plugin = start_fake("aws", slow)
    try:
        stub = plugin.stub
        stub.Configure(provider_pb2.ConfigureRequest(args=to_struct({"region": REGION})))
        inputs = check(stub, LOG_GROUP, "cluster-control-plane", {"name": LOG_GROUP_NAME}).inputs
        request = provider_pb2.CreateRequest(
            urn=urn(LOG_GROUP, "cluster-control-plane"), name="cluster-control-plane", type=LOG_GROUP, properties=inputs
        )
        with pytest.raises(grpc.RpcError) as cut:  # the CLI stops waiting (it was killed)
            stub.Create(request, timeout=2)
        assert cut.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert [state["name"] for _, state in ACCOUNT.of_type(LOG_GROUP)] == [LOG_GROUP_NAME]

        # Only the resource named is slow; the next run's create of the same name is refused.
        other = check(stub, LOG_GROUP, "other", {"name": "/aws/other"}).inputs
        assert create(stub, LOG_GROUP, "other", other).id
        with pytest.raises(grpc.RpcError, match="ResourceAlreadyExistsException"):
            create(stub, LOG_GROUP, "cluster-control-plane", inputs)
    finally:
        plugin.stop()


def test_the_aws_stand_in_finds_and_deletes_a_log_group_the_provider_made(
    account: provider_pb2_grpc.ResourceProviderStub, capsys: pytest.CaptureFixture[str]
) -> None:
    """The runbook's lookup and delete, as the AWS CLI answers them."""
    create(account, LOG_GROUP, "cp", check(account, LOG_GROUP, "cp", {"name": LOG_GROUP_NAME}).inputs)
    assert aws_cli.main(["logs", "describe-log-groups", "--log-group-name-prefix", "/aws/eks/"]) == 0
    found = json.loads(capsys.readouterr().out)["logGroups"]
    assert [group["logGroupName"] for group in found] == [LOG_GROUP_NAME]

    assert aws_cli.main(["logs", "delete-log-group", "--log-group-name", LOG_GROUP_NAME]) == 0
    assert aws_cli.main(["logs", "describe-log-groups", "--log-group-name-prefix", "/aws/eks/"]) == 0
    assert json.loads(capsys.readouterr().out) == {"logGroups": []}
    assert aws_cli.main(["logs", "delete-log-group", "--log-group-name", LOG_GROUP_NAME]) == aws_cli.SERVICE_ERROR
    assert "(ResourceNotFoundException) when calling the DeleteLogGroup operation" in capsys.readouterr().err
    assert create(account, LOG_GROUP, "cp", check(account, LOG_GROUP, "cp", {"name": LOG_GROUP_NAME}).inputs).id


@pytest.mark.parametrize("type_", sorted(UNIQUE_NAMES))
def test_the_runbook_says_how_to_find_and_delete_each_name_aws_refuses_twice(type_: str) -> None:
    """Every fixed name the fake refuses to create twice is one the runbook's AWS path tells a user to look up and
    delete, by the inputs the recovery tool prints."""
    look_up, delete = aws_commands(type_)
    for command in (look_up, delete):
        assert command.startswith("aws ")
        assert set(re.findall(r"<(\w+)>", command)) <= set(LOOKUP_KEYS)
    assert runbook_block("repair-aws") == [
        "python -m eks_ml_platform.tools.recover --stack <stack> --apply --clear-unknown"
    ]
