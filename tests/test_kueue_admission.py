"""What Kueue admits for a team never passes the team's share, on a platform with several GPU pools: the rendered
ClusterQueues run through a small model of Kueue's quota accounting, and each team's admitted GPUs are held to the
ceiling its ResourceQuota (or Profile) holds. A GPU admitted past that ceiling is a workload Kueue lets start whose
pods the ResourceQuota then refuses: it sits admitted and stuck, holding quota other teams could use.

The accounting follows the pinned ClusterQueue CRD (kueue 0.19.2, `kueue.x-k8s.io/v1beta2`, field descriptions):

- quota is per (flavor, resource): "in total, at a given time, Workloads in a ClusterQueue can consume a quantity of
  quota equal to nominalQuota+borrowingLimit" of each flavor; nothing bounds a ClusterQueue across its flavors;
- in a cohort, "the sum of the quotas for each (flavor, resource) combination defines the maximum quantity that can
  be allocated"; what a queue uses past its nominal quota is borrowed from the others' unused quota;
- flavors are tried in order, skipping one whose `nodeTaints` the pods do not tolerate; `flavorFungibility`
  defaults: `whenCanBorrow: MayStopSearch` (a flavor that fits by borrowing ends the search), `whenCanPreempt:
  TryNextFlavor`;
- `reclaimWithinCohort: Any`: a workload that fits within its queue's nominal quota preempts workloads of queues
  using more than their nominal quota.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from components.kubeflow.config import settings as kubeflow_settings
from components.kubeflow.teams import manifests as kubeflow_team_manifests
from components.kueue.queues import cohort, gpu_share, idle_gpus, pool_flavor, shared_flavor, team_queue
from components.platform.parse import parse_config
from components.scheduling import GPU_RESOURCE
from components.team.config import TeamConfig
from components.team.offer import parse_offer
from components.team.plan import plan_team
from tests.conftest import REPO, stack_config

PLATFORM_OUTPUTS = json.loads((REPO / "examples" / "team-stack" / "platform-outputs.prod.json").read_text())
INFINITE = 10**9
TEAM_TAINT = {"key": "eksml.io/team", "value": "t0", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Job:
    """A queued workload: its ClusterQueue, the GPUs it asks for, the taints its pods tolerate (key, value)."""

    queue: str
    gpus: int
    tolerates: frozenset[tuple[str, str]] = frozenset()


@dataclass
class Kueue:
    """Kueue's classic admission over ClusterQueues of one cohort, GPUs only."""

    cluster_queues: Sequence[Mapping[str, Any]]
    #: ResourceFlavor name -> its nodeTaints (flavors not named have none).
    flavor_taints: Mapping[str, Sequence[Mapping[str, str]]] = field(default_factory=dict)
    #: The Cohort object, if any: its own nominal quota is lent to the queues on top of theirs (Cohort CRD,
    #: spec.resourceGroups: "a shared pool for the ClusterQueues within it").
    cohort: Mapping[str, Any] | None = None
    #: queue -> flavor -> GPUs in use; and the admitted jobs, in order, with their flavor.
    usage: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    admitted: list[tuple[Job, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        cohorts = {q["spec"].get("cohortName") for q in self.cluster_queues}
        assert len(cohorts) == 1, f"one cohort expected, got {cohorts}"
        self.quota: dict[str, list[tuple[str, int, int]]] = {}
        for queue in self.cluster_queues:
            entries = []
            for group in queue["spec"]["resourceGroups"]:
                if GPU_RESOURCE not in group["coveredResources"]:
                    continue
                for flavor in group["flavors"]:
                    (gpus,) = [r for r in flavor["resources"] if r["name"] == GPU_RESOURCE]
                    assert "lendingLimit" not in gpus, "the model lends all unused nominal quota"
                    borrowing = int(gpus["borrowingLimit"]) if "borrowingLimit" in gpus else INFINITE
                    entries.append((flavor["name"], int(gpus["nominalQuota"]), borrowing))
            self.quota[queue["metadata"]["name"]] = entries
        self.own: dict[str, int] = defaultdict(int)
        if self.cohort is not None:
            assert self.cohort["metadata"]["name"] in cohorts
            for group in self.cohort["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    (gpus,) = [r for r in flavor["resources"] if r["name"] == GPU_RESOURCE]
                    self.own[flavor["name"]] += int(gpus["nominalQuota"])

    def cohort_capacity(self, flavor: str) -> int:
        queues = sum(nominal for entries in self.quota.values() for name, nominal, _ in entries if name == flavor)
        return queues + self.own[flavor]

    def cohort_usage(self, flavor: str) -> int:
        return sum(used.get(flavor, 0) for used in self.usage.values())

    def nominal(self, queue: str, flavor: str) -> int:
        return next(n for name, n, _ in self.quota[queue] if name == flavor)

    def _tolerated(self, job: Job, flavor: str) -> bool:
        return all((t["key"], t.get("value", "")) in job.tolerates for t in self.flavor_taints.get(flavor, ()))

    def submit(self, job: Job) -> str | None:
        """The flavor the job is admitted on (preempting borrowers to reclaim if it must), or None: it waits."""
        candidates = [(f, n, b) for f, n, b in self.quota[job.queue] if self._tolerated(job, f)]
        used = self.usage[job.queue]
        for flavor, nominal, borrowing in candidates:
            within_queue = used[flavor] + job.gpus <= nominal + borrowing
            if within_queue and self.cohort_usage(flavor) + job.gpus <= self.cohort_capacity(flavor):
                return self._admit(job, flavor)  # fits, by borrowing or not (MayStopSearch)
        for flavor, nominal, _ in candidates:  # TryNextFlavor done: reclaim in the first flavor that allows it
            if used[flavor] + job.gpus <= nominal and self._reclaim(flavor, job.gpus):
                return self._admit(job, flavor)
        return None

    def _reclaim(self, flavor: str, gpus: int) -> bool:
        """Preempt the newest workloads of queues above their nominal quota on `flavor` until `gpus` are free."""
        while self.cohort_usage(flavor) + gpus > self.cohort_capacity(flavor):
            victims = [
                (index, job)
                for index, (job, on) in enumerate(self.admitted)
                if on == flavor and self.usage[job.queue][flavor] > self.nominal(job.queue, flavor)
            ]
            if not victims:
                return False
            index, job = victims[-1]
            del self.admitted[index]
            self.usage[job.queue][flavor] -= job.gpus
        return True

    def _admit(self, job: Job, flavor: str) -> str:
        self.usage[job.queue][flavor] += job.gpus
        self.admitted.append((job, flavor))
        return flavor

    def held(self, queue: str) -> int:
        """The GPUs the queue's admitted workloads hold, on every flavor together."""
        return sum(self.usage[queue].values())


def flood(kueue: Kueue, jobs: Iterable[Job]) -> None:
    for job in jobs:
        kueue.submit(job)


# ------------------------------------------------------------------------------------ the platform's Kubeflow teams


def prod_with_two_teams() -> Any:
    """Prod (four GPU pools: three inference, one training) with a second Kubeflow team beside `research`."""
    document = yaml.safe_load((REPO / "Pulumi.prod.yaml").read_text())["config"]["eks-ml-platform:kubeflow"]
    document["teams"]["vision"] = {"owner": "vision-lead@example.org", "gpuQuota": 16, "s3Prefix": "teams/vision"}
    return parse_config(stack_config("prod", {"kubeflow": document}), project="eks-ml-platform", stack="prod")


def profile_ceilings(config: Any) -> dict[str, int]:
    """Each Kubeflow team's GPU ceiling as its Profile states it (the ResourceQuota the profile controller makes)."""
    facts = kubeflow_settings(
        config.kubeflow,
        storage_class="gp3",
        gpu_node_pools=(),
        gpu_scheduler=None,
        queueing=config.queueing,
        region=config.region,
    )
    ceilings = {}
    for team in facts.teams:
        (profile,) = [o for o in kubeflow_team_manifests(team) if o["kind"] == "Profile"]
        ceilings[team.name] = int(profile["spec"]["resourceQuotaSpec"]["hard"][f"requests.{GPU_RESOURCE}"])
    return ceilings


def platform_kueue(config: Any) -> Kueue:
    return Kueue([cluster_queue for cluster_queue, _ in config.team_queues().values()], cohort=config.kueue_cohort())


def test_prod_has_several_gpu_pools_to_share():
    config = prod_with_two_teams()
    gpu_pools = [p for p in config.karpenter.node_pools.values() if p.accelerator == "nvidia" and p.gpu_limit]
    assert len(gpu_pools) >= 2


def test_a_team_alone_is_admitted_its_ceiling_and_no_more_on_a_platform_with_several_gpu_pools():
    config = prod_with_two_teams()
    ceilings = profile_ceilings(config)
    assert ceilings == {"research": 32, "vision": 32}  # quota + borrowing limit (by default the quota again)
    kueue = platform_kueue(config)
    flood(kueue, [Job("team-research", 1)] * 200)
    # Everything the team holds past its quota of 16 is borrowed from vision's idle share: it reaches its ceiling.
    assert kueue.held("team-research") == ceilings["research"]


def test_every_team_flooding_at_once_stays_within_its_ceiling_and_the_cohort_within_the_pools():
    config = prod_with_two_teams()
    ceilings = profile_ceilings(config)
    kueue = platform_kueue(config)
    flood(kueue, [Job(f"team-{team}", gpus) for gpus in (1, 2, 4) for team in ("research", "vision")] * 20)
    for team, ceiling in ceilings.items():
        assert kueue.held(f"team-{team}") <= ceiling, team
    gpu_limits = sum(p.gpu_limit or 0 for p in config.karpenter.node_pools.values() if p.accelerator == "nvidia")
    assert sum(kueue.held(f"team-{team}") for team in ceilings) <= gpu_limits


def test_an_idle_team_reclaims_its_quota_from_the_team_that_borrowed_it_once_the_pools_are_full():
    shared = shared_flavor([32])  # exactly the two quotas: nothing idle for the cohort to lend
    shares = {"a": gpu_share(16, None, queueing=True), "b": gpu_share(16, None, queueing=True)}
    queues = [team_queue(team, share, shared)[0] for team, share in shares.items()]
    kueue = Kueue(queues, cohort=cohort(shared, idle_gpus(shared, [s.nominal for s in shares.values()], 0)))
    flood(kueue, [Job("team-a", 1)] * 40)
    assert kueue.held("team-a") == 32
    flood(kueue, [Job("team-b", 1)] * 8)
    assert kueue.held("team-b") == 8  # within its quota, preempting what a borrowed
    assert kueue.held("team-a") == 24


def test_a_lone_team_on_prod_borrows_the_idle_pools_up_to_its_ceiling_and_no_further():
    """Prod ships one Kubeflow team: quota 16, ceiling 32, on GPU pools that launch 96. Kueue lends only unused
    nominal quota, so the idle pools are the cohort's own quota; without it the team stops at 16."""
    config = parse_config(stack_config("prod"), project="eks-ml-platform", stack="prod")
    assert profile_ceilings(config) == {"research": 32}
    assert config.kueue_flavor is not None
    assert config.kueue_flavor.gpus == 96
    kueue = platform_kueue(config)
    flood(kueue, [Job("team-research", 1)] * 100)
    assert kueue.held("team-research") == 32


# ------------------------------------------------------------------------------------------------- a team stack


def team_stack(config: Mapping[str, Any]) -> Any:
    offer = parse_offer(PLATFORM_OUTPUTS, stack="acme/eks-ml-platform/prod")
    return plan_team(TeamConfig.model_validate(config), offer)


def test_a_team_stack_with_a_gpu_pool_of_its_own_is_admitted_no_more_than_its_resource_quota():
    plan = team_stack(
        {
            "name": "vision",
            "quota": {"gpus": 16, "gpuBorrowingLimit": 8},
            "nodePool": {"preset": "gpu-inference-a10g-spot", "limits": {"nvidia.com/gpu": "8"}},
        }
    )
    ceiling = int(plan.namespace["quota"]["spec"]["hard"][f"requests.{GPU_RESOURCE}"])
    assert ceiling == 24
    own = plan.flavor
    assert own is not None
    assert plan.queues is not None
    platform = parse_config(stack_config("prod"), project="eks-ml-platform", stack="prod")
    queues = [plan.queues[0], *(cq for cq, _ in platform.team_queues().values())]
    kueue = Kueue(queues, {own["metadata"]["name"]: own["spec"]["nodeTaints"]})
    team_taint = frozenset({("eksml.io/team", "vision")})
    # Pods for the team's own pool (they tolerate its taint) and pods for the platform's pools, interleaved.
    flood(kueue, [Job("team-vision", 1, team_taint), Job("team-vision", 1)] * 100)
    assert kueue.held("team-vision") == ceiling  # research idles: vision borrows up to its limit, and no further
    assert kueue.usage["team-vision"][own["metadata"]["name"]] == 8  # its own pool, full


@settings(max_examples=200, deadline=None)
@given(
    pools=st.lists(st.integers(1, 32), min_size=1, max_size=4),
    own_pool=st.none() | st.integers(1, 16),
    teams=st.lists(st.tuples(st.integers(0, 16), st.integers(0, 16)), min_size=1, max_size=3),
    jobs=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 8), st.booleans()), max_size=60),
)
def test_no_team_is_ever_admitted_more_than_its_ceiling_whatever_the_pools_and_shares(pools, own_pool, teams, jobs):
    """Any number of GPU pools, any shares, the first team with a pool of its own or not, any order of work."""
    shared = shared_flavor(pools)
    own = pool_flavor("team-t0", {}, own_pool, [TEAM_TAINT]) if own_pool is not None else None
    shares = [gpu_share(quota, borrowing, queueing=True) for quota, borrowing in teams]
    queues = [
        team_queue(f"t{index}", share, shared, own=own if index == 0 else None)[0] for index, share in enumerate(shares)
    ]
    idle = idle_gpus(shared, [share.nominal for share in shares], 0)
    kueue = Kueue(queues, {"team-t0": [TEAM_TAINT]}, cohort=cohort(shared, idle))
    tolerating = frozenset({(TEAM_TAINT["key"], TEAM_TAINT["value"])})
    flood(kueue, [Job(f"team-t{t % len(teams)}", g, tolerating if mine else frozenset()) for t, g, mine in jobs])
    for index, share in enumerate(shares):
        assert kueue.held(f"team-t{index}") <= share.ceiling


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_shipped_stacks_admit_no_team_past_its_profile(stack):
    config = parse_config(stack_config(stack), project="eks-ml-platform", stack=stack)
    ceilings = profile_ceilings(config)
    kueue = platform_kueue(config)
    flood(kueue, [Job(f"team-{team}", 1) for team in ceilings] * 200)
    for team, ceiling in ceilings.items():
        assert kueue.held(f"team-{team}") <= ceiling, team
