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

from ...config.types import ControlPlaneLog
from ...platform.config import PlatformConfig
from ...team.quantity import parse_quantity
from ..cluster_model.platform import Platform
from ..preflight.checks_account import nat_zones
from ..preflight.selection import (
    InstanceShape,
    accelerated_shapes,
    cpu_limit,
    named_families,
    select,
)
from .cpu_types import CpuType, cpu_catalog
from .footprint import capacity_memory, footprint
from .prices import HOURS_PER_MONTH, STANDARD_SUPPORT_ENDS, PriceTable, RegionRates

#: Assumed control-plane log volume per month by log type (GB ingested), low and high: an estimate for a cluster of
#: this size, not a price. Audit logs grow with API traffic (controllers, CI, kubectl) and dominate.
LOG_VOLUME_GB: Mapping[ControlPlaneLog, tuple[Decimal, Decimal]] = {
    ControlPlaneLog.API: (Decimal(1), Decimal(10)),
    ControlPlaneLog.AUDIT: (Decimal(2), Decimal(30)),
    ControlPlaneLog.AUTHENTICATOR: (Decimal("0.5"), Decimal(5)),
    ControlPlaneLog.CONTROLLER_MANAGER: (Decimal(1), Decimal(10)),
    ControlPlaneLog.SCHEDULER: (Decimal("0.5"), Decimal(5)),
}

NOT_COUNTED = (
    "NAT gateway data processing and data transfer (per GB)",
    "S3 storage and requests",
    "CloudWatch Logs storage",
    "load balancers your Services and Ingresses create",
    "nodes Karpenter launches for workloads (bounded by each pool's ceiling)",
    "what the EKS add-ons' DaemonSets ask on Karpenter nodes (their requests are not pinned)",
)


@dataclass(frozen=True)
class CostLine:
    """One baseline item per month; `low`/`high` are None when a price is missing."""

    item: str
    low: Decimal | None
    high: Decimal | None
    basis: str


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


def _quantity(value: Decimal) -> str:
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _hours(rate: Decimal | None) -> str:
    return f"${rate}/h × {HOURS_PER_MONTH} h"


class _Pricer:
    """Looks prices up and remembers what was missing."""

    def __init__(self, prices: PriceTable, region: str):
        self.prices = prices
        self.region = region
        self.rates: RegionRates | None = prices.rates.get(region)
        self.missing: list[str] = []
        self.knows_instances = region in prices.instances
        if self.rates is None:
            self.missing.append(
                f"region {region}: EKS, NAT, EBS, FSx, log and KMS rates unknown (the rates of prices.json name "
                f"{', '.join(sorted(prices.rates))}; add the region's from the AWS pricing pages)"
            )
        if not self.knows_instances:
            self.missing.append(
                f"region {region}: instance prices unknown (the {prices.source} has none for it; add them with "
                f"`python -m components.tools.cost.prices --refresh --region {region}`, or price live with --live)"
            )

    def rate(self, name: str) -> Decimal | None:
        return None if self.rates is None else getattr(self.rates, name)

    def lustre(self, key: str) -> Decimal | None:
        rate = None if self.rates is None else self.rates.lustre_gib_month.get(key)
        if rate is None and self.rates is not None:
            self.missing.append(f"{self.region} FSx for Lustre {key}")
        return rate

    def instance(self, instance_type: str) -> Decimal | None:
        hourly = self.prices.instance_hour(self.region, instance_type)
        if hourly is None and self.knows_instances:
            self.missing.append(f"{self.region} {instance_type} on-demand")
        return hourly

    def line(
        self, item: str, rate: Decimal | None, quantity: Decimal, basis: str, high: Decimal | None = None
    ) -> CostLine:
        """`quantity` (or `quantity` to `high`) units at `rate`."""
        if rate is None:
            return CostLine(item, None, None, "price missing")
        return CostLine(item, rate * quantity, rate * (quantity if high is None else high), basis)


def _control_plane(config: PlatformConfig, pricer: _Pricer, on: date, notes: list[str]) -> CostLine:
    version = config.cluster.kubernetes_version
    ends = STANDARD_SUPPORT_ENDS.get(version)
    extended = ends is not None and on > ends
    if ends is None:
        notes.append(f"the end of standard support of Kubernetes {version} is not pinned: priced at the standard rate")
    rate = pricer.rate("eks_extended_hour" if extended else "eks_standard_hour")
    support = "extended support" if extended else "standard support"
    return pricer.line(f"EKS control plane ({version}, {support})", rate, HOURS_PER_MONTH, _hours(rate))


def baseline(config: PlatformConfig, pricer: _Pricer, on: date, notes: list[str]) -> list[CostLine]:
    """What the stack costs a month with no workload. (A basis text is shown only where its rate exists.)"""
    lines = [_control_plane(config, pricer, on, notes)]

    nats = len(nat_zones(config.network))
    if nats:
        nat, ipv4 = pricer.rate("nat_gateway_hour"), pricer.rate("public_ipv4_hour")
        hours = nats * HOURS_PER_MONTH
        lines.append(pricer.line(f"NAT gateways ({nats}, hours only)", nat, hours, f"{nats} × {_hours(nat)}"))
        lines.append(
            pricer.line(f"public IPv4 addresses of the NAT gateways ({nats})", ipv4, hours, f"{nats} × {_hours(ipv4)}")
        )

    group = config.cluster.system_node_group
    # EKS launches on-demand node groups in the order of instanceTypes (the "prioritized" allocation strategy).
    first = group.instance_types[0]
    hourly = pricer.instance(first)
    lines.append(
        pricer.line(
            f"system node group ({group.desired_size} × {first}, on-demand)",
            hourly,
            group.desired_size * HOURS_PER_MONTH,
            f"{group.desired_size} × {_hours(hourly)}",
        )
    )
    gp3 = pricer.rate("gp3_gib_month")
    root_gib = group.desired_size * group.disk_size_gib
    lines.append(
        pricer.line(
            f"system node root volumes ({group.desired_size} × {group.disk_size_gib} GiB gp3)",
            gp3,
            Decimal(root_gib),
            f"{root_gib} GiB × ${gp3}/GiB-month",
        )
    )

    fsx = config.storage.fsx
    if fsx is not None:
        throughput = fsx.per_unit_storage_throughput
        key = fsx.deployment_type if throughput is None else f"{fsx.deployment_type}/{throughput}"
        rate = pricer.lustre(key)
        capacity = fsx.storage_capacity_gib
        lines.append(
            pricer.line(
                f"FSx for Lustre ({key}, {capacity} GiB)",
                rate,
                Decimal(capacity),
                f"{capacity} GiB × ${rate}/GiB-month",
            )
        )

    if config.observability.enabled:
        gib = config.observability.storage_gib
        lines.append(
            pricer.line(f"Prometheus volume ({gib} GiB gp3)", gp3, Decimal(gib), f"{gib} GiB × ${gp3}/GiB-month")
        )

    log_types = config.cluster.log_types
    if log_types:
        low = sum((LOG_VOLUME_GB[t][0] for t in log_types), Decimal(0))
        high = sum((LOG_VOLUME_GB[t][1] for t in log_types), Decimal(0))
        rate = pricer.rate("log_ingestion_gb")
        names = ", ".join(t.value for t in log_types)
        lines.append(
            pricer.line(
                f"control-plane logs ingested ({len(log_types)} log types)",
                rate,
                low,
                f"{_quantity(low)}-{_quantity(high)} GB assumed ({names}) × ${rate}/GB",
                high=high,
            )
        )

    bucket_key = any(b.encryption == "kms" for b in config.storage.buckets.values())
    keys = 2 if bucket_key else 1
    kms = pricer.rate("kms_key_month")
    what = "Kubernetes secrets, buckets" if bucket_key else "Kubernetes secrets"
    lines.append(pricer.line(f"KMS keys ({keys}: {what})", kms, Decimal(keys), f"{keys} × ${kms}/month"))

    if config.network.existing is None and pricer.rates is not None:  # free, so shown only where the rest is priced
        lines.append(CostLine("S3 gateway endpoint", Decimal(0), Decimal(0), "free"))
    return lines


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


def pool_ceilings(config: PlatformConfig, pricer: _Pricer, notes: list[str]) -> list[PoolCeiling]:
    ceilings = []
    accelerated = accelerated_shapes(config.karpenter.added_families)
    with_facts = {shape.family for shape in accelerated}
    sized = {t.shape.instance_type: t for t in cpu_catalog(pricer.prices.instances.get(pricer.region, {}))}
    for name, pool in sorted(config.karpenter.node_pools.items()):
        limits: dict[str, int] = pool.accelerator_limits
        catalog, count = accelerated, _accelerator_fill(limits)
        if not limits:
            cpus = cpu_limit(pool)
            if cpus is None:
                notes.append(f"{name}: neither an accelerator nor a cpu limit, so no ceiling")
                continue
            memory = pool.limits.get("memory")
            limits, catalog = {"cpu": cpus}, [t.shape for t in sized.values()]
            count = _cpu_fill(sized, cpus, None if memory is None else parse_quantity(memory))
        resource, devices = next(iter(limits.items()))
        selection = select(pool)
        allowed = selection.allowed(catalog)
        fitting = [s for s in allowed if count(s) > 0]
        over = tuple(s.instance_type for s in allowed if count(s) == 0)
        on_demand: dict[str, Decimal] = {}
        # A family an accelerator pool names without device facts has no shapes here: say so rather than price the
        # pool as if it could not launch it.
        without_facts = []
        if catalog is accelerated:
            without_facts = [family for family in named_families(selection) if family not in with_facts]
        unpriced = [f"{family} (no device facts)" for family in without_facts]
        pricer.missing += [
            f"{name}: devices per instance of {family} (components/instances/accelerated_families.yaml or "
            "karpenter.acceleratorFamilies)"
            for family in without_facts
        ]
        for shape in fitting:
            hourly = pricer.instance(shape.instance_type)
            if hourly is None:
                unpriced.append(shape.instance_type)
            else:
                on_demand[shape.instance_type] = hourly
        cheapest, dearest = _fills(fitting, count, on_demand)
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
        ceilings.append(
            PoolCeiling(
                pool=name,
                resource=resource,
                limit=devices,
                capacity_types=selection.capacity_types,
                cheapest=cheapest,
                dearest=dearest,
                spot_cheapest=spot_cheapest,
                spot_dearest=spot_dearest,
                unpriced=tuple(unpriced),
                over_limit=over,
            )
        )
    return ceilings


def platform_lines(config: PlatformConfig, pricer: _Pricer, platform: Platform, notes: list[str]) -> list[CostLine]:
    """What the platform's own pods make Karpenter launch, and their volumes (from the model)."""
    region = pricer.prices.instances.get(pricer.region, {})
    price = {"on-demand": region, "spot": pricer.prices.spot.get(pricer.region, {})}
    found = footprint(platform, config.karpenter.node_pools, cpu_catalog(region), price)
    lines = []
    for load in found.loads:
        asked = f"{len(load.pods)} pods asking {_quantity(load.cpu)} vCPU, {load.memory / 2**30:.1f} GiB"
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
                f"{nodes} × {_hours(hourly)}",
            )
        )
    if found.volumes:
        gib = sum((size for _, size in found.volumes), Decimal(0))
        gp3 = pricer.rate("gp3_gib_month")
        what = ", ".join(name for name, _ in found.volumes)
        lines.append(
            pricer.line(
                f"platform volumes ({len(found.volumes)}, {_quantity(gib)} GiB gp3)",
                gp3,
                gib,
                f"{_quantity(gib)} GiB × ${gp3}/GiB-month ({what})",
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
    pricer = _Pricer(prices, config.region)
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
