"""The platform's own admission and access on a real API server: what of the dev stack's offline preview admission
and RBAC read (namespaces with their Pod Security labels, service accounts, priority classes, RBAC, the
ValidatingAdmissionPolicies and their bindings, the TrainJob CRD), applied to a box started with `Box.start_api`;
then server-side dry-run creates and SubjectAccessReviews against it. No controller of the platform runs: what the
Kubeflow profile controller would make for a Profile is made here (`profile_bindings`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.kube import Kube, KubeError

Manifest = dict[str, Any]
#: What admission and RBAC read, in the order they must exist (a namespace before what is in it).
FIRST_KINDS = ("Namespace", "CustomResourceDefinition", "PriorityClass")
THEN_KINDS = (
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
)
_CLUSTER_KINDS = frozenset(FIRST_KINDS) | {
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}
#: The CRDs whose objects the admission samples create (the rest of the stack's are not needed).
SAMPLE_CRDS = frozenset({"trainjobs.trainer.kubeflow.org"})
_RBAC = "rbac.authorization.k8s.io"


def profile_bindings(profile: Mapping[str, Any]) -> list[Manifest]:
    """What Kubeflow's profile controller makes in a Profile's namespace for access (kubeflow/kubeflow
    components/profile-controller/README.md and controllers/profile_controller.go, v1.10; the same controller
    ships in Kubeflow 26.03): the owner bound to `kubeflow-admin` as RoleBinding `namespaceAdmin`, and the
    service accounts `default-editor` and `default-viewer`, bound to `kubeflow-edit` and `kubeflow-view`."""
    namespace, owner = profile["metadata"]["name"], profile["spec"]["owner"]
    found: list[Manifest] = []
    for account, role in (("default-editor", "kubeflow-edit"), ("default-viewer", "kubeflow-view")):
        found.append(service_account(namespace, account))
        found.append(
            _binding(namespace, account, role, {"kind": "ServiceAccount", "name": account, "namespace": namespace})
        )
    found.append(_binding(namespace, "namespaceAdmin", "kubeflow-admin", {"apiGroup": _RBAC, **owner}))
    return found


def _binding(namespace: str, name: str, role: str, subject: Mapping[str, Any]) -> Manifest:
    return {
        "apiVersion": f"{_RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": role},
        "subjects": [dict(subject)],
    }


def service_account(namespace: str, name: str) -> Manifest:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}


def _clean(obj: Mapping[str, Any]) -> Manifest:
    """The object as it is applied: a cluster-scoped one without the namespace Helm's render put on everything."""
    obj = json.loads(json.dumps(obj))
    if obj["kind"] in _CLUSTER_KINDS:
        obj["metadata"].pop("namespace", None)
    return dict(obj)


def to_apply(objects: Sequence[Mapping[str, Any]]) -> tuple[list[Manifest], list[Manifest]]:
    """What to apply first (namespaces, including those objects name but the stack does not make; the samples'
    CRDs; priority classes) and then (accounts, each namespace's `default` one as the controller manager would make
    it, RBAC, policies, and each Profile's bindings)."""
    first = [
        _clean(o)
        for o in objects
        if o.get("kind") in FIRST_KINDS
        and (o["kind"] != "CustomResourceDefinition" or o["metadata"]["name"] in SAMPLE_CRDS)
    ]
    declared = {o["metadata"]["name"] for o in first if o["kind"] == "Namespace"}
    named = {
        str(o["metadata"]["namespace"])
        for o in objects
        if o.get("kind") in THEN_KINDS and o["kind"] not in _CLUSTER_KINDS and o["metadata"].get("namespace")
    }
    named |= {o["metadata"]["name"] for o in objects if o.get("kind") == "Profile"}
    first += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in sorted(named - declared)]
    then = [_clean(o) for o in objects if o.get("kind") in THEN_KINDS]
    then += [service_account(n, "default") for n in sorted(declared | named)]
    for profile in (o for o in objects if o.get("kind") == "Profile"):
        then += profile_bindings(profile)
    return first, then


def apply(kube: Kube, objects: Sequence[Mapping[str, Any]]) -> None:
    """Apply a test's objects, taking over what the platform's renders would own."""
    kube.apply(objects, manager="eksml-access", force=True, timeout=300)


def wait_for(what: str, ready: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not after {timeout:.0f} s")
        time.sleep(0.5)


@dataclass(frozen=True)
class Verdict:
    """What the API server answered to a dry-run create: admitted, or the message it refused with."""

    admitted: bool
    message: str = ""


def dry_run(kube: Kube, obj: Mapping[str, Any]) -> Verdict:
    """Create `obj` with `?dryRun=All`: every admission plugin runs, nothing is stored."""
    try:
        kube.kubectl("create", "--dry-run=server", "-o", "name", "-f", "-", stdin=json.dumps(obj))
    except KubeError as exc:
        return Verdict(False, str(exc))
    return Verdict(True)


@dataclass(frozen=True)
class Subject:
    """Who asks: a user with groups (a service account is the user `system:serviceaccount:<ns>:<name>`)."""

    label: str
    user: str
    groups: tuple[str, ...]

    @classmethod
    def account(cls, namespace: str, name: str) -> Subject:
        groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated")
        return cls(f"{namespace}/{name}", f"system:serviceaccount:{namespace}:{name}", groups)

    @classmethod
    def of(cls, subject: Mapping[str, Any]) -> Subject:
        """A (Cluster)RoleBinding's subject, labelled as `rbac.cluster_wide_secret_access` names it."""
        if subject.get("kind") == "ServiceAccount":
            return cls.account(str(subject.get("namespace")), subject["name"])
        if subject.get("kind") == "Group":
            return cls(f"Group:{subject['name']}", "eksml-probe", (subject["name"], "system:authenticated"))
        return cls(f"User:{subject['name']}", subject["name"], ("system:authenticated",))


@dataclass(frozen=True)
class Access:
    """One question: may `subject` `verb` `resource` (of `group`) in `namespace` ("" is every namespace)?"""

    subject: Subject
    verb: str
    resource: str
    namespace: str
    group: str = ""

    def review(self) -> Manifest:
        attributes = {"verb": self.verb, "resource": self.resource, "group": self.group}
        if self.namespace:
            attributes["namespace"] = self.namespace
        return {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": self.subject.user, "groups": list(self.subject.groups), "resourceAttributes": attributes},
        }


def allowed(kube: Kube, questions: Iterable[Access]) -> dict[Access, bool]:
    """The API server's answer to each question (POST authorization.k8s.io/v1 subjectaccessreviews), in batches
    of one kubectl call."""
    questions = list(questions)
    answers: dict[Access, bool] = {}
    for start in range(0, len(questions), 200):
        batch = questions[start : start + 200]
        document = json.dumps({"apiVersion": "v1", "kind": "List", "items": [q.review() for q in batch]})
        out = kube.kubectl("create", "-o", "json", "-f", "-", stdin=document, timeout=300)
        reviews = _json_stream(out)
        assert len(reviews) == len(batch), f"{len(batch)} reviews sent, {len(reviews)} answered"
        for question, review in zip(batch, reviews, strict=True):
            answers[question] = bool(review["status"].get("allowed"))
    return answers


def _json_stream(text: str) -> list[Manifest]:
    """kubectl prints several created objects as one List, or one after another."""
    decoder, at = json.JSONDecoder(), 0
    found: list[Manifest] = []
    while at < len(text.rstrip()):
        obj, at = decoder.raw_decode(text, at)
        found += obj["items"] if obj.get("kind") == "List" else [obj]
        while at < len(text) and text[at].isspace():
            at += 1
    return found
