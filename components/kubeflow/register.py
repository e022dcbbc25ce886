"""Register staged Kubeflow objects as Pulumi resources: one resource per object, typed for built-in kinds,
`apiextensions.CustomResource` otherwise, with `depends_on` object to object exactly as staged."""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from .credentials import NAMES, placeholder
from .objects import Manifest, ObjectKey
from .staging import Stage, Staged, topological
from .teams import role_arn_placeholder

#: The pulumi-kubernetes class of every built-in kind Kubeflow's manifests use, by (apiVersion, kind).
TYPED: Mapping[tuple[str, str], type[pulumi.CustomResource]] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("apps/v1", "StatefulSet"): k8s.apps.v1.StatefulSet,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
    ("networking.k8s.io/v1", "Ingress"): k8s.networking.v1.Ingress,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): k8s.autoscaling.v2.HorizontalPodAutoscaler,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): k8s.apiextensions.v1.CustomResourceDefinition,
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"): k8s.admissionregistration.v1.MutatingWebhookConfiguration,
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"): k8s.admissionregistration.v1.ValidatingWebhookConfiguration,
}

_TOKEN = re.compile(r"<<kubeflow-(secret|input):")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def substitutions(
    secrets: Mapping[str, pulumi.Input[str]],
    role_arns: Mapping[str, pulumi.Input[str]],
    inputs: Mapping[str, pulumi.Input[str]] | None = None,
) -> dict[str, pulumi.Input[str]]:
    """Placeholder -> value: the credentials (as secrets), the teams' role ARNs, and `inputs` given by their
    placeholders (the cluster's OIDC issuer URL, the file system's identity)."""
    unknown = sorted(set(secrets) - set(NAMES))
    if unknown:
        raise ValueError(f"unknown credentials: {', '.join(unknown)} (known: {', '.join(NAMES)})")
    values: dict[str, pulumi.Input[str]] = {placeholder(name): pulumi.Output.secret(value) for name, value in secrets.items()}
    values.update({role_arn_placeholder(team): arn for team, arn in role_arns.items()})
    values.update(inputs or {})
    return values


def resolve(value: Any, values: Mapping[str, pulumi.Input[str]]) -> Any:
    """`value` with every placeholder (credentials, role ARNs) replaced by its value. A placeholder must be a
    whole string, so no secret is ever spliced into text; one without a value is an error."""
    if isinstance(value, dict):
        return {k: resolve(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, values) for v in value]
    if isinstance(value, str) and _TOKEN.search(value):
        if value not in values:
            raise ValueError(f"no value given for {value[:100]!r} (placeholders must be whole strings)")
        return values[value]
    return value


def create(name: str, manifest: Manifest, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The resource for one manifest: its typed class, or a CustomResource (which carries only metadata and spec)."""
    kind = (manifest["apiVersion"], manifest["kind"])
    if kind in TYPED:
        fields = {_snake(k): v for k, v in manifest.items() if k not in {"apiVersion", "kind"}}
        return TYPED[kind](name, **fields, opts=opts)
    extra = sorted(set(manifest) - {"apiVersion", "kind", "metadata", "spec"})
    if extra:
        raise ValueError(f"{kind[1]} {manifest['metadata']['name']}: a custom resource with fields besides spec: {extra}")
    return k8s.apiextensions.CustomResource(
        name, api_version=kind[0], kind=kind[1], metadata=manifest["metadata"], spec=manifest.get("spec"), opts=opts
    )


def register(
    staged: Sequence[Staged],
    *,
    provider: pulumi.ProviderResource,
    parent: pulumi.Resource | Mapping[Stage, pulumi.Resource],
    secrets: Mapping[str, pulumi.Input[str]] | None = None,
    role_arns: Mapping[str, pulumi.Input[str]] | None = None,
    inputs: Mapping[str, pulumi.Input[str]] | None = None,
    depends_on: Sequence[pulumi.Resource] = (),
    depends_on_by_kind: Mapping[str, Sequence[pulumi.Resource]] | None = None,
    depends_on_by_group: Mapping[str, Sequence[pulumi.Resource]] | None = None,
) -> dict[ObjectKey, pulumi.CustomResource]:
    """Create every staged object under `parent` (one, or one per stage) with `provider`.

    `secrets` maps credential names (`credentials.NAMES`) to the generated values, `role_arns` team names to
    their roles' ARNs (for Profiles built without one), `inputs` other placeholders to their values. `depends_on` (say, the node
    group) is added to the objects that depend on nothing else; all others reach it through them, so it also
    outlives every object on destroy. `depends_on_by_kind` adds the controllers that delete what objects of a kind
    make in AWS: {"PersistentVolumeClaim": [EBS CSI driver], "Ingress": [load balancer controller]};
    `depends_on_by_group` what serves an API group from outside Kubeflow: {"cert-manager.io": [cert-manager]}."""
    values = substitutions(secrets or {}, role_arns or {}, inputs)
    resources: dict[ObjectKey, pulumi.CustomResource] = {}
    for item in topological(staged):
        owner = parent[item.stage] if isinstance(parent, Mapping) else parent
        dependencies = [resources[k] for k in item.depends_on] if item.depends_on else list(depends_on)
        dependencies += list((depends_on_by_kind or {}).get(item.key.kind, ()))
        dependencies += list((depends_on_by_group or {}).get(item.key.group, ()))
        # A claim on a static volume goes with its namespace: deleted on its own it would wait, on its protection
        # finalizer, for the pods that mount it, which only the namespace's deletion removes.
        static_claim = item.key.kind == "PersistentVolumeClaim" and (item.manifest.get("spec") or {}).get("volumeName")
        namespace = resources.get(ObjectKey("", "Namespace", "", item.key.namespace)) if static_claim else None
        opts = pulumi.ResourceOptions(provider=provider, parent=owner, depends_on=dependencies, deleted_with=namespace)
        resources[item.key] = create(item.name, resolve(item.manifest, values), opts)
    return resources
