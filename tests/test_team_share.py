"""A team stack's GPU guarantee on the platform's shared pools comes out of the platform's reserve for team stacks
(`kueue.teamStackGpus`, exported in its `kueue` output), so the guarantees of the whole cohort stay within what the
pools launch."""

from __future__ import annotations

import json

import pytest

from components.config.errors import ConfigError
from components.kueue.queues import offered, shared_flavor
from components.team.config import TeamConfig
from components.team.offer import PlatformContractError, parse_offer
from components.team.plan import plan_team

from .conftest import REPO

PLATFORM = json.loads((REPO / "examples" / "team-stack" / "platform-outputs.prod.json").read_text())
STACK = "acme/eks-ml-platform/prod"


def offer(reserve: int | None, split: dict[str, int] | None = None):
    """The prod platform's outputs with its reserve for team stacks as given: the total alone (a platform that does
    not split it, or one older than `teamStacks`), or split by team stack."""
    kueue = {key: value for key, value in PLATFORM["kueue"].items() if key not in ("teamStackGpus", "teamStacks")}
    if reserve is not None:
        kueue["teamStackGpus"] = reserve
    if split is not None:
        kueue["teamStacks"] = split
    return parse_offer({**PLATFORM, "kueue": kueue}, stack=STACK)


def team(gpus: int, **changes) -> TeamConfig:
    return TeamConfig.model_validate({"name": "vision", "quota": {"gpus": gpus}, **changes})


A10G_POOL = {"nodePool": {"preset": "gpu-inference-a10g-spot", "limits": {"nvidia.com/gpu": "8"}}}


def refused(config: TeamConfig, reserve: int, split: dict[str, int] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        plan_team(config, offer(reserve, split))
    return [str(issue) for issue in caught.value.issues]


def test_the_platform_exports_its_reserve_for_team_stacks_with_its_queueing():
    assert offered(shared_flavor([4]), 2, {})["teamStackGpus"] == 2
    # prod's kueue.teamStacks, and their sum, as its preview exports them
    assert (PLATFORM["kueue"]["teamStacks"], PLATFORM["kueue"]["teamStackGpus"]) == ({"vision": 8}, 8)


def test_a_guarantee_within_the_reserve_is_planned():
    assert plan_team(team(8), offer(8)).queues is not None


def test_a_guarantee_on_the_shared_pools_past_the_reserve_is_refused_naming_both_keys():
    (problem,) = refused(team(8), 4)
    assert problem.startswith("team.quota.gpus: 8 GPUs leaves 8 guaranteed on the platform's shared GPU pools")
    assert "(its kueue.teamStackGpus, 4)" in problem


def test_what_the_teams_own_pool_runs_does_not_count_against_the_reserve():
    assert plan_team(team(16, **A10G_POOL), offer(8)).queues is not None  # 8 own + 8 shared
    (problem,) = refused(team(16, **A10G_POOL), 7)
    assert "16 GPUs less the 8 its own pool runs leaves 8 guaranteed" in problem


def test_borrowing_needs_no_reserve():
    """What a team borrows is others' idle quota, never guaranteed: only the nominal part counts."""
    assert plan_team(team(2, quota={"gpus": 2, "gpuBorrowingLimit": 30}), offer(2)).queues is not None


def test_a_platform_that_does_not_export_its_reserve_is_reported_as_older():
    with pytest.raises(PlatformContractError, match=r"output kueue\.teamStackGpus"):
        offer(None)


def test_a_team_stack_may_use_what_its_own_neuron_pool_runs_and_no_more_in_its_quota_and_profile():
    """Neuron is in no Kueue share: the namespace's quota is what caps it, at what the team's own Neuron pool runs
    (none without one), and the Profile, whose quota applies too, says the same."""
    from components.team.profile import team_profile

    neuron_pool = {"preset": "neuron", "nodeClass": "gpu", "limits": {"aws.amazon.com/neuron": "16"}}
    platform = parse_offer(
        {**PLATFORM, "nodePools": {**PLATFORM["nodePools"], "neuron": {**neuron_pool, "capacityTypes": ["on-demand"]}}},
        stack=STACK,
    )
    kubeflow = {"kubeflow": {"owner": "lead@example.org"}}
    own = plan_team(team(8, nodePool={"preset": "neuron", "limits": {"aws.amazon.com/neuron": "4"}}), platform)
    hard = own.namespace["quota"]["spec"]["hard"]
    assert hard["requests.aws.amazon.com/neuron"] == hard["requests.aws.amazon.com/neurondevice"] == "4"
    assert hard["requests.aws.amazon.com/neuroncore"] == "0"  # the pool is capped on devices
    profile = team_profile(team(8, **kubeflow), "arn:aws:iam::123456789012:role/x", 16, own.neuron_quota)
    assert {k: v for k, v in profile["spec"]["resourceQuotaSpec"]["hard"].items() if "neuron" in k} == own.neuron_quota
    without = plan_team(team(8), platform).namespace["quota"]["spec"]["hard"]
    assert without["requests.aws.amazon.com/neuron"] == "0"  # the platform's Neuron pool is in no team's share


def test_each_team_stack_checks_its_own_part_of_a_split_reserve():
    """Split by team stack, the reserve holds for several at once: each team stack is held to its own part, so two
    that each fit the whole can no longer overcommit it together."""
    split = {"vision": 3, "speech": 5}
    assert plan_team(team(3), offer(8, split)).queues is not None
    (problem,) = refused(team(4), 8, split)  # fits the total 8, not vision's 3
    assert problem.startswith("team.quota.gpus: 4 GPUs leaves 4 guaranteed on the platform's shared GPU pools")
    assert "(its kueue.teamStacks.vision, 3)" in problem
    assert problem.endswith("ask the platform team to raise kueue.teamStacks.vision")


def test_a_team_stack_the_split_does_not_list_is_guaranteed_nothing_on_the_shared_pools():
    (problem,) = refused(team(1, name="audio"), 8, {"vision": 3, "speech": 5})
    assert "its kueue.teamStacks lists only speech: 5, vision: 3" in problem
    assert problem.endswith("ask the platform team to raise kueue.teamStacks.audio")
    # What it runs on its own pool, or borrows, needs no part of the reserve.
    assert plan_team(team(8, name="audio", **A10G_POOL), offer(8, {"vision": 8})).queues is not None
    borrowing = team(0, name="audio", quota={"gpus": 0, "gpuBorrowingLimit": 4})
    assert plan_team(borrowing, offer(8, {"vision": 8})).queues is not None


def test_a_platform_older_than_the_split_holds_each_team_stack_to_the_whole_reserve():
    assert plan_team(team(8), offer(8)).queues is not None  # no `teamStacks` in its outputs
