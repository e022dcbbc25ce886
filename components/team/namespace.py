"""A team's namespace and what bounds it (pure renderers): Pod Security level, ResourceQuota, LimitRange and a
default-deny NetworkPolicy with the platform's allowances.

The cluster enforces NetworkPolicies (the vpc-cni add-on runs its network policy agent), so once `deny-all` exists
only what the other policies allow gets through: the namespace's own pods to each other (multi-node training
rendezvous), DNS, HTTPS out (STS for IRSA, S3, the Kubernetes API), Prometheus' scrapes, the control plane
calling the team's webhooks, and with a Kubeflow Profile, Istio and Kubeflow both ways. Anything else a workload
needs (a load balancer's traffic) is its own policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.kubeflow.access import GATEWAY_NAMESPACE
from components.kubeflow.objects import NAME_LABEL
from components.pod_security import TEAM_POD_SECURITY
from components.scheduling import GPU_RESOURCE
from components.team.config import TeamConfig

Manifest = dict[str, Any]

#: Marks what belongs to a team: its namespace, its NodePool's nodes (label and taint).
TEAM_LABEL = "eksml.io/team"
GPU_QUOTA_KEY = f"requests.{GPU_RESOURCE}"
#: Cluster DNS as the EKS coredns add-on labels its pods.
DNS_SELECTOR = {
    "namespaceSelector": {"matchLabels": {NAME_LABEL: "kube-system"}},
    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
}
#: Prometheus' pods as kube-prometheus-stack labels them.
PROMETHEUS_POD = {"app.kubernetes.io/name": "prometheus"}
#: Where the Kubeflow a Profile's namespace uses runs, reached both ways: Istio's (istiod, which every sidecar gets
#: its configuration from; the gateway bringing users to notebooks) and Kubeflow's own (the Pipelines API and
#: artifact store runs call; the Pipelines UI and the notebook culler calling in).
KUBEFLOW_NAMESPACES = (GATEWAY_NAMESPACE, "kubeflow")


def _policy(team: str, name: str, spec: Mapping[str, Any]) -> Manifest:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": team},
        "spec": {"podSelector": {}, **spec},
    }


def network_policies(
    team: TeamConfig, *, monitoring_namespace: str | None, vpc_cidr: str | None
) -> dict[str, Manifest]:
    """Default deny, then each allowance as its own policy (policies add up), keyed by name."""
    name = team.name
    policies = {
        "deny-all": _policy(name, "deny-all", {"policyTypes": ["Ingress", "Egress"]}),
        "allow-same-namespace": _policy(
            name,
            "allow-same-namespace",
            {
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [{"podSelector": {}}]}],
                "egress": [{"to": [{"podSelector": {}}]}],
            },
        ),
        "allow-dns": _policy(
            name,
            "allow-dns",
            {
                "policyTypes": ["Egress"],
                "egress": [{"to": [DNS_SELECTOR], "ports": [{"protocol": p, "port": 53} for p in ("UDP", "TCP")]}],
            },
        ),
    }
    if team.network.https_egress:
        policies["allow-https-egress"] = _policy(
            name,
            "allow-https-egress",
            {
                "policyTypes": ["Egress"],
                "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]}],
            },
        )
    if monitoring_namespace is not None:
        source = {
            "namespaceSelector": {"matchLabels": {NAME_LABEL: monitoring_namespace}},
            "podSelector": {"matchLabels": PROMETHEUS_POD},
        }
        policies["allow-prometheus"] = _policy(
            name, "allow-prometheus", {"policyTypes": ["Ingress"], "ingress": [{"from": [source]}]}
        )
    if team.kubeflow is not None:
        # A Profile's namespace labels its pods for Istio's sidecar; with only the allowances above they would never
        # get their configuration, and the gateway would never reach a notebook.
        peers = [{"namespaceSelector": {"matchLabels": {NAME_LABEL: namespace}}} for namespace in KUBEFLOW_NAMESPACES]
        policies["allow-kubeflow"] = _policy(
            name,
            "allow-kubeflow",
            {"policyTypes": ["Ingress", "Egress"], "ingress": [{"from": peers}], "egress": [{"to": peers}]},
        )
    if team.network.webhook_ports:
        # EKS's control plane reaches webhooks through its ENIs in the cluster's subnets: from the VPC when its
        # range is known, else from anywhere, on these ports only.
        rule: dict[str, Any] = {"ports": [{"protocol": "TCP", "port": port} for port in team.network.webhook_ports]}
        if vpc_cidr is not None:
            rule["from"] = [{"ipBlock": {"cidr": vpc_cidr}}]
        policies["allow-webhooks"] = _policy(name, "allow-webhooks", {"policyTypes": ["Ingress"], "ingress": [rule]})
    return policies


def namespace_manifests(
    team: TeamConfig,
    *,
    monitoring_namespace: str | None,
    vpc_cidr: str | None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    gpu_ceiling: int | None = None,
) -> dict[str, Manifest]:
    """The Namespace, its ResourceQuota and LimitRange, and its NetworkPolicies, keyed by a stable short name.

    `labels` and `annotations` are what another owner of the namespace needs on it (a Kubeflow Profile adopts a
    namespace whose `owner` annotation names its owner); the Pod Security and team labels always win. The quota's
    GPUs are `gpu_ceiling` (the team's share with what it may borrow, `kueue.queues.GpuShare.ceiling`); None: its
    `quota.gpus`."""
    name, quota = team.name, team.quota
    metadata: dict[str, Any] = {"name": name, "labels": {**(labels or {}), **TEAM_POD_SECURITY, TEAM_LABEL: name}}
    if annotations:
        metadata["annotations"] = dict(annotations)
    manifests = {
        "namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata},
        "quota": {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "team", "namespace": name},
            "spec": {
                "hard": {
                    # Extended resources take quota on requests only; requests and limits of GPUs are equal anyway
                    # (the platform's admission policy insists).
                    GPU_QUOTA_KEY: str(quota.gpus if gpu_ceiling is None else gpu_ceiling),
                    "requests.cpu": quota.cpu,
                    "requests.memory": quota.memory,
                    "pods": str(quota.pods),
                    "services.loadbalancers": str(quota.load_balancers),
                    "persistentvolumeclaims": str(quota.claims),
                }
            },
        },
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
    manifests.update(network_policies(team, monitoring_namespace=monitoring_namespace, vpc_cidr=vpc_cidr))
    return manifests


def service_account(team: TeamConfig, role_arn: Any) -> Manifest:
    """The team's service account, annotated with its IRSA role (`role_arn` may be a Pulumi output: it is only
    placed, never read)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": team.service_account_name,
            "namespace": team.name,
            "annotations": {"eks.amazonaws.com/role-arn": role_arn},
        },
    }
