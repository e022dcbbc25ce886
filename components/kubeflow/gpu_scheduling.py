"""GPU pods Kubeflow creates, placed by the platform's bin-packing scheduler.

The platform's ValidatingAdmissionPolicy denies a GPU pod whose `spec.schedulerName` is not the bin-packing
scheduler. Kubeflow creates GPU pods three ways, and each gets the scheduler where it can:

- Trainer: every ClusterTrainingRuntime's pod templates name the scheduler (TrainJobs inherit them);
- Pipelines: Argo's `workflowDefaults` name it for every workflow pod (Argo's Workflow spec has schedulerName);
- Notebooks: JWA builds the pod itself and PodDefaults cannot set schedulerName, so no configuration reaches it.
  Two ways out: exempt Kubeflow's team namespaces from the scheduler rule (broad: TrainJob and pipeline pods,
  which do carry it, would lose the check too), or exempt only notebook pods (`notebook_exemption`): pods in a
  team namespace that the notebook controller's StatefulSet owns and labels. We take the narrow one. Such a pod
  is still denied without the GPU toleration or with requests differing from limits; the exemption costs packing,
  not isolation (a user who builds a look-alike StatefulSet only skips the bin-packing scheduler, within the
  team's GPU quota). A MutatingAdmissionPolicy setting schedulerName would remove the exemption, once the
  cluster serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (not on EKS 1.35).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from .objects import Manifest
from .transform import clone, replace

RUNTIME_KINDS = frozenset({"ClusterTrainingRuntime", "TrainingRuntime"})
ARGO_CONFIG = ("ConfigMap", "kubeflow", "workflow-controller-configmap")
#: The label the profile controller puts on every team namespace.
PROFILE_NAMESPACE_LABEL = ("app.kubernetes.io/part-of", "kubeflow-profile")
#: The label the notebook controller puts on a notebook's pods (its value is the Notebook's, and StatefulSet's, name).
NOTEBOOK_LABEL = "notebook-name"


def _runtime_pod_specs(runtime: Manifest) -> Iterable[dict[str, Any]]:
    """The pod spec of every replicated job of a (Cluster)TrainingRuntime (JobSet template)."""
    for job in runtime.get("spec", {}).get("template", {}).get("spec", {}).get("replicatedJobs") or ():
        yield job.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})


def trainer_runtimes(objects: Iterable[Manifest], scheduler: str) -> list[Manifest]:
    """Every training runtime's pods placed by `scheduler` (initializers too: one scheduler per TrainJob keeps its
    pods packed together)."""
    result = []
    for obj in objects:
        if obj["kind"] in RUNTIME_KINDS and obj["apiVersion"].startswith("trainer.kubeflow.org/"):
            obj = clone(obj)
            for spec in _runtime_pod_specs(obj):
                spec["schedulerName"] = scheduler
        result.append(obj)
    return result


def argo_workflow_defaults(objects: list[Manifest], scheduler: str) -> list[Manifest]:
    """Argo's workflowDefaults name `scheduler` for every pipeline pod (a workflow that names its own keeps it)."""

    def change(obj: Manifest) -> Manifest:
        defaults = yaml.safe_load(obj["data"].get("workflowDefaults") or "") or {}
        defaults.setdefault("spec", {})["schedulerName"] = scheduler
        obj["data"]["workflowDefaults"] = yaml.safe_dump(defaults, sort_keys=True)
        return obj

    return replace(objects, {ARGO_CONFIG: change})


def apply(objects: list[Manifest], scheduler: str | None) -> list[Manifest]:
    """Route Trainer and Pipelines GPU pods to the bin-packing scheduler; nothing when it is off (None)."""
    if scheduler is None:
        return list(objects)
    present = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects}
    objects = trainer_runtimes(objects, scheduler)
    if ARGO_CONFIG in present:
        objects = argo_workflow_defaults(objects, scheduler)
    return objects


def notebook_pod_expression() -> str:
    """CEL, in a ValidatingAdmissionPolicy's environment: the pod is a Kubeflow notebook's, in a team namespace."""
    label, value = PROFILE_NAMESPACE_LABEL
    return (
        f"has(namespaceObject.metadata.labels) && '{label}' in namespaceObject.metadata.labels && "
        f"namespaceObject.metadata.labels['{label}'] == '{value}' && "
        f"has(object.metadata.labels) && '{NOTEBOOK_LABEL}' in object.metadata.labels && "
        "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, "
        f"r.kind == 'StatefulSet' && r.name == object.metadata.labels['{NOTEBOOK_LABEL}'])"
    )


def notebook_exemption(policy: Manifest, scheduler: str) -> Manifest:
    """The platform's GPU ValidatingAdmissionPolicy with notebook pods exempt from its scheduler rule only.

    The rule is found by its expression (`spec.schedulerName == '<scheduler>'`); a policy without it is an error,
    since then there is nothing to exempt from and the caller's wiring is wrong."""
    policy = clone(policy)
    rule = f"has(object.spec.schedulerName) && object.spec.schedulerName == '{scheduler}'"
    found = [v for v in policy["spec"].get("validations") or () if v.get("expression") == rule]
    if len(found) != 1:
        raise ValueError(f"the policy {policy['metadata']['name']} has no rule requiring schedulerName {scheduler}")
    found[0]["expression"] = f"({notebook_pod_expression()}) || ({rule})"
    return policy
