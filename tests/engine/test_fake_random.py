"""The fake `random` provider plugin (engine/providers/random.py), spoken to over gRPC: passwords as pulumi-random
makes them (length and character classes, secret, stable until their inputs change, unknown in preview), refused
where pulumi-random refuses, with the ids the offline preview's mocks give."""

from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any

import pytest
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from components.tools.preview.answers import PlatformMocks
from engine.providers.common import to_dict, to_struct

from .fake_plugins import UNKNOWN, check, create, diff, secret, start_fake, urn

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def random_provider() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    plugin = start_fake("random")
    plugin.stub.Configure(provider_pb2.ConfigureRequest())
    yield plugin.stub
    plugin.stop()


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
