"""`--by-team`: what each team's GPUs cost between two dates, read from the platform's Prometheus.

    python -m components.cost --by-team --from 2026-06-01 --to 2026-07-01 --stack prod [--prometheus URL] [--json]
    python -m components.cost --by-team --from 2026-06-01 --to 2026-07-01 --stack prod --amp-workspace-url URL

(`python -m components.tools.cost --by-team ...` is the same command.)

A team is a namespace. The figures come from the platform's GPU cost rules (`components.observability.cost`): the
GPU-hours a team's running pods held, per node pool, capacity type and instance type, the part of them DCGM saw busy,
and their price at the pinned on-demand table. Spot GPU-hours are then priced at EC2's spot price history of the
range (`spot_history.py`), in the region of `--stack` (its profile and AZs) or `--region`; `--no-spot-prices` keeps
them at the on-demand list price (a ceiling) and calls no AWS API. Dates are UTC days; `--to` is exclusive, so a
month is `--from 2026-06-01 --to 2026-07-01`. Prometheus keeps `observability.retention` (15 days by default): the
command says how many hours of the range it had samples for, and never fills the rest in. `--amp-workspace-url`
reads Amazon Managed Prometheus instead (`amp.py`), signing each query with the same credentials.
Exit status: 0; 1 Prometheus or the spot price history could not be read, or Prometheus has no cost samples in the
range; 2 wrong arguments or an invalid stack.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError

from ...regions import region_argument
from ..commands import INVALID_STACK, read_stack
from ..preflight.clients import session_for
from .amp import IAM_ACTION as AMP_ACTION
from .amp import Signer, sigv4_signer, workspace_region
from .spot_history import PRODUCT_DESCRIPTION
from .teams import (
    DEFAULT_PROMETHEUS,
    NOT_PRICED,
    POOLS,
    PRECISION,
    UNALLOCATED,
    PrometheusError,
    SpotPriceError,
    SpotPricing,
    TeamBill,
    TeamTotal,
    http_query,
    read_spot_pricing,
    team_bill,
    with_spot_prices,
)


def _day(flag: str) -> Callable[[str], date]:
    def parse(text: str) -> date:
        try:
            return date.fromisoformat(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag}: expected a date as YYYY-MM-DD, got {text!r}") from None

    return parse


def _url(flag: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        parsed = urllib.parse.urlparse(text)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise argparse.ArgumentTypeError(f"{flag}: expected an http:// or https:// URL, got {text!r}")
        return text

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="start", type=_day("--from"), help="first UTC day of the range (YYYY-MM-DD)")
    parser.add_argument("--to", dest="end", type=_day("--to"), help="UTC day after the range (YYYY-MM-DD, exclusive)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--prometheus",
        type=_url("--prometheus"),
        default=DEFAULT_PROMETHEUS,
        help=f"the stack's Prometheus (default: {DEFAULT_PROMETHEUS})",
    )
    source.add_argument(
        "--amp-workspace-url",
        type=_url("--amp-workspace-url"),
        help="instead: an Amazon Managed Prometheus workspace (https://aps-workspaces.<region>.amazonaws.com/"
        f"workspaces/<id>), queried with SigV4 signatures (needs {AMP_ACTION})",
    )
    spot = parser.add_mutually_exclusive_group()
    spot.add_argument(
        "--stack",
        help="price spot GPU-hours at the spot price history of this stack's region and AZs, with its AWS profile "
        "(reads Pulumi.<stack>.yaml)",
    )
    spot.add_argument(
        "--region",
        type=region_argument,
        help="price spot GPU-hours at the spot price history of every AZ of this region",
    )
    parser.add_argument(
        "--no-spot-prices",
        action="store_true",
        help="price spot GPU-hours at the on-demand list price (a ceiling) and read no spot price history; "
        "--stack or --region then only give Amazon Managed Prometheus its region and credentials",
    )
    parser.add_argument("--project-dir", type=Path, help="with --stack: folder with Pulumi.yaml (default: .)")


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


def run(args: argparse.Namespace, parser: argparse.ArgumentParser, now: datetime) -> int:
    if args.start is None or args.end is None:
        parser.error("--by-team needs --from and --to (UTC days, YYYY-MM-DD; --to exclusive)")
    if args.end <= args.start:
        parser.error(f"--to ({args.end}) must be after --from ({args.start}); --to is exclusive")
    start = datetime.combine(args.start, time(), UTC)
    end = datetime.combine(args.end, time(), UTC)
    if end > now:
        parser.error(
            f"--to ({args.end}) is in the future: a range ends at the latest today ({now:%Y-%m-%d}), exclusive"
        )
    if not (args.stack or args.region or args.no_spot_prices):
        parser.error(
            "--by-team prices spot GPU-hours at EC2's spot price history: name the stack (--stack NAME) or its "
            "region (--region REGION), or pass --no-spot-prices to price them at the on-demand list price"
        )
    if args.project_dir is not None and not args.stack:
        parser.error("--project-dir names the folder of --stack's Pulumi.yaml: give --stack too, or leave it out")
    region: str | None = args.region
    profile: str | None = None
    zones: tuple[str, ...] = ()
    if args.stack:
        args.project_dir = args.project_dir or Path.cwd()
        config = read_stack(args)
        if config is None:
            return INVALID_STACK
        region, profile, zones = config.region, config.profile, tuple(config.network.availability_zones)
    url, sign = args.prometheus, None
    if args.amp_workspace_url:
        url = args.amp_workspace_url
        signing_region = workspace_region(urllib.parse.urlparse(url).hostname or "") or region
        if signing_region is None:
            parser.error(
                "--amp-workspace-url: its host names no region (aps-workspaces.<region>.amazonaws.com): give the "
                "region to sign for with --region or --stack"
            )
        try:
            sign = _amp_signer(profile, signing_region)
        except PrometheusError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    try:
        bill = team_bill(http_query(url, sign), start, end, url)
    except PrometheusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if bill.covered_hours == 0:
        print(
            f"error: Prometheus at {url} has no GPU cost samples between {args.start} and {args.end}: "
            "the platform's cost rules (PrometheusRule gpu-cost) did not run then, or the range is older than "
            "Prometheus' retention (observability.retention)",
            file=sys.stderr,
        )
        return 1
    if region and bill.spot_types() and not args.no_spot_prices:
        try:
            bill = with_spot_prices(bill, read_spot_pricing(lambda: _ec2_client(profile, region), bill, region, zones))
        except SpotPriceError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    print(render_json(bill) if args.json else render_text(bill), end="")
    return 0


def _now() -> datetime:
    return datetime.now(UTC)


def _ec2_client(profile: str | None, region: str) -> Any:
    return session_for(profile, region).client("ec2")


def _amp_signer(profile: str | None, region: str) -> Signer:
    """SigV4 signatures for Amazon Managed Prometheus in `region`, with the stack's profile or the ambient
    credentials. Raises PrometheusError naming what to do when there are none."""
    try:
        credentials = session_for(profile, region).get_credentials()
    except BotoCoreError as error:
        credentials, reason = None, str(error)
    else:
        reason = "no AWS credentials found"
    if credentials is None:
        raise PrometheusError(
            f"cannot sign queries to Amazon Managed Prometheus in {region}: {reason}. Sign in with credentials that "
            f"may call {AMP_ACTION} (the stack's profile, AWS_PROFILE, or keys in the environment)"
        )
    return sigv4_signer(credentials, region)


def main(argv: list[str], prog: str = "python -m components.tools.cost") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--by-team", action="store_true", required=True, help="what each team's GPUs cost")
    add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the bill as JSON")
    args = parser.parse_args(argv)
    return run(args, parser, _now())
