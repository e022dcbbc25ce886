"""TrainJobs where their pods cannot run, refused at admission (pure).

The platform's ClusterTrainingRuntimes run every pod as `default-editor` (`gpu_scheduling.trainer_runtimes`: the one
service account a team's IAM role trusts). Only a Kubeflow Profile's namespace has that account (the profile
controller makes it); in any other namespace the platform makes (a team stack without `team.kubeflow`, the FSx
namespaces of `storage.fsx.namespaces`) the TrainJob is accepted, then the Job controller's pods are refused by the
ServiceAccount admission plugin ("error looking up service account"), and the TrainJob hangs with nothing but an
event on a Job to say why. So such a TrainJob is refused when it is created, unless it names its own account
through `spec.runtimePatches` (the Trainer's API at the pinned tree, `trainer.kubeflow.org_trainjobs.yaml`:
`runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec
.serviceAccountName`) or uses a namespaced TrainingRuntime of its own, whose pods run as that runtime says.
"""

from __future__ import annotations

from ..admission_policy import Requests, policy_and_binding
from .objects import Manifest
from .teams import PROFILE_NAMESPACE_LABELS, TEAM_SERVICE_ACCOUNT

POLICY = "trainjobs-need-a-profile-namespace"
PROFILE_LABEL = "app.kubernetes.io/part-of"
_PATCHED_ACCOUNT = (
    "has(object.spec.runtimePatches) && object.spec.runtimePatches.exists(p, has(p.trainingRuntimeSpec) && "
    "has(p.trainingRuntimeSpec.template) && has(p.trainingRuntimeSpec.template.spec) && "
    "has(p.trainingRuntimeSpec.template.spec.replicatedJobs) && "
    "p.trainingRuntimeSpec.template.spec.replicatedJobs.exists(j, has(j.template) && has(j.template.spec) && "
    "has(j.template.spec.template) && has(j.template.spec.template.spec) && "
    "has(j.template.spec.template.spec.serviceAccountName)))"
)
_CLUSTER_RUNTIME = "!has(object.spec.runtimeRef.kind) || object.spec.runtimeRef.kind == 'ClusterTrainingRuntime'"
MESSAGE = (
    f"the platform's ClusterTrainingRuntimes run their pods as {TEAM_SERVICE_ACCOUNT}, which only a Kubeflow "
    "Profile's namespace has: run the TrainJob in a team namespace with a Profile (kubeflow.teams, or a team stack "
    "with team.kubeflow), or name your service account for every replicated job in spec.runtimePatches "
    "(trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec.serviceAccountName), or use a "
    "TrainingRuntime of the namespace"
)


def manifests() -> list[Manifest]:
    """The ValidatingAdmissionPolicy and its binding (every namespace but a Profile's)."""
    return policy_and_binding(
        POLICY,
        Requests("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
        [{"expression": _PATCHED_ACCOUNT, "message": MESSAGE, "reason": "Invalid"}],
        namespaces={
            "matchExpressions": [
                {"key": PROFILE_LABEL, "operator": "NotIn", "values": [PROFILE_NAMESPACE_LABELS[PROFILE_LABEL]]}
            ]
        },
        match_conditions=[{"name": "cluster-runtime", "expression": _CLUSTER_RUNTIME}],
    )
