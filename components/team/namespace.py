"""A team's namespace and what bounds it (pure renderers): Pod Security level, ResourceQuota, LimitRange and a
default-deny NetworkPolicy with the platform's allowances.

The cluster enforces NetworkPolicies (the vpc-cni add-on runs its network policy agent), so once `deny-all` exists
only what the other policies allow gets through: the namespace's own pods to each other (multi-node training
rendezvous), DNS, HTTPS out (STS for IRSA, S3, the Kubernetes API), Prometheus' scrapes, the control plane
calling the team's webhooks, and with a Kubeflow Profile the paths its pods need to and from Istio and Kubeflow
(`components.kubeflow.network_policy.profile_allowances`). Anything else a workload needs (a load balancer's
traffic) is its own policy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .. import network_policies as netpol
from ..kubeflow.network_policy import profile_allowances
from ..kueue.queues import neuron_ceilings
from ..network_policies import TEAM_LABEL
from ..pod_security import TEAM_POD_SECURITY
from ..scheduling import GPU_RESOURCE
from .config import TeamConfig

Manifest = dict[str, Any]

GPU_QUOTA_KEY = f"requests.{GPU_RESOURCE}"


def network_policies(
    team: TeamConfig, *, monitoring_namespace: str | None, vpc_cidr: str | None, pod_identity: bool = False
) -> dict[str, Manifest]:
    """A team namespace's policies (`netpol.team_namespace`, the same as every team namespace the platform makes),
    with a Kubeflow Profile's paths when the team has one: its pods take Istio's sidecar, which needs istiod, and
    the gateway brings users to its notebooks. `pod_identity`: the team's role reaches its pods through EKS Pod
    Identity (the platform's `identity`), whose node agent they must reach."""
    return netpol.team_namespace(
        team.name,
        monitoring_namespace=monitoring_namespace,
        https_egress=team.network.https_egress,
        pod_identity=pod_identity,
        webhook_ports=team.network.webhook_ports,
        vpc_cidr=vpc_cidr,
        extra=[
            *(profile_allowances(team.name) if team.kubeflow is not None else ()),
            *(
                netpol.allow_egress(team.name, name, str(entry.cidr), entry.ports, entry.protocol)
                for name, entry in sorted(team.network.egress.items())
            ),
        ],
    )


def egress_annotation(team: TeamConfig) -> dict[str, str]:
    """The namespace's record of the egress its config asks for, which the platform model judges."""
    if not team.network.egress:
        return {}
    promised = {
        name: {"cidr": str(e.cidr), "ports": list(e.ports), "protocol": e.protocol}
        for name, e in sorted(team.network.egress.items())
    }
    return {netpol.EGRESS_ANNOTATION: json.dumps(promised, sort_keys=True)}


def _quota(team: TeamConfig, gpu_ceiling: int | None, neuron_quota: Mapping[str, str] | None) -> Manifest:
    """The namespace's ResourceQuota: GPUs, Neuron devices and cores, CPU, memory, pods, load balancers, claims."""
    quota = team.quota
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "team", "namespace": team.name},
        "spec": {
            "hard": {
                # Extended resources take quota on requests only; requests and limits of GPUs are equal anyway
                # (the platform's admission policy insists).
                GPU_QUOTA_KEY: str(quota.gpus if gpu_ceiling is None else gpu_ceiling),
                **(neuron_quota if neuron_quota is not None else neuron_ceilings()),
                "requests.cpu": quota.cpu,
                "requests.memory": quota.memory,
                "pods": str(quota.pods),
                "services.loadbalancers": str(quota.load_balancers),
                "persistentvolumeclaims": str(quota.claims),
            }
        },
    }


def namespace_manifests(
    team: TeamConfig,
    *,
    monitoring_namespace: str | None,
    vpc_cidr: str | None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    gpu_ceiling: int | None = None,
    neuron_quota: Mapping[str, str] | None = None,
    pod_identity: bool = False,
) -> dict[str, Manifest]:
    """The Namespace, its ResourceQuota and LimitRange, and its NetworkPolicies, keyed by a stable short name.

    `labels` and `annotations` are what another owner of the namespace needs on it (a Kubeflow Profile adopts a
    namespace whose `owner` annotation names its owner); the Pod Security and team labels always win. The quota's
    GPUs are `gpu_ceiling` (the team's share with what it may borrow, `kueue.queues.GpuShare.ceiling`); None: its
    `quota.gpus`. Its Neuron devices and cores are `neuron_quota` (`kueue.queues.neuron_ceilings`); None: none."""
    name = team.name
    metadata: dict[str, Any] = {"name": name, "labels": {**(labels or {}), **TEAM_POD_SECURITY, TEAM_LABEL: name}}
    annotations = {**(annotations or {}), **egress_annotation(team)}
    if annotations:
        metadata["annotations"] = annotations
    manifests = {
        "namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata},
        "quota": _quota(team, gpu_ceiling, neuron_quota),
        # Only default requests, no default limits: a default memory limit below what a container requests would
        # make the API server refuse the pod.
        "limits": {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "team-defaults", "namespace": name},
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "defaultRequest": {"cpu": team.default_requests.cpu, "memory": team.default_requests.memory},
                    }
                ]
            },
        },
    }
    manifests.update(
        network_policies(team, monitoring_namespace=monitoring_namespace, vpc_cidr=vpc_cidr, pod_identity=pod_identity)
    )
    return manifests


def service_account(team: TeamConfig, annotations: Any) -> Manifest:
    """The team's service account, annotated as its role asks (`WorkloadRole.service_account_annotations`: the IRSA
    role's ARN, or nothing with EKS Pod Identity; may be a Pulumi output: it is only placed, never read)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": team.service_account_name,
            "namespace": team.name,
            "annotations": annotations,
        },
    }
