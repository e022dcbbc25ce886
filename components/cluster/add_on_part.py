"""An add-on installed (`add_on.AddOn`): its namespace with its policies, and its Helm release on the system nodes."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from .. import helm
from .add_on import AddOn
from .handle import ClusterHandle


@dataclass(frozen=True)
class AddOnArgs:
    """Where an add-on goes, and what its namespace's delete waits for."""

    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: Controllers that delete what objects in the namespace make in AWS (`Ingress.controller`): the namespace goes
    #: while they run. Default: none.
    cleanup_controllers: tuple[pulumi.Resource, ...] = ()
    #: Where Prometheus runs: its pods may scrape the add-on's (None: no allowance). Default: None.
    monitoring_namespace: str | None = None


class AddOnPart(pulumi.ComponentResource):
    """An add-on on the system nodes, in a namespace the stack owns, which enforces the add-on's Pod Security level
    and denies what its policies do not allow."""

    #: Its namespace: what it makes in other namespaces' objects goes before this on destroy.
    namespace: k8s.core.v1.Namespace
    #: What users of the add-on depend on: Helm waits for its workloads to be ready, so their custom resources wait
    #: for it, and go before it on destroy.
    release: k8s.helm.v3.Release

    def __init__(
        self, add_on: AddOn, args: AddOnArgs, opts: pulumi.ResourceOptions | None = None, *, name: str | None = None
    ):
        name = name or add_on.name
        super().__init__(add_on.pulumi_type, name, None, opts)
        cluster = args.cluster
        self.namespace = cluster.owned_namespace(
            f"{name}-namespace",
            add_on.namespace,
            parent=self,
            pod_security=add_on.pod_security,
            cleanup_controllers=args.cleanup_controllers,
            policies=add_on.policies(add_on.namespace, args.monitoring_namespace),
        )
        self.release = helm.release(
            name,
            add_on.chart,
            namespace=self.namespace.metadata["name"],
            values=add_on.values(cluster.system_placement),
            opts=cluster.on_system_nodes(self),
        )
        self.register_outputs({})
