"""cert-manager as the platform installs it (pure): its chart values, what its pods request on the system nodes, and
which of its service accounts read Secrets everywhere."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .. import versions
from ..cluster.add_on import AddOn
from ..cluster.capacity import Requests, Workload
from ..scheduling import Placement
from . import network_policy
from .names import NAMESPACE

#: The chart sets no requests; ours, per pod of each of its three Deployments (a platform this size has a few dozen
#: Certificates: the controller and the CA injector hold them in memory, the webhook only checks requests).
REQUESTS: Mapping[str, Requests] = MappingProxyType(
    {"controller": Requests(20, 96), "webhook": Requests(10, 48), "cainjector": Requests(10, 96)}
)
#: Two of each, with a disruption budget: draining a system node never leaves the webhook that checks Certificates
#: down.
REPLICAS = 2
#: Memory limits, this many times each pod's request: a leaking pod restarts instead of taking the system node's
#: memory from the other controllers.
MEMORY_LIMIT_FACTOR = 2


def _resources(requests: Requests) -> dict[str, Any]:
    return {
        "requests": {"cpu": f"{requests.cpu_m}m", "memory": f"{requests.memory_mi}Mi"},
        "limits": {"memory": f"{requests.memory_mi * MEMORY_LIMIT_FACTOR}Mi"},
    }


def chart_values(placement: Placement, replicas: int = REPLICAS) -> dict[str, Any]:
    """Values for the pinned cert-manager chart: CRDs from the chart, every pod where `placement` says with the
    requests the system node sizing counts (`REQUESTS`)."""
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


#: cert-manager, installed once by the platform for every part that needs certificates (Kubeflow's webhooks,
#: Istio's and the apps' Certificates), never a second copy inside a part.
ADD_ON = AddOn(
    name="cert-manager",
    pulumi_type="eksml:certmanager:CertManager",
    chart=versions.CERT_MANAGER,
    namespace=NAMESPACE,
    pod_security="restricted",
    values=chart_values,
    policies=network_policy.policies,
    workloads=tuple(
        Workload(f"cert-manager-{name}", requests, REPLICAS, "components/certmanager/add_on.py values")
        for name, requests in REQUESTS.items()
    ),
    secret_readers=MappingProxyType(
        {
            f"{NAMESPACE}/cert-manager": "writes each Certificate's key pair into the Secret it names, in the "
            "Certificate's namespace",
            f"{NAMESPACE}/cert-manager-cainjector": "reads the CA from the certificate Secret an `inject-ca-from` "
            "annotation names, in any namespace",
        }
    ),
)
