"""Create a rendered Kubernetes object (a plain dict) as the matching typed pulumi-kubernetes resource.

Renderers produce plain manifests so they can be tested and checked against upstream schemas; this is the one place
that turns them into resources.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import pulumi
import pulumi_kubernetes as k8s

_KINDS: Mapping[tuple[str, str], type[pulumi.CustomResource]] = {
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "PersistentVolume"): k8s.core.v1.PersistentVolume,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("v1", "ResourceQuota"): k8s.core.v1.ResourceQuota,
    ("v1", "LimitRange"): k8s.core.v1.LimitRange,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
    ("storage.k8s.io/v1", "StorageClass"): k8s.storage.v1.StorageClass,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): k8s.admissionregistration.v1.ValidatingAdmissionPolicy,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding,
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


#: Custom resources whose CRDs the platform installs (they have a `spec` and nothing else at the top level).
_CUSTOM_KINDS = frozenset(
    {
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("monitoring.coreos.com/v1", "PrometheusRule"),
        ("karpenter.sh/v1", "NodePool"),
        ("karpenter.k8s.aws/v1", "EC2NodeClass"),
    }
)


def create(name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The typed resource for `manifest`; its top-level fields become the resource's arguments."""
    kind = (manifest["apiVersion"], manifest["kind"])
    if kind in _CUSTOM_KINDS:
        return k8s.apiextensions.CustomResource(
            name, api_version=kind[0], kind=kind[1], metadata=manifest["metadata"], spec=manifest["spec"], opts=opts
        )
    if kind not in _KINDS:
        raise ValueError(f"no resource type for {kind[0]} {kind[1]}; add it to k8s_objects._KINDS")
    fields = {_snake(key): value for key, value in manifest.items() if key not in {"apiVersion", "kind"}}
    return _KINDS[kind](name, **fields, opts=opts)
