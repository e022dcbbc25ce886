"""Training is not killed by the platform: training pools never expire and run no spot, trainer
pods and notebooks carry `karpenter.sh/do-not-disrupt`, and the model catches a trainer pod whose node can be
expired, reclaimed or consolidated away."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kubeflow.gpu_scheduling import trainer_runtimes
from components.kubeflow.notebooks import notebook_protection
from components.kubeflow.teams import Team, manifests

from .karpenter_support import problems as pool_problems
from .test_platform_model import agents, node_pool, problems

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
TRAINING = {"eksml.io/workload": "training"}
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
GPU_CLASSES = {name: {"preset": name} for name in ("default", "gpu", "gpu-training")}


def runtime() -> dict[str, Any]:
    """An upstream ClusterTrainingRuntime: an initializer and the trainer nodes, nothing the platform adds."""
    pod = {"spec": {"containers": [{"name": "node", "image": "pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime"}]}}
    jobs = [{"name": name, "template": {"spec": {"template": pod}}} for name in ("dataset-initializer", "node")]
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch-distributed"},
        "spec": {"template": {"spec": {"replicatedJobs": jobs}}},
    }


def training_pool(expire_after: str | None = "Never", capacity: tuple[str, ...] = ("on-demand",)) -> dict[str, Any]:
    pool = node_pool("training", gpu=True, taints=[GPU_TAINT], labels=TRAINING, capacity=capacity)
    if expire_after is not None:
        pool["spec"]["template"]["spec"]["expireAfter"] = expire_after
    return pool


def disruption_problems(tmp_path: Path, objects: list[dict[str, Any]]) -> list[str]:
    return [p for p in problems(tmp_path, [*agents(), *objects]) if p.startswith("[training-disruption]")]


def templates(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {j["name"]: j["template"]["spec"]["template"] for j in obj["spec"]["template"]["spec"]["replicatedJobs"]}


# ----------------------------------------------------------------------------------------------------- the pods


def test_trainer_pods_are_not_disrupted_and_with_training_pools_run_only_there_off_spot():
    (ours,) = trainer_runtimes([runtime()], None, training_pools=True)
    trainer, initializer = templates(ours)["node"], templates(ours)["dataset-initializer"]
    assert trainer["metadata"]["annotations"][DO_NOT_DISRUPT] == "true"
    (term,) = trainer["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term["matchExpressions"] == [
        {"key": "eksml.io/workload", "operator": "In", "values": ["training"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "reserved"]},
    ]
    assert "affinity" not in initializer["spec"]  # a CPU initializer may run anywhere
    # A stack without a training pool (dev) still protects the trainer from consolidation and drift.
    (dev,) = trainer_runtimes([runtime()], None)
    assert templates(dev)["node"]["metadata"]["annotations"][DO_NOT_DISRUPT] == "true"
    assert "affinity" not in templates(dev)["node"]["spec"]


def test_every_notebook_pod_of_a_team_namespace_is_marked_do_not_disrupt():
    objects = manifests(Team(name="vision", owner="a@example.org", gpu_ceiling=4, s3_prefix="teams/vision"))
    (protection,) = [o for o in objects if o["kind"] == "PodDefault" and o["metadata"]["name"] == "notebook-protection"]
    assert protection == notebook_protection("vision")
    # Selected by the label the notebook controller puts on every notebook pod, not by a form choice.
    assert protection["spec"]["selector"] == {"matchExpressions": [{"key": "notebook-name", "operator": "Exists"}]}
    assert protection["spec"]["annotations"] == {DO_NOT_DISRUPT: "true"}


# ---------------------------------------------------------------------------------------------------- the pools


@pytest.mark.parametrize(
    ("fields", "key", "fragment"),
    [
        ({"preset": "gpu-training", "expireAfter": "720h"}, "expireAfter", "must not expire its nodes"),
        ({"preset": "gpu-training", "capacityTypes": ["spot", "on-demand"]}, "capacityTypes", "reserved capacity only"),
        # Any pool labelled for training is held to it, from whatever preset (Karpenter's 720h default here).
        ({"preset": "gpu-inference", "labels": TRAINING, "capacityTypes": ["on-demand"]}, "expireAfter", "got '720h'"),
    ],
)
def test_a_training_pool_that_expires_or_runs_spot_is_refused_naming_the_field(fields, key, fragment):
    found = pool_problems(node_classes=GPU_CLASSES, **fields)
    assert fragment in found[f"karpenter.nodePools.p.{key}"]


# ---------------------------------------------------------------------------------------------------- the model


def test_a_trainer_pod_whose_training_node_expires_is_caught_and_never_expiring_fixes_it(tmp_path):
    (ours,) = trainer_runtimes([runtime()], None, training_pools=True)
    seeded = disruption_problems(tmp_path / "expiring", [training_pool(expire_after=None), ours])
    assert seeded == [
        (
            "[training-disruption] a GPU TrainJob's trainer pod from runtime torch-distributed can run on NodePool "
            "training, with expireAfter, which drains a node whatever its pods say"
        )
    ]
    assert disruption_problems(tmp_path / "never", [training_pool(), ours]) == []


def test_a_trainer_pod_that_can_land_on_spot_training_nodes_is_caught(tmp_path):
    upstream = runtime()
    (ours,) = trainer_runtimes([upstream], None)  # do-not-disrupt and the toleration, but no placement
    found = disruption_problems(tmp_path, [training_pool(capacity=("spot", "on-demand")), ours])
    assert found == [
        (
            "[training-disruption] a GPU TrainJob's trainer pod from runtime torch-distributed can run on NodePool "
            "training, with spot capacity, reclaimed with two minutes' notice"
        )
    ]


def test_a_trainer_pod_without_do_not_disrupt_is_caught_even_on_a_safe_pool(tmp_path):
    (ours,) = trainer_runtimes([runtime()], None, training_pools=True)
    del templates(ours)["node"]["metadata"]["annotations"][DO_NOT_DISRUPT]
    assert disruption_problems(tmp_path, [training_pool(), ours]) == [
        (
            "[training-disruption] a GPU TrainJob's trainer pod from runtime torch-distributed has no "
            "karpenter.sh/do-not-disrupt: consolidation or drift can drain its node while it runs"
        )
    ]


def test_a_gpu_notebook_is_protected_by_its_namespaces_pod_default_and_caught_without_it(tmp_path):
    form = {
        "spawnerFormDefaults": {
            "image": {"value": "jupyter", "options": ["jupyter-pytorch-cuda-full:v1.11.0"]},
            "tolerationGroup": {"options": [{"groupKey": "nvidia-gpu", "tolerations": [GPU_TAINT]}]},
            "affinityConfig": {
                "options": [{"configKey": "training", "displayName": "NodePool training", "affinity": {}}]
            },
        }
    }
    spawner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "jupyter-web-app-config", "namespace": "kubeflow"},
        "data": {"spawner_ui_config.yaml": yaml.safe_dump(form)},
    }
    team = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "vision", "labels": {"app.kubernetes.io/part-of": "kubeflow-profile"}},
    }
    base = [training_pool(), spawner, team]
    assert disruption_problems(tmp_path / "bare", base) == [
        (
            "[training-disruption] a GPU notebook on NodePool training has no karpenter.sh/do-not-disrupt: "
            "consolidation or drift can drain its node while it runs"
        )
    ]
    assert disruption_problems(tmp_path / "protected", [*base, notebook_protection("vision")]) == []
