"""The fake provider plugins of the engine tier (engine/providers), started as the engine starts them and spoken to
over gRPC: they must answer what the offline preview's mocks answer, and refuse where the real providers refuse."""

from __future__ import annotations

import json
import os
import select
import string
import subprocess
import sys
from collections.abc import Iterator, Mapping
from concurrent import futures
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc, resource_pb2, resource_pb2_grpc

from components import aws_names
from components.tools.preview.answers import DEFAULT_CALLER, PlatformMocks
from engine.providers import write_plugin_dirs
from engine.providers.common import to_dict, to_struct

from ..conftest import REPO

pytestmark = pytest.mark.subprocess

REGION = "us-west-2"  # the dev stack's aws:region
UNKNOWN = rpc.UNKNOWN
SECRET = {rpc._special_sig_key: rpc._special_secret_sig}
PARENT = "eksml:test:Part"
LOCAL_SERVER = "https://127.0.0.1:6443"


# ------------------------------------------------------------------------------------------------------ helpers


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:dev::eks-ml-platform::{PARENT}${type_}::{name}"


def secret(value: Any) -> dict[str, Any]:
    return {**SECRET, "value": value}


@dataclass
class Plugin:
    process: subprocess.Popen[bytes]
    channel: grpc.Channel
    stub: provider_pb2_grpc.ResourceProviderStub = field(init=False)

    def __post_init__(self) -> None:
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)

    def stop(self) -> None:
        self.channel.close()
        self.process.terminate()
        self.process.wait(timeout=10)
        assert self.process.stdout is not None
        self.process.stdout.close()


def read_port(process: subprocess.Popen[bytes], *, timeout: float = 60) -> int:
    """The port a plugin prints as the first line of stdout (the engine's contract)."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline() if ready else b""
    if not line:
        process.kill()
        pytest.fail(f"the plugin printed no port (exit status {process.wait()})")
    return int(line)


_READ_BY_PLUGINS = {"AWS_REGION", "AWS_DEFAULT_REGION", "EKSML_ENGINE_KUBECONFIG"}


def start(command: list[str], env: Mapping[str, str], cwd: Path = REPO) -> Plugin:
    # Nothing of the developer's environment that the plugins read: each test says what they get.
    environment = {k: v for k, v in os.environ.items() if k not in _READ_BY_PLUGINS}
    environment.update(env)
    process = subprocess.Popen(command, cwd=cwd, env=environment, stdout=subprocess.PIPE)
    port = read_port(process)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    grpc.channel_ready_future(channel).result(timeout=30)
    return Plugin(process, channel)


def start_fake(name: str, env: Mapping[str, str] | None = None) -> Plugin:
    # As the engine starts a plugin: its own address last, after logging and tracing flags.
    command = [
        sys.executable,
        "-m",
        f"engine.providers.{name}",
        "--logtostderr",
        "-v=9",
        "--tracing",
        "x",
        "127.0.0.1:1",
    ]
    return start(command, {"PYTHONPATH": str(REPO), **(env or {})})


@pytest.fixture(scope="module")
def aws() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    plugin = start_fake("aws")
    plugin.stub.Configure(provider_pb2.ConfigureRequest(args=to_struct({"region": REGION})))
    yield plugin.stub
    plugin.stop()


@pytest.fixture(scope="module")
def random_provider() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    plugin = start_fake("random")
    plugin.stub.Configure(provider_pb2.ConfigureRequest())
    yield plugin.stub
    plugin.stop()


@pytest.fixture(scope="module")
def local_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig of a local API server, as the engine tier's harness writes one."""
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": LOCAL_SERVER, "certificate-authority-data": "Q0E="}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}],
        "current-context": "local",
        "users": [{"name": "admin", "user": {"client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"}}],
    }
    path = tmp_path_factory.mktemp("engine") / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump(kubeconfig))
    return path


@pytest.fixture(scope="module")
def eks(local_kubeconfig: Path) -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    plugin = start_fake("eks", {"EKSML_ENGINE_KUBECONFIG": str(local_kubeconfig)})
    plugin.stub.Configure(provider_pb2.ConfigureRequest())
    yield plugin.stub
    plugin.stop()


@pytest.fixture
def mocks() -> PlatformMocks:
    return PlatformMocks(REGION)


def check(
    stub: provider_pb2_grpc.ResourceProviderStub,
    type_: str,
    name: str,
    news: Mapping[str, Any],
    olds: Mapping[str, Any] | None = None,
) -> provider_pb2.CheckResponse:
    request = provider_pb2.CheckRequest(
        urn=urn(type_, name), name=name, type=type_, news=to_struct(news), olds=to_struct(olds or {})
    )
    return stub.Check(request)


def create(
    stub: provider_pb2_grpc.ResourceProviderStub,
    type_: str,
    name: str,
    inputs: struct_pb2.Struct,
    *,
    preview: bool = False,
) -> provider_pb2.CreateResponse:
    request = provider_pb2.CreateRequest(
        urn=urn(type_, name), name=name, type=type_, properties=inputs, preview=preview
    )
    return stub.Create(request)


def diff(
    stub: provider_pb2_grpc.ResourceProviderStub,
    type_: str,
    name: str,
    olds: struct_pb2.Struct,
    old_inputs: struct_pb2.Struct,
    news: struct_pb2.Struct,
) -> provider_pb2.DiffResponse:
    request = provider_pb2.DiffRequest(
        urn=urn(type_, name), name=name, type=type_, id="x", olds=olds, old_inputs=old_inputs, news=news
    )
    return stub.Diff(request)


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


# ------------------------------------------------------------------------------------------------------ random

PASSWORD = "random:index/randomPassword:RandomPassword"


def password(stub: provider_pb2_grpc.ResourceProviderStub, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    checked = check(stub, PASSWORD, name, inputs)
    assert list(checked.failures) == []
    return to_dict(create(stub, PASSWORD, name, checked.inputs).properties)


def test_a_password_honours_length_and_special(random_provider: provider_pb2_grpc.ResourceProviderStub) -> None:
    plain = password(random_provider, "grafana-admin", {"length": 24, "special": False})
    assert plain["result"][rpc._special_sig_key] == rpc._special_secret_sig
    result = plain["result"]["value"]
    assert len(result) == 24
    assert set(result) <= set(string.ascii_letters + string.digits)

    chosen = password(
        random_provider, "db", {"length": 40, "upper": False, "overrideSpecial": "#", "minSpecial": 5, "minNumeric": 3}
    )["result"]["value"]
    assert len(chosen) == 40
    assert set(chosen) <= set(string.ascii_lowercase + string.digits + "#")
    assert chosen.count("#") >= 5
    assert sum(c.isdigit() for c in chosen) >= 3


def test_passwords_are_random_and_carry_a_bcrypt_hash(
    random_provider: provider_pb2_grpc.ResourceProviderStub, mocks: PlatformMocks
) -> None:
    first, second = (password(random_provider, "cookie", {"length": 32}) for _ in range(2))
    assert first["result"] != second["result"]
    assert first["bcryptHash"]["value"].startswith("$2")
    assert len(first["bcryptHash"]["value"]) == 60
    checked = check(random_provider, PASSWORD, "cookie", {"length": 32}).inputs
    expected_id, _ = mocks.new_resource(pulumi_mocks.MockResourceArgs(PASSWORD, "cookie", {"length": 32}, custom=True))
    assert create(random_provider, PASSWORD, "cookie", checked).id == expected_id


def test_a_password_is_stable_under_diff_and_read(random_provider: provider_pb2_grpc.ResourceProviderStub) -> None:
    inputs = {"length": 32, "special": False}
    checked = check(random_provider, PASSWORD, "katib", inputs).inputs
    created = create(random_provider, PASSWORD, "katib", checked)
    again = check(random_provider, PASSWORD, "katib", inputs, to_dict(checked)).inputs
    unchanged = diff(random_provider, PASSWORD, "katib", created.properties, checked, again)
    assert unchanged.changes == provider_pb2.DiffResponse.DIFF_NONE

    read = random_provider.Read(
        provider_pb2.ReadRequest(
            id=created.id, urn=urn(PASSWORD, "katib"), properties=created.properties, inputs=checked
        )
    )
    assert to_dict(read.properties)["result"] == to_dict(created.properties)["result"]

    longer = diff(random_provider, PASSWORD, "katib", created.properties, checked, to_struct({**inputs, "length": 40}))
    assert list(longer.replaces) == ["length"]  # a new password, never an edited one


def test_a_password_in_preview_is_unknown(random_provider: provider_pb2_grpc.ResourceProviderStub) -> None:
    checked = check(random_provider, PASSWORD, "p", {"length": 16}).inputs
    outputs = to_dict(create(random_provider, PASSWORD, "p", checked, preview=True).properties)
    assert outputs["result"] == secret(UNKNOWN)


@pytest.mark.parametrize(
    ("inputs", "refused"),
    [
        ({"length": 0}, "length"),
        ({"length": 4, "minUpper": 2, "minSpecial": 3}, "length"),
        ({"length": 8, "minNumeric": -1}, "minNumeric"),
        ({"length": 8, "upper": False, "lower": False, "numeric": False, "special": False}, "special"),
    ],
)
def test_check_refuses_what_pulumi_random_refuses(
    random_provider: provider_pb2_grpc.ResourceProviderStub, inputs: dict[str, Any], refused: str
) -> None:
    assert [failure.property for failure in check(random_provider, PASSWORD, "p", inputs).failures] == [refused]


# --------------------------------------------------------------------------------------------------------- eks


class RecordingMonitor(resource_pb2_grpc.ResourceMonitorServicer):
    """The engine's resource monitor, as far as a component provider uses it: it records what it is sent."""

    def __init__(self) -> None:
        self.registered: list[resource_pb2.RegisterResourceRequest] = []
        self.urns: list[str] = []
        self.outputs: dict[str, dict[str, Any]] = {}

    def RegisterResource(self, request: resource_pb2.RegisterResourceRequest, context: Any) -> Any:
        self.registered.append(request)
        # As the engine makes a URN: the parent's chain of types, then the resource's own.
        chain = f"{request.parent.split('::')[2]}${request.type}" if request.parent else request.type
        self.urns.append(f"urn:pulumi:dev::eks-ml-platform::{chain}::{request.name}")
        resource_id = to_dict(request.object).get("name", "") if request.custom else ""
        return resource_pb2.RegisterResourceResponse(urn=self.urns[-1], id=resource_id, object=request.object)

    def RegisterResourceOutputs(self, request: resource_pb2.RegisterResourceOutputsRequest, context: Any) -> Any:
        self.outputs[request.urn] = to_dict(request.outputs)
        return empty_pb2.Empty()


@pytest.fixture
def monitor() -> Iterator[tuple[RecordingMonitor, str]]:
    recording = RecordingMonitor()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(recording, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield recording, f"127.0.0.1:{port}"
    server.stop(grace=None)


AWS_PROVIDER = "urn:pulumi:dev::eks-ml-platform::pulumi:providers:aws::aws::0f2e"
SUBNET = urn("aws:ec2/subnet:Subnet", "network-private-a")
LOG_GROUP = urn("aws:cloudwatch/logGroup:LogGroup", "cluster-control-plane")
CLUSTER_INPUTS = {
    "name": "eks-ml-platform-dev",
    "version": "1.35",
    "privateSubnetIds": ["subnet-1", "subnet-2"],
    "endpointPrivateAccess": True,
    "endpointPublicAccess": True,
    "publicAccessCidrs": ["203.0.113.0/24"],
    "authenticationMode": "API",
    "encryptionConfigKeyArn": "arn:aws:kms:us-west-2:123456789012:key/k",
    "accessEntries": {
        "platform-admins": {"principalArn": "arn:aws:iam::123456789012:role/PlatformAdmin", "accessPolicies": {}}
    },
}


def construct(
    stub: provider_pb2_grpc.ResourceProviderStub, endpoint: str, inputs: Mapping[str, Any]
) -> provider_pb2.ConstructResponse:
    return stub.Construct(
        provider_pb2.ConstructRequest(
            project="eks-ml-platform",
            stack="dev",
            config={"aws:region": REGION},
            monitorEndpoint=endpoint,
            type="eks:index:Cluster",
            name="cluster-eks",
            parent=f"urn:pulumi:dev::eks-ml-platform::{PARENT}::cluster",
            inputs=to_struct(inputs),
            inputDependencies={"privateSubnetIds": provider_pb2.ConstructRequest.PropertyDependencies(urns=[SUBNET])},
            dependencies=[LOG_GROUP],
            providers={"aws": AWS_PROVIDER},
        )
    )


def test_construct_registers_the_inner_cluster_and_answers_as_the_mocks(
    eks: provider_pb2_grpc.ResourceProviderStub,
    monitor: tuple[RecordingMonitor, str],
    mocks: PlatformMocks,
    local_kubeconfig: Path,
) -> None:
    recording, endpoint = monitor
    response = construct(eks, endpoint, CLUSTER_INPUTS)

    component, inner = recording.registered
    assert (component.type, component.name, component.custom, component.providers["aws"]) == (
        "eks:index:Cluster",
        "cluster-eks",
        False,
        AWS_PROVIDER,
    )
    _, cluster_inputs, _ = mocks.eks_inner_cluster(urn="", component_name="cluster-eks", inputs=CLUSTER_INPUTS)
    assert (inner.type, inner.name, inner.parent, inner.provider) == (
        "aws:eks/cluster:Cluster",
        "cluster-eks-eksCluster",
        response.urn,
        AWS_PROVIDER,
    )
    assert to_dict(inner.object) == cluster_inputs
    assert {SUBNET, LOG_GROUP} <= set(
        inner.dependencies
    )  # the cluster waits for, and outlives, what the component does

    state = to_dict(response.state)
    _, expected = mocks.new_resource(
        pulumi_mocks.MockResourceArgs("eks:index:Cluster", "cluster-eks", CLUSTER_INPUTS, custom=False)
    )
    for key in ("oidcIssuer", "oidcProviderUrl", "oidcProviderArn", "clusterSecurityGroupId", "nodeSecurityGroupId"):
        assert state[key] == expected[key], key
    reference = state["eksCluster"]
    assert reference[rpc._special_sig_key] == rpc._special_resource_sig
    assert (response.urn, reference["urn"], reference["id"]) == (*recording.urns, "eks-ml-platform-dev")
    kubeconfig = json.loads(state["kubeconfigJson"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == LOCAL_SERVER
    assert kubeconfig["users"] == yaml.safe_load(local_kubeconfig.read_text())["users"]
    assert recording.outputs[response.urn] == state


def test_construct_refuses_an_access_entry_for_the_clusters_creator(
    eks: provider_pb2_grpc.ResourceProviderStub, monitor: tuple[RecordingMonitor, str]
) -> None:
    recording, endpoint = monitor
    entries = {"me": {"principalArn": DEFAULT_CALLER, "accessPolicies": {}}}
    with pytest.raises(grpc.RpcError) as refused:
        construct(eks, endpoint, {**CLUSTER_INPUTS, "accessEntries": entries})
    assert "ResourceInUseException" in str(refused.value.details())
    assert recording.registered == []  # nothing is left half made


def get_kubeconfig(stub: provider_pb2_grpc.ResourceProviderStub, component_urn: str, profile: str) -> dict[str, Any]:
    reference = {rpc._special_sig_key: rpc._special_resource_sig, "urn": component_urn}
    answer = stub.Call(
        provider_pb2.CallRequest(
            tok="eks:index:Cluster/getKubeconfig",
            args=to_struct({"__self__": reference, "profileName": profile}),
            config={"aws:region": REGION},
        )
    )
    return json.loads(to_dict(getattr(answer, "return"))["result"])


def test_get_kubeconfig_answers_the_local_api_servers_kubeconfig(
    eks: provider_pb2_grpc.ResourceProviderStub, monitor: tuple[RecordingMonitor, str]
) -> None:
    response = construct(eks, monitor[1], CLUSTER_INPUTS)
    kubeconfig = get_kubeconfig(eks, response.urn, "admin")
    assert kubeconfig == json.loads(to_dict(response.state)["kubeconfigJson"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == LOCAL_SERVER


def test_without_a_local_kubeconfig_the_cluster_answers_the_mocks_kubeconfig(
    monitor: tuple[RecordingMonitor, str], mocks: PlatformMocks
) -> None:
    plugin = start_fake("eks")
    try:
        response = construct(plugin.stub, monitor[1], CLUSTER_INPUTS)
        _, expected = mocks.new_resource(
            pulumi_mocks.MockResourceArgs("eks:index:Cluster", "cluster-eks", CLUSTER_INPUTS, custom=False)
        )
        assert to_dict(response.state)["kubeconfigJson"] == expected["kubeconfigJson"]
        profiled = mocks.answer(
            pulumi_mocks.MockCallArgs(
                "eks:index:Cluster/getKubeconfig", {"__self__": "cluster-eks", "profileName": "admin"}, ""
            )
        )
        assert get_kubeconfig(plugin.stub, response.urn, "admin") == json.loads(profiled["result"])
    finally:
        plugin.stop()
