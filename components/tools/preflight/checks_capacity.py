"""Pure checks: are the stack's AZs there, can the system node group and every NodePool launch in them, and do the
EC2 vCPU quotas cover what the pools may run at their limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...cluster.config import SystemNodeGroup
from ...karpenter.specs import NodePoolSpec
from .quotas import VCPU_CLASSES, Quota, VcpuClass, increase_command, vcpu_class
from .reads import Zone
from .results import CheckResult, failed, passed, warned
from .selection import InstanceShape, PoolSelection, cpu_limit

_ARCHITECTURES = {"amd64": "x86_64", "arm64": "arm64"}


def zones_check(stack_zones: Sequence[str], region_zones: Mapping[str, Zone]) -> CheckResult:
    missing = [z for z in stack_zones if z not in region_zones]
    unavailable = [z for z in stack_zones if z in region_zones and region_zones[z].state != "available"]
    found = ", ".join(
        f"{z} ({region_zones[z].zone_id}, {region_zones[z].state})" for z in stack_zones if z in region_zones
    )
    evidence = f"stack AZs: {found or 'none of them exists'}"
    if missing or unavailable:
        problems = [f"{z} does not exist" for z in missing] + [f"{z} is {region_zones[z].state}" for z in unavailable]
        return failed(
            "availability-zones",
            f"{evidence}; {'; '.join(problems)}",
            f"set network.availabilityZones to zones of the region: {', '.join(sorted(region_zones))}",
        )
    return passed("availability-zones", evidence)


def _per_zone(
    zones: Sequence[str], types: Sequence[str], offered: Mapping[str, frozenset[str]]
) -> dict[str, list[str]]:
    return {zone: [t for t in types if zone in offered.get(t, frozenset())] for zone in zones}


def system_group_check(
    group: SystemNodeGroup, stack_zones: Sequence[str], offered: Mapping[str, frozenset[str]]
) -> CheckResult:
    """The managed node group spans every AZ's private subnet; each AZ needs at least one of its types."""
    per_zone = _per_zone(stack_zones, group.instance_types, offered)
    evidence = "; ".join(f"{zone}: {', '.join(types) or 'none'}" for zone, types in per_zone.items())
    empty = [zone for zone, types in per_zone.items() if not types]
    if empty:
        return failed(
            "system-node-group",
            evidence,
            f"no type of cluster.systemNodeGroup.instanceTypes is offered in {', '.join(empty)}: add one that is, "
            "or choose other availabilityZones",
        )
    partial = [t for t in group.instance_types if any(t not in found for found in per_zone.values())]
    if partial:
        return warned(
            "system-node-group",
            evidence,
            f"{', '.join(partial)} is not offered in every AZ; the group launches the others there",
        )
    return passed("system-node-group", evidence)


def describe_filters(selection: PoolSelection) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """DescribeInstanceTypes filters that narrow the catalog to what the pool's requirements can admit (the rest is
    decided by `PoolSelection.admits`); a hashable form, so pools with the same filters share one call."""
    filters: list[tuple[str, tuple[str, ...]]] = []
    for requirement in selection.requirements:
        if requirement["operator"] != "In":
            continue
        values = tuple(requirement["values"])
        if requirement["key"] == "kubernetes.io/arch":
            filters.append(
                (
                    "processor-info.supported-architecture",
                    tuple(_ARCHITECTURES[a] for a in values if a in _ARCHITECTURES),
                )
            )
        elif requirement["key"] == "karpenter.k8s.aws/instance-family":
            filters.append(("instance-type", tuple(f"{family}.*" for family in values)))
        elif requirement["key"] == "node.kubernetes.io/instance-type":
            filters.append(("instance-type", values))
    return tuple(filters)


def as_ec2_filters(filters: tuple[tuple[str, tuple[str, ...]], ...]) -> list[dict[str, Any]]:
    return [{"Name": name, "Values": list(values)} for name, values in filters]


def pool_offering_check(
    name: str,
    pool_zones: Sequence[str],
    allowed: Sequence[InstanceShape],
    offered: Mapping[str, frozenset[str]],
    unevaluated: Sequence[str],
) -> CheckResult:
    """FAIL when none of the pool's instance types is offered in its AZs; WARN when they are offered in one AZ only
    although the pool may use more."""
    check = f"nodepool/{name}"
    types = [s.instance_type for s in allowed]
    per_zone = _per_zone(pool_zones, types, offered)
    counts = ", ".join(f"{zone} {len(found)}" for zone, found in per_zone.items())
    sample = f"{types[0]} .. {types[-1]}" if len(types) > 1 else "".join(types)
    evidence = f"{len(types)} instance types allowed ({sample}); offered per AZ: {counts}"
    if unevaluated:
        evidence += f"; not evaluated here: {'; '.join(unevaluated)}"
    zones_with_any = [zone for zone, found in per_zone.items() if found]
    if not types:
        return failed(
            check,
            "no instance type of the region matches the pool's requirements",
            f"widen karpenter.nodePools.{name} (families, sizes, gpuNames, requirements)",
        )
    if not zones_with_any:
        return failed(
            check,
            evidence,
            f"none of the pool's types is offered in {', '.join(pool_zones)}: allow other families or sizes, "
            "or other zones",
        )
    if len(zones_with_any) == 1 and len(pool_zones) > 1:
        return warned(
            check,
            evidence,
            f"only {zones_with_any[0]} offers the pool's types: one AZ's capacity shortage stops the pool; "
            "allow more families",
        )
    if len(pool_zones) == 1:
        evidence += " (the pool is pinned to this AZ)"
    return passed(check, evidence)


def fits_limits(pool: NodePoolSpec, shape: InstanceShape) -> bool:
    """Whether one instance of this type stays within the pool's limits (Karpenter launches nothing that would take
    the pool over one): its GPUs, Neuron devices or NeuronCores, else its vCPUs against a cpu limit."""
    limits = pool.accelerator_limits
    if limits:
        return shape.instances_within(limits) > 0
    cpus = cpu_limit(pool)
    return cpus is None or shape.vcpus is None or shape.vcpus <= cpus


def _brings(pool: NodePoolSpec, shape: InstanceShape) -> str:
    limits = pool.accelerator_limits
    if limits:
        return ", ".join(f"{shape.units(resource)} {resource}" for resource in limits)
    return f"{shape.vcpus} vCPUs"


def limit_fit_check(name: str, pool: NodePoolSpec, allowed: Sequence[InstanceShape]) -> CheckResult | None:
    """FAIL when every allowed type brings more than the pool's limits allow: the pool can never launch a node."""
    if not allowed or any(fits_limits(pool, s) for s in allowed):
        return None
    limits: dict[str, int | None] = {**pool.accelerator_limits} or {"cpu": cpu_limit(pool)}
    asked = ", ".join(f"{limit} {resource}" for resource, limit in limits.items())
    brings = "; ".join(f"{s.instance_type} brings {_brings(pool, s)}" for s in allowed[:6])
    more = f" (and {len(allowed) - 6} more)" if len(allowed) > 6 else ""
    return failed(
        f"nodepool/{name}",
        f"limits {asked}: every allowed type exceeds them ({brings}{more}); Karpenter never launches a node",
        f"raise karpenter.nodePools.{name}.limits to at least one instance's worth, or allow smaller sizes",
    )


def quota_fit_check(
    name: str, shapes: Sequence[InstanceShape], capacity_types: Sequence[str], values: Mapping[Quota, float | None]
) -> CheckResult | None:
    """FAIL when, on every capacity type the pool may use, the vCPU quota of each launchable type's class is below one
    instance of it (None when a quota could not be read: nothing to conclude)."""
    fits, known = False, True
    smallest: dict[str, tuple[int, str, float]] = {}
    for shape in shapes:
        cls = vcpu_class(shape.instance_type)
        if cls is None or shape.vcpus is None:
            return None
        for quota, _ in _capacity_quotas(cls, capacity_types):
            value = values.get(quota)
            if value is None:
                known = False
                continue
            if shape.vcpus <= value:
                fits = True
            label = f"{quota.code} = {value:g}"
            if label not in smallest or shape.vcpus < smallest[label][0]:
                smallest[label] = (shape.vcpus, shape.instance_type, value)
    if fits or not known or not smallest:
        return None
    evidence = "; ".join(f"{label}, smallest type {t} needs {v}" for label, (v, t, _) in smallest.items())
    return failed(
        f"nodepool/{name}",
        f"no type the pool may launch fits under its vCPU quota ({evidence}): Karpenter's launches fail",
        "raise the quota (see the quota rows below for the command)",
    )


# ------------------------------------------------------------------------------------------------ vCPU quotas


@dataclass(frozen=True)
class Demand:
    """The vCPUs one source (a pool, the system node group) needs from one quota at its limit."""

    source: str
    quota: Quota
    smallest: int
    largest: int
    #: How the two bounds are reached ("32 × g5.xlarge").
    smallest_by: str
    largest_by: str
    #: False when the source may also use the other capacity type (Karpenter falls back to it).
    sole: bool


def _by_class(shapes: Sequence[InstanceShape]) -> dict[VcpuClass, list[InstanceShape]]:
    classes: dict[VcpuClass, list[InstanceShape]] = {}
    for shape in shapes:
        cls = vcpu_class(shape.instance_type)
        if cls is not None and shape.vcpus is not None:
            classes.setdefault(cls, []).append(shape)
    return classes


def _capacity_quotas(cls: VcpuClass, capacity_types: Sequence[str]) -> list[tuple[Quota, bool]]:
    usable = [c for c in ("on-demand", "spot") if c in capacity_types]
    return [(quota, len(usable) == 1) for c in usable if (quota := cls.quota(c)) is not None]  # type: ignore[arg-type]


def pool_demands(
    name: str, pool: NodePoolSpec, selection: PoolSelection, shapes: Sequence[InstanceShape]
) -> list[Demand]:
    """vCPUs the pool needs at its limit, per quota: an accelerator pool's limit (GPUs, Neuron devices or NeuronCores)
    ÷ what one instance brings × vCPUs per instance, for the instance type that needs the fewest and the most; a CPU
    pool's cpu limit.

    Instance types with more devices than the limit are left out: Karpenter never launches a node that would take the
    pool over its limit.
    """
    source = f"nodePools.{name}"
    demands: list[Demand] = []
    limits = pool.accelerator_limits
    for cls, members in sorted(_by_class(shapes).items(), key=lambda item: item[0].key):
        if limits:
            fills = [
                (count * s.vcpus, f"{count} × {s.instance_type}")  # type: ignore[operator]
                for s in members
                if (count := s.instances_within(limits)) > 0
            ]
        else:
            cpus = cpu_limit(pool)
            fills = [(cpus, f"cpu limit {cpus}")] if cpus is not None else []
        if not fills:
            continue
        low, high = min(fills), max(fills)
        for quota, sole in _capacity_quotas(cls, selection.capacity_types):
            demands.append(Demand(source, quota, low[0], high[0], low[1], high[1], sole))
    return demands


def system_group_demands(group: SystemNodeGroup, shapes: Sequence[InstanceShape]) -> list[Demand]:
    """The system node group at its maxSize, on-demand only."""
    demands = []
    for cls, members in sorted(_by_class(shapes).items(), key=lambda item: item[0].key):
        fills = [(group.max_size * s.vcpus, f"{group.max_size} × {s.instance_type}") for s in members]  # type: ignore[operator]
        low, high = min(fills), max(fills)
        demands.append(Demand("system node group", cls.on_demand, low[0], high[0], low[1], high[1], sole=True))
    return demands


def quota_order(quota: Quota) -> int:
    """Quotas in the order of `VCPU_CLASSES`, on-demand before spot."""
    ordered = [q for cls in VCPU_CLASSES for q in (cls.on_demand, cls.spot)]
    return ordered.index(quota) if quota in ordered else len(ordered)


def quota_check_name(quota: Quota) -> str:
    for cls in VCPU_CLASSES:
        if quota == cls.on_demand:
            return f"quota/{cls.key}-on-demand"
        if quota == cls.spot:
            return f"quota/{cls.key}-spot"
    return f"quota/{quota.code}"


def vcpu_quota_check(quota: Quota, value: float | None, demands: Sequence[Demand], region: str) -> CheckResult:
    """FAIL when the quota is below what the sources that cannot fall back need with their smallest instances; WARN
    when it is below what every source needs with its largest; PASS otherwise."""
    check = quota_check_name(quota)
    required = sum(d.smallest for d in demands if d.sole)
    high = sum(d.largest for d in demands)
    parts = "; ".join(
        f"{d.source} {d.smallest} ({d.smallest_by})"
        if d.smallest == d.largest
        else f"{d.source} {d.smallest}-{d.largest} ({d.smallest_by} .. {d.largest_by})"
        for d in demands
    )
    parts = "; ".join(
        (
            f"{d.source} {d.smallest} ({d.smallest_by})"
            if d.smallest == d.largest
            else f"{d.source} {d.smallest}-{d.largest} ({d.smallest_by} .. {d.largest_by})"
        )
        + ("" if d.sole else ", or the other capacity type")
        for d in demands
    )
    if value is None:
        return warned(
            check,
            f"{quota.label} not found in {region}; needed: {parts}",
            "check the quota in the Service Quotas console",
        )
    evidence = f"{quota.label} = {value:g} vCPUs; needed at the limits: {parts}"
    command = increase_command(quota, high, region)
    if required:
        fix = f"request at least {required} vCPUs ({high} lets every source fill its limit): {command}"
    else:
        fix = f"request {high} vCPUs to fill every limit on this capacity type too: {command}"
    if value < required:
        return failed(check, evidence, fix)
    if value < high:
        return warned(check, evidence, fix)
    return passed(check, evidence)
