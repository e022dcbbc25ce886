"""The fake `eks` provider plugin (engine/providers/eks.py), spoken to over gRPC with a recording resource monitor:
Construct registers pulumi-eks's component and its inner cluster as the offline preview's mocks describe them, refuses
what they refuse, and getKubeconfig answers the local API server's kubeconfig (else the mocks')."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc, resource_pb2, resource_pb2_grpc

from components.tools.preview.answers import DEFAULT_CALLER, PlatformMocks
from engine.providers.common import to_dict, to_struct

from .fake_plugins import PARENT, REGION, start_fake, urn

pytestmark = pytest.mark.subprocess


LOCAL_SERVER = "https://127.0.0.1:6443"


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
