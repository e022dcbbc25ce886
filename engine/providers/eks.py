"""A fake `eks` provider plugin: pulumi-eks's `eks:index:Cluster`, a remote component, as the mocks describe it.

    python -m engine.providers.eks <engine-address> [flags]

Construct registers, through the engine's resource monitor, the component and the one child the program reads,
the `aws:eks/cluster:Cluster` named `<name>-eksCluster` (created by the aws provider the component was given, so
the aws fake checks and creates it), with the inputs pulumi-eks passes on (`PlatformMocks.eks_inner_cluster`). It
returns the component's outputs as the mocks compute them (`PlatformMocks.new_resource`: oidcIssuer,
oidcProviderUrl/Arn, clusterSecurityGroupId, nodeSecurityGroupId, kubeconfig, kubeconfigJson, ...) with `eksCluster`
a reference to that child. The kubeconfig is the local API server's when EKSML_ENGINE_KUBECONFIG names a kubeconfig
file (written by the test harness), else the mocks' (an EKS endpoint that does not exist).

Refused, before anything is registered (the mocks' rule, components/tools/preview/mocks.py): an access entry for
the principal that creates the cluster (pulumi-eks always gives the creator admin access, and EKS refuses a second
entry with ResourceInUseException; real AWS only refuses it at `pulumi up`, the mocks and this fake already in
`pulumi preview`), and a cluster name past EKS's limit (`aws_names`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
import yaml
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.proto import provider_pb2, resource_pb2, resource_pb2_grpc

from components import aws_names
from components.identity.documents import same_principal
from components.tools.preview.answers import PlatformMocks, UnexpectedCall
from engine.providers.common import (
    GRPC_OPTIONS,
    FakeProvider,
    Refused,
    handled,
    masked,
    merged_outputs,
    plain,
    region_from,
    resource_reference,
    sdk_version,
    serve,
    to_dict,
    to_struct,
)

COMPONENT = "eks:index:Cluster"
GET_KUBECONFIG = "eks:index:Cluster/getKubeconfig"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
#: Names a kubeconfig file (YAML or JSON) of the local API server the engine tier deploys into.
KUBECONFIG_ENV = "EKSML_ENGINE_KUBECONFIG"


def local_kubeconfig() -> dict[str, Any] | None:
    """The kubeconfig EKSML_ENGINE_KUBECONFIG names (read at each use: the harness may write it after the plugin
    started), or None when the variable is unset."""
    path = os.environ.get(KUBECONFIG_ENV)
    if not path:
        return None
    try:
        kubeconfig = yaml.safe_load(Path(path).read_text())  # JSON is YAML too
        server = kubeconfig["clusters"][0]["cluster"]["server"]
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError) as error:
        raise Refused(f"{KUBECONFIG_ENV}={path}: not a kubeconfig with clusters[0].cluster.server ({error})") from None
    if not isinstance(server, str) or not server:
        raise Refused(f"{KUBECONFIG_ENV}={path}: clusters[0].cluster.server is empty")
    return dict(kubeconfig)


def refuse_creator_entries(mocks: PlatformMocks, component: str, inputs: Mapping[str, Any]) -> None:
    """The mocks' rule (RecordingMonitor._with_inner_cluster): no access entry for the cluster's creator."""
    creator = mocks.creator_of(inputs.get("name", component))
    for key, entry in sorted((inputs.get("accessEntries") or {}).items()):
        principal = entry.get("principalArn") if isinstance(entry, dict) else None
        if creator and isinstance(principal, str) and same_principal(principal, creator):
            raise Refused(
                f"access entry {key!r} of {component}: ResourceInUseException: the cluster's creator {creator} "
                "already has an access entry (pulumi-eks always bootstraps the creator's admin access)"
            )


class EksProvider(FakeProvider):
    package = "eks"
    distribution = "pulumi_eks"

    def __init__(self) -> None:
        super().__init__()
        #: By region; the mocks keep each cluster's kubeconfig for getKubeconfig.
        self._mocks: dict[str, PlatformMocks] = {}

    def mocks_for(self, stack_config: Mapping[str, Any]) -> PlatformMocks:
        """The mocks for the stack's region (`aws:region` of the stack config a Construct or Call carries)."""
        region = region_from(stack_config)
        if region is None:
            raise Refused("no AWS region: the stack config has no aws:region, nor is AWS_REGION set")
        return self._mocks.setdefault(region, PlatformMocks(region))

    @handled
    def Construct(
        self, request: provider_pb2.ConstructRequest, context: grpc.ServicerContext
    ) -> provider_pb2.ConstructResponse:
        if request.type != COMPONENT:
            raise Refused(f"the eks fake constructs {COMPONENT} only, not {request.type}")
        mocks = self.mocks_for(dict(request.config))
        wire = to_dict(request.inputs)
        inputs = masked(plain(wire))
        refuse_creator_entries(mocks, request.name, inputs)
        try:
            _, cluster_inputs, _ = mocks.eks_inner_cluster(urn="", component_name=request.name, inputs=inputs)
            _, state = mocks.new_resource(
                pulumi_mocks.MockResourceArgs(typ=COMPONENT, name=request.name, inputs=inputs, custom=False)
            )
        except (aws_names.NameTooLong, UnexpectedCall) as error:
            raise Refused(str(error)) from None

        monitor = resource_pb2_grpc.ResourceMonitorStub(
            grpc.insecure_channel(request.monitorEndpoint, options=GRPC_OPTIONS)
        )
        component = _register_component(monitor, request)
        aws_version = sdk_version("pulumi_aws")
        child = _register_inner_cluster(monitor, request, component.urn, merged_outputs(wire, cluster_inputs))
        state = {**state, "eksCluster": resource_reference(child.urn, child.id, aws_version)}
        kubeconfig = local_kubeconfig()
        if kubeconfig is not None:
            state["kubeconfig"] = kubeconfig
            state["kubeconfigJson"] = json.dumps(kubeconfig, sort_keys=True)
        outputs = to_struct(merged_outputs(wire, state))
        monitor.RegisterResourceOutputs(resource_pb2.RegisterResourceOutputsRequest(urn=component.urn, outputs=outputs))
        return provider_pb2.ConstructResponse(
            urn=component.urn,
            state=outputs,
            stateDependencies={"eksCluster": provider_pb2.ConstructResponse.PropertyDependencies(urns=[child.urn])},
        )

    @handled
    def Call(self, request: provider_pb2.CallRequest, context: grpc.ServicerContext) -> provider_pb2.CallResponse:
        if request.tok != GET_KUBECONFIG:
            raise Refused(f"the eks fake answers {GET_KUBECONFIG} only, not {request.tok}")
        args = to_dict(request.args)
        reference = args.pop("__self__", None)
        urn = reference.get("urn", "") if isinstance(reference, dict) else ""
        kubeconfig = local_kubeconfig()
        if kubeconfig is not None:
            # pulumi-eks's method puts the profile into the token command's environment (AWS_PROFILE); the local API
            # server takes the harness's client certificate and there is no AWS here, so the profile is ignored.
            result = json.dumps(kubeconfig, sort_keys=True)
        else:
            mocks = self.mocks_for(dict(request.config))
            call = pulumi_mocks.MockCallArgs(
                token=request.tok, args={**plain(args), "__self__": urn.rsplit("::", 1)[-1]}, provider=""
            )
            try:
                result = mocks.answer(call)["result"]
            except KeyError:
                raise Refused(f"getKubeconfig of {urn!r}: the cluster was not constructed by this provider") from None
        return provider_pb2.CallResponse(**{"return": to_struct({"result": result})})

    @handled
    def Invoke(self, request: provider_pb2.InvokeRequest, context: grpc.ServicerContext) -> provider_pb2.InvokeResponse:
        raise Refused(f"the eks fake answers no function, not {request.tok}")


def _register_component(
    monitor: resource_pb2_grpc.ResourceMonitorStub, request: provider_pb2.ConstructRequest
) -> resource_pb2.RegisterResourceResponse:
    """The component itself, with the options the program gave it (as an SDK-built provider registers it)."""
    return monitor.RegisterResource(
        resource_pb2.RegisterResourceRequest(
            type=COMPONENT,
            name=request.name,
            parent=request.parent,
            custom=False,
            object=to_struct({}),
            protect=request.protect,
            dependencies=list(request.dependencies),
            providers=dict(request.providers),
            aliases=list(request.aliases),
            aliasSpecs=True,
            deletedWith=request.deletedWith,
            retainOnDelete=request.retainOnDelete,
            acceptSecrets=True,
            acceptResources=True,
        )
    )


def _register_inner_cluster(
    monitor: resource_pb2_grpc.ResourceMonitorStub,
    request: provider_pb2.ConstructRequest,
    component_urn: str,
    cluster_inputs: dict[str, Any],
) -> resource_pb2.RegisterResourceResponse:
    """The component's `aws:eks/cluster:Cluster` child, `<name>-eksCluster`, created by the aws provider the
    component was given."""
    # Its inner cluster depends on all the component does (its inputs' resources and its explicit edges), as
    # the mocks record it: the engine then orders deletions against that resource itself.
    dependencies = set(request.dependencies)
    for property_dependencies in request.inputDependencies.values():
        dependencies.update(property_dependencies.urns)
    return monitor.RegisterResource(
        resource_pb2.RegisterResourceRequest(
            type=EKS_CLUSTER,
            name=f"{request.name}-eksCluster",
            parent=component_urn,
            custom=True,
            object=to_struct(cluster_inputs),
            # The aws provider the program gave the component (its children inherit it), else the default one.
            provider=request.providers.get("aws", ""),
            version=sdk_version("pulumi_aws"),
            protect=request.protect,  # children inherit protect
            dependencies=sorted(dependencies),
            acceptSecrets=True,
            acceptResources=True,
        )
    )


def main() -> None:
    serve(EksProvider())


if __name__ == "__main__":
    main()
