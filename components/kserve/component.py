"""KServe on the platform: the CRD release, the controller release in Standard mode on the system nodes, and what
keeps the controller's fail-closed webhooks served."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from .. import helm, k8s_objects, versions
from ..cluster.handle import ClusterHandle
from . import network_policy
from .values import NAMESPACE, chart_values, controller_availability

__all__ = ["NAMESPACE", "KServe", "KServeArgs"]


@dataclass(frozen=True)
class KServeArgs:
    """KServe on a cluster."""

    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: The platform's cert-manager release (`components.certmanager`): the chart's Issuer and Certificate (the
    #: webhook's serving certificate) need its CRDs and webhook, and go before it.
    cert_manager: pulumi.Resource
    #: Controllers that delete the AWS side of namespaced objects (`Ingress.controller`, the FSx CSI driver); the
    #: namespace is deleted while they run, so anything a user puts in it that owns AWS resources is cleaned up.
    #: Default: none.
    cleanup_controllers: tuple[pulumi.Resource, ...] = ()


class KServe(pulumi.ComponentResource):
    """KServe v0.16.0 from its two pinned charts. What it installs owns nothing in AWS (an InferenceService becomes
    a Deployment, a Service and an HPA; no Ingress), so both releases go with the cluster, CRDs included."""

    #: The controller release: InferenceServices wait for it (its webhooks default and check them).
    release: pulumi.Resource

    def __init__(self, name: str, args: KServeArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:kserve:KServe", name, None, opts)
        cluster = args.cluster
        k8s_opts = cluster.kubernetes_options(self)
        namespace = cluster.owned_namespace(
            f"{name}-namespace",
            NAMESPACE,
            parent=self,
            pod_security="restricted",
            cleanup_controllers=args.cleanup_controllers,
            policies=network_policy.policies(NAMESPACE),
            # why: KServe clears its finalizer on the InferenceServices of every namespace and serves their
            # webhooks: it runs until the cluster goes (no delete of its own), whatever namespace goes first.
            serves_to_the_end=True,
        )
        on_system_nodes = cluster.on_system_nodes(self)
        crds = helm.release(
            f"{name}-crd", versions.KSERVE_CRD, namespace=namespace.metadata["name"], values={}, opts=on_system_nodes
        )
        self.release = helm.release(
            name,
            versions.KSERVE,
            namespace=namespace.metadata["name"],
            values=chart_values(placement=cluster.system_placement),
            skip_crds=True,  # the kserve-crd release owns them
            opts=pulumi.ResourceOptions.merge(
                on_system_nodes,
                # why: its webhooks serve the CRDs' kinds, and its Issuer and Certificate need cert-manager's.
                pulumi.ResourceOptions(depends_on=[crds, args.cert_manager]),
            ),
        )
        suffixes = {"HorizontalPodAutoscaler": "replicas", "PodDisruptionBudget": "budget"}
        for manifest in controller_availability(NAMESPACE):
            k8s_objects.create(
                f"{name}-controller-{suffixes[manifest['kind']]}",
                manifest,
                # why: they act on the release's Deployment and pods.
                pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[self.release])),
            )
        self.register_outputs({})
