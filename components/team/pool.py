"""A team's own NodePool (pure): a preset of one of the kinds of pool the platform runs, on that pool's node class,
no larger than the platform's own pool of that kind, and tainted and labelled for the team so only pods that ask for
it land there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from ..config.errors import issues_from
from ..karpenter.presets import NODE_POOL_PRESETS
from ..karpenter.specs import NodePoolSpec
from ..kueue.queues import Flavor, pool_flavor
from ..scheduling import TEAM_TAINT_KEY, Taint
from .config import TeamConfig
from .namespace import TEAM_LABEL
from .offer import OfferedPool, PlatformOffer
from .quantity import parse_quantity
from .share import Problem


def team_taint(team: str) -> Taint:
    return Taint(TEAM_TAINT_KEY, team, "NoSchedule")


def pool_name(team: str) -> str:
    return f"team-{team}"


def _offered_pool(team: TeamConfig, offer: PlatformOffer) -> OfferedPool:
    """The platform's pool a team pool copies its node class from: the first by name of the team pool's preset."""
    assert team.node_pool is not None
    offered = offer.pools_of(team.node_pool.preset)
    return offered[min(offered)]


def on_efa_class(team: TeamConfig, offer: PlatformOffer) -> bool:
    """The team pool's node class attaches EFA interfaces: its nodes get the label the EFA device plugin selects
    (`scheduling.EFA_LABEL`, as the platform's own pools on that class do), or the plugin never runs there and a pod
    asking for `vpc.amazonaws.com/efa` stays pending."""
    return _offered_pool(team, offer).efa


def _ceilings(offered: Mapping[str, OfferedPool]) -> dict[str, tuple[str, str]]:
    """The ceiling of each resource: the largest limit the platform gives a pool of this kind, and that pool's name."""
    ceiling: dict[str, tuple[str, str]] = {}
    for name, pool in offered.items():
        for resource, value in pool.limits.items():
            if resource not in ceiling or parse_quantity(value) > parse_quantity(ceiling[resource][1]):
                ceiling[resource] = (name, value)
    return ceiling


def _limits(team: TeamConfig, offered: Mapping[str, OfferedPool]) -> tuple[dict[str, str], list[Problem]]:
    """The team pool's limits, and each one the team sets above the platform's ceiling.

    What the team does not set: the preset's limit, no higher than the ceiling, and never uncapped where the
    platform's pool is capped. What it sets: refused above the ceiling."""
    config = team.node_pool
    assert config is not None
    ceiling = _ceilings(offered)
    limits = dict(NODE_POOL_PRESETS[config.preset]["limits"])
    for resource, (_, value) in ceiling.items():
        if resource not in limits or parse_quantity(limits[resource]) > parse_quantity(value):
            limits[resource] = value
    problems: list[Problem] = []
    for resource, value in sorted(config.limits.items()):
        if resource in ceiling and parse_quantity(value) > parse_quantity(ceiling[resource][1]):
            name, allowed = ceiling[resource]
            problems.append(
                (
                    f"nodePool.limits.{resource}",
                    f"{value} is more than the platform allows a {config.preset} pool ({allowed}, its pool {name!r})",
                )
            )
        limits[resource] = value
    return limits, problems


def _served_problems(preset: str, spec: NodePoolSpec, offer: PlatformOffer) -> list[Problem]:
    """What the pool's nodes need the platform to run: spot interruption handling, the GPU stack."""
    problems: list[Problem] = []
    if "spot" in spec.capacity_types and offer.karpenter_interruption_queue is None:
        problems.append(
            (
                "nodePool.preset",
                f"{preset} allows spot, but the platform handles no spot interruptions (no interruption queue)",
            )
        )
    if spec.accelerator == "nvidia" and offer.gpu_taint is None:
        problems.append(
            (
                "nodePool.preset",
                f"{preset} launches GPUs, but the platform runs no GPU stack (device plugin, admission)",
            )
        )
    return problems


def plan_pool(team: TeamConfig, offer: PlatformOffer) -> tuple[NodePoolSpec | None, list[Problem]]:
    """The team's NodePool spec (None when it cannot be made), and every way it does not fit the platform."""
    config = team.node_pool
    assert config is not None
    offered = offer.pools_of(config.preset)
    if not offered or config.preset not in NODE_POOL_PRESETS:
        kinds = sorted(
            {p.preset for p in offer.node_pools.values() if p.preset is not None and p.preset in NODE_POOL_PRESETS}
        )
        return None, [("nodePool.preset", f"the platform runs no pool of preset {config.preset!r}; it runs {kinds}")]
    problems: list[Problem] = []
    if pool_name(team.name) in offer.node_pools:
        problems.append(("name", f"the platform has a NodePool named {pool_name(team.name)!r} already"))
    preset = NODE_POOL_PRESETS[config.preset]
    limits, limit_problems = _limits(team, offered)
    problems += limit_problems
    for index, zone in enumerate(config.zones):
        if zone not in offer.availability_zones:
            problems.append(
                (
                    f"nodePool.zones[{index}]",
                    f"{zone!r} is not one of the platform's zones {list(offer.availability_zones)}",
                )
            )
    document: dict[str, Any] = {
        "preset": config.preset,
        "nodeClass": _offered_pool(team, offer).node_class,  # several pools of the kind: the first by name
        "limits": limits,
        "taints": [*preset.get("taints", []), team_taint(team.name).as_dict()],
        "labels": {**preset.get("labels", {}), TEAM_LABEL: team.name},
    }
    if config.zones:
        document["zones"] = list(config.zones)
    try:
        spec = NodePoolSpec.model_validate(document)
    except ValidationError as error:
        return None, problems + [
            (f"nodePool.{issue.path}", issue.message) for issue in issues_from(error, NodePoolSpec)
        ]
    return spec, problems + _served_problems(config.preset, spec, offer)


def own_flavor(team: TeamConfig, spec: NodePoolSpec | None) -> Flavor | None:
    """The flavor of the team's own GPU pool: only pods that tolerate the team's taint are given it."""
    if spec is None or not spec.gpu_limit:
        return None
    return pool_flavor(pool_name(team.name), spec.labels, spec.gpu_limit, [team_taint(team.name).as_dict()])
