"""GPU pods Kubeflow creates, placed by the platform's bin-packing scheduler.

The platform's ValidatingAdmissionPolicy denies a GPU pod whose `spec.schedulerName` is not the bin-packing
scheduler, or that lacks the GPU toleration. Kubeflow creates GPU pods three ways:

- Trainer: every ClusterTrainingRuntime's pod templates name the scheduler, and the trainer nodes' pods tolerate
  the GPU taint (TrainJobs inherit both; a TrainJob adds resources, not tolerations). The trainer nodes' pods carry
  `karpenter.sh/do-not-disrupt`, so neither consolidation nor drift drains a node mid-job (Karpenter, "Disruption" >
  "Pod-Level Controls", karpenter.sh/docs/concepts/disruption/). Expiry and spot reclaims ignore the annotation, so
  where the platform has a training pool they require one (`eksml.io/workload: training`, which the NodePool checks
  hold to on-demand or reserved capacity and `expireAfter: Never`) and capacity that is not spot; a stack without
  one (dev) runs them on its other GPU pools, spot included. The runtimes' pods also run
  as the team's `default-editor` (the one service account the team's IAM role trusts) and without Istio sidecars:
  the mesh's deny-all and mTLS break the trainers' plaintext rendezvous (kubeflow/trainer#2794, #2872).
- Pipelines: Argo copies a workflow's `schedulerName` to all of its pods, CPU steps included, so naming the
  bin-packing scheduler there would stall every pipeline whenever that one scheduler does. Pipeline pods keep the
  default scheduler and are exempt from the scheduler rule; a GPU step still needs the toleration
  (kfp-kubernetes `add_toleration`).
- Notebooks: JWA builds the pod itself and PodDefaults cannot set schedulerName, so no configuration reaches it.

So two kinds of pods in team namespaces are exempt from the scheduler rule only (`kubeflow_exemption`): notebook
pods (owned and labelled by the notebook controller's StatefulSet) and pipeline pods (owned and labelled by an
Argo Workflow). Such a pod is still denied without the GPU toleration or with requests differing from limits; the
exemption costs packing, not isolation (a user who builds a look-alike owner only skips the bin-packing scheduler,
within the team's GPU quota). A MutatingAdmissionPolicy setting schedulerName would remove the exemption, once the
cluster serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (not on EKS 1.35).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..scheduling import GPU_TAINT, TRAINING_WORKLOAD, WORKLOAD_LABEL
from .notebooks import NOTEBOOK_POD_LABEL
from .objects import Manifest
from .teams import TEAM_SERVICE_ACCOUNT
from .transform import CAPACITY_TYPE, DO_NOT_DISRUPT, clone

RUNTIME_KINDS = frozenset({"ClusterTrainingRuntime", "TrainingRuntime"})
#: The replicated job of a runtime whose pods train (and get the GPUs a TrainJob asks for); the others initialise.
TRAINER_JOB = "node"
SIDECAR_INJECT = "sidecar.istio.io/inject"
GPU_TOLERATION = GPU_TAINT.key_toleration()
#: The capacity a trainer pod may run on: what Karpenter does not reclaim (karpenter.sh/capacity-type values,
#: kubernetes-sigs/karpenter pkg/apis/v1/labels.go).
TRAINER_CAPACITY = ("on-demand", "reserved")
#: The label the profile controller puts on every team namespace.
PROFILE_NAMESPACE_LABEL = ("app.kubernetes.io/part-of", "kubeflow-profile")
#: The label the notebook controller puts on a notebook's pods (its value is the Notebook's, and StatefulSet's, name).
#: The label Argo puts on a workflow's pods (its value is the Workflow's name).
WORKFLOW_LABEL = "workflows.argoproj.io/workflow"


def _runtime_pod_templates(runtime: Manifest) -> Iterable[tuple[str, dict[str, Any]]]:
    """The pod template of every replicated job of a (Cluster)TrainingRuntime (JobSet template), by job name."""
    for job in runtime.get("spec", {}).get("template", {}).get("spec", {}).get("replicatedJobs") or ():
        yield job["name"], job.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})


def trainer_runtimes(
    objects: Iterable[Manifest], scheduler: str | None, *, training_pools: bool = False
) -> list[Manifest]:
    """Every training runtime's pods as the platform runs them: placed by `scheduler` (initializers too, so one
    scheduler packs a TrainJob's pods together; None: the bin-packing scheduler is off), the trainer nodes'
    tolerating the GPU taint and not disrupted (on training pools only, when the platform has them), all as the
    team's service account and without sidecars."""
    result = []
    for obj in objects:
        if obj["kind"] in RUNTIME_KINDS and obj["apiVersion"].startswith("trainer.kubeflow.org/"):
            obj = clone(obj)
            for job, template in _runtime_pod_templates(obj):
                spec = template.setdefault("spec", {})
                if scheduler is not None:
                    spec["schedulerName"] = scheduler
                spec["serviceAccountName"] = TEAM_SERVICE_ACCOUNT
                template.setdefault("metadata", {}).setdefault("annotations", {})[SIDECAR_INJECT] = "false"
                if job == TRAINER_JOB:
                    _protect_trainer(template, training_pools)
        result.append(obj)
    return result


def _protect_trainer(template: dict[str, Any], training_pools: bool) -> None:
    """A trainer pod: tolerates the GPU taint and is not disrupted; with `training_pools`, runs on a training pool's
    capacity that is not reclaimed."""
    spec = template.setdefault("spec", {})
    if GPU_TOLERATION not in (spec.get("tolerations") or []):
        spec.setdefault("tolerations", []).append(dict(GPU_TOLERATION))
    template.setdefault("metadata", {}).setdefault("annotations", {})[DO_NOT_DISRUPT] = "true"
    if not training_pools:
        return
    wanted = [
        {"key": WORKLOAD_LABEL, "operator": "In", "values": [TRAINING_WORKLOAD]},
        {"key": CAPACITY_TYPE, "operator": "In", "values": list(TRAINER_CAPACITY)},
    ]
    required = (
        spec.setdefault("affinity", {})
        .setdefault("nodeAffinity", {})
        .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    )
    # Terms are ORed: the requirements go into each one, or into a term of their own if there is none.
    terms = required.setdefault("nodeSelectorTerms", [])
    if not terms:
        terms.append({})
    for term in terms:
        expressions = term.setdefault("matchExpressions", [])
        expressions += [dict(e) for e in wanted if e not in expressions]


def apply(objects: list[Manifest], scheduler: str | None, *, training_pools: bool = False) -> list[Manifest]:
    """Training runtimes as the platform runs them (see `trainer_runtimes`)."""
    return trainer_runtimes(objects, scheduler, training_pools=training_pools)


def _owned_pod_expression(label: str, owner_kind: str) -> str:
    return (
        f"has(object.metadata.labels) && '{label}' in object.metadata.labels && "
        "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, "
        f"r.kind == '{owner_kind}' && r.name == object.metadata.labels['{label}'])"
    )


def kubeflow_pod_expression() -> str:
    """CEL, in a ValidatingAdmissionPolicy's environment: the pod is a Kubeflow notebook's or pipeline step's, in a
    team namespace."""
    label, value = PROFILE_NAMESPACE_LABEL
    return (
        f"has(namespaceObject.metadata.labels) && '{label}' in namespaceObject.metadata.labels && "
        f"namespaceObject.metadata.labels['{label}'] == '{value}' && "
        f"(({_owned_pod_expression(NOTEBOOK_POD_LABEL, 'StatefulSet')}) || "
        f"({_owned_pod_expression(WORKFLOW_LABEL, 'Workflow')}))"
    )


def kubeflow_exemption(policy: Manifest, scheduler: str) -> Manifest:
    """The platform's GPU ValidatingAdmissionPolicy with notebook and pipeline pods exempt from its scheduler rule
    only.

    The rule is found by its expression (`spec.schedulerName == '<scheduler>'`); a policy without it is an error,
    since then there is nothing to exempt from and the caller's wiring is wrong."""
    policy = clone(policy)
    rule = f"has(object.spec.schedulerName) && object.spec.schedulerName == '{scheduler}'"
    found = [v for v in policy["spec"].get("validations") or () if v.get("expression") == rule]
    if len(found) != 1:
        raise ValueError(f"the policy {policy['metadata']['name']} has no rule requiring schedulerName {scheduler}")
    found[0]["expression"] = f"({kubeflow_pod_expression()}) || ({rule})"
    return policy
