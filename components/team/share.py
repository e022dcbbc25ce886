"""A team stack's GPU share checked against what the platform can back (pure).

Kueue guarantees every nominal quota of the cohort at once, so the platform keeps the guarantees on its shared GPU
pools within what they launch: its Kubeflow teams' `gpuQuota`s plus `kueue.teamStackGpus`, the reserve for team
stacks. A team stack's guarantee on the shared pools (its `quota.gpus` less what its own pool covers,
`kueue.queues.flavor_quotas`) comes out of that reserve. Each team stack sees only its own config and the
platform's outputs, never the other team stacks', so the platform splits the reserve by team stack
(`kueue.teamStacks`, whose sum it checks) and each checks its own part. A platform that gives only the total
(`kueue.teamStackGpus`) leaves the sum over several team stacks unchecked: each checks against the whole.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..karpenter.specs import NodePoolSpec
from ..kueue.queues import Flavor, flavor_quotas, gpu_share
from ..scheduling import GPU_RESOURCE
from .config import TeamConfig
from .offer import OfferedQueueing, PlatformOffer

Problem = tuple[str, str]


def _gpus(limits: Mapping[str, str]) -> int:
    amount = limits.get(GPU_RESOURCE, "0")
    return int(amount) if str(amount).isdigit() else 0


def _quota_problems(team: TeamConfig, offer: PlatformOffer, spec: NodePoolSpec | None) -> list[Problem]:
    """A GPU quota no pool can fill is a promise the platform cannot keep: the team's pods would stay Pending."""
    platform = {name: _gpus(pool.limits) for name, pool in sorted(offer.node_pools.items()) if _gpus(pool.limits)}
    own = _gpus(spec.limits) if spec is not None else 0
    available = sum(platform.values()) + own
    if team.quota.gpus <= available:
        return []
    pools = ", ".join(f"{name}: {gpus}" for name, gpus in platform.items()) or "none"
    return [
        (
            "quota.gpus",
            (
                f"asks for {team.quota.gpus} GPUs at once, more than every pool it can use allows together "
                f"({available}: the platform's GPU pools {pools}; the team's own pool {own})"
            ),
        )
    ]


def _queue_problems(team: TeamConfig, offer: PlatformOffer) -> list[Problem]:
    if team.quota.gpu_borrowing_limit is not None and offer.kueue is None:
        return [
            (
                "quota.gpuBorrowingLimit",
                (
                    "the platform runs no Kueue (its kueue.enabled, or no GPU pool), so nothing lends the team GPUs; "
                    "remove it"
                ),
            )
        ]
    return []


def shared_guarantee(team: TeamConfig, shared: Flavor, own_gpus: int) -> int:
    """The GPUs of the platform's shared pools the team's ClusterQueue is guaranteed: its nominal quota there."""
    share = gpu_share(team.quota.gpus, team.quota.gpu_borrowing_limit, queueing=True)
    own = Flavor("own", {}, own_gpus) if own_gpus else None
    _, nominal, _ = flavor_quotas(share, shared, own)[-1]
    return nominal


def _kept_for(queueing: OfferedQueueing, name: str) -> tuple[int, str, str]:
    """What the platform keeps on its shared pools for team stack `name`: the GPUs, the platform key that sets them,
    and how a message says so (its part of a split reserve, or the whole reserve when the platform gives only one)."""
    split = queueing.team_stacks
    if not split:
        total = queueing.team_stack_gpus
        return total, "kueue.teamStackGpus", f"for all its team stacks together (its kueue.teamStackGpus, {total})"
    key = f"kueue.teamStacks.{name}"
    if name in split:
        return split[name], key, f"for this team stack (its {key}, {split[name]})"
    listed = ", ".join(f"{stack}: {gpus}" for stack, gpus in sorted(split.items()))
    return 0, key, f"for this team stack: its kueue.teamStacks lists only {listed}"


def _reserve_problems(team: TeamConfig, offer: PlatformOffer, spec: NodePoolSpec | None) -> list[Problem]:
    """The team's guarantee on the shared pools fits in what the platform keeps for it (`_kept_for`), or Kueue would
    promise GPUs the pools cannot launch while every team claims its quota."""
    if offer.kueue is None:
        return []
    own = (spec.gpu_limit or 0) if spec is not None else 0
    guarantee = shared_guarantee(team, offer.kueue.shared_flavor(), own)
    reserve, key, kept_for = _kept_for(offer.kueue, team.name)
    if guarantee <= reserve:
        return []
    covered = f" less the {min(own, team.quota.gpus)} its own pool runs" if own else ""
    message = (
        f"{team.quota.gpus} GPUs{covered} leaves {guarantee} guaranteed on the platform's shared GPU pools, more "
        f"than the platform keeps {kept_for}; lower quota.gpus (the team may still borrow up to "
        f"quota.gpuBorrowingLimit more while others are idle), give the team's own pool more GPUs, or ask the "
        f"platform team to raise {key}"
    )
    return [("quota.gpus", message)]


def share_problems(team: TeamConfig, offer: PlatformOffer, spec: NodePoolSpec | None) -> list[Problem]:
    """Every way the team's GPU share does not fit the platform (its pools, its Kueue, its reserve)."""
    return _quota_problems(team, offer, spec) + _queue_problems(team, offer) + _reserve_problems(team, offer, spec)
