"""What the fake provider plugins share: the plugin's start-up contract, the wire format of property values, and a
ResourceProvider servicer whose resource methods a package fills in.

Property values are handled in their wire form (a protobuf Struct turned into plain dicts and lists), not through the
SDK's deserialiser: a value the engine does not know yet (preview) arrives as the string `UNKNOWN`, a secret as a
dict carrying the secret signature, and both must go back to the engine exactly as they came. `plain()` gives the
view the checks and the mocks read (secrets unwrapped, resource references as their ids); the outputs keep the
wire form of every input they repeat (`merged_outputs`).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass
from importlib import metadata
from typing import Any, TypeVar

import grpc
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.proto import plugin_pb2, provider_pb2, provider_pb2_grpc

#: How the engine sends a value it does not know yet (pulumi/sdk/go/common/resource/plugin/rpc.go, UnknownStringValue).
UNKNOWN: str = rpc.UNKNOWN
_SIG: str = rpc._special_sig_key
_SECRET: str = rpc._special_secret_sig
_RESOURCE: str = rpc._special_resource_sig

#: Big enough for any resource this stack registers (the SDK's own channels allow the same).
GRPC_OPTIONS = [("grpc.max_receive_message_length", 400 * 1024 * 1024), ("grpc.max_send_message_length", -1)]

Handler = TypeVar("Handler", bound=Callable[..., Any])


class Refused(Exception):
    """What the real provider or AWS refuses: the engine shows the message and the operation fails."""


# ------------------------------------------------------------------------------------------------- wire values


def _integral(value: Any) -> Any:
    # A Struct carries every number as a double; the program's integers (length, ports, sizes) read better as ints,
    # and the mocks record them so.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral(item) for item in value]
    return value


def to_dict(struct: struct_pb2.Struct | None) -> dict[str, Any]:
    """A Struct as plain Python values, in wire form (unknowns, secrets and references as they came)."""
    if struct is None:
        return {}
    return _integral(json_format.MessageToDict(struct))


def to_struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(dict(values))
    return struct


def secret(value: Any) -> dict[str, Any]:
    return {_SIG: _SECRET, "value": value}


def resource_reference(urn: str, resource_id: str, package_version: str) -> dict[str, Any]:
    """A reference to a custom resource, as the engine hands one to a program (pulumi's rpc.go, resource refs)."""
    return {_SIG: _RESOURCE, "urn": urn, "id": resource_id, "packageVersion": package_version}


def plain(value: Any) -> Any:
    """Secrets unwrapped, and resource references replaced by their ids (their URNs for components), as
    pulumi-terraform-bridge does with a reference it is sent before the provider sees the value."""
    if isinstance(value, dict):
        if value.get(_SIG) == _SECRET:
            return plain(value.get("value"))
        if value.get(_SIG) == _RESOURCE:
            return value.get("id") or value.get("urn")
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def is_unknown(value: Any) -> bool:
    return value == UNKNOWN


def contains_unknown(value: Any) -> bool:
    if isinstance(value, dict):
        return any(contains_unknown(item) for item in value.values())
    if isinstance(value, list):
        return any(contains_unknown(item) for item in value)
    return is_unknown(value)


def references_as_ids(value: Any) -> Any:
    """Resource references replaced by their ids (URNs for components), secrets kept: the inputs a bridged provider's
    Check returns for the references it was sent."""
    if isinstance(value, dict):
        if value.get(_SIG) == _RESOURCE:
            return value.get("id") or value.get("urn")
        return {key: references_as_ids(item) for key, item in value.items()}
    if isinstance(value, list):
        return [references_as_ids(item) for item in value]
    return value


#: What an unknown input is replaced with while the mocks compute outputs: short, so that a length check the provider
#: skips for an unknown name does not fail on the 36 characters of UNKNOWN, and unmistakable in what derives from it.
_MASK = "\u2047unknown\u2047"


def masked(value: Any) -> Any:
    """Plain values (see `plain`) with every unknown replaced by a short mask, for the mocks to compute from."""
    if isinstance(value, dict):
        return {key: masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [masked(item) for item in value]
    return _MASK if is_unknown(value) else value


def _unmasked(value: Any) -> Any:
    """A string the mocks built from an unknown input (an ARN around an unknown name) is itself unknown."""
    if isinstance(value, str) and _MASK in value:
        return UNKNOWN
    if isinstance(value, dict):
        return {key: _unmasked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unmasked(item) for item in value]
    return value


def merged_outputs(wire_inputs: Mapping[str, Any], computed: Mapping[str, Any]) -> dict[str, Any]:
    """The outputs the mocks computed from the `masked` inputs, with values derived from unknowns unknown again, and
    every input they repeat unchanged put back in its wire form (so a secret input stays a secret output)."""
    outputs = _unmasked(dict(computed))
    for key, wire in wire_inputs.items():
        if key in outputs and plain(wire) == outputs[key]:
            outputs[key] = wire
    return outputs


# ------------------------------------------------------------------------------------------------------- diffs


@dataclass(frozen=True)
class Change:
    key: str
    kind: provider_pb2.PropertyDiff.Kind.ValueType
    replace: bool


def changes(
    old_inputs: Mapping[str, Any], new_inputs: Mapping[str, Any], replace_keys: Iterable[str] = ()
) -> list[Change]:
    """The top-level input keys whose values differ (secrets compared by their values; an unknown new value counts as
    a change), each an update, or a replacement for `replace_keys`."""
    replacing = set(replace_keys)
    found: list[Change] = []
    for key in sorted(set(old_inputs) | set(new_inputs)):
        if key.startswith("__"):  # the bridge's bookkeeping (`__defaults`), never the resource's
            continue
        old, new = plain(old_inputs.get(key)), plain(new_inputs.get(key))
        if old == new and not contains_unknown(new):
            continue
        kind = "ADD" if key not in old_inputs else "DELETE" if key not in new_inputs else "UPDATE"
        replace = key in replacing
        found.append(Change(key, provider_pb2.PropertyDiff.Kind.Value(kind + ("_REPLACE" if replace else "")), replace))
    return found


def diff_response(found: Sequence[Change]) -> provider_pb2.DiffResponse:
    if not found:
        return provider_pb2.DiffResponse(changes=provider_pb2.DiffResponse.DIFF_NONE)
    return provider_pb2.DiffResponse(
        changes=provider_pb2.DiffResponse.DIFF_SOME,
        diffs=[change.key for change in found],
        replaces=[change.key for change in found if change.replace],
        detailedDiff={change.key: provider_pb2.PropertyDiff(kind=change.kind) for change in found},
        hasDetailedDiff=True,
    )


# ---------------------------------------------------------------------------------------------------- requests


def logical_name(request: Any) -> str:
    """The resource's logical name: sent by newer engines, always the URN's last part."""
    return str(getattr(request, "name", "") or request.urn.rsplit("::", 1)[-1])


def type_token(request: Any) -> str:
    """The resource's type: sent by newer engines, always the last type of the URN's type chain."""
    return str(getattr(request, "type", "") or request.urn.split("::")[2].rsplit("$", 1)[-1])


def config_value(values: Mapping[str, Any], package: str, key: str) -> Any:
    """A provider config key in any of the forms the engine uses: `key` (Configure's args, CheckConfig's inputs),
    `<package>:key` (stack config) and `<package>:config:key` (Configure's variables)."""
    for name in (key, f"{package}:{key}", f"{package}:config:{key}"):
        if values.get(name) not in (None, ""):
            return values[name]
    return None


def region_from(values: Mapping[str, Any]) -> str | None:
    """The AWS region of a provider's config, else the environment's, in the order pulumi-aws reads them
    (pulumi_aws/config/vars.py: `region`, then AWS_REGION, then AWS_DEFAULT_REGION)."""
    region = plain(config_value(values, "aws", "region"))
    if isinstance(region, str) and region and not is_unknown(region):
        return region
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None


def sdk_version(distribution: str) -> str:
    """The version of the provider's SDK in this environment: the one the program registers its resources with."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "0.0.0"


def handled(method: Handler) -> Handler:
    """A gRPC handler whose exceptions reach the engine as an error with their message (a Refused without a trace)."""

    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Refused as error:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(error))
        except Exception as error:  # noqa: BLE001 - every failure must reach the engine, not kill the server thread
            traceback.print_exc(file=sys.stderr)
            context.abort(grpc.StatusCode.UNKNOWN, f"{type(error).__name__}: {error}")

    return wrapper  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------------- servicer


class FakeProvider(provider_pb2_grpc.ResourceProviderServicer):
    """The methods every fake answers alike: plugin info, handshake, provider config, schema, cancel. Resource and
    function methods are the package's (`aws`, `random`, `eks`); what a fake does not implement answers
    UNIMPLEMENTED, as the generated servicer does."""

    #: The package name (`aws`) and the SDK distribution whose version the plugin reports (`pulumi_aws`).
    package: str = ""
    distribution: str = ""

    def __init__(self) -> None:
        self.version = sdk_version(self.distribution)
        #: The provider's configuration (Configure's args and variables), wire form.
        self.config: dict[str, Any] = {}

    # -- plugin

    def GetPluginInfo(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> plugin_pb2.PluginInfo:
        return plugin_pb2.PluginInfo(version=self.version)

    def Handshake(
        self, request: provider_pb2.ProviderHandshakeRequest, context: grpc.ServicerContext
    ) -> provider_pb2.ProviderHandshakeResponse:
        # Must agree with Configure below.
        return provider_pb2.ProviderHandshakeResponse(accept_secrets=True, accept_resources=True, accept_outputs=False)

    def GetSchema(
        self, request: provider_pb2.GetSchemaRequest, context: grpc.ServicerContext
    ) -> provider_pb2.GetSchemaResponse:
        # Deployments never read it; a minimal schema names the package for tools that ask.
        return provider_pb2.GetSchemaResponse(schema=json.dumps({"name": self.package, "version": self.version}))

    def Cancel(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> empty_pb2.Empty:
        return empty_pb2.Empty()

    # -- provider configuration

    def config_failures(self, inputs: Mapping[str, Any]) -> list[provider_pb2.CheckFailure]:
        """What the package refuses in its provider's configuration (nothing, unless it says so)."""
        return []

    @handled
    def CheckConfig(
        self, request: provider_pb2.CheckRequest, context: grpc.ServicerContext
    ) -> provider_pb2.CheckResponse:
        return provider_pb2.CheckResponse(inputs=request.news, failures=self.config_failures(to_dict(request.news)))

    @handled
    def DiffConfig(self, request: provider_pb2.DiffRequest, context: grpc.ServicerContext) -> provider_pb2.DiffResponse:
        # A changed setting updates the provider in place; none of these fakes replaces its resources for it.
        old = to_dict(request.old_inputs) if request.HasField("old_inputs") else to_dict(request.olds)
        return diff_response(changes(old, to_dict(request.news)))

    @handled
    def Configure(
        self, request: provider_pb2.ConfigureRequest, context: grpc.ServicerContext
    ) -> provider_pb2.ConfigureResponse:
        self.config = {**dict(request.variables), **to_dict(request.args)}
        self.configured(self.config)
        return provider_pb2.ConfigureResponse(
            acceptSecrets=True, supportsPreview=True, acceptResources=True, acceptOutputs=False
        )

    def configured(self, config: Mapping[str, Any]) -> None:
        """Called once the engine has configured the provider."""


def serve(servicer: FakeProvider) -> None:
    """Start the plugin: serve `servicer` on a free local port, print the port as the first line of stdout (the
    engine reads it), then serve until the engine kills the process.

    The engine passes its own address last, after flags (`--logtostderr`, `-v=9`, `--tracing URL`); the fakes log
    nothing to the engine and read no flag, so the command line is not read at all."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32), options=GRPC_OPTIONS)
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()
    # The engine reads stdout for the port only; anything printed later would be noise in its logs at best.
    sys.stdout = sys.stderr
    server.wait_for_termination()
