"""Who may touch Secrets in every namespace: the subjects of ClusterRoleBindings whose ClusterRole (aggregated ones
included) has a rule on `secrets` in the core group that no `resourceNames` narrows, and the verbs it gives.

A RoleBinding to a ClusterRole grants only in its own namespace, so it is not counted. The platform's answer is held
to `secret_holders()`, where each entry says why that controller needs the right (docs/security.md lists them too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from ...platform import config as platform_config

#: Service accounts (`namespace/name`) of the platform's parts other than add-ons that keep a right on every
#: namespace's Secrets, and why (`secret_holders` adds the add-ons').
PART_SECRET_HOLDERS: Mapping[str, str] = MappingProxyType(
    {
        "monitoring/kube-prometheus-stack-operator": "writes each Prometheus' and Alertmanager's generated config "
        "Secret, and reads the Secrets monitors name for scrape credentials, in the namespaces it watches (all)",
        "istio-system/istiod": "serves gateways the TLS Secrets their `credentialName` names, from any namespace",
        "kubeflow/meta-controller-service": "runs the pipelines' profile controller (a DecoratorController), which "
        "writes the object store Secret into each team namespace; metacontroller watches what it syncs",
        "kubeflow/ml-pipeline-ui": "reads the object store credentials of the team namespace whose artifacts it "
        "shows (get and list, as upstream's multi-user install grants them)",
        "kubeflow-system/kubeflow-trainer-controller-manager": "creates the SSH key Secret of each MPI TrainJob in "
        "the job's namespace, and watches them",
        "knative-serving/controller": "Knative Serving's controllers (the controller, autoscaler and net-istio share "
        "the account) resolve each Revision's image tag to a digest with the pull Secrets of its service account, in "
        "the Revision's namespace, and net-istio copies each KIngress' TLS Secret into the gateway's namespace "
        "(knative/serving v1.22 `config/core/roles/clusterrole.yaml` `knative-serving-core`, aggregated into "
        "`knative-serving-admin`)",
        "kserve/kserve-controller-manager": "reads the storage credentials an InferenceService's service account "
        "names (its Secrets), in the InferenceService's namespace, for the model download",
        "kubeflow/profiles-controller-service-account": "the Kubeflow profile controller is bound to `cluster-admin` "
        "upstream (Kubeflow 26.03.1 applications/dashboard/upstream/profile-controller/base/manager/"
        "role_binding.yaml): it makes each Profile's namespace and binds its owner to `kubeflow-admin` there, and "
        "RBAC lets it grant only what it holds itself (found by tests/engine/test_admission.py on a real API server)",
    }
)


def secret_holders() -> Mapping[str, str]:
    """Every service account (`namespace/name`) that may keep a right on every namespace's Secrets, and why: the
    add-ons' (`AddOn.secret_readers`, of every add-on in `ADD_ONS`) and the other parts'. Anything else that gains
    one is a finding (`tests/test_security.py`)."""
    readers = {reader: why for add_on, _ in platform_config.ADD_ONS for reader, why in add_on.secret_readers.items()}
    return MappingProxyType({**readers, **PART_SECRET_HOLDERS})


#: The API server's own ClusterRoles that the platform binds but does not create, with their rules on `secrets`
#: (kubernetes v1.35.4 plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go: `cluster-admin` has every verb on
#: everything; `admin` and `edit` aggregate `system:aggregate-to-edit`, which reads and writes Secrets).
BOOTSTRAP_ROLES: Mapping[str, tuple[Mapping[str, Any], ...]] = MappingProxyType(
    {
        "cluster-admin": ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},),
        "admin": ({"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]},),
        "edit": ({"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]},),
    }
)

_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


def _grants_secrets(rule: Mapping[str, Any]) -> set[str]:
    groups = rule.get("apiGroups") or []
    resources = rule.get("resources") or []
    if not ({"", "*"} & set(groups)) or not ({"secrets", "*"} & set(resources)) or rule.get("resourceNames"):
        return set()
    verbs = set(rule.get("verbs") or [])
    return set(_VERBS) if "*" in verbs else verbs & set(_VERBS)


def _matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    wanted = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in wanted.items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        value, values = labels.get(expression["key"]), expression.get("values") or []
        operator = expression["operator"]
        if (operator == "In" and value not in values) or (operator == "NotIn" and value in values):
            return False
        if (operator == "Exists") != (expression["key"] in labels) and operator in ("Exists", "DoesNotExist"):
            return False
    return True


def cluster_role_rules(objects: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Every ClusterRole's rules by name, an aggregated role's gathered from the roles its selectors match; the API
    server's own roles (`BOOTSTRAP_ROLES`) with the rules they have there."""
    roles = {obj["metadata"]["name"]: obj for obj in objects if obj.get("kind") == "ClusterRole"}
    rules: dict[str, list[Mapping[str, Any]]] = {name: list(r) for name, r in BOOTSTRAP_ROLES.items()}
    for name, role in roles.items():
        found = list(role.get("rules") or [])
        for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
            for other in roles.values():
                if other is not role and _matches(selector, other["metadata"].get("labels") or {}):
                    found += list(other.get("rules") or [])
        rules[name] = found
    return rules


def _subject(subject: Mapping[str, Any]) -> str:
    if subject.get("kind") == "ServiceAccount":
        return f"{subject.get('namespace')}/{subject['name']}"
    return f"{subject.get('kind')}:{subject['name']}"


def cluster_wide_secret_access(objects: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Subject (`namespace/name` for a service account, `Kind:name` otherwise) → the verbs it has on every
    namespace's Secrets."""
    objects = list(objects)
    rules = cluster_role_rules(objects)
    found: dict[str, set[str]] = {}
    for binding in objects:
        if binding.get("kind") != "ClusterRoleBinding" or binding["roleRef"].get("kind") != "ClusterRole":
            continue
        verbs = set().union(*(_grants_secrets(rule) for rule in rules.get(binding["roleRef"]["name"], [])))
        if not verbs:
            continue
        for subject in binding.get("subjects") or []:
            found.setdefault(_subject(subject), set()).update(verbs)
    return found
