"""`ModelRoute`: one InferenceService published on the Kubeflow gateway (`components.kserve.route` renders it)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from .. import k8s_objects
from ..cluster.handle import ClusterHandle
from .route import ModelRouteSpec, route_manifests


@dataclass(frozen=True)
class ModelRouteArgs:
    """Where the route goes and what it publishes; every field is required."""

    #: The platform's cluster: `ClusterHandle.from_stack_reference` (or `Cluster.handle` in the same program).
    cluster: ClusterHandle
    #: The InferenceService, its namespace (a Kubeflow Profile's), its token clients and its port.
    spec: ModelRouteSpec
    #: The namespace the route lives in (`TeamNamespace.namespace`): made after it, and gone with it.
    namespace: pulumi.Resource


class ModelRoute(pulumi.ComponentResource):
    """The VirtualService on `kubeflow/kubeflow-gateway` for `/serving/<namespace>/<name>/`, and with token clients
    the predictor's AuthorizationPolicy for them. The InferenceService itself is the team's (kubectl or a program of
    its own): the route answers 503 until its predictor runs, and needs nothing from it to be created."""

    #: The path a client calls, `/serving/<namespace>/<name>/`, on the gateway's address.
    path: str

    def __init__(self, name: str, args: ModelRouteArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:kserve:ModelRoute", name, None, opts)
        self.path = args.spec.prefix
        in_namespace = pulumi.ResourceOptions(
            parent=self,
            provider=args.cluster.kubernetes_provider,
            depends_on=[args.namespace],
            # why: objects of the namespace that own nothing outside the cluster go with it.
            deleted_with=args.namespace,
        )
        for key, manifest in sorted(route_manifests(args.spec).items()):
            k8s_objects.create(f"{name}-{key}", manifest, in_namespace, any_custom=True)  # Istio's CRDs, Kubeflow's
        self.register_outputs({"path": self.path})
