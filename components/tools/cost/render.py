"""An estimate as a terminal table, as Markdown, and as JSON."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from .calculator import NOT_COUNTED, Estimate, Fill, PoolCeiling, headline
from .prices import HOURS_PER_MONTH, SOURCES


def money(value: Decimal | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def money_range(low: Decimal | None, high: Decimal | None) -> str:
    return money(low) if low == high else f"{money(low)} - {money(high)}"


def _fill(fill: Fill | None) -> str:
    return "n/a" if fill is None else f"{fill.instances} × {fill.instance_type} {money(fill.monthly)}"


def _capacity(pool: PoolCeiling) -> str:
    return "/".join(pool.capacity_types)


_UNITS = {
    "nvidia.com/gpu": "GPUs",
    "aws.amazon.com/neuron": "Neuron devices",
    "aws.amazon.com/neuroncore": "NeuronCores",
}


def pool_limit(pool: PoolCeiling) -> str:
    return f"{pool.limit} {_UNITS.get(pool.resource, 'vCPUs')}"


def render_table(estimate: Estimate) -> str:
    lines = [
        (
            f"Cost of stack '{estimate.stack}' in {estimate.region}: prices from the {estimate.price_source}, "
            f"{HOURS_PER_MONTH} h a month, USD"
        ),
        "",
        "Idle baseline, per month",
    ]
    width = max(len(line.item) for line in estimate.baseline)
    for line in estimate.baseline:
        lines.append(f"  {line.item:<{width}}  {money_range(line.low, line.high):>22}  {line.basis}")
    lines.append(f"  {'total':<{width}}  {money_range(estimate.idle_low, estimate.idle_high):>22}")
    lines += [
        "",
        "Spend ceiling per NodePool, per month (the limit filled with the cheapest / dearest allowed type)",
    ]
    for pool in estimate.pools:
        fills = f"cheapest {_fill(pool.cheapest)}; dearest {_fill(pool.dearest)}"
        lines.append(f"  {pool.pool}: {pool_limit(pool)}, {_capacity(pool)}; {fills}")
        if pool.spot_dearest is not None:
            lines.append(f"    at current spot prices: {_fill(pool.spot_cheapest)} .. {_fill(pool.spot_dearest)}")
        if pool.unpriced:
            lines.append(f"    not priced: {', '.join(pool.unpriced)}")
    lines.append(f"  {'all pools at their limits':<{width}}  {money(estimate.gpu_ceiling):>22}")
    lines += ["", f"Whole stack: {headline(estimate)}"]
    if estimate.missing:
        lines += ["", "Missing from the price table (left out of the sums, not counted as $0):"]
        lines += [f"  - {item}" for item in estimate.missing]
    lines += ["", "Notes:"] + [f"  - {note}" for note in estimate.notes]
    lines.append(f"  - not counted: {'; '.join(NOT_COUNTED)}")
    return "\n".join(lines)


def render_markdown(estimate: Estimate) -> str:
    lines = ["| item | per month | basis |", "| --- | ---: | --- |"]
    lines += [f"| {line.item} | {money_range(line.low, line.high)} | {line.basis} |" for line in estimate.baseline]
    lines.append(f"| **idle total** | **{money_range(estimate.idle_low, estimate.idle_high)}** | |")
    for pool in estimate.pools:
        low = money(pool.cheapest.monthly if pool.cheapest else None)
        high = money(pool.dearest.monthly if pool.dearest else None)
        unpriced = f"; not priced: {', '.join(pool.unpriced)}" if pool.unpriced else ""
        lines.append(
            f"| ceiling `{pool.pool}` ({pool_limit(pool)}, {_capacity(pool)}) | {low} - {high} "
            f"| {_fill(pool.cheapest)} .. {_fill(pool.dearest)}{unpriced} |"
        )
    lines.append(f"| **ceiling** (idle + every pool at its limit) | **{money(estimate.ceiling)}** | |")
    return "\n".join(lines)


def _number(value: Decimal | None) -> float | None:
    return None if value is None else float(round(value, 2))


def _fill_json(fill: Fill | None) -> dict[str, Any] | None:
    if fill is None:
        return None
    return {
        "instanceType": fill.instance_type,
        "instances": fill.instances,
        "hourly": _number(fill.hourly),
        "monthly": _number(fill.monthly),
    }


def as_json(estimate: Estimate) -> dict[str, Any]:
    return {
        "stack": estimate.stack,
        "region": estimate.region,
        "prices": {"date": estimate.price_date.isoformat(), "source": estimate.price_source, "pages": dict(SOURCES)},
        "hoursPerMonth": int(HOURS_PER_MONTH),
        "baseline": [
            {"item": line.item, "low": _number(line.low), "high": _number(line.high), "basis": line.basis}
            for line in estimate.baseline
        ],
        "idle": {"low": _number(estimate.idle_low), "high": _number(estimate.idle_high)},
        "pools": [
            {
                "pool": pool.pool,
                "resource": pool.resource,
                "limit": pool.limit,
                "capacityTypes": list(pool.capacity_types),
                "cheapest": _fill_json(pool.cheapest),
                "dearest": _fill_json(pool.dearest),
                "spotCheapest": _fill_json(pool.spot_cheapest),
                "spotDearest": _fill_json(pool.spot_dearest),
                "unpriced": list(pool.unpriced),
                "overLimit": list(pool.over_limit),
            }
            for pool in estimate.pools
        ],
        "gpuCeiling": _number(estimate.gpu_ceiling),
        "ceiling": _number(estimate.ceiling),
        "missing": list(estimate.missing),
        "notes": list(estimate.notes),
        "headline": headline(estimate),
    }


def render_json(estimate: Estimate) -> str:
    return json.dumps(as_json(estimate), indent=2, sort_keys=True, ensure_ascii=False)
