"""Kueue: the chart values the platform sets are ones the pinned chart reads, the queue objects pass the pinned CRDs'
schemas and CEL rules, a team's share is derived once (queue, Profile and ResourceQuota agree), config mistakes are
named, and the model catches a team that cannot queue or queued work that lands nowhere."""

from __future__ import annotations

import copy
import dataclasses
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.errors import ConfigError
from components.karpenter.render import render_nodepools
from components.karpenter.validation import label_problem
from components.kueue.queues import (
    COHORT,
    LOCAL_QUEUE,
    MANAGED_NAMESPACE_LABEL,
    QUEUE_LABEL,
    SHARED_FLAVOR,
    flavor_quotas,
    gpu_share,
    neuron_ceilings,
    offered,
    pool_flavor,
    resource_flavor,
    shared_flavor,
    team_queue,
)
from components.kueue.values import chart_values, manager_config
from components.platform.parse import parse_config
from components.scheduling import GPU_SHARE_LABEL, GPU_SHARE_PLATFORM, SYSTEM_PLACEMENT
from components.storage.render import no_accelerators_quota
from components.team.config import TeamConfig
from components.team.offer import PlatformContractError, parse_offer
from components.team.plan import plan_team
from components.versions import KUEUE
from tests.conftest import REFCHECK, REPO, stack_config
from tests.kueue_support import CHART, kueue_crds

PLATFORM_OUTPUTS = json.loads((REPO / "examples" / "team-stack" / "platform-outputs.prod.json").read_text())
needs_chart = pytest.mark.skipif(not CHART.is_dir(), reason="the pinned Kueue chart is not beside the repository")
#: Values whose content is a Kubernetes object, not a chart setting.
PASS_THROUGH = {"resources", "nodeSelector", "tolerations"}


def dev(**overrides: Any):
    return parse_config(stack_config("dev", overrides), project="eks-ml-platform", stack="dev")


def dev_problems(**overrides: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        dev(**overrides)
    return {issue.path: issue.message for issue in caught.value.issues}


def key_paths(values: dict[str, Any], prefix: str = "") -> set[str]:
    found = set()
    for key, value in values.items():
        if isinstance(value, dict) and value and key not in PASS_THROUGH:
            found |= key_paths(value, f"{prefix}{key}.")
        else:
            found.add(f"{prefix}{key}")
    return found


# ------------------------------------------------------------------------------------------------ chart values


@needs_chart
def test_every_values_key_the_platform_sets_is_one_the_pinned_chart_has():
    upstream = yaml.safe_load((CHART / "values.yaml").read_text())
    unknown = {
        path for path in key_paths(chart_values(placement=SYSTEM_PLACEMENT)) if not _has(upstream, path.split("."))
    }
    assert unknown == set()


def _has(values: Any, path: list[str]) -> bool:
    for key in path:
        if not isinstance(values, dict) or key not in values:
            return False
        values = values[key]
    return True


def test_only_labelled_work_in_team_namespaces_is_queued_and_only_gpus_are_counted():
    config = manager_config()
    assert config["manageJobsWithoutQueueName"] is False
    assert config["managedJobsNamespaceSelector"] == {"matchLabels": {MANAGED_NAMESPACE_LABEL: "managed"}}
    assert {"cpu", "memory"} <= set(config["resources"]["excludeResourcePrefixes"])
    assert "nvidia.com/gpu" not in " ".join(config["resources"]["excludeResourcePrefixes"])


def test_the_controller_runs_on_the_system_nodes_from_the_release_image_and_survives_a_node_loss():
    manager = chart_values(placement=SYSTEM_PLACEMENT)["controllerManager"]
    assert manager["nodeSelector"] == dict(SYSTEM_PLACEMENT.node_selector)
    assert manager["tolerations"] == [dict(t) for t in SYSTEM_PLACEMENT.tolerations]
    assert manager["manager"]["image"]["tag"] == f"v{KUEUE.version}"
    assert manager["replicas"] >= 2
    assert manager["podDisruptionBudget"]["enabled"]


# -------------------------------------------------------------------------------------------------- CRDs


@cache
def _checker() -> Any:
    """refcheck's checker, with the CRDs the pinned chart renders (its CRDs are templates of the chart)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("refcheck_kueue", REFCHECK)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    crds = kueue_crds()
    checker = module.K8sChecker(
        module.Reference(module.default_ref_dir()), module.Report(), ["1.35"], module.CelEngine()
    )
    for index, crd in enumerate(crds):
        checker.register_user_crd(module.Obj(crd, "kueue-crds", index))
    kinds = {crd["spec"]["names"]["kind"] for crd in crds}
    assert {"ClusterQueue", "LocalQueue", "ResourceFlavor"} <= kinds
    return module, checker


def crd_findings(objects: list[dict[str, Any]]) -> list[str]:
    module, checker = _checker()
    checker.rep = report = module.Report()
    checked = [module.Obj(o, "rendered", index) for index, o in enumerate(objects, 1)]
    for o in checked:
        checker.check(o, checked)
    return [f"{f['level']} {f['where']}: {f['msg']}" for f in report.findings if f["level"] in ("ERROR", "WARN")]


def team_stack_plan():
    team = TeamConfig.model_validate(
        {
            "name": "vision",
            "quota": {"gpus": 16, "gpuBorrowingLimit": 8},
            "nodePool": {"preset": "gpu-inference-a10g-spot", "limits": {"nvidia.com/gpu": "8"}},
        }
    )
    return plan_team(team, parse_offer(PLATFORM_OUTPUTS, stack="acme/eks-ml-platform/prod"))


@pytest.mark.subprocess
@pytest.mark.refcheck
@needs_chart
def test_the_platforms_and_a_team_stacks_queue_objects_pass_the_pinned_crds():
    config = dev()
    plan = team_stack_plan()
    assert plan.queues is not None
    assert plan.flavor is not None
    objects = [
        resource_flavor(config.kueue_flavor),
        *(obj for queues in config.team_queues().values() for obj in queues),
        *plan.queues,
        plan.flavor,
    ]
    assert crd_findings(objects) == []
    misspelled = plan.queues[0] | {"spec": {**plan.queues[0]["spec"], "cohort": COHORT}}
    assert any("cohort" in finding for finding in crd_findings([misspelled]))


# ------------------------------------------------------------------------------------------------ one share


def test_a_borrowing_limit_left_unset_is_the_quota_and_the_ceiling_is_their_sum():
    assert gpu_share(4, None, queueing=True).ceiling == 8
    assert gpu_share(4, 1, queueing=True).ceiling == 5
    assert gpu_share(4, None, queueing=False).ceiling == 4


def test_a_kubeflow_teams_profile_quota_is_the_ceiling_of_the_share_its_cluster_queue_has():
    config = dev(kubeflow=_dev_kubeflow(gpuQuota=2, gpuBorrowingLimit=1))
    cluster_queue, local_queue = config.team_queues()["ml-research"]
    gpus = cluster_queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert (gpus["nominalQuota"], gpus["borrowingLimit"]) == (2, 1)
    assert cluster_queue["spec"]["cohortName"] == COHORT
    assert cluster_queue["spec"]["preemption"]["reclaimWithinCohort"] == "Any"
    assert local_queue == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": LOCAL_QUEUE, "namespace": "ml-research"},
        "spec": {"clusterQueue": cluster_queue["metadata"]["name"]},
    }
    from components.kubeflow.config import settings
    from components.kubeflow.teams import manifests

    facts = settings(config.kubeflow, storage_class="gp3", gpu_node_pools=(), gpu_scheduler=None, queueing=True)
    objects = manifests(facts.teams[0])
    (namespace,) = [o for o in objects if o["kind"] == "Namespace"]
    (profile,) = [o for o in objects if o["kind"] == "Profile"]
    pod_defaults = [o for o in objects if o["kind"] == "PodDefault"]
    assert profile["spec"]["resourceQuotaSpec"]["hard"]["requests.nvidia.com/gpu"] == "3"
    assert namespace["metadata"]["labels"][MANAGED_NAMESPACE_LABEL] == "managed"
    queue_default = next(p for p in pod_defaults if p["metadata"]["name"] == "kueue-queue")
    assert queue_default["spec"]["labels"] == {QUEUE_LABEL: LOCAL_QUEUE}


def _dev_kubeflow(**team: Any) -> dict[str, Any]:
    document = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())["config"]["eks-ml-platform:kubeflow"]
    document["teams"]["ml-research"].update(team)
    return document


def test_a_team_stacks_resource_quota_holds_the_ceiling_and_its_own_pool_comes_first_for_its_pods_alone():
    plan = team_stack_plan()
    assert plan.namespace["quota"]["spec"]["hard"]["requests.nvidia.com/gpu"] == "24"
    assert plan.namespace["namespace"]["metadata"]["labels"][MANAGED_NAMESPACE_LABEL] == "managed"
    cluster_queue, _ = plan.queues
    quotas = {
        f["name"]: (f["resources"][0]["nominalQuota"], f["resources"][0]["borrowingLimit"])
        for f in cluster_queue["spec"]["resourceGroups"][0]["flavors"]
    }
    # Its own pool (8 GPUs) first, then the platform's: the quota of 16 split between them, the borrowing limit of 8
    # on the platform's pools only, so 24 at most in all.
    assert list(quotas) == ["team-vision", PLATFORM_OUTPUTS["kueue"]["flavor"]["name"]]
    assert quotas == {"team-vision": (8, 0), SHARED_FLAVOR: (8, 8)}
    assert plan.flavor["spec"]["nodeTaints"] == [{"key": "eksml.io/team", "value": "vision", "effect": "NoSchedule"}]
    assert plan.flavor["spec"]["nodeLabels"]["karpenter.sh/nodepool"] == "team-vision"


def test_a_team_pool_larger_than_the_quota_holds_the_quota_and_the_team_only_borrows_on_the_platforms_pools():
    share = gpu_share(4, 2, queueing=True)
    own = pool_flavor("team-vision", {"eksml.io/workload": "inference"}, 8)
    quotas = [(f.name, nominal, borrowing) for f, nominal, borrowing in flavor_quotas(share, shared_flavor([16]), own)]
    assert quotas == [("team-vision", 4, 0), (SHARED_FLAVOR, 0, 2)]
    assert sum(n + b for _, n, b in quotas) == share.ceiling


def test_a_team_stack_reading_a_platform_that_exported_a_flavor_per_pool_is_told_the_platform_is_older():
    per_pool = {"cohort": COHORT, "flavors": [{"name": "training", "nodeLabels": {}, "gpus": 32}]}
    with pytest.raises(PlatformContractError) as caught:
        parse_offer({**PLATFORM_OUTPUTS, "kueue": per_pool}, stack="acme/eks-ml-platform/prod")
    assert any(problem.startswith("output kueue.flavor") for problem in caught.value.problems)
    assert "older version" in str(caught.value)


def test_a_team_stack_on_a_platform_without_kueue_keeps_its_quota_and_may_not_borrow():
    outputs = {k: v for k, v in PLATFORM_OUTPUTS.items() if k != "kueue"}
    offer = parse_offer(outputs, stack="acme/eks-ml-platform/prod")
    plan = plan_team(TeamConfig.model_validate({"name": "vision", "quota": {"gpus": 16}}), offer)
    assert plan.queues is None
    assert plan.namespace["quota"]["spec"]["hard"]["requests.nvidia.com/gpu"] == "16"
    with pytest.raises(ConfigError) as caught:
        plan_team(TeamConfig.model_validate({"name": "vision", "quota": {"gpus": 16, "gpuBorrowingLimit": 2}}), offer)
    assert [issue.path for issue in caught.value.issues] == ["team.quota.gpuBorrowingLimit"]


def _labels(pool: dict[str, Any]) -> dict[str, str]:
    return pool["spec"]["template"]["metadata"]["labels"]


def test_the_platforms_gpu_pools_are_one_flavor_that_selects_exactly_those_pools_by_their_label():
    prod = parse_config(stack_config("prod"), project="eks-ml-platform", stack="prod")
    assert prod.kueue_gpu_pools == {
        "inference-a10g-on-demand": 16,
        "inference-a10g-spot": 32,
        "inference-t4-spot": 16,
        "training": 32,
    }
    assert prod.kueue_flavor is not None
    flavor = resource_flavor(prod.kueue_flavor)
    assert flavor["metadata"]["name"] == SHARED_FLAVOR
    # One node label, which Kueue adds to the selector of what it admits here; among the pools that carry it the
    # pods' own selector picks, as without Kueue.
    assert flavor["spec"] == {"nodeLabels": {GPU_SHARE_LABEL: GPU_SHARE_PLATFORM}}
    pools = render_nodepools(prod.karpenter)  # as the Karpenter component renders them
    labelled = {name for name, pool in pools.items() if _labels(pool).get(GPU_SHARE_LABEL) == GPU_SHARE_PLATFORM}
    assert labelled == set(prod.kueue_gpu_pools)
    assert not any(GPU_SHARE_LABEL in _labels(pools[name]) for name in set(pools) - labelled)  # cpu-general
    assert (
        PLATFORM_OUTPUTS["kueue"]
        == offered(prod.kueue_flavor, prod.kueue.reserve, prod.kueue.team_stacks)
        == {
            "cohort": COHORT,
            # the pools' GPU limits together
            "flavor": {"name": SHARED_FLAVOR, "nodeLabels": {GPU_SHARE_LABEL: GPU_SHARE_PLATFORM}, "gpus": 96},
            "teamStackGpus": 8,
            "teamStacks": {"vision": 8},
        }
    )
    # A team stack reads the flavor back with its label: its queue's shared flavor is the platform's.
    offer = parse_offer(PLATFORM_OUTPUTS, stack="acme/eks-ml-platform/prod")
    assert offer.kueue is not None
    assert offer.kueue.shared_flavor() == prod.kueue_flavor
    (cluster_queue, _) = prod.team_queues()["research"]
    (only,) = cluster_queue["spec"]["resourceGroups"][0]["flavors"]
    assert only == {
        "name": SHARED_FLAVOR,
        "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 16}],
    }


def test_a_team_pools_flavor_carries_its_pool_and_workload_label():
    training = pool_flavor("team-vision", {"eksml.io/workload": "training", "other": "x"}, 32)
    assert training.node_labels == {"karpenter.sh/nodepool": "team-vision", "eksml.io/workload": "training"}


def test_a_team_pool_never_carries_the_shared_label_and_no_pools_labels_may_set_it():
    plan = team_stack_plan()
    assert plan.node_pool_manifest is not None
    assert GPU_SHARE_LABEL not in _labels(plan.node_pool_manifest)
    # Outside the domains Karpenter reserves, so a NodePool may carry it.
    assert label_problem(GPU_SHARE_LABEL) is None
    # A platform pool's labels can neither fake it (the CPU pool) nor set it for the platform (the GPU pool); a team
    # stack's pool has no labels of its own to set (its preset's and the team label).
    karpenter = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())["config"]["eks-ml-platform:karpenter"]
    for pool in ("cpu-general", "gpu-inference"):
        karpenter["nodePools"][pool]["labels"] = {GPU_SHARE_LABEL: GPU_SHARE_PLATFORM}
    found = dev_problems(karpenter=karpenter)
    for pool in ("cpu-general", "gpu-inference"):
        assert "set by the platform" in found[f"karpenter.nodePools.{pool}.labels.{GPU_SHARE_LABEL}"]


# --------------------------------------------------------------------------------------------- config errors


def test_borrowing_without_kueue_and_kueue_without_a_gpu_pool_are_refused():
    assert "kubeflow.teams.ml-research.gpuBorrowingLimit" in dev_problems(
        kueue={"enabled": False}, kubeflow=_dev_kubeflow(gpuBorrowingLimit=2)
    )
    assert "kubeflow.teams.ml-research.gpuBorrowingLimit" in dev_problems(kubeflow=_dev_kubeflow(gpuBorrowingLimit=-1))
    cpu_only = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())["config"]["eks-ml-platform:karpenter"]
    cpu_only["nodePools"].pop("gpu-inference")
    found = dev_problems(kueue={"enabled": True}, karpenter=cpu_only, kubeflow={"enabled": False})
    assert "kueue" in found
    assert "no NodePool launches NVIDIA GPUs" in found["kueue"]
    assert "kueue.enabeld" in dev_problems(kueue={"enabeld": True})


def test_kueue_off_leaves_no_queue_and_the_plain_quota():
    config = dev(kueue={"enabled": False})
    assert config.queueing is False


# ------------------------------------------------------------------------------------------------- the model


def _model_problems(tmp_path: Path, objects: list[dict[str, Any]]) -> list[str]:
    from tests.test_platform_model import node_pool, problems

    gpu_pool = node_pool(
        "gpu",
        gpu=True,
        taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
        labels={"eksml.io/workload": "inference"},
    )
    return [p for p in problems(tmp_path, [gpu_pool, *objects]) if p.startswith("[queues]")]


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"eksml.io/team": name}}}


def _quota(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "team", "namespace": namespace},
        "spec": {"hard": {"requests.nvidia.com/gpu": "4", **neuron_ceilings()}},
    }


def _job(selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "labels": {QUEUE_LABEL: LOCAL_QUEUE}},
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": selector,
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [
                        {
                            "name": "c",
                            "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                            "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
                        }
                    ],
                }
            }
        },
    }


def _queues(flavor_labels: dict[str, str]) -> list[dict[str, Any]]:
    flavor = pool_flavor("gpu", flavor_labels, 4)
    cluster_queue, local_queue = team_queue("vision", gpu_share(2, None, queueing=True), flavor)
    return [resource_flavor(flavor), cluster_queue, local_queue]


def test_the_model_passes_a_team_whose_queued_job_lands_on_its_flavors_pool(tmp_path):
    labels = {"eksml.io/workload": "inference"}
    assert _model_problems(tmp_path, [_namespace("vision"), _quota("vision"), *_queues(labels), _job({})]) == []


def test_the_model_catches_a_team_namespace_without_a_queue_and_a_queue_without_its_cluster_queue(tmp_path):
    flavor, _, local_queue = _queues({"eksml.io/workload": "inference"})
    # fsx-only: a namespace the platform makes for its file system (team label, a quota of no GPUs): no share, so
    # no queue to find
    fsx_only = [_namespace("fsx-only"), no_accelerators_quota("fsx-only")]
    objects = [_namespace("vision"), _namespace("nlp"), _quota("vision"), _quota("nlp"), *fsx_only]
    found = _model_problems(tmp_path, [*objects, flavor, local_queue])
    assert any("team namespace nlp has no Kueue LocalQueue" in p for p in found)
    assert not any("fsx-only" in p for p in found)
    assert any("points at ClusterQueue team-vision, which does not exist" in p for p in found)


def test_the_model_names_a_team_namespace_whose_gpu_pods_reach_the_pools_outside_any_share(tmp_path):
    """Every kind of workload a team runs (queued or not: KServe, pipeline steps, Deployments) is counted by its
    namespace's GPU quota; a team namespace without one reaches the shared GPUs in no share."""
    queued = [_namespace("vision"), _quota("vision"), *_queues({"eksml.io/workload": "inference"})]
    assert _model_problems(tmp_path, [*queued, _namespace("fsx-only"), no_accelerators_quota("fsx-only")]) == []
    found = _model_problems(tmp_path / "b", [*queued, _namespace("fsx-only")])
    named = (
        "[queues] namespace fsx-only runs a team's pods with no GPU quota (requests.nvidia.com/gpu in a "
        "ResourceQuota or its Profile): its GPU pods reach the shared GPU pools outside any team's share"
    )
    neuron = (
        "[queues] namespace fsx-only runs a team's pods with no quota on aws.amazon.com/neuron, "
        "aws.amazon.com/neuroncore, aws.amazon.com/neurondevice: its Neuron pods reach the platform's Neuron pools "
        "outside any team's share"
    )
    assert [p for p in found if "fsx-only" in p] == [named, neuron]


def test_the_model_catches_queued_work_that_no_flavor_fits_or_whose_flavor_names_no_pool(tmp_path):
    labels = {"eksml.io/workload": "inference"}
    found = _model_problems(tmp_path, [_namespace("vision"), *_queues(labels), _job({"eksml.io/workload": "training"})])
    assert any("has no flavor Kueue could give it" in p for p in found)
    flavor, cluster_queue, local_queue = _queues(labels)
    flavor["spec"]["nodeLabels"]["karpenter.sh/nodepool"] = "gone"
    found = _model_problems(tmp_path / "b", [_namespace("vision"), flavor, cluster_queue, local_queue, _job({})])
    assert any("on flavor gpu, runs on no node" in p for p in found)


def test_the_model_catches_a_queue_that_admits_more_gpus_over_its_flavors_than_its_namespaces_quota(tmp_path):
    labels = {"eksml.io/workload": "inference"}
    flavor, cluster_queue, local_queue = _queues(labels)  # nominal 2, borrowing 2: the quota of 4
    objects = [_namespace("vision"), _quota("vision"), flavor, local_queue, _job({})]
    assert _model_problems(tmp_path, [*objects, cluster_queue]) == []
    # A flavor per pool, each with the whole share: Kueue would admit 8.
    (entry,) = cluster_queue["spec"]["resourceGroups"][0]["flavors"]
    second = resource_flavor(pool_flavor("gpu-2", labels, 4))
    per_pool = copy.deepcopy(cluster_queue)
    per_pool["spec"]["resourceGroups"][0]["flavors"] = [entry, {**entry, "name": "gpu-2"}]
    found = _model_problems(tmp_path / "b", [*objects, second, per_pool])
    assert any("ClusterQueue team-vision admits up to 8 GPUs over its flavors" in p and "(4)" in p for p in found)
    unbounded = copy.deepcopy(cluster_queue)
    del unbounded["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"]
    found = _model_problems(tmp_path / "c", [*objects, unbounded])
    assert any("admits any number of GPUs" in p for p in found)


def _team_job(team: str, taint: dict[str, str]) -> dict[str, Any]:
    job = _job({})
    job["metadata"]["namespace"] = team
    tolerations = job["spec"]["template"]["spec"]["tolerations"]
    tolerations.append({"key": taint["key"], "operator": "Equal", "value": taint["value"], "effect": taint["effect"]})
    return job


def test_a_team_stacks_job_admitted_on_the_shared_flavor_lands_on_the_platforms_pools_only(tmp_path):
    """A team stack's pod tolerates its own pool's taint: were the shared flavor to select no nodes, Kueue would admit
    it on `platform-gpus` (holding shared quota) and it could run on the team's own pool."""
    from components.tools.cluster_model import check_previews
    from components.tools.cluster_model.landing import lands_on
    from components.tools.cluster_model.nodes import from_node_pool
    from components.tools.cluster_model.workloads import from_object
    from tests.test_platform_model import preview

    prod = parse_config(stack_config("prod"), project="eks-ml-platform", stack="prod")
    plan = team_stack_plan()  # vision, with its own GPU pool team-vision, on prod's recorded outputs
    assert plan.queues is not None
    assert plan.flavor is not None
    assert plan.node_pool_manifest is not None
    assert prod.kueue_flavor is not None
    shared = resource_flavor(prod.kueue_flavor)
    job = _team_job("vision", plan.flavor["spec"]["nodeTaints"][0])
    pools = [*render_nodepools(prod.karpenter).values(), plan.node_pool_manifest]
    objects = [*pools, shared, plan.flavor, *plan.queues, *plan.namespace.values(), job]

    # Where Kueue puts it when it admits it on the shared flavor: its selector plus the flavor's node labels.
    admitted = from_object("job", job)
    assert admitted is not None
    admitted = dataclasses.replace(
        admitted, node_selector={**admitted.node_selector, **shared["spec"].get("nodeLabels", {})}
    )
    landing = {node.name for node in lands_on(admitted, [from_node_pool(pool) for pool in pools])}
    assert landing == {f"NodePool {name}" for name in prod.kueue_gpu_pools}  # never NodePool team-vision

    def queue_problems(folder: str, flavor: dict[str, Any]) -> list[str]:
        found = check_previews([preview(tmp_path / folder, [*objects, flavor])], None)[1]
        return [str(p) for p in found if p.rule == "queues"]

    objects.remove(shared)
    assert queue_problems("now", shared) == []
    # The shared flavor without its label (as it was rendered before): the model names the team pool it can reach.
    unlabelled = copy.deepcopy(shared)
    unlabelled["spec"].pop("nodeLabels")
    found = queue_problems("unlabelled", unlabelled)
    assert any(
        f"on flavor {SHARED_FLAVOR}, can run on NodePool team-vision, which carries the node labels of its flavor "
        "team-vision" in p
        for p in found
    )


# ---------------------------------------------------------------------------------------------- in the stack


@pytest.mark.stack
def test_kueue_goes_with_the_cluster_and_kubeflow_waits_for_its_webhooks(dev):
    eks = dev.one("eks:index:Cluster")
    release = dev.one("kubernetes:helm.sh/v3:Release", "kueue")
    queued = [
        release,
        *dev.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"),
        *dev.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"),
        *dev.of_type("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"),
    ]
    assert len(queued) == 4  # the release, the GPU pools' one flavor, ml-research's two queues
    flavor = dev.one("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
    assert dev.depends_on(dev.one("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"), flavor)  # destroy: queue first
    assert {r.deleted_with for r in queued} == {eks.urn}  # they own nothing in AWS
    assert release.inputs["values"]["controllerManager"]["nodeSelector"] == {"eksml.io/node-role": "system"}
    local_queue = dev.one("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")
    team_namespace = next(
        r for r in dev.of_type("kubernetes:core/v1:Namespace") if r.inputs["metadata"]["name"] == "ml-research"
    )
    assert dev.depends_on(local_queue, team_namespace)
    assert dev.depends_on(team_namespace, release)  # what Kueue's webhooks intercept there comes after them


@pytest.mark.stack
def test_the_stack_labels_the_gpu_pools_its_flavor_selects_and_no_other(dev):
    flavor = dev.one("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
    assert flavor.inputs["spec"]["nodeLabels"] == {GPU_SHARE_LABEL: GPU_SHARE_PLATFORM}
    pools = {r.inputs["metadata"]["name"]: r for r in dev.of_type("kubernetes:karpenter.sh/v1:NodePool")}
    labelled = {name for name, pool in pools.items() if _labels(pool.inputs).get(GPU_SHARE_LABEL) == GPU_SHARE_PLATFORM}
    assert labelled == {"gpu-inference"}  # not cpu-general


def test_the_model_catches_a_team_quota_that_lets_unqueued_pods_pass_the_share(tmp_path):
    """Queued and unqueued GPU pods of one team together stay within its share: the namespace's quota, which counts
    both, is no more than what its ClusterQueue admits. A quota of twice the share would let a KServe predictor or
    a pipeline step hold GPUs beside a full queue."""
    labels = {"eksml.io/workload": "inference"}
    queues = _queues(labels)  # nominal 2, borrowing 2: the share's ceiling is 4
    assert _model_problems(tmp_path, [_namespace("vision"), _quota("vision"), *queues, _job({})]) == []
    doubled = _quota("vision")
    doubled["spec"]["hard"]["requests.nvidia.com/gpu"] = "8"
    found = _model_problems(tmp_path / "b", [_namespace("vision"), doubled, *queues, _job({})])
    named = (
        "[queues] namespace vision's GPU quota (8) is more than its share (ClusterQueue team-vision admits up to 4): "
        "its unqueued GPU pods may hold 4 GPUs past its share while Kueue admits the whole share to its queued work"
    )
    assert found == [named]


def test_the_model_names_a_team_namespace_whose_neuron_pods_reach_the_pools_outside_any_share(tmp_path):
    """Kueue counts no Neuron device: a team namespace caps them in its quota, or its Neuron pods take the platform's
    Neuron pools in no share."""
    gpus_only = _quota("vision")
    for resource in ("aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice"):
        del gpus_only["spec"]["hard"][f"requests.{resource}"]
    found = _model_problems(tmp_path, [_namespace("vision"), gpus_only, *_queues({"eksml.io/workload": "inference"})])
    named = (
        "[queues] namespace vision runs a team's pods with no quota on aws.amazon.com/neuroncore, "
        "aws.amazon.com/neurondevice: its Neuron pods reach the platform's Neuron pools outside any team's share"
    )
    assert found == [named]


def test_neuron_is_kept_off_the_platforms_teams_and_a_team_stack_gets_what_its_own_neuron_pool_runs():
    from components.kubeflow.config import settings
    from components.kubeflow.teams import manifests

    facts = settings(dev().kubeflow, storage_class="gp3", gpu_node_pools=(), gpu_scheduler=None, queueing=True)
    (profile,) = [o for o in manifests(facts.teams[0]) if o["kind"] == "Profile"]
    hard = profile["spec"]["resourceQuotaSpec"]["hard"]
    assert {k: v for k, v in hard.items() if "neuron" in k} == {
        "requests.aws.amazon.com/neuron": "0",
        "requests.aws.amazon.com/neuroncore": "0",
        "requests.aws.amazon.com/neurondevice": "0",
    }
    no_pool = plan_team(
        TeamConfig.model_validate({"name": "vision", "quota": {"gpus": 8}}),
        parse_offer(PLATFORM_OUTPUTS, stack="acme/eks-ml-platform/prod"),
    )
    assert no_pool.namespace["quota"]["spec"]["hard"]["requests.aws.amazon.com/neuron"] == "0"
    assert neuron_ceilings({"aws.amazon.com/neuron": 16}) == {
        "requests.aws.amazon.com/neuron": "16",
        "requests.aws.amazon.com/neuroncore": "0",  # the pool is capped on devices: ask for devices
        "requests.aws.amazon.com/neurondevice": "16",  # the devices' older name
    }
