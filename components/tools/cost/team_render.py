"""The team bill as text and as JSON (`python -m components.cost --by-team`, `by_team.py`): the lines per team,
pool, capacity type and instance type, the totals per team and over the pools, and notes saying how each figure
was priced and what it leaves out."""

from __future__ import annotations

import json
from dataclasses import asdict
from decimal import Decimal
from typing import Any

from .spot_history import PRODUCT_DESCRIPTION
from .teams import NOT_PRICED, POOLS, PRECISION, UNALLOCATED, SpotPricing, TeamBill, TeamTotal


def _hours(value: Decimal) -> str:
    return f"{value:,.1f}"


def _usd(value: Decimal | None) -> str:
    return "not priced" if value is None else f"${value:,.2f}"


def render_text(bill: TeamBill) -> str:
    head = (
        f"GPU cost per team, {bill.start:%Y-%m-%d} to {bill.end:%Y-%m-%d} (UTC, end exclusive), from {bill.prometheus}"
    )
    rows = [
        ("team", "pool", "capacity", "instance type", "GPU-hours", "busy GPU-hours", "on-demand USD", "USD", "price")
    ]
    rows += [
        (
            line.team,
            line.pool,
            line.capacity_type,
            line.instance_type,
            _hours(line.gpu_hours),
            _hours(line.busy_gpu_hours),
            _usd(line.on_demand_usd),
            _usd(line.usd),
            line.price,
        )
        for line in (*bill.lines, *bill.unallocated)
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    table = [
        "  ".join(
            cell.rjust(w) if 4 <= i <= 7 else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
    totals = [_total(team, total) for team, total in bill.team_totals().items()]
    totals += _pool_totals(bill)
    notes = [*_price_notes(bill), *_unallocated_notes(bill)]
    notes.append(
        f"Prometheus had cost samples for {_hours(bill.covered_hours)} of the range's {_hours(bill.hours)} hours; "
        "hours without samples are not counted."
    )
    if any(line.price == NOT_PRICED for line in bill.lines):
        notes.append(
            "not priced: the pinned table has no price for that instance type in the stack's region (and, for spot, "
            "no spot price was read)."
        )
    body = table if bill.lines else ["no GPU held by any team in the range"]
    return "\n".join([head, "", *body, "", "per team:", *totals, "", *notes]).rstrip() + "\n"


def _total(team: str, total: TeamTotal) -> str:
    return (
        f"  {team}: {_hours(total.gpu_hours)} GPU-hours, {_usd(total.usd)}"
        + (f" (at the on-demand list price: {_usd(total.on_demand_usd)})" if total.on_demand_usd != total.usd else "")
        + (f" ({_hours(total.unpriced_gpu_hours)} GPU-hours not priced)" if total.unpriced_gpu_hours else "")
    )


def _pool_totals(bill: TeamBill) -> list[str]:
    """The unallocated total, and what the pools ran, which the teams and it add up to."""
    if not bill.pools:
        return []
    totals = bill.pool_totals()
    return [
        _total(UNALLOCATED, totals[UNALLOCATED]),
        _total("= the GPU node-hours the pools ran", totals[POOLS]),
    ]


def _unallocated_notes(bill: TeamBill) -> list[str]:
    if not bill.pools:
        return [
            (
                "Prometheus has no record of the GPUs the pools ran in the range (cost rules from before they "
                "counted them): the unallocated GPU-hours are not known."
            )
        ]
    what = (
        f"{UNALLOCATED}: the GPUs the pools' nodes had that no team's running pod held: idle GPUs of running nodes, "
        "nodes waiting to be consolidated, GPUs of pods still pulling their image or starting, the other 7 GPUs of "
        "an 8-GPU node running a 1-GPU pod. The teams and it add up to the pools' GPUs × the hours their nodes were "
        "in the cluster (from when a node joins until it is gone; EC2 also bills the minute or two before it joins)."
    )
    notes = [what]
    unpooled = sorted({f"{line.pool} {line.capacity_type} {line.instance_type}" for line in bill.unpooled()})
    if unpooled:
        notes.append(
            "No record of the GPUs the pools ran on " + "; ".join(unpooled) + " (an instance type whose GPUs the "
            "platform does not know): the teams' GPU-hours there are in no pool total, and their unallocated "
            "GPU-hours are not known."
        )
    return notes


def _price_notes(bill: TeamBill) -> list[str]:
    notes = ["Prices: on-demand GPU-hours at the pinned on-demand table per GPU (instance price / its GPUs)."]
    spot = bill.spot
    if spot is None:
        if bill.spot_types():
            notes.append(
                "Spot GPU-hours at the on-demand list price (--no-spot-prices): a ceiling, which spot never bills "
                "above."
            )
        return notes
    where = f"the stack's AZs ({', '.join(spot.zones)})" if spot.zones else f"every AZ of {spot.region} with a price"
    notes.append(
        f"Spot GPU-hours at EC2's spot price history in {spot.region} ({PRODUCT_DESCRIPTION}), averaged over the "
        f"whole range and over {where}: the cost series do not record a node's AZ, nor is the price matched to the "
        "hours the GPUs ran. The on-demand column is the list price, a ceiling spot never bills above."
    )
    for instance_type in bill.spot_types():
        found = spot.prices.get(instance_type)
        if found is None:
            notes.append(f"  {instance_type}: no spot price in the range; priced at the on-demand ceiling.")
        elif found.usd_per_gpu_hour is None:
            notes.append(
                f"  {instance_type}: ${found.usd_per_hour:,.4f} per hour, but its GPUs are not in the pinned "
                "families; priced at the on-demand ceiling."
            )
        else:
            notes.append(
                f"  {instance_type}: ${found.usd_per_hour:,.4f} per hour, ${found.usd_per_gpu_hour:,.4f} per "
                f"GPU-hour, over {', '.join(found.zones)}."
            )
    return notes


def _spot_document(spot: SpotPricing | None) -> dict[str, Any] | None:
    if spot is None:
        return None
    return {
        "region": spot.region,
        "productDescription": PRODUCT_DESCRIPTION,
        "zones": list(spot.zones) or "all",
        "types": {
            name: {
                "usdPerHour": str(found.usd_per_hour.quantize(PRECISION)),
                "usdPerGpuHour": None
                if found.usd_per_gpu_hour is None
                else str(found.usd_per_gpu_hour.quantize(PRECISION)),
                "zones": list(found.zones),
            }
            for name, found in sorted(spot.prices.items())
        },
    }


def _total_document(total: TeamTotal) -> dict[str, str]:
    return {
        "gpuHours": str(total.gpu_hours),
        "usd": str(total.usd),
        "unpricedGpuHours": str(total.unpriced_gpu_hours),
        "onDemandUsd": str(total.on_demand_usd),
    }


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


def render_json(bill: TeamBill) -> str:
    document: dict[str, Any] = {
        "from": bill.start.isoformat(),
        "to": bill.end.isoformat(),
        "prometheus": bill.prometheus,
        "hours": str(bill.hours),
        "coveredHours": str(bill.covered_hours),
        "spotPrices": _spot_document(bill.spot),
        "teams": {team: _total_document(total) for team, total in bill.team_totals().items()},
        "lines": [{key: _plain(value) for key, value in asdict(line).items()} for line in bill.lines],
        # The teams' totals plus `unallocated` are `pools`, GPU-hours and dollars alike; null when Prometheus has no
        # record of what the pools ran.
        "unallocated": None,
        "pools": None,
        "unallocatedLines": [{key: _plain(value) for key, value in asdict(line).items()} for line in bill.unallocated],
    }
    if bill.pools:
        totals = bill.pool_totals()
        document["unallocated"] = _total_document(totals[UNALLOCATED])
        document["pools"] = _total_document(totals[POOLS])
    return json.dumps(document, indent=2) + "\n"
