"""Starting the engine tier's fake provider plugins (engine/providers) as the engine starts them, and speaking to
them over gRPC, for the tests that hold them to the offline preview's mocks (test_fake_aws.py, test_fake_random.py,
test_fake_eks.py)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from engine.providers.common import to_struct

from ..conftest import REPO

REGION = "us-west-2"  # the dev stack's aws:region
UNKNOWN = rpc.UNKNOWN
SECRET = {rpc._special_sig_key: rpc._special_secret_sig}
PARENT = "eksml:test:Part"


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
