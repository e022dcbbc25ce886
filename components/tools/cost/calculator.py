"""What a stack costs, from its config and a price table alone (pure: no AWS call, no clock).

Two figures:

- the **idle baseline** per month: what runs with no workload (control plane, NAT gateways, system nodes and their
  volumes, FSx, Prometheus' volume, control-plane logs, KMS keys);
- the **spend ceiling** of each NodePool: its limit (GPUs, Neuron devices or NeuronCores; vCPUs for a CPU pool) ÷
  what one instance brings, × the hourly price of each instance type the pool allows, × 730 h; the cheapest and the
  dearest way to fill the limit.

Given the model of the running platform, the baseline also counts the platform's own pods on Karpenter pools and
their volumes (`footprint`).

A price missing from the table is reported and left out of the sums, never counted as 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from ...karpenter.pool_spec import NodePoolSpec
from ...platform.config import PlatformConfig
from ...team.quantity import parse_quantity
from ..cluster_model.platform import Platform
from ..preflight.selection import (
    InstanceShape,
    accelerated_shapes,
    cpu_limit,
    named_families,
    select,
)
from .baseline import baseline
from .cpu_types import CpuType, cpu_catalog
from .footprint import capacity_memory, footprint
from .pricer import CostLine, Pricer, hours, quantity
from .prices import HOURS_PER_MONTH, PriceTable

NOT_COUNTED = (
    "NAT gateway data processing and data transfer (per GB)",
    "S3 storage and requests",
    "CloudWatch Logs storage",
    "load balancers your Services and Ingresses create",
    "nodes Karpenter launches for workloads (bounded by each pool's ceiling)",
    "what the EKS add-ons' DaemonSets ask on Karpenter nodes (their requests are not pinned)",
)


@dataclass(frozen=True)
class Fill:
    """One way to fill a pool's limit: `instances` of `instance_type` at `hourly` each."""

    instance_type: str
    instances: int
    hourly: Decimal

    @property
    def monthly(self) -> Decimal:
        return self.instances * self.hourly * HOURS_PER_MONTH


@dataclass(frozen=True)
class PoolCeiling:
    pool: str
    resource: str
    limit: int
    capacity_types: tuple[str, ...]
    cheapest: Fill | None
    dearest: Fill | None
    #: The same at spot prices, when the table has them and the pool allows spot.
    spot_cheapest: Fill | None
    spot_dearest: Fill | None
    unpriced: tuple[str, ...]
    #: Allowed types with more devices than the limit: Karpenter never launches them for this pool.
    over_limit: tuple[str, ...]


@dataclass(frozen=True)
class Estimate:
    stack: str
    region: str
    price_date: date
    price_source: str
    baseline: tuple[CostLine, ...]
    pools: tuple[PoolCeiling, ...]
    missing: tuple[str, ...]
    notes: tuple[str, ...]

    def _sum(self, attribute: str) -> Decimal | None:
        values = [getattr(line, attribute) for line in self.baseline if getattr(line, attribute) is not None]
        return sum(values, Decimal(0)) if values else None

    @property
    def idle_low(self) -> Decimal | None:
        return self._sum("low")

    @property
    def idle_high(self) -> Decimal | None:
        return self._sum("high")

    @property
    def gpu_ceiling(self) -> Decimal | None:
        """Every pool filled at its limit with its dearest instance type; None when a pool could launch a type the
        table does not price (unknown, never $0)."""
        if any(p.dearest is None and p.unpriced for p in self.pools):
            return None
        return sum((p.dearest.monthly for p in self.pools if p.dearest is not None), Decimal(0))

    @property
    def ceiling(self) -> Decimal | None:
        """Idle (high end) plus every pool filled at its limit with its dearest instance type."""
        idle, pools = self.idle_high, self.gpu_ceiling
        return None if idle is None or pools is None else idle + pools


def _fills(
    shapes: list[InstanceShape], count: Callable[[InstanceShape], int], hourly: Mapping[str, Decimal]
) -> tuple[Fill | None, Fill | None]:
    fills = [Fill(s.instance_type, count(s), hourly[s.instance_type]) for s in shapes if s.instance_type in hourly]
    if not fills:
        return None, None
    by_cost = sorted(fills, key=lambda f: (f.monthly, f.instance_type))
    return by_cost[0], by_cost[-1]


def _cpu_fill(types: Mapping[str, CpuType], cpus: int, memory: Decimal | None) -> Callable[[InstanceShape], int]:
    """Instances of a type that fill a CPU pool: Karpenter launches a type only while its capacity fits what the
    pool's limits leave (kubernetes-sigs/karpenter v1.14, pkg/controllers/provisioning/scheduling: instance types are
    filtered by the NodePool's remaining resources), so the pool stops at the first of its vCPU and memory limits."""

    def count(shape: InstanceShape) -> int:
        found = types[shape.instance_type]
        by_cpu = cpus // (found.vcpus or cpus + 1)
        return by_cpu if memory is None else min(by_cpu, int(memory // capacity_memory(found)))

    return count


def _accelerator_fill(limits: Mapping[str, int]) -> Callable[[InstanceShape], int]:
    return lambda shape: shape.instances_within(limits)


#: What bounds a pool, the shapes it is priced over, and how many instances of a shape fill it.
_Bound = tuple[dict[str, int], list[InstanceShape], Callable[[InstanceShape], int]]


def _pool_limit(
    name: str,
    pool: NodePoolSpec,
    accelerated: list[InstanceShape],
    sized: Mapping[str, CpuType],
    notes: list[str],
) -> _Bound | None:
    """What bounds a pool (its accelerator limits, else its vCPUs), the catalog of shapes it is priced over, and how
    many instances of a shape fill it; None, with a note, when nothing bounds it."""
    limits: dict[str, int] = pool.accelerator_limits
    if limits:
        return limits, accelerated, _accelerator_fill(limits)
    cpus = cpu_limit(pool)
    if cpus is None:
        notes.append(f"{name}: neither an accelerator nor a cpu limit, so no ceiling")
        return None
    memory = pool.limits.get("memory")
    count = _cpu_fill(sized, cpus, None if memory is None else parse_quantity(memory))
    return {"cpu": cpus}, [t.shape for t in sized.values()], count


def _on_demand(pricer: Pricer, fitting: list[InstanceShape], unpriced: list[str]) -> dict[str, Decimal]:
    """The on-demand hourly price of each fitting shape; the types without one are added to `unpriced`."""
    on_demand: dict[str, Decimal] = {}
    for shape in fitting:
        hourly = pricer.instance(shape.instance_type)
        if hourly is None:
            unpriced.append(shape.instance_type)
        else:
            on_demand[shape.instance_type] = hourly
    return on_demand


def _pool_notes(name: str, pool: NodePoolSpec, resource: str, allowed: list[InstanceShape], notes: list[str]) -> None:
    """What a reader of a pool's ceiling should know of how it was priced (a CPU pool, a pool chosen by GPU name)."""
    if resource == "cpu":
        notes.append(
            f"{name}: a CPU pool, priced over the c, m and r types of generation 6 and later the table names "
            "(sized by their names: cpu_types)"
        )
    if pool.gpu_names and not pool.instance_families:
        families = sorted({s.family for s in allowed})
        notes.append(
            f"{name}: chosen by GPU name; priced over the families of the GPU facts table ({', '.join(families)}), "
            "while EC2 may offer more with the same GPUs (the preflight lists what the region has)"
        )


def _ceiling(
    name: str, pool: NodePoolSpec, pricer: Pricer, bound: _Bound, with_facts: set[str], notes: list[str]
) -> PoolCeiling:
    """One pool's ceiling: the cheapest and dearest ways to fill its limit on demand and, if it allows spot, at spot
    prices (`with_facts`: the accelerated families with device facts)."""
    limits, catalog, count = bound
    resource, devices = next(iter(limits.items()))
    selection = select(pool)
    allowed = selection.allowed(catalog)
    fitting = [s for s in allowed if count(s) > 0]
    # A family an accelerator pool names without device facts has no shapes here: say so rather than price the
    # pool as if it could not launch it.
    without_facts = []
    if resource != "cpu":
        without_facts = [family for family in named_families(selection) if family not in with_facts]
    unpriced = [f"{family} (no device facts)" for family in without_facts]
    pricer.missing += [
        f"{name}: devices per instance of {family} (components/instances/accelerated_families.yaml or "
        "karpenter.acceleratorFamilies)"
        for family in without_facts
    ]
    cheapest, dearest = _fills(fitting, count, _on_demand(pricer, fitting, unpriced))
    spot_cheapest = spot_dearest = None
    if "spot" in selection.capacity_types:
        spot = {
            s.instance_type: price
            for s in fitting
            if (price := pricer.prices.spot_hour(pricer.region, s.instance_type)) is not None
        }
        spot_cheapest, spot_dearest = _fills(fitting, count, spot)
    if not pricer.knows_instances:
        unpriced = [f"every type (no instance prices for {pricer.region})"]
    elif not fitting:
        notes.append(f"{name}: no allowed instance type fits within its limit of {devices} {resource}")
    _pool_notes(name, pool, resource, allowed, notes)
    return PoolCeiling(
        pool=name,
        resource=resource,
        limit=devices,
        capacity_types=selection.capacity_types,
        cheapest=cheapest,
        dearest=dearest,
        spot_cheapest=spot_cheapest,
        spot_dearest=spot_dearest,
        unpriced=tuple(unpriced),
        over_limit=tuple(s.instance_type for s in allowed if count(s) == 0),
    )


def pool_ceilings(config: PlatformConfig, pricer: Pricer, notes: list[str]) -> list[PoolCeiling]:
    """Each NodePool's spend ceiling: its limit filled with the cheapest and the dearest instance type it allows."""
    accelerated = accelerated_shapes(config.karpenter.added_families)
    with_facts = {shape.family for shape in accelerated}
    sized = {t.shape.instance_type: t for t in cpu_catalog(pricer.prices.instances.get(pricer.region, {}))}
    ceilings = []
    for name, pool in sorted(config.karpenter.node_pools.items()):
        bound = _pool_limit(name, pool, accelerated, sized, notes)
        if bound is not None:
            ceilings.append(_ceiling(name, pool, pricer, bound, with_facts=with_facts, notes=notes))
    return ceilings


def platform_lines(config: PlatformConfig, pricer: Pricer, platform: Platform, notes: list[str]) -> list[CostLine]:
    """What the platform's own pods make Karpenter launch, and their volumes (from the model)."""
    region = pricer.prices.instances.get(pricer.region, {})
    price = {"on-demand": region, "spot": pricer.prices.spot.get(pricer.region, {})}
    found = footprint(platform, config.karpenter.node_pools, cpu_catalog(region), price)
    lines = []
    for load in found.loads:
        asked = f"{len(load.pods)} pods asking {quantity(load.cpu)} vCPU, {load.memory / 2**30:.1f} GiB"
        if load.fill is None:
            lines.append(CostLine(f"platform pods on `{load.pool}` ({asked})", None, None, load.why_unpriced))
            pricer.missing.append(f"{pricer.region} the platform's pods on {load.pool}: {load.why_unpriced}")
            continue
        instance_type, nodes, hourly, capacity = load.fill
        lines.append(
            pricer.line(
                f"platform pods on `{load.pool}` ({asked}; {nodes} × {instance_type}, {capacity})",
                hourly,
                nodes * HOURS_PER_MONTH,
                f"{nodes} × {hours(hourly)}",
            )
        )
    if found.volumes:
        gib = sum((size for _, size in found.volumes), Decimal(0))
        gp3 = pricer.rate("gp3_gib_month")
        what = ", ".join(name for name, _ in found.volumes)
        lines.append(
            pricer.line(
                f"platform volumes ({len(found.volumes)}, {quantity(gib)} GiB gp3)",
                gp3,
                gib,
                f"{quantity(gib)} GiB × ${gp3}/GiB-month ({what})",
            )
        )
    if found.unrendered:
        notes.append(
            f"not counted: the pods of Helm releases the model could not render ({', '.join(found.unrendered)})"
        )
    return lines


def estimate(config: PlatformConfig, prices: PriceTable, *, on: date, platform: Platform | None = None) -> Estimate:
    """The stack's idle baseline and pool ceilings at `prices`; `on` decides standard or extended EKS support;
    `platform` (the model of the running platform) adds the platform's own pods on Karpenter pools."""
    pricer = Pricer(prices, config.region)
    notes: list[str] = []
    lines = baseline(config, pricer, on, notes)
    if platform is None:
        notes.append(
            "not counted: the platform's own pods on Karpenter pools and their volumes "
            "(they come from the model of the running platform: give --preview, as make cost does)"
        )
    else:
        lines += platform_lines(config, pricer, platform, notes)
    pools = pool_ceilings(config, pricer, notes)
    if any("spot" in p.capacity_types and p.spot_dearest is None for p in pools):
        notes.append("spot pools: ceilings at the on-demand price, which a spot instance never bills above")
    return Estimate(
        stack=config.stack,
        region=config.region,
        price_date=prices.date,
        price_source=prices.source,
        baseline=tuple(lines),
        pools=tuple(pools),
        missing=tuple(dict.fromkeys(pricer.missing)),
        notes=tuple(notes),
    )


def headline(estimate: Estimate) -> str:
    """The one line the offline preview prints."""
    idle, ceiling = estimate.idle_high, estimate.ceiling
    if idle is None or ceiling is None:
        return f"cost unknown: {estimate.missing[0]}"
    line = f"about ${idle:,.0f}/month idle; up to ${ceiling:,.0f}/month with every pool at its limit"
    if estimate.missing:
        line += f" ({len(estimate.missing)} price(s) missing: python -m components.tools.cost --stack {estimate.stack})"
    return line
