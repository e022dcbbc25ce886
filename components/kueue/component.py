"""Kueue on the system nodes, with one ResourceFlavor for the GPU pools; and `TeamQueues`, a team's ClusterQueue and
LocalQueue, which the platform makes for its Kubeflow teams and team stacks make for themselves.

None of these objects owns anything in AWS: they go with the cluster (`helm.OWN_DELETE_CHARTS` does not list the
chart, `k8s_objects.needs_own_delete` none of the kinds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from .. import helm, k8s_objects, versions
from ..cluster.handle import ClusterHandle
from . import network_policy
from .queues import Flavor, resource_flavor
from .values import NAMESPACE, chart_values


@dataclass(frozen=True)
class KueueArgs:
    """Kueue on a cluster."""

    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: The flavor of the GPU pools the teams share (`queues.shared_flavor`).
    flavor: Flavor
    #: The teams' cohort with the shared pools' GPUs no team is guaranteed (`queues.cohort`,
    #: `PlatformConfig.kueue_cohort`).
    cohort: Mapping[str, Any]
    #: Controllers that delete what objects in the namespace make in AWS (`Ingress.controller`): the namespace goes
    #: while they run. Default: none.
    cleanup_controllers: tuple[pulumi.Resource, ...] = ()


class Kueue(pulumi.ComponentResource):
    """Kueue's controller (its CRDs come with the chart) and the platform's ResourceFlavor."""

    #: What queue objects and anything Kueue's webhooks intercept wait for; they go before it on destroy.
    release: pulumi.Resource
    #: The ResourceFlavor the teams' ClusterQueues name: they go before it on destroy.
    flavor: pulumi.Resource
    #: The Cohort the teams' ClusterQueues join, which lends them the GPUs no team is guaranteed.
    cohort: pulumi.Resource

    def __init__(self, name: str, args: KueueArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:kueue:Kueue", name, None, opts)
        cluster = args.cluster
        k8s_opts = cluster.kubernetes_options(self)
        namespace = cluster.owned_namespace(
            f"{name}-namespace",
            NAMESPACE,
            parent=self,
            pod_security="restricted",
            cleanup_controllers=args.cleanup_controllers,
            policies=network_policy.policies(NAMESPACE),
            # why: Kueue clears its finalizers on the Workloads and pods of team namespaces, and serves an
            # aggregated API every namespace's delete lists: it runs until the cluster goes (no delete of its own).
            serves_to_the_end=True,
        )
        self.release = helm.release(
            name,
            versions.KUEUE,
            namespace=namespace.metadata["name"],
            values=chart_values(placement=cluster.system_placement),
            opts=cluster.on_system_nodes(self),
        )
        after_release = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[self.release]))
        self.flavor = k8s_objects.create(
            f"{name}-flavor-{args.flavor.name}", resource_flavor(args.flavor), after_release
        )
        # why: its quota names the flavor; a cohort quota on a missing flavor lends nothing.
        after_flavor = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[self.flavor]))
        self.cohort = k8s_objects.create(f"{name}-cohort", dict(args.cohort), after_flavor)
        self.register_outputs({})


@dataclass(frozen=True)
class TeamQueuesArgs:
    """Teams' queues: `queues.team_queue` manifests, keyed by team."""

    #: The cluster Kueue runs on: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: (ClusterQueue, LocalQueue) per team.
    queues: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any]]]
    #: What must exist first: Kueue's release (its CRDs and webhooks), the flavors the queues name (a queue naming a
    #: missing one admits nothing; on destroy the queues go first) and the teams' namespaces.
    after: Sequence[pulumi.Resource]
    #: ResourceFlavors of the teams' own GPU pools (`queues.resource_flavor`), made before the queues. Default: none.
    flavors: Sequence[Mapping[str, Any]] = ()


class TeamQueues(pulumi.ComponentResource):
    """A ClusterQueue per team in the cohort, and the LocalQueue in the team's namespace that points at it."""

    cluster_queues: dict[str, pulumi.Resource]
    local_queues: dict[str, pulumi.Resource]

    def __init__(self, name: str, args: TeamQueuesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:kueue:TeamQueues", name, None, opts)
        k8s_opts = pulumi.ResourceOptions.merge(
            args.cluster.kubernetes_options(self), pulumi.ResourceOptions(depends_on=list(args.after))
        )
        for flavor in args.flavors:
            k8s_objects.create(f"{name}-flavor-{flavor['metadata']['name']}", flavor, k8s_opts)
        self.cluster_queues, self.local_queues = {}, {}
        for team, (cluster_queue, local_queue) in sorted(args.queues.items()):
            self.cluster_queues[team] = k8s_objects.create(f"{name}-{team}-cluster-queue", cluster_queue, k8s_opts)
            self.local_queues[team] = k8s_objects.create(
                f"{name}-{team}-local-queue",
                local_queue,
                # why: a LocalQueue naming a ClusterQueue not yet there is inactive until it appears; made after it.
                pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[self.cluster_queues[team]])),
            )
        self.register_outputs({})
