"""Create a rendered Kubernetes object (a plain dict) as the matching typed pulumi-kubernetes resource.

Renderers produce plain manifests so they can be tested and checked against upstream schemas; this is the one place
that turns them into resources.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

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
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
    ): k8s.admissionregistration.v1.ValidatingAdmissionPolicy,
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
    ): k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding,
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
    ): k8s.admissionregistration.v1.MutatingWebhookConfiguration,
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
    ): k8s.admissionregistration.v1.ValidatingWebhookConfiguration,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "Pod"): k8s.core.v1.Pod,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
    ("batch/v1", "CronJob"): k8s.batch.v1.CronJob,
    ("apps/v1", "StatefulSet"): k8s.apps.v1.StatefulSet,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("networking.k8s.io/v1", "Ingress"): k8s.networking.v1.Ingress,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): k8s.autoscaling.v2.HorizontalPodAutoscaler,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): k8s.apiextensions.v1.CustomResourceDefinition,
}


#: API groups Kubernetes itself serves: an object of these is never a custom resource.
BUILTIN_GROUPS = frozenset(
    {
        "",
        "apps",
        "batch",
        "autoscaling",
        "policy",
        "networking.k8s.io",
        "storage.k8s.io",
        "scheduling.k8s.io",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "admissionregistration.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "node.k8s.io",
        "certificates.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "resource.k8s.io",
        "apiregistration.k8s.io",
        "events.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "storagemigration.k8s.io",
        "internal.apiserver.k8s.io",
    }
)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


#: Custom resources whose CRDs the platform installs (they have a `spec` and nothing else at the top level).
_CUSTOM_KINDS = frozenset(
    {
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("monitoring.coreos.com/v1", "PrometheusRule"),
        ("karpenter.sh/v1", "NodePool"),
        ("karpenter.k8s.aws/v1", "EC2NodeClass"),
        ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"),
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue"),
        ("kueue.x-k8s.io/v1beta2", "Cohort"),
        ("kueue.x-k8s.io/v1beta2", "LocalQueue"),
    }
)


def check(manifest: Mapping[str, Any], *, any_custom: bool = False) -> tuple[str, str]:
    """The (apiVersion, kind) of a manifest `create` can register; ValueError naming what it cannot (see `create`),
    so a plan can be checked before anything is created."""
    kind = (manifest["apiVersion"], manifest["kind"])
    if kind in _KINDS:
        return kind
    builtin = kind[0].rpartition("/")[0] in BUILTIN_GROUPS if "/" in kind[0] else True
    if builtin or (kind not in _CUSTOM_KINDS and not any_custom):
        raise ValueError(f"no resource type for {kind[0]} {kind[1]}; add it to k8s_objects._KINDS")
    extra = sorted(set(manifest) - {"apiVersion", "kind", "metadata", "spec"})
    if extra:
        raise ValueError(
            f"{kind[1]} {manifest['metadata']['name']}: a custom resource with fields besides spec: {extra}"
        )
    return kind


#: Kinds whose delete does work outside the cluster, or that hold what others put in them: Karpenter terminates a
#: pool's instances and a class's instance profiles; a claim's driver deletes its volume or file system; the load
#: balancer controller deletes an Ingress's load balancer; a namespace holds the claims and Services teams made in
#: it; a Kubeflow Profile's controller removes the team's IAM role trust (its AwsIamForServiceAccount plugin).
_OWN_DELETE_KINDS = frozenset(
    {
        ("karpenter.sh/v1", "NodePool"),
        ("karpenter.k8s.aws/v1", "EC2NodeClass"),
        ("v1", "PersistentVolumeClaim"),
        ("v1", "Namespace"),
        ("networking.k8s.io/v1", "Ingress"),
        ("kubeflow.org/v1", "Profile"),
    }
)


def needs_own_delete(manifest: Mapping[str, Any]) -> bool:
    """Whether destroy must delete this object on its own, while the controllers that act on its delete still run,
    rather than let it vanish with the cluster: it owns something in AWS (see `_OWN_DELETE_KINDS`; also a
    LoadBalancer Service and a volume whose reclaim policy deletes it) or holds what others put in it."""
    kind = (manifest["apiVersion"], manifest["kind"])
    spec = manifest.get("spec") or {}
    if not isinstance(spec, Mapping):  # known only at deploy time: assume it may own something
        return kind in {("v1", "Service"), ("v1", "PersistentVolume")} or kind in _OWN_DELETE_KINDS
    if kind == ("v1", "Service"):
        return spec.get("type") == "LoadBalancer"
    if kind == ("v1", "PersistentVolume"):
        return spec.get("persistentVolumeReclaimPolicy") == "Delete"
    return kind in _OWN_DELETE_KINDS


def own_delete(opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """`opts` without `deleted_with` the cluster (`ClusterHandle.kubernetes_options`). A claim may still go with its
    namespace: the namespace's own delete removes it."""
    if opts.deleted_with is None or isinstance(opts.deleted_with, k8s.core.v1.Namespace):
        return opts
    kept = copy.copy(opts)
    kept.deleted_with = None
    return kept


def create(
    name: str,
    manifest: Mapping[str, Any],
    opts: pulumi.ResourceOptions,
    *,
    any_custom: bool = False,
    with_cluster: bool = False,
) -> pulumi.CustomResource:
    """The typed resource for `manifest`; its top-level fields become the resource's arguments. A kind with no
    typed class is an error, unless it is one of the platform's custom kinds or `any_custom` (objects rendered
    from upstream, with CRDs of their own): then a CustomResource, which carries only metadata and spec. A kind of
    Kubernetes' own API groups is never taken for a custom one. `with_cluster`: keep `opts`' `deleted_with` even
    for a kind `needs_own_delete` names (see `owned_namespace`)."""
    kind = check(manifest, any_custom=any_custom)
    if needs_own_delete(manifest) and not with_cluster:
        opts = own_delete(opts)
    if kind in _KINDS:
        fields = {_snake(key): value for key, value in manifest.items() if key not in {"apiVersion", "kind"}}
        return _KINDS[kind](name, **fields, opts=opts)
    return k8s.apiextensions.CustomResource(
        name, api_version=kind[0], kind=kind[1], metadata=manifest["metadata"], spec=manifest.get("spec"), opts=opts
    )


def owned_namespace(
    name: str,
    namespace: str,
    *,
    pod_security: str,
    cleaners: Sequence[pulumi.Resource],
    opts: pulumi.ResourceOptions,
    policies: Mapping[str, Mapping[str, Any]] | None = None,
    serves_to_the_end: bool = False,
) -> k8s.core.v1.Namespace:
    """A namespace the stack owns (destroy removes it), with its Pod Security level and its NetworkPolicies
    (`policies`, by key: each becomes `<name without -namespace>-netpol-<key>`, made once the namespace exists). It
    depends on `cleaners`, the drivers and controllers that delete the AWS side of what is put in it (volumes, load
    balancers), so on destroy it goes, with everything in it, while they still run.

    `serves_to_the_end`: the namespace holds only a controller that other namespaces' deletes need until they end
    (it clears finalizers on what teams made, serves webhooks or an aggregated API): it goes with the cluster
    (`opts`' `deleted_with`) and its controller runs until then (`components.tools.preview.teardown_waits`)."""
    namespace_ = create(
        name,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": {"pod-security.kubernetes.io/enforce": pod_security}},
        },
        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(cleaners))),
        with_cluster=serves_to_the_end,
    )
    assert isinstance(namespace_, k8s.core.v1.Namespace)
    in_namespace = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[namespace_]))
    for key, manifest in (policies or {}).items():
        create(f"{name.removesuffix('-namespace')}-netpol-{key}", dict(manifest), in_namespace)
    return namespace_
