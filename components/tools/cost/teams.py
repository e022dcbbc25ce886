"""`--by-team`: what each team's GPUs cost between two dates, read from the platform's Prometheus.

    python -m components.cost --by-team --from 2026-06-01 --to 2026-07-01 [--prometheus URL] [--json]

(`python -m components.tools.cost --by-team ...` is the same command.)

A team is a namespace. The figures come from the platform's GPU cost rules (`components.observability.cost`): the
GPU-hours a team's running pods held, per node pool, capacity type and instance type, the part of them DCGM saw busy,
and their price at the pinned on-demand table (spot GPU-hours at the on-demand list price: a ceiling). Dates are UTC
days; `--to` is exclusive, so a month is `--from 2026-06-01 --to 2026-07-01`. Prometheus keeps `observability.retention`
(15 days by default): the command says how many hours of the range it had samples for, and never fills the rest in.
Exit status: 0; 1 Prometheus could not be read or has no cost samples in the range; 2 wrong arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

from components.observability.cost import (
    EVALUATIONS_PER_HOUR,
    GPU_COST_RATE,
    GPUS_BUSY,
    GPUS_HELD,
    NODE_POOL,
    POOL_LABELS,
)

#: Where `kubectl -n monitoring port-forward svc/kube-prometheus-stack-prometheus 9090` puts the stack's Prometheus.
DEFAULT_PROMETHEUS = "http://localhost:9090"
TIMEOUT_SECONDS = 60
_GROUP = f"namespace, {', '.join(POOL_LABELS)}"


class PrometheusError(Exception):
    """Prometheus could not be reached or refused a query; the message says which and why."""


@dataclass(frozen=True)
class UsageLine:
    """A team's GPUs on one pool, capacity type and instance type over the range."""

    team: str
    pool: str
    capacity_type: str
    instance_type: str
    gpu_hours: Decimal
    busy_gpu_hours: Decimal
    #: None when the instance type has no price in the pinned table (never counted as $0).
    usd: Decimal | None


@dataclass(frozen=True)
class TeamBill:
    start: datetime
    end: datetime
    prometheus: str
    #: Hours of the range in which the cost rules ran (Prometheus' samples), out of `hours`.
    covered_hours: Decimal
    lines: tuple[UsageLine, ...]

    @property
    def hours(self) -> Decimal:
        return Decimal(int((self.end - self.start).total_seconds())) / 3600

    def team_totals(self) -> dict[str, tuple[Decimal, Decimal, Decimal]]:
        """Per team: GPU-hours, the USD of those priced, and the GPU-hours not priced."""
        totals: dict[str, tuple[Decimal, Decimal, Decimal]] = {}
        for line in self.lines:
            hours, usd, unpriced = totals.get(line.team, (Decimal(0), Decimal(0), Decimal(0)))
            if line.usd is None:
                totals[line.team] = (hours + line.gpu_hours, usd, unpriced + line.gpu_hours)
            else:
                totals[line.team] = (hours + line.gpu_hours, usd + line.usd, unpriced)
        return dict(sorted(totals.items()))


Query = Callable[[str, float], list[dict[str, Any]]]


def http_query(url: str) -> Query:
    """A Prometheus instant query over its HTTP API (`/api/v1/query`) at `url`."""

    def query(expr: str, at: float) -> list[dict[str, Any]]:
        address = f"{url.rstrip('/')}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
        try:
            with urllib.request.urlopen(address, timeout=TIMEOUT_SECONDS) as answer:  # noqa: S310 (http(s) only)
                body = json.loads(answer.read())
        except urllib.error.HTTPError as error:
            raise PrometheusError(f"Prometheus at {url} refused the query ({error.code}): {_reason(error)}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise PrometheusError(
                f"cannot reach Prometheus at {url}: {reason}. Port-forward the stack's Prometheus first: "
                "kubectl -n monitoring port-forward svc/kube-prometheus-stack-prometheus 9090"
            ) from None
        except ValueError:
            raise PrometheusError(f"{url} answered with something other than Prometheus' JSON") from None
        if body.get("status") != "success" or body.get("data", {}).get("resultType") != "vector":
            raise PrometheusError(f"Prometheus at {url} answered: {body.get('error', body)}")
        return list(body["data"]["result"])

    return query


def _reason(error: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(error.read()).get("error", error.reason))
    except ValueError:
        return str(error.reason)


#: Prometheus sums floats: figures are kept to this precision (a ten-thousandth of an hour or of a dollar).
PRECISION = Decimal("0.0001")


def _by_labels(rows: list[dict[str, Any]]) -> dict[tuple[str, ...], Decimal]:
    return {
        (row["metric"].get("namespace", ""), *(row["metric"].get(label, "") for label in POOL_LABELS)): (
            Decimal(row["value"][1]) / EVALUATIONS_PER_HOUR
        ).quantize(PRECISION)
        for row in rows
    }


def team_bill(query: Query, start: datetime, end: datetime, prometheus: str) -> TeamBill:
    """The GPU-hours and dollars of every team between `start` and `end` (exclusive), read with `query`."""
    window = f"[{int((end - start).total_seconds())}s]"
    at = end.timestamp()

    def summed(series: str) -> dict[tuple[str, ...], Decimal]:
        return _by_labels(query(f"sum by ({_GROUP}) (sum_over_time({series}{window}))", at))

    evaluations = query(f"max(count_over_time({NODE_POOL}{window}))", at)
    covered = (
        (Decimal(evaluations[0]["value"][1]) / EVALUATIONS_PER_HOUR).quantize(PRECISION) if evaluations else Decimal(0)
    )
    held, busy, cost = summed(GPUS_HELD), summed(GPUS_BUSY), summed(GPU_COST_RATE)
    lines = tuple(
        UsageLine(
            team=key[0] or "(no namespace)",
            pool=key[1] or "(no pool)",
            capacity_type=key[2] or "(unknown)",
            instance_type=key[3] or "(unknown)",
            gpu_hours=hours,
            busy_gpu_hours=busy.get(key, Decimal(0)),
            usd=cost.get(key),
        )
        for key, hours in sorted(held.items())
        if hours > 0
    )
    return TeamBill(start=start, end=end, prometheus=prometheus, covered_hours=covered, lines=lines)


# ----------------------------------------------------------------------------------------------- command line


def _day(flag: str) -> Callable[[str], date]:
    def parse(text: str) -> date:
        try:
            return date.fromisoformat(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag}: expected a date as YYYY-MM-DD, got {text!r}") from None

    return parse


def _url(text: str) -> str:
    parsed = urllib.parse.urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise argparse.ArgumentTypeError(f"--prometheus: expected an http:// or https:// URL, got {text!r}")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="start", type=_day("--from"), help="first UTC day of the range (YYYY-MM-DD)")
    parser.add_argument("--to", dest="end", type=_day("--to"), help="UTC day after the range (YYYY-MM-DD, exclusive)")
    parser.add_argument(
        "--prometheus",
        type=_url,
        default=DEFAULT_PROMETHEUS,
        help=f"the stack's Prometheus (default: {DEFAULT_PROMETHEUS})",
    )


def _hours(value: Decimal) -> str:
    return f"{value:,.1f}"


def _usd(value: Decimal | None) -> str:
    return "not priced" if value is None else f"${value:,.2f}"


def render_text(bill: TeamBill) -> str:
    head = (
        f"GPU cost per team, {bill.start:%Y-%m-%d} to {bill.end:%Y-%m-%d} (UTC, end exclusive), from {bill.prometheus}"
    )
    rows = [("team", "pool", "capacity", "instance type", "GPU-hours", "busy GPU-hours", "USD")]
    rows += [
        (
            line.team,
            line.pool,
            line.capacity_type,
            line.instance_type,
            _hours(line.gpu_hours),
            _hours(line.busy_gpu_hours),
            _usd(line.usd),
        )
        for line in bill.lines
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    table = [
        "  ".join(
            cell.rjust(w) if i >= 4 else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    totals = [
        f"  {team}: {_hours(hours)} GPU-hours, {_usd(usd)}"
        + (f" ({_hours(unpriced)} GPU-hours not priced)" if unpriced else "")
        for team, (hours, usd, unpriced) in bill.team_totals().items()
    ]
    notes = [
        (
            "Prices: the pinned on-demand table per GPU (instance price / its GPUs); spot GPU-hours are priced at the "
            "on-demand list price, which spot never bills above."
        ),
        (
            f"Prometheus had cost samples for {_hours(bill.covered_hours)} of the range's {_hours(bill.hours)} hours; "
            "hours without samples are not counted."
        ),
    ]
    if any(line.usd is None for line in bill.lines):
        notes.append("not priced: the pinned table has no price for that instance type in the stack's region.")
    body = table if bill.lines else ["no GPU held by any team in the range"]
    return "\n".join([head, "", *body, "", "per team:", *totals, "", *notes]).rstrip() + "\n"


def render_json(bill: TeamBill) -> str:
    def plain(value: Any) -> Any:
        return str(value) if isinstance(value, Decimal) else value

    document = {
        "from": bill.start.isoformat(),
        "to": bill.end.isoformat(),
        "prometheus": bill.prometheus,
        "hours": str(bill.hours),
        "coveredHours": str(bill.covered_hours),
        "teams": {
            team: {"gpuHours": str(hours), "usd": str(usd), "unpricedGpuHours": str(unpriced)}
            for team, (hours, usd, unpriced) in bill.team_totals().items()
        },
        "lines": [{key: plain(value) for key, value in asdict(line).items()} for line in bill.lines],
    }
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
    try:
        bill = team_bill(http_query(args.prometheus), start, end, args.prometheus)
    except PrometheusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if bill.covered_hours == 0:
        print(
            f"error: Prometheus at {args.prometheus} has no GPU cost samples between {args.start} and {args.end}: "
            "the platform's cost rules (PrometheusRule gpu-cost) did not run then, or the range is older than "
            "Prometheus' retention (observability.retention)",
            file=sys.stderr,
        )
        return 1
    print(render_json(bill) if args.json else render_text(bill), end="")
    return 0


def _now() -> datetime:
    return datetime.now(UTC)


def main(argv: list[str], prog: str = "python -m components.tools.cost") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--by-team", action="store_true", required=True, help="what each team's GPUs cost")
    add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the bill as JSON")
    args = parser.parse_args(argv)
    return run(args, parser, _now())
