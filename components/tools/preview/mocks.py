"""Run a Pulumi program under mocks and record what it registers.

This is the one mocks implementation of the package: the offline preview and the tests both use it. It records
every resource with its inputs (secrets redacted), parent, dependencies (explicit and implicit), and the
protect / retain-on-delete / deleted-with options (`inventory`), and answers only the data sources the program uses
(`answers`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import pulumi
from pulumi.output import Unknown
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, resource_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from ...identity.documents import same_principal
from .answers import DEFAULT_CALLER, UNKNOWN, PlatformMocks
from .inventory import Inventory, Recorded

REDACTED = "[secret]"
_STACK_TYPE = "pulumi:pulumi:Stack"


class RefusedByAws(Exception):
    """What AWS would refuse at create time although no provider checks it beforehand."""


def _redact(value: Any, secret: bool = False) -> Any:
    """Secret values become REDACTED; a secret map or list keeps its shape, so manifests stay valid objects."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return _redact(value["value"], secret=True)
        return {k: _redact(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, secret) for v in value]
    return REDACTED if secret else value


def _unwrap_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return _unwrap_secrets(value["value"])
        return {k: _unwrap_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap_secrets(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    """Inputs as JSON-able data (resource references become their URNs)."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_resource_sig:
            return {"resource": value.get("urn")}
        return {str(k): _plain(v) for k, v in value.items() if not str(k).startswith("__")}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, pulumi.Resource):
        return {"resource": "<resource>"}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Unknown) or value is rpc.UNKNOWN:
        return UNKNOWN
    return value


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A mock monitor that keeps what the engine would be told about each resource."""

    def __init__(self, mocks: pulumi_mocks.Mocks):
        super().__init__(mocks)
        self.recorded: dict[str, Recorded] = {}
        self.stack_urn: str | None = None

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # Like the engine: a URN carries the whole chain of its parents' types (pulumi's MockMonitor keeps only the
        # direct parent's), and resources directly under the stack do not carry the stack's type.
        if parent and parent != self.stack_urn:
            type_ = f"{parent.split('::')[2]}${type_}"
        return f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{type_}::{name}"

    def _with_inner_cluster(
        self, mocks: PlatformMocks, request: Any, response: Any, dependencies: tuple[str, ...]
    ) -> Any:
        """Record pulumi-eks's inner aws.eks.Cluster and hand it back as the component's `eksCluster` output.

        The reference is what the engine sends for a remote component's resource output; the registration lets the
        SDK resolve it (getResource), so `cluster.eks_cluster.name` behaves as in a real deployment.
        """
        name = f"{request.name}-eksCluster"
        urn = self.make_urn(response.urn, "aws:eks/cluster:Cluster", name)
        inputs = _unwrap_secrets(rpc.deserialize_properties(request.object))
        creator = mocks.creator_of(inputs.get("name", request.name))
        for key, entry in sorted((inputs.get("accessEntries") or {}).items()):
            if creator and same_principal(entry.get("principalArn", ""), creator):
                raise RefusedByAws(
                    f"access entry {key!r} of {request.name}: ResourceInUseException: the cluster's creator {creator} "
                    "already has an access entry (pulumi-eks always bootstraps the creator's admin access)"
                )
        id_, cluster_inputs, outputs = mocks.eks_inner_cluster(urn=urn, component_name=request.name, inputs=inputs)
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, id_, outputs)
        self.recorded[urn] = Recorded(
            urn=urn,
            type="aws:eks/cluster:Cluster",
            name=name,
            parent=response.urn,
            inputs=_plain(cluster_inputs),
            dependencies=dependencies,
            protect=False,
            retain_on_delete=False,
            deleted_with=None,
            id=id_,
            outputs=outputs,
        )
        state = dict(self.resources[response.urn].state)
        state["eksCluster"] = {rpc._special_sig_key: rpc._special_resource_sig, "urn": urn, "id": id_}
        self.resources[response.urn] = pulumi_mocks.MockMonitor.ResourceRegistration(response.urn, response.id, state)
        obj_proto = _sync_await(rpc.serialize_properties(state, {}))
        return type(response)(urn=response.urn, id=response.id, object=obj_proto)

    def Call(self, request: Any) -> Any:  # the gRPC method name
        """A method of a component resource (e.g. pulumi-eks's Cluster.getKubeconfig), answered by the mocks' `call`
        with `__self__` given as the component's logical name (pulumi's MockMonitor has no Call at all)."""
        plain = type(request.args)()
        plain.CopyFrom(request.args)
        # Deserialising the reference would rebuild the resource on another event loop; its URN is enough.
        self_urn = plain.fields.pop("__self__").struct_value.fields["urn"].string_value
        args = rpc.deserialize_properties(plain)
        args["__self__"] = self_urn.rsplit("::", 1)[1]
        answer = self.mocks.call(pulumi_mocks.MockCallArgs(token=request.tok, args=args, provider=request.provider))
        # A bare dict or (dict, check failures), as pulumi's MockMonitor.Invoke takes them.
        result = answer if isinstance(answer, dict) else answer[0]
        return provider_pb2.CallResponse(**{"return": _sync_await(rpc.serialize_properties(result, {}))})

    def RegisterResource(self, request: Any) -> Any:  # the gRPC method name
        if request.type == _STACK_TYPE:
            response = super().RegisterResource(request)
            self.stack_urn = response.urn
            return response
        inputs, response = self._register(request)
        dependencies = set(request.dependencies)
        for property_dependencies in request.propertyDependencies.values():
            dependencies.update(property_dependencies.urns)
        parent = request.parent or None
        if parent == self.stack_urn:
            parent = None
        if request.type == "eks:index:Cluster" and isinstance(self.mocks, PlatformMocks):
            response = self._with_inner_cluster(self.mocks, request, response, tuple(sorted(dependencies)))
        registration = self.resources.get(response.urn)
        aliases = tuple(_alias(alias) for alias in request.aliases) + tuple({"urn": urn} for urn in request.aliasURNs)
        self.recorded[response.urn] = Recorded(
            urn=response.urn,
            type=request.type,
            name=request.name,
            parent=parent,
            inputs=_plain(_redact(inputs)),
            dependencies=tuple(sorted(dependencies)),
            protect=bool(request.protect),
            retain_on_delete=bool(request.retainOnDelete),
            deleted_with=request.deletedWith or None,
            id=registration.id if registration else None,
            outputs=_unwrap_secrets(registration.state) if registration else {},
            aliases=aliases,
            delete_timeout=request.customTimeouts.delete or None,
            # A provider reference is `<urn>::<id>`.
            provider=request.provider.rsplit("::", 1)[0] if request.provider else None,
        )
        return response

    def _register(self, request: Any) -> tuple[dict[str, Any], Any]:
        """What pulumi's MockMonitor answers a registration with (the URN, and the id and state the mocks give), and
        the inputs the mocks were given: deserialised once, as the record reads the same ones (a second pass over
        every resource's inputs was a twentieth of the preview). Resource transforms are not handed to the mocks,
        which apply none."""
        _ensure_event_loop()  # a resource reference among the inputs deserialises on this thread's event loop
        inputs = rpc.deserialize_properties(request.object)
        urn = self.make_urn(request.parent, request.type, request.name)
        resource_id, state = self.mocks.new_resource(
            pulumi_mocks.MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=inputs,
                provider=request.provider,
                resource_id=request.importId,
                custom=request.custom or False,
            )
        )
        # A component has no id: None, as pulumi's MockMonitor keeps it (its type says str), and unset in the answer.
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, cast(str, resource_id), state)
        state_proto = _sync_await(rpc.serialize_properties(state, {}))
        return inputs, resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id or "", object=state_proto)


def _ensure_event_loop() -> None:
    """Give this thread an event loop when it has none (the SDK calls the monitor from a pool of threads)."""
    try:
        asyncio.get_event_loop()
    except RuntimeError:
        asyncio.set_event_loop(asyncio.new_event_loop())


def _alias(alias: Any) -> dict[str, Any]:
    """An alias as sent to the engine (a URN, or a spec whose empty fields default to the resource's own)."""
    if alias.WhichOneof("alias") == "urn":
        return {"urn": alias.urn}
    spec = alias.spec
    return {
        "name": spec.name,
        "type": spec.type,
        "parentUrn": spec.parentUrn if spec.WhichOneof("parent") == "parentUrn" else "",
        "noParent": spec.noParent if spec.WhichOneof("parent") == "noParent" else False,
    }


def run(
    program: Callable[[], None],
    *,
    project: str,
    stack: str,
    region: str,
    config: Mapping[str, str],
    secret_keys: Iterable[str] = (),
    caller_arn: str = DEFAULT_CALLER,
    existing_clusters: Mapping[str, Mapping[str, str]] | None = None,
    stack_references: Mapping[str, Mapping[str, Any]] | None = None,
) -> Inventory:
    """Run `program` under the platform mocks with the given raw stack config, and return what it registered.

    `caller_arn`, `existing_clusters` and `stack_references` describe the account and the stacks it runs against
    (see PlatformMocks)."""
    mocks = PlatformMocks(
        region, caller_arn=caller_arn, existing_clusters=existing_clusters, stack_references=stack_references
    )
    monitor = RecordingMonitor(mocks)
    # A fresh root stack for every run, so several programs can run in one process (the tests do).
    pulumi.runtime.settings.ROOT.set(None)
    pulumi.runtime.set_all_config(dict(config), list(secret_keys))
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=True, monitor=monitor)
    # Outputs still pending from an earlier run that failed must not be awaited (and re-raised) by this one.
    pulumi.runtime.settings.SETTINGS.outputs.clear()
    _sync_await(run_pulumi_func(program))
    return Inventory(monitor.recorded.values(), _stack_outputs())


def _stack_outputs() -> dict[str, Any]:
    """The values the program exported, with secrets redacted."""
    root = pulumi.runtime.get_root_resource()
    exported = getattr(root, "outputs", {}) or {}
    values: dict[str, Any] = {}
    for key, value in exported.items():
        output = pulumi.Output.from_input(value)
        if _sync_await(output.is_secret()):
            values[key] = REDACTED
        else:
            values[key] = _plain(_sync_await(output.future()))
    return values
