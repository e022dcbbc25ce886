"""The samples the docs describe, as the admission test dry-runs them (tests/engine/test_admission.py), and what
our evaluator says of each: the GPU pod of docs/gpu.md and its variants, Kubeflow's documented pods and TrainJobs,
the example workloads; and a second Kubeflow team, so that each team is asked about the other's namespace."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from components.kubeflow.auth import Contributor, contributors
from components.kubeflow.teams import profile_manifest
from components.tools.cluster_model.admission import (
    JudgedPod,
    bound_policies,
    documented_pods,
    invalid,
    notebook_pods,
    refusals,
    trainer_pods,
)
from components.tools.cluster_model.pipeline_pods import pipeline_pods
from components.tools.cluster_model.workloads import pod_template
from tests.conftest import REPO

SECOND_TEAM = "vision"
Objects = list[dict[str, Any]]


def second_team(objects: Objects) -> Objects:
    """Dev has one Kubeflow team: a second one, made by the platform's own builders (its Profile, its namespace
    labelled as the first team's, an editor and a viewer bound as KFAM binds them), so that each team's people are
    asked about the other's namespace and contributors are asked at all."""
    first = next(o for o in objects if o.get("kind") == "Profile")["metadata"]["name"]
    labels = next(o for o in objects if o.get("kind") == "Namespace" and o["metadata"]["name"] == first)["metadata"]
    namespace: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SECOND_TEAM}}
    namespace["metadata"]["labels"] = {**labels["labels"], "eksml.io/team": SECOND_TEAM}
    people = [Contributor("editor@example.org", "edit"), Contributor("viewer@example.org", "view")]
    team = profile_manifest(
        name=SECOND_TEAM, owner="vision-lead@example.org", gpu_ceiling=0, role_arn="arn:aws:iam::1:role/r"
    )
    return [namespace, team, *contributors(SECOND_TEAM, people)]


def _doc_pod() -> dict[str, Any]:
    """The GPU pod of docs/gpu.md "How a data scientist asks for a GPU", as the page shows it."""
    text = (REPO / "docs" / "gpu.md").read_text()
    block = re.search(r"How a data scientist asks for a GPU:\n\n```yaml\n(.*?)```", text, re.S)
    assert block, "docs/gpu.md no longer shows the GPU pod sample"
    return dict(yaml.safe_load(block.group(1)))


def without(path: str) -> Callable[[Objects], list[dict[str, Any]]]:
    def build(_: Objects) -> list[dict[str, Any]]:
        pod = _doc_pod()
        del pod["spec"][path]
        return [pod]

    return build


def _unequal(_: Objects) -> list[dict[str, Any]]:
    pod = _doc_pod()
    pod["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpu": 2}
    return [pod]


def _cpu_pod_on_gpu_pool(objects: Objects) -> list[dict[str, Any]]:
    """A pod without GPUs that selects a GPU pool's nodes (and tolerates their taint): the policy asks only GPU pods."""
    pool = next(
        p for p in objects if p.get("kind") == "NodePool" and "nvidia.com/gpu" in (p["spec"].get("limits") or {})
    )
    pod = _doc_pod()
    pod["spec"]["nodeSelector"] = dict(pool["spec"]["template"]["metadata"]["labels"])
    del pod["spec"]["containers"][0]["resources"]
    return [pod]


def _in_exempt_namespace(_: Objects) -> list[dict[str, Any]]:
    pod = _doc_pod()
    pod["metadata"]["namespace"] = "gpu-operator"
    del pod["spec"]["schedulerName"], pod["spec"]["tolerations"]
    return [pod]


def _trainjob(namespace: str) -> Callable[[Objects], list[dict[str, Any]]]:
    def build(objects: Objects) -> list[dict[str, Any]]:
        runtime = next(o for o in objects if o.get("kind") == "ClusterTrainingRuntime")
        ns = namespace or next(o["metadata"]["name"] for o in objects if o.get("kind") == "Profile")
        job = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "train", "namespace": ns},
            "spec": {"runtimeRef": {"name": runtime["metadata"]["name"]}},
        }
        return [job]

    return build


def _examples(objects: Objects) -> list[dict[str, Any]]:
    """The pods of examples/workloads (which the README's workflow applies in a team's namespace), in the second
    team's."""
    found = []
    for path in sorted((REPO / "examples" / "workloads").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and pod_template(doc) is not None:
                doc["metadata"]["namespace"] = SECOND_TEAM
                found.append(doc)
    return judged(lambda objs: documented_pods(found, {}))(objects)


def judged(make: Callable[[Objects], list[Any]]) -> Callable[[Objects], list[dict[str, Any]]]:
    return lambda objects: [{"apiVersion": "v1", "kind": "Pod", **copy.deepcopy(dict(j.pod))} for j in make(objects)]


#: (the doc that describes it, what it is, the objects it creates, whether the doc says they are refused).
SAMPLES: list[tuple[str, str, Callable[[Objects], list[dict[str, Any]]], bool]] = [
    ("docs/gpu.md", "the GPU pod as shown", lambda _: [_doc_pod()], False),
    ("docs/gpu.md", "a GPU pod without the bin-pack scheduler", without("schedulerName"), True),
    ("docs/gpu.md", "a GPU pod without the toleration", without("tolerations"), True),
    ("docs/gpu.md", "a GPU pod requesting other than it limits", _unequal, True),
    ("docs/gpu.md", "a GPU pod in an exempt namespace", _in_exempt_namespace, False),
    ("docs/gpu.md", "a CPU pod asking for a GPU pool", _cpu_pod_on_gpu_pool, False),
    ("docs/kubeflow.md", "a GPU TrainJob's trainer pods", judged(trainer_pods), False),
    ("docs/kubeflow.md", "a GPU notebook's pods", judged(notebook_pods), False),
    ("docs/kubeflow.md", "a pipeline run's pods", judged(pipeline_pods), False),
    ("docs/kubeflow.md", "a TrainJob in a Profile's namespace", _trainjob(""), False),
    ("docs/kubeflow.md", "a TrainJob in a namespace without a Profile", _trainjob("team-a"), True),
    ("examples/workloads", "the example workloads' pods", _examples, False),
]


def offline_verdict(objects: Objects, obj: Mapping[str, Any]) -> list[str]:
    """What the API server should answer, by our evaluator: each refusing policy's first message, as the API server
    words a ValidatingAdmissionPolicy's denial (empty: admitted)."""
    labels = {
        o["metadata"]["name"]: dict(o["metadata"].get("labels") or {}) for o in objects if o.get("kind") == "Namespace"
    }
    judged = JudgedPod("sample", obj, labels.get(obj["metadata"]["namespace"], {}))
    # The API server validates the object before the validating admission policies are asked.
    if obj.get("kind") == "Pod" and (errors := invalid(obj)):
        return [f'The Pod "{obj["metadata"]["name"]}" is invalid: {errors[0]}']
    found = []
    for policy, binding in bound_policies(objects):
        if reasons := refusals(policy, binding, judged):
            name = policy["metadata"]["name"]
            found.append(f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: {reasons[0]}")
    return found
