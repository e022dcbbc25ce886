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
import sys
import urllib.parse
from collections.abc import Callable
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError

from ...regions import region_argument
from ..commands import INVALID_STACK, read_stack
from ..preflight.clients import session_for
from .amp import IAM_ACTION as AMP_ACTION
from .amp import Signer, sigv4_signer, workspace_region
from .team_render import render_json, render_text
from .teams import (
    DEFAULT_PROMETHEUS,
    PrometheusError,
    SpotPriceError,
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


def run(args: argparse.Namespace, parser: argparse.ArgumentParser, now: datetime) -> int:
    start, end = _range(args, parser, now)
    region: str | None = args.region
    profile: str | None = None
    zones: tuple[str, ...] = ()
    if args.stack:
        args.project_dir = args.project_dir or Path.cwd()
        config = read_stack(args)
        if config is None:
            return INVALID_STACK
        region, profile, zones = config.region, config.profile, tuple(config.network.availability_zones)
    try:
        url, sign = _source(args, parser, region, profile)
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


def _range(args: argparse.Namespace, parser: argparse.ArgumentParser, now: datetime) -> tuple[datetime, datetime]:
    """The range as UTC datetimes, start and end (exclusive); the parser's error for arguments that make no bill."""
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
    return start, end


def _source(
    args: argparse.Namespace, parser: argparse.ArgumentParser, region: str | None, profile: str | None
) -> tuple[str, Signer | None]:
    """The Prometheus to query and how to sign its queries: `--prometheus` unsigned, or `--amp-workspace-url` signed
    for its region. Raises PrometheusError when Amazon Managed Prometheus' queries cannot be signed."""
    if not args.amp_workspace_url:
        return args.prometheus, None
    url = args.amp_workspace_url
    signing_region = workspace_region(urllib.parse.urlparse(url).hostname or "") or region
    if signing_region is None:
        parser.error(
            "--amp-workspace-url: its host names no region (aps-workspaces.<region>.amazonaws.com): give the "
            "region to sign for with --region or --stack"
        )
    return url, _amp_signer(profile, signing_region)


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
