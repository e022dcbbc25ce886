"""Small facts about Kubernetes objects as plain dicts: identity, scope, pod templates, label selectors."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from ..certmanager.names import KINDS as CERT_MANAGER_KINDS
from ..observability.render import MONITORING_API

Manifest = dict[str, Any]


class ObjectKey(NamedTuple):
    """An object's identity in the cluster: API group (not version), kind, namespace ("" if cluster-scoped), name."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{kind} {self.namespace}/{self.name}" if self.namespace else f"{kind} {self.name}"


def group_of(api_version: str) -> str:
    return api_version.split("/")[0] if "/" in api_version else ""


def key(obj: Mapping[str, Any]) -> ObjectKey:
    metadata = obj["metadata"]
    return ObjectKey(group_of(obj["apiVersion"]), obj["kind"], metadata.get("namespace", ""), metadata["name"])


#: Built-in kinds by (group, kind): their REST resource name and whether they are namespaced. Custom kinds take
#: both from their CustomResourceDefinition.
BUILTIN: Mapping[tuple[str, str], tuple[str, bool]] = {
    ("", "Namespace"): ("namespaces", False),
    ("", "ServiceAccount"): ("serviceaccounts", True),
    ("", "ConfigMap"): ("configmaps", True),
    ("", "Secret"): ("secrets", True),
    ("", "Service"): ("services", True),
    ("", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("", "PersistentVolume"): ("persistentvolumes", False),
    ("", "Pod"): ("pods", True),
    ("", "ResourceQuota"): ("resourcequotas", True),
    ("", "LimitRange"): ("limitranges", True),
    ("apps", "Deployment"): ("deployments", True),
    ("apps", "StatefulSet"): ("statefulsets", True),
    ("apps", "DaemonSet"): ("daemonsets", True),
    ("batch", "Job"): ("jobs", True),
    ("batch", "CronJob"): ("cronjobs", True),
    ("rbac.authorization.k8s.io", "Role"): ("roles", True),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("rolebindings", True),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("clusterrolebindings", False),
    ("networking.k8s.io", "NetworkPolicy"): ("networkpolicies", True),
    ("networking.k8s.io", "Ingress"): ("ingresses", True),
    ("policy", "PodDisruptionBudget"): ("poddisruptionbudgets", True),
    ("scheduling.k8s.io", "PriorityClass"): ("priorityclasses", False),
    ("storage.k8s.io", "StorageClass"): ("storageclasses", False),
    ("autoscaling", "HorizontalPodAutoscaler"): ("horizontalpodautoscalers", True),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("customresourcedefinitions", False),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): ("mutatingwebhookconfigurations", False),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): ("validatingwebhookconfigurations", False),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): ("validatingadmissionpolicies", False),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): ("validatingadmissionpolicybindings", False),
}

#: The API group of Prometheus' monitors, served by the platform's kube-prometheus-stack (its CRDs come with the
#: chart), and the kinds Kubeflow's monitors use: (group, kind) -> (REST resource, namespaced).
MONITORING_GROUP = MONITORING_API.split("/")[0]
MONITORING_KINDS = {
    (MONITORING_GROUP, "ServiceMonitor"): ("servicemonitors", True),
    (MONITORING_GROUP, "PodMonitor"): ("podmonitors", True),
}
WEBHOOK_KINDS = frozenset({"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})
WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet"})


def is_builtin(obj: Mapping[str, Any]) -> bool:
    return (group_of(obj["apiVersion"]), obj["kind"]) in BUILTIN


def is_crd(obj: Mapping[str, Any]) -> bool:
    return obj["kind"] == "CustomResourceDefinition" and group_of(obj["apiVersion"]) == "apiextensions.k8s.io"


def is_webhook_configuration(obj: Mapping[str, Any]) -> bool:
    return obj["kind"] in WEBHOOK_KINDS and group_of(obj["apiVersion"]) == "admissionregistration.k8s.io"


def is_workload(obj: Mapping[str, Any]) -> bool:
    return obj["kind"] in WORKLOAD_KINDS and group_of(obj["apiVersion"]) == "apps"


class Scopes:
    """REST resource names and scope of every kind in a set of objects (built-ins plus the CRDs among them)."""

    def __init__(self, objects: list[Manifest]):
        self._kinds: dict[tuple[str, str], tuple[str, bool]] = {**BUILTIN, **CERT_MANAGER_KINDS, **MONITORING_KINDS}
        for obj in objects:
            if is_crd(obj):
                spec = obj["spec"]
                self._kinds[(spec["group"], spec["names"]["kind"])] = (
                    spec["names"]["plural"],
                    spec["scope"] == "Namespaced",
                )

    def known(self, group: str, kind: str) -> bool:
        return (group, kind) in self._kinds

    def resource(self, group: str, kind: str) -> str:
        return self._kinds[(group, kind)][0]

    def namespaced(self, group: str, kind: str) -> bool:
        try:
            return self._kinds[(group, kind)][1]
        except KeyError:
            raise KeyError(f"the scope of {kind}.{group} is unknown: its CRD is not among the objects") from None


#: The label Kubernetes puts on every namespace: its own name (what namespace selectors match a namespace by).
NAME_LABEL = "kubernetes.io/metadata.name"


def namespace_labels(objects: Iterable[Manifest]) -> dict[str, dict[str, str]]:
    """Each Namespace among the objects by name, with the labels it will carry in the cluster (its own plus
    NAME_LABEL)."""
    return {
        o["metadata"]["name"]: {**(o["metadata"].get("labels") or {}), NAME_LABEL: o["metadata"]["name"]}
        for o in objects
        if o["kind"] == "Namespace" and o["apiVersion"] == "v1"
    }


def pod_template(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pod template of a workload (Deployment, StatefulSet, DaemonSet, Job), else None."""
    if obj["kind"] in WORKLOAD_KINDS or obj["kind"] == "Job":
        return obj.get("spec", {}).get("template")
    if obj["kind"] == "CronJob":
        return obj.get("spec", {}).get("jobTemplate", {}).get("spec", {}).get("template")
    return None


def containers(pod_spec: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    yield from pod_spec.get("initContainers") or ()
    yield from pod_spec.get("containers") or ()


def matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a LabelSelector selects these labels (an absent or empty selector selects everything)."""
    if not selector:
        return True
    for name, value in (selector.get("matchLabels") or {}).items():
        if labels.get(name) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        name, operator, values = expression["key"], expression["operator"], expression.get("values") or ()
        if operator == "In" and labels.get(name) not in values:
            return False
        if operator == "NotIn" and name in labels and labels[name] in values:
            return False
        if operator == "Exists" and name not in labels:
            return False
        if operator == "DoesNotExist" and name in labels:
            return False
    return True
