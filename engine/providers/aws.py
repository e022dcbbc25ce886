"""A fake `aws` provider plugin: answers the engine as the offline preview's mocks answer the program.

    python -m engine.providers.aws <engine-address> [flags]

Ids, ARNs, computed outputs and data sources come from `PlatformMocks` (components/tools/preview/answers.py), and
the names from `components.aws_names`, so the engine tier and the offline preview cannot drift apart. What it
refuses, and where:

- Check: a physical name past its type's limit (`aws_names.checked_name`: pulumi-aws's own check, and the AWS API's
  limit), as a check failure on the name property, so `pulumi preview` fails where the real provider's does;
- Create (not in preview, when AWS is asked): an EKS access entry for the principal that created the cluster, which
  EKS already admitted itself (ResourceInUseException; the mocks' rule for pulumi-eks's `accessEntries`); and a
  resource of a fixed name the account already holds, with AWS's error (`account.UNIQUE_NAMES`, each with its
  source), as after a create the state never learned;
- Invoke: any data source the mocks do not answer (`UnexpectedCall`), loudly;
- CheckConfig: a provider with no region (pulumi-aws requires one: `aws:region`, AWS_REGION or AWS_DEFAULT_REGION).

`EKSML_ENGINE_SLOW_CREATE=<type>::<logical name>=<seconds>` makes the Create of that one resource slow, as pulumi-aws
is while it waits for what AWS accepted to become available (an EKS cluster, a file system: minutes): the resource
is in the account as soon as AWS is asked, and the answer comes `<seconds>` later. A CLI killed meanwhile leaves it
made and unrecorded (engine/faults.py strikes such a fault).

Check fills the auto-name (`<logical>-<7 hex>`, deterministic as in the mocks, or the old one the state holds) and
Diff replaces a resource whose physical name (or name prefix) changes, as pulumi-aws does: every auto-named
property is ForceNew upstream. Every other changed input is an in-place update; this fake knows no other ForceNew
properties and invents none.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.proto import provider_pb2

from components import aws_names
from components.identity.documents import same_principal
from components.tools.preview.answers import PlatformMocks, UnexpectedCall
from engine.providers.account import ACCOUNT, taken
from engine.providers.common import (
    FakeProvider,
    Refused,
    changes,
    contains_unknown,
    diff_response,
    handled,
    logical_name,
    masked,
    merged_outputs,
    plain,
    references_as_ids,
    region_from,
    serve,
    to_dict,
    to_struct,
    type_token,
)

#: `<type>::<logical name>=<seconds>`: the one resource whose Create answers late (see the module's doc).
SLOW_CREATE_ENV = "EKSML_ENGINE_SLOW_CREATE"

EKS_CLUSTER = "aws:eks/cluster:Cluster"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"


def slow_create(type_: str, name: str) -> float:
    """How long the Create of this resource waits before it answers: `SLOW_CREATE_ENV`'s seconds for the resource it
    names, else none."""
    chosen, _, seconds = os.environ.get(SLOW_CREATE_ENV, "").rpartition("=")
    return float(seconds) if chosen == f"{type_}::{name}" else 0.0


def autonamed(
    type_: str, name: str, news: Mapping[str, Any], olds: Mapping[str, Any]
) -> tuple[dict[str, Any], list[provider_pb2.CheckFailure]]:
    """The checked inputs of an AWS resource: its physical name filled in when the program left it (and its prefix)
    unset, or the failure pulumi-aws reports for a name past the type's limit."""
    inputs = references_as_ids(dict(news))
    rule = aws_names.NAME_RULES.get(type_)
    if rule is None:
        return inputs, []
    given = news.get(rule.property)
    prefix = news.get(rule.prefix_property) if rule.prefix_property else None
    if contains_unknown(given) or contains_unknown(prefix):
        return inputs, []  # the provider checks a name once it is known
    if given is None and prefix is None and isinstance(olds.get(rule.property), str):
        # An auto-name, once given, stays (pulumi-terraform-bridge keeps the old one rather than draw a new one).
        inputs[rule.property] = olds[rule.property]
        return inputs, []
    try:
        physical = aws_names.checked_name(type_, name, plain(news))
    except aws_names.NameTooLong as error:
        return inputs, [provider_pb2.CheckFailure(property=rule.property, reason=str(error))]
    if given is None and prefix is None:
        inputs[rule.property] = physical
    return inputs, []


def replace_keys(type_: str) -> set[str]:
    """The inputs whose change replaces the resource: its physical name and name prefix (ForceNew in pulumi-aws)."""
    rule = aws_names.NAME_RULES.get(type_)
    if rule is None:
        return set()
    return {rule.property} | ({rule.prefix_property} if rule.prefix_property else set())


class AwsProvider(FakeProvider):
    package = "aws"
    distribution = "pulumi_aws"

    def __init__(self) -> None:
        super().__init__()
        self._mocks: PlatformMocks | None = None

    # -- configuration

    def config_failures(self, inputs: Mapping[str, Any]) -> list[provider_pb2.CheckFailure]:
        if region_from(inputs) is None:
            reason = "missing required configuration key aws:region (nor is AWS_REGION or AWS_DEFAULT_REGION set)"
            return [provider_pb2.CheckFailure(property="region", reason=reason)]
        return []

    def configured(self, config: Mapping[str, Any]) -> None:
        region = region_from(config)
        if region is None:
            raise Refused("the aws provider has no region: set aws:region, AWS_REGION or AWS_DEFAULT_REGION")
        self._mocks = PlatformMocks(region)

    @property
    def mocks(self) -> PlatformMocks:
        if self._mocks is None:
            raise Refused("the aws provider was used before the engine configured it")
        return self._mocks

    # -- resources

    @handled
    def Check(self, request: provider_pb2.CheckRequest, context: grpc.ServicerContext) -> provider_pb2.CheckResponse:
        news, olds = to_dict(request.news), to_dict(request.olds)
        inputs, failures = autonamed(type_token(request), logical_name(request), news, olds)
        return provider_pb2.CheckResponse(inputs=to_struct(inputs), failures=failures)

    @handled
    def Diff(self, request: provider_pb2.DiffRequest, context: grpc.ServicerContext) -> provider_pb2.DiffResponse:
        news = to_dict(request.news)
        if request.HasField("old_inputs"):
            olds = to_dict(request.old_inputs)
        else:  # an engine that keeps no old inputs: the outputs, as far as they are inputs
            olds = {key: value for key, value in to_dict(request.olds).items() if key in news}
        return diff_response(changes(olds, news, replace_keys(type_token(request))))

    def outputs(self, type_: str, name: str, wire: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """Id and outputs of a resource with these (checked) inputs, as the mocks give them."""
        inputs = masked(plain(wire))
        if type_ == EKS_CLUSTER:
            # pulumi-eks's inner cluster, which the mocks describe (eks_inner_cluster) rather than answer through
            # new_resource: its id is the cluster's name, its ARN EKS's.
            cluster_name = inputs.get("name") or name
            component = name.removesuffix("-eksCluster")
            try:
                _, _, described = self.mocks.eks_inner_cluster(
                    urn="", component_name=component, inputs={"name": cluster_name}
                )
            except aws_names.NameTooLong as error:
                raise Refused(str(error)) from None
            computed = {**inputs, "arn": described["arn"], "id": described["id"] or cluster_name}
            return str(described["id"]), merged_outputs(wire, computed)
        args = pulumi_mocks.MockResourceArgs(typ=type_, name=name, inputs=inputs, custom=True)
        try:
            resource_id, computed = self.mocks.new_resource(args)
        except (aws_names.NameTooLong, UnexpectedCall) as error:
            raise Refused(str(error)) from None
        return str(resource_id), merged_outputs(wire, computed)

    def refuse_at_create(self, type_: str, name: str, inputs: Mapping[str, Any]) -> None:
        """What AWS refuses when asked to create, although no provider check catches it before."""
        if (refusal := taken(ACCOUNT, type_, inputs)) is not None:
            raise Refused(refusal)
        if type_ == ACCESS_ENTRY:
            cluster, principal = inputs.get("clusterName"), inputs.get("principalArn")
            creator = self.mocks.creator_of(cluster) if isinstance(cluster, str) else None
            if creator and isinstance(principal, str) and same_principal(principal, creator):
                raise Refused(
                    f"creating EKS Access Entry {name!r}: ResourceInUseException: the cluster's creator {creator} "
                    "already has an access entry (the cluster was created with its creator's admin access)"
                )

    @handled
    def Create(self, request: provider_pb2.CreateRequest, context: grpc.ServicerContext) -> provider_pb2.CreateResponse:
        type_, name, wire = type_token(request), logical_name(request), to_dict(request.properties)
        if not request.preview:
            self.refuse_at_create(type_, name, plain(wire))
        resource_id, outputs = self.outputs(type_, name, wire)
        if not request.preview:
            ACCOUNT.put(type_, resource_id, outputs)
            # Made in AWS from here on, whatever becomes of the CLI that asked.
            time.sleep(slow_create(type_, name))
        return provider_pb2.CreateResponse(id=resource_id, properties=to_struct(outputs))

    @handled
    def Update(self, request: provider_pb2.UpdateRequest, context: grpc.ServicerContext) -> provider_pb2.UpdateResponse:
        type_ = type_token(request)
        _, outputs = self.outputs(type_, logical_name(request), to_dict(request.news))
        if not request.preview:
            ACCOUNT.put(type_, request.id, outputs)
        return provider_pb2.UpdateResponse(properties=to_struct(outputs))

    @handled
    def Read(self, request: provider_pb2.ReadRequest, context: grpc.ServicerContext) -> provider_pb2.ReadResponse:
        if request.properties.fields:
            # Nothing changes behind the engine's back here: a refresh finds what the state holds.
            return provider_pb2.ReadResponse(id=request.id, properties=request.properties, inputs=request.inputs)
        # A read of what the program did not create (`Resource.get`): what another stack made in the account, else
        # only what the mocks' account holds.
        if (held := ACCOUNT.get(type_token(request), request.id)) is not None:
            return provider_pb2.ReadResponse(id=request.id, properties=to_struct(held))
        args = pulumi_mocks.MockResourceArgs(
            typ=type_token(request), name=logical_name(request), inputs={}, resource_id=request.id, custom=True
        )
        try:
            resource_id, state = self.mocks.new_resource(args)
        except UnexpectedCall as error:
            raise Refused(str(error)) from None
        return provider_pb2.ReadResponse(id=str(resource_id), properties=to_struct(state))

    def Delete(self, request: provider_pb2.DeleteRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:
        ACCOUNT.remove(type_token(request), request.id)
        return empty_pb2.Empty()

    # -- data sources

    @handled
    def Invoke(self, request: provider_pb2.InvokeRequest, context: grpc.ServicerContext) -> provider_pb2.InvokeResponse:
        args = pulumi_mocks.MockCallArgs(token=request.tok, args=plain(to_dict(request.args)), provider="")
        try:
            answer = self.mocks.answer(args)
        except UnexpectedCall as error:
            raise Refused(str(error)) from None
        return provider_pb2.InvokeResponse(**{"return": to_struct(answer)})


def main() -> None:
    serve(AwsProvider())


if __name__ == "__main__":
    main()
