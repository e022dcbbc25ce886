"""A secondary kube-scheduler that packs GPU pods onto as few nodes as possible (pure renderers).

Only scoring changes: NodeResourcesFit scores a node higher the more of it is already requested, weighted heavily
on `nvidia.com/gpu`, and the spreading scores are off: NodeResourcesBalancedAllocation, and the cluster-wide default
topology spread (soft spreading of a Deployment's pods over hosts and zones), which would otherwise pull replicas
apart. Spread constraints a pod states itself still apply. Filters stay the default ones, so what fits a node is
exactly what Karpenter believes fits, and Karpenter's consolidation finds emptied GPU nodes to remove.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import yaml

from ..cluster.capacity import BINPACK_SCHEDULER, quantity
from ..scheduling import GPU_RESOURCE, Placement

NAMESPACE = "kube-system"
CONFIG_KEY = "config.yaml"
SECURE_PORT = 10259


@dataclass(frozen=True)
class SchedulerOptions:
    name: str
    image: str
    strategy: Literal["MostAllocated", "RequestedToCapacityRatio"] = "MostAllocated"
    gpu_weight: int = 10
    replicas: int = 2


def scoring_resources(options: SchedulerOptions) -> list[dict[str, Any]]:
    return [
        {"name": GPU_RESOURCE, "weight": options.gpu_weight},
        {"name": "cpu", "weight": 1},
        {"name": "memory", "weight": 1},
    ]


def scheduler_configuration(options: SchedulerOptions) -> dict[str, Any]:
    """The KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)."""
    strategy: dict[str, Any] = {"type": options.strategy, "resources": scoring_resources(options)}
    if options.strategy == "RequestedToCapacityRatio":
        # Score rises linearly with how full the node is: the fullest node that fits wins.
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        }
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": True, "resourceNamespace": NAMESPACE, "resourceName": options.name},
        # pprof on the scheduler's secure port is on by default (DebuggingConfiguration); nobody here reads it, and
        # anyone allowed `get` on its `/debug/pprof` could read the scheduler's memory and stacks.
        "enableProfiling": False,
        "enableContentionProfiling": False,
        "profiles": [
            {
                "schedulerName": options.name,
                "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}},
                    # An empty list replaces the system default constraints (kube-scheduler docs, "Cluster-level
                    # default constraints").
                    {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}},
                ],
            }
        ],
    }


def _meta(name: str, namespaced: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "eks-ml-platform"},
    }
    if namespaced:
        metadata["namespace"] = NAMESPACE
    return metadata


def _binding(kind: str, name: str, role_kind: str, role: str, service_account: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _meta(name, namespaced=kind == "RoleBinding"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": NAMESPACE}],
    }


def _pod_spec(options: SchedulerOptions, placement: Placement, labels: dict[str, str]) -> dict[str, Any]:
    """The scheduler's pod: on the system nodes, spread over zones, non-root with a read-only root filesystem."""
    name = options.name
    probe: dict[str, Any] = {
        "httpGet": {"path": "/healthz", "port": SECURE_PORT, "scheme": "HTTPS"},
        "periodSeconds": 10,
    }
    return {
        "serviceAccountName": name,
        "priorityClassName": name,
        "nodeSelector": {"kubernetes.io/os": "linux", **placement.node_selector},
        "tolerations": placement.values()["tolerations"],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": labels},
            }
        ],
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "kube-scheduler",
                "image": options.image,
                "command": ["kube-scheduler", f"--config=/etc/kubernetes/scheduler/{CONFIG_KEY}", "--v=2"],
                "livenessProbe": {**probe, "initialDelaySeconds": 15},
                "readinessProbe": {**probe, "httpGet": {**probe["httpGet"], "path": "/readyz"}},
                "resources": {"requests": dict(quantity(BINPACK_SCHEDULER)), "limits": {"memory": "512Mi"}},
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                "volumeMounts": [{"name": "config", "mountPath": "/etc/kubernetes/scheduler", "readOnly": True}],
            }
        ],
        "volumes": [{"name": "config", "configMap": {"name": name}}],
    }


def _access_manifests(name: str) -> dict[str, dict[str, Any]]:
    """What the scheduler may do: the kube-scheduler and volume-scheduler roles, and its own leader-election lease."""
    return {
        "as-kube-scheduler": _binding(
            "ClusterRoleBinding", f"{name}-as-kube-scheduler", "ClusterRole", "system:kube-scheduler", name
        ),
        "as-volume-scheduler": _binding(
            "ClusterRoleBinding", f"{name}-as-volume-scheduler", "ClusterRole", "system:volume-scheduler", name
        ),
        "auth-reader": _binding(
            "RoleBinding", f"{name}-auth-reader", "Role", "extension-apiserver-authentication-reader", name
        ),
        # system:kube-scheduler may only renew the lease named kube-scheduler; this scheduler has its own.
        "leader-election-role": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(f"{name}-leader-election"),
            "rules": [
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "resourceNames": [name],
                    "verbs": ["get", "update"],
                },
            ],
        },
        "leader-election": _binding("RoleBinding", f"{name}-leader-election", "Role", f"{name}-leader-election", name),
    }


def scheduler_manifests(options: SchedulerOptions, *, placement: Placement) -> dict[str, dict[str, Any]]:
    """Every object of the scheduler, keyed by a stable short name."""
    name = options.name
    labels = {"app.kubernetes.io/name": name}
    return {
        "priority-class": {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": _meta(name, namespaced=False),
            # Above every workload it schedules, below the system-* classes (2e9 and up).
            "value": 1_000_000_000,
            "globalDefault": False,
            "description": "The GPU bin-packing scheduler: it must run before the pods it places.",
        },
        "service-account": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name)},
        **_access_manifests(name),
        "config": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(name),
            "data": {CONFIG_KEY: yaml.safe_dump(scheduler_configuration(options), sort_keys=False)},
        },
        "deployment": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(name),
            "spec": {
                "replicas": options.replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": _pod_spec(options, placement, labels)},
            },
        },
        "disruption-budget": {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta(name),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}},
        },
    }
