"""A team's GPU share holds as documented: every resource a queued GPU job asks for is counted or deliberately left
to the ResourceQuota (else Kueue never admits it), the guaranteed quotas fit in what the shared pools launch, and an
admitted workload whose pods never start gives its quota back.

Kueue's rule (ClusterQueue CRD, kueue 0.19.2 `kueue.x-k8s.io/v1beta2`, spec.resourceGroups; Configuration v1beta2
`resources.excludeResourcePrefixes`): a workload is admitted on a flavor only if every resource it requests is
covered by a resource group of its ClusterQueue, except resources whose names start with an excluded prefix."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from components.config.errors import ConfigError
from components.kueue.values import PODS_READY_TIMEOUT, manager_config
from components.platform.parse import parse_config
from components.scheduling import EFA_RESOURCE, GPU_RESOURCE
from tests.conftest import REPO, stack_config
from tests.test_kueue_admission import Job, platform_kueue

GPU_DOC = REPO / "docs" / "gpu.md"


def prod(**overrides: Any) -> Any:
    return parse_config(stack_config("prod", overrides), project="eks-ml-platform", stack="prod")


def prod_problems(**overrides: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        prod(**overrides)
    return {issue.path: issue.message for issue in caught.value.issues}


def uncounted(cluster_queue: Mapping[str, Any], requests: Mapping[str, Any], excluded: list[str]) -> list[str]:
    """The resources of `requests` that keep the workload out of `cluster_queue`: neither covered nor excluded."""
    covered = {r for group in cluster_queue["spec"]["resourceGroups"] for r in group["coveredResources"]}
    return sorted(r for r in requests if r not in covered and not any(r.startswith(p) for p in excluded))


def documented_efa_container() -> Mapping[str, Any]:
    """The container of the docs' own EFA training pod (docs/gpu.md, "Neuron and EFA devices")."""
    for block in re.findall(r"```yaml\n(.*?)```", GPU_DOC.read_text(), re.S):
        for document in yaml.safe_load_all(block):
            for container in ((document or {}).get("spec") or {}).get("containers") or ():
                if "vpc.amazonaws.com/efa" in container["resources"]["limits"]:
                    return container
    raise AssertionError("docs/gpu.md no longer shows an EFA pod")


def test_the_documented_efa_training_pod_is_admitted_by_a_team_queue():
    config = prod()
    limits = documented_efa_container()["resources"]["limits"]
    (cluster_queue, _), *_ = config.team_queues().values()
    excluded = manager_config()["resources"]["excludeResourcePrefixes"]
    assert uncounted(cluster_queue, limits, excluded) == []
    kueue = platform_kueue(config)
    assert kueue.submit(Job(cluster_queue["metadata"]["name"], int(limits[GPU_RESOURCE]))) is not None


def test_every_accelerator_a_shared_gpu_pool_offers_is_counted_or_left_out_on_purpose():
    """What the shared pools' nodes advertise besides CPU and memory: NVIDIA GPUs (the flavor's quota) and, on an EFA
    class, EFA interfaces (excluded: they come with the GPUs the team is admitted)."""
    config = prod()
    (cluster_queue, _), *_ = config.team_queues().values()
    excluded = manager_config()["resources"]["excludeResourcePrefixes"]
    shared = config.karpenter.shared_gpu_pools()
    efa = config.karpenter.efa_pools()
    # what the shared pools' nodes advertise: the accelerators they are capped on, and EFA where their class has it
    offered = {resource: 1 for pool in shared.values() for resource in pool.accelerator_limits}
    if set(shared) & set(efa):
        offered[EFA_RESOURCE] = 1
    assert GPU_RESOURCE in offered
    assert uncounted(cluster_queue, offered, excluded) == []


def test_the_guaranteed_quotas_may_not_pass_what_the_shared_pools_launch():
    problems = prod_problems(kueue={"teamStackGpus": 81})  # prod: research's 16 + 81 > the pools' 96
    assert "kueue.teamStackGpus" in problems
    message = problems["kueue.teamStackGpus"]
    assert "kubeflow.teams.research.gpuQuota 16" in message
    assert "(96: " in message


def test_what_no_team_is_guaranteed_is_the_cohorts_to_lend():
    config = prod(kueue={"teamStackGpus": 24})
    cohort = config.kueue_cohort()
    assert cohort is not None
    ((flavor,),) = [group["flavors"] for group in cohort["spec"]["resourceGroups"]]
    assert flavor["resources"] == [{"name": GPU_RESOURCE, "nominalQuota": 96 - 16 - 24}]


def test_team_stack_gpus_without_kueue_is_refused():
    problems = prod_problems(kueue={"enabled": False, "teamStackGpus": 8})
    assert "kueue.teamStackGpus" in problems
    assert (
        "nothing queues team stacks"
        in prod_problems(kueue={"enabled": False, "teamStacks": {"a": 1}})["kueue.teamStacks"]
    )


def test_a_reserve_split_by_team_stack_is_their_sum():
    """`kueue.teamStacks` splits the reserve: the sum is what the pools keep, the cohort lends the rest, and a
    `teamStackGpus` that says otherwise is refused, naming both keys."""
    config = prod(kueue={"teamStacks": {"vision": 8, "speech": 16}})
    assert config.kueue.reserve == 24
    cohort = config.kueue_cohort()
    assert cohort is not None
    ((flavor,),) = [group["flavors"] for group in cohort["spec"]["resourceGroups"]]
    assert flavor["resources"] == [{"name": GPU_RESOURCE, "nominalQuota": 96 - 16 - 24}]
    problems = prod_problems(kueue={"teamStacks": {"vision": 8, "speech": 16}, "teamStackGpus": 8})
    assert problems == {
        "kueue.teamStackGpus": "is 8, but kueue.teamStacks adds up to 24 (speech 16 + vision 8); remove "
        "teamStackGpus (the sum is the reserve) or make the two agree"
    }
    assert prod(kueue={"teamStacks": {"vision": 8}, "teamStackGpus": 8}).kueue.reserve == 8


def test_a_split_reserve_past_the_pools_is_refused_under_its_key():
    problems = prod_problems(kueue={"teamStacks": {"vision": 40, "speech": 41}})  # research's 16 + 81 > 96
    assert "kueue.teamStacks 81" in problems["kueue.teamStacks"]


@pytest.mark.parametrize(
    ("split", "expected"),
    [({"Vision": 2}, "expected a lowercase name"), ({"vision": -1}, "greater than or equal to 0")],
)
def test_a_team_stack_in_the_split_is_a_team_name_with_whole_gpus(split: dict[str, int], expected: str):
    problems = prod_problems(kueue={"teamStacks": split})
    assert any(expected in message for message in problems.values()), problems


def test_an_admitted_workload_that_never_starts_gives_its_quota_back():
    ready = manager_config()["waitForPodsReady"]
    assert ready["blockAdmission"] is False  # one team's slow start must not hold every team's admissions
    assert ready["timeout"] == PODS_READY_TIMEOUT == "30m"  # as docs/gpu.md says
    assert ready["requeuingStrategy"]["backoffLimitCount"] > 0


NEURON_JOB = {"aws.amazon.com/neuron": 1, "aws.amazon.com/neuroncore": 2, "aws.amazon.com/neurondevice": 1, "cpu": 4}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_queued_neuron_job_is_admitted_and_left_to_the_namespaces_quota(stack):
    """Neuron is in no team's Kueue share (the shared flavor is the NVIDIA pools): Kueue leaves every name the Neuron
    device plugin advertises to the ResourceQuota, so a queued job asking for them is admitted, not held forever for
    a flavor no queue has; the quota then caps it (test_kueue: the model holds every team namespace to it)."""
    config = parse_config(stack_config(stack, {}), project="eks-ml-platform", stack=stack)
    (cluster_queue, _), *_ = config.team_queues().values()
    excluded = manager_config()["resources"]["excludeResourcePrefixes"]
    assert uncounted(cluster_queue, NEURON_JOB, excluded) == []
    kueue = platform_kueue(config)
    assert kueue.submit(Job(cluster_queue["metadata"]["name"], 0)) is not None  # Kueue counts none of it
