"""cert-manager, owned by the platform: one installation that every part needing certificates uses (Kubeflow's
webhooks, Istio's and the apps' Certificates), never a second copy inside a part.

The release is the gate its users wait for: Helm waits for the controller, the CA injector and the webhook to be
ready, and the chart's post-install check proves the webhook answers, so a custom resource of `cert-manager.io`
created after it is neither refused nor left without a CRD.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from .. import helm, versions
from ..cluster.capacity import CERT_MANAGER as REQUESTS
from ..cluster.capacity import CERT_MANAGER_MEMORY_LIMIT_FACTOR, CERT_MANAGER_REPLICAS, Requests
from ..cluster.handle import ClusterHandle
from ..scheduling import Placement
from . import network_policy
from .names import GROUPS, NAMESPACE

__all__ = ["GROUPS", "NAMESPACE", "CertManager", "CertManagerArgs", "chart_values"]


def _resources(requests: Requests) -> dict[str, Any]:
    return {
        "requests": {"cpu": f"{requests.cpu_m}m", "memory": f"{requests.memory_mi}Mi"},
        "limits": {"memory": f"{requests.memory_mi * CERT_MANAGER_MEMORY_LIMIT_FACTOR}Mi"},
    }


def chart_values(*, placement: Placement, replicas: int = CERT_MANAGER_REPLICAS) -> dict[str, Any]:
    """Values for the pinned cert-manager chart: CRDs from the chart, every pod on the system nodes with the
    requests the system node sizing counts (`cluster.capacity.CERT_MANAGER`)."""
    on_system_nodes = placement.values()

    def deployment(name: str) -> dict[str, Any]:
        return {
            "replicaCount": replicas,
            "podDisruptionBudget": {"enabled": replicas > 1},
            "resources": _resources(REQUESTS[name]),
            **on_system_nodes,
        }

    return {
        "crds": {"enabled": True, "keep": False},
        **deployment("controller"),
        "webhook": deployment("webhook"),
        "cainjector": deployment("cainjector"),
        "startupapicheck": on_system_nodes,
    }


@dataclass(frozen=True)
class CertManagerArgs:
    """cert-manager on a cluster."""

    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: Controllers that delete what objects in the namespace make in AWS (`Ingress.controller`): the namespace goes
    #: while they run. Default: none.
    cleanup_controllers: tuple[pulumi.Resource, ...] = ()
    #: Where Prometheus runs: its pods may scrape cert-manager's (None: no allowance). Default: None.
    monitoring_namespace: str | None = None


class CertManager(pulumi.ComponentResource):
    """cert-manager on the system nodes, in a namespace the stack owns (Pod Security `restricted`)."""

    #: What users of cert-manager depend on: their custom resources wait for it, and go before it on destroy.
    release: pulumi.Resource

    def __init__(self, name: str, args: CertManagerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:certmanager:CertManager", name, None, opts)
        cluster = args.cluster
        namespace = cluster.owned_namespace(
            f"{name}-namespace",
            NAMESPACE,
            parent=self,
            pod_security="restricted",
            cleanup_controllers=args.cleanup_controllers,
            policies=network_policy.policies(NAMESPACE, args.monitoring_namespace),
        )
        self.release = helm.release(
            name,
            versions.CERT_MANAGER,
            namespace=namespace.metadata["name"],
            values=chart_values(placement=cluster.system_placement),
            opts=cluster.on_system_nodes(self),
        )
        self.register_outputs({})
