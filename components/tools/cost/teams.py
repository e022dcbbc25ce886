"""A team's GPU bill as data: read from the platform's Prometheus, then spot lines priced at EC2's spot price history.

The command that prints it is `by_team.py`.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple

from botocore.exceptions import BotoCoreError, ClientError

from ...observability.cost import (
    EVALUATIONS_PER_HOUR,
    GPU_COST_RATE,
    GPUS_BUSY,
    GPUS_HELD,
    NODE_POOL,
    POOL_COST_RATE,
    POOL_GPUS,
    POOL_LABELS,
)
from .amp import IAM_ACTION as AMP_ACTION
from .amp import Signer
from .spot_history import IAM_ACTION, SpotPrice, spot_prices

#: Where `kubectl -n monitoring port-forward svc/kube-prometheus-stack-prometheus 9090` puts the stack's Prometheus.
DEFAULT_PROMETHEUS = "http://localhost:9090"
TIMEOUT_SECONDS = 60
_GROUP = f"namespace, {', '.join(POOL_LABELS)}"

#: What a line says where its series had no capacity-type or instance-type label.
UNKNOWN = "(unknown)"
#: The team of the lines no team held: the pools' GPUs no running pod held.
UNALLOCATED = "(unallocated)"
#: The team of the lines of what the pools ran (their nodes' GPUs × the hours they were nodes).
POOLS = "(pools ran)"


class PrometheusError(Exception):
    """Prometheus could not be reached or refused a query; the message says which and why."""


class SpotPriceError(Exception):
    """EC2's spot price history could not be read; the message says why and what to do."""


#: How a line's `usd` was priced.
ON_DEMAND = "on-demand"
SPOT = "spot"
#: A spot line at the on-demand list price, which spot never bills above.
CEILING = "on-demand ceiling"
NOT_PRICED = "not priced"
#: Karpenter's capacity type of spot nodes (`karpenter.sh/capacity-type`).
SPOT_CAPACITY = "spot"


@dataclass(frozen=True)
class UsageLine:
    """A team's GPUs on one pool, capacity type and instance type over the range."""

    team: str
    pool: str
    capacity_type: str
    instance_type: str
    gpu_hours: Decimal
    busy_gpu_hours: Decimal
    #: What the line costs; None when it has no price (never counted as $0).
    usd: Decimal | None
    #: At the pinned on-demand list price (the cost rules' figure; for spot, a ceiling); None when the pinned table
    #: has no price for the instance type.
    on_demand_usd: Decimal | None
    #: How `usd` was priced: ON_DEMAND, SPOT, CEILING or NOT_PRICED.
    price: str


class TeamTotal(NamedTuple):
    gpu_hours: Decimal
    #: The USD of the priced lines.
    usd: Decimal
    unpriced_gpu_hours: Decimal
    #: The same lines at the on-demand list price (those the pinned table prices).
    on_demand_usd: Decimal


@dataclass(frozen=True)
class SpotPricing:
    """Where spot prices were read and what they came to."""

    region: str
    #: The AZs asked for (the stack's); empty: every AZ of the region with a price.
    zones: tuple[str, ...]
    #: The average over the range by instance type; a spot type missing here had no history in the range.
    prices: Mapping[str, SpotPrice]


@dataclass(frozen=True)
class TeamBill:
    start: datetime
    end: datetime
    prometheus: str
    #: Hours of the range in which the cost rules ran (Prometheus' samples), out of `hours`.
    covered_hours: Decimal
    lines: tuple[UsageLine, ...]
    #: None: spot lines stay at the on-demand ceiling (`--no-spot-prices`, or no spot line to price).
    spot: SpotPricing | None = None
    #: What the pools ran per pool, capacity type and instance type (team POOLS; busy: what the teams' was); empty
    #: where Prometheus has no such series (cost rules from before they recorded it).
    pools: tuple[UsageLine, ...] = ()

    @property
    def hours(self) -> Decimal:
        return Decimal(int((self.end - self.start).total_seconds())) / 3600

    def spot_types(self) -> list[str]:
        """The instance types of the spot lines, whose price history is asked for; a line whose series lost its type
        label (UNKNOWN) names no type EC2 knows, and stays at its ceiling."""
        return sorted({line.instance_type for line in self.lines if line.capacity_type == SPOT_CAPACITY} - {UNKNOWN})

    def team_totals(self) -> dict[str, TeamTotal]:
        """Per team: GPU-hours, the USD of those priced, the GPU-hours not priced, and the on-demand list figure."""
        return _totals(self.lines)

    @property
    def unallocated(self) -> tuple[UsageLine, ...]:
        """Per pool line: what it ran less what the teams' running pods held on it, in GPU-hours and dollars, so that
        the teams and this add up to the pools exactly. A pool whose price is missing, or one of whose teams' lines
        is, leaves the dollars unpriced (None) rather than guessed."""

        def less(total: Decimal | None, parts: list[Decimal | None]) -> Decimal | None:
            return None if total is None or None in parts else total - sum(part or 0 for part in parts)

        lines = []
        for pool in self.pools:
            held = [line for line in self.lines if _pool_key(line) == _pool_key(pool)]
            usd = less(pool.usd, [line.usd for line in held])
            lines.append(
                replace(
                    pool,
                    team=UNALLOCATED,
                    gpu_hours=pool.gpu_hours - sum(line.gpu_hours for line in held),
                    busy_gpu_hours=Decimal(0),
                    usd=usd,
                    on_demand_usd=less(pool.on_demand_usd, [line.on_demand_usd for line in held]),
                    price=NOT_PRICED if usd is None else pool.price,
                )
            )
        return tuple(lines)

    def pool_totals(self) -> dict[str, TeamTotal]:
        """The unallocated lines' total (UNALLOCATED) and the pools' (POOLS), as team_totals adds up a team's."""
        return {**_totals(self.unallocated), **_totals(self.pools)}

    def unpooled(self) -> list[UsageLine]:
        """The teams' lines on a pool, capacity type and instance type Prometheus recorded no pool GPUs for (an
        instance type whose GPUs the platform does not know, or rules from before they counted pools): their
        unallocated GPUs are not known."""
        recorded = {_pool_key(pool) for pool in self.pools}
        return [line for line in self.lines if _pool_key(line) not in recorded]


def _pool_key(line: UsageLine) -> tuple[str, str, str]:
    return line.pool, line.capacity_type, line.instance_type


def _totals(lines: tuple[UsageLine, ...]) -> dict[str, TeamTotal]:
    totals: dict[str, TeamTotal] = {}
    for line in lines:
        hours, usd, unpriced, on_demand = totals.get(line.team, TeamTotal(*(Decimal(0),) * 4))
        totals[line.team] = TeamTotal(
            gpu_hours=hours + line.gpu_hours,
            usd=usd + (line.usd or 0),
            unpriced_gpu_hours=unpriced + (line.gpu_hours if line.usd is None else 0),
            on_demand_usd=on_demand + (line.on_demand_usd or 0),
        )
    return dict(sorted(totals.items()))


Query = Callable[[str, float], list[dict[str, Any]]]


def http_query(url: str, sign: Signer | None = None) -> Query:
    """A Prometheus instant query over its HTTP API (`/api/v1/query`) at `url`; each request signed with `sign`
    (Amazon Managed Prometheus, `amp.sigv4_signer`) when given."""

    def query(expr: str, at: float) -> list[dict[str, Any]]:
        # Spaces as %20, never '+': a SigV4 signature covers the query string exactly as the server re-encodes it.
        parameters = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"}, quote_via=urllib.parse.quote)
        address = f"{url.rstrip('/')}/api/v1/query?{parameters}"
        headers = dict(sign(address)) if sign else {}
        try:
            request = urllib.request.Request(address, headers=headers)  # noqa: S310 (http(s) only)
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:  # noqa: S310 (http(s) only)
                body = json.loads(answer.read())
        except urllib.error.HTTPError as error:
            denied = f" (the signing identity needs {AMP_ACTION})" if sign and error.code == 403 else ""
            raise PrometheusError(
                f"Prometheus at {url} refused the query ({error.code}): {_reason(error)}{denied}"
            ) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            how = (
                "Check the workspace URL and the network path to it"
                if sign
                else "Port-forward the stack's Prometheus first: "
                "kubectl -n monitoring port-forward svc/kube-prometheus-stack-prometheus 9090"
            )
            raise PrometheusError(f"cannot reach Prometheus at {url}: {reason}. {how}") from None
        except ValueError:
            raise PrometheusError(f"{url} answered with something other than Prometheus' JSON") from None
        if body.get("status") != "success" or body.get("data", {}).get("resultType") != "vector":
            raise PrometheusError(f"Prometheus at {url} answered: {body.get('error', body)}")
        return list(body["data"]["result"])

    return query


def _reason(error: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(error.read())
        # Prometheus says why in `error`; AWS's front of Amazon Managed Prometheus in `message`.
        return str(body.get("error") or body.get("message") or error.reason)
    except (ValueError, AttributeError):  # not JSON, or not an object
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


def _line(key: tuple[str, ...], hours: Decimal, busy: Decimal, usd: Decimal | None, team: str = "") -> UsageLine:
    return UsageLine(
        team=team or key[0] or "(no namespace)",
        pool=key[1] or "(no pool)",
        capacity_type=key[2] or UNKNOWN,
        instance_type=key[3] or UNKNOWN,
        gpu_hours=hours,
        busy_gpu_hours=busy,
        usd=usd,
        on_demand_usd=usd,
        price=NOT_PRICED if usd is None else CEILING if key[2] == SPOT_CAPACITY else ON_DEMAND,
    )


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
        _line(key, hours, busy.get(key, Decimal(0)), cost.get(key)) for key, hours in sorted(held.items()) if hours > 0
    )
    ran, ran_cost = summed(POOL_GPUS), summed(POOL_COST_RATE)
    pools = tuple(_line(key, hours, Decimal(0), ran_cost.get(key), team=POOLS) for key, hours in sorted(ran.items()))
    return TeamBill(start=start, end=end, prometheus=prometheus, covered_hours=covered, lines=lines, pools=pools)


def with_spot_prices(bill: TeamBill, spot: SpotPricing) -> TeamBill:
    """`bill` with each spot line priced at its type's average spot price per GPU-hour, where `spot` has one; the
    others stay at the on-demand ceiling (or not priced)."""

    def priced(line: UsageLine) -> UsageLine:
        found = spot.prices.get(line.instance_type)
        if line.capacity_type != SPOT_CAPACITY or found is None or found.usd_per_gpu_hour is None:
            return line
        usd = (line.gpu_hours * found.usd_per_gpu_hour).quantize(PRECISION)
        return replace(line, usd=usd, price=SPOT)

    return replace(
        bill,
        lines=tuple(priced(line) for line in bill.lines),
        pools=tuple(priced(pool) for pool in bill.pools),
        spot=spot,
    )


def read_spot_pricing(ec2: Callable[[], Any], bill: TeamBill, region: str, zones: tuple[str, ...]) -> SpotPricing:
    """The spot prices of the bill's spot instance types over its range, read with the client `ec2()` makes (one in
    `region`). Raises SpotPriceError naming what to do when AWS refuses."""
    what = f"EC2's spot price history in {region}"
    fallback = "or pass --no-spot-prices to price spot GPU-hours at the on-demand list price (a ceiling)"
    try:
        prices = spot_prices(ec2(), bill.spot_types(), bill.start, bill.end, zones)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code in ("UnauthorizedOperation", "AccessDenied", "AccessDeniedException"):
            raise SpotPriceError(
                f"cannot read {what}: the credentials may not call {IAM_ACTION} ({code}). Grant it to the role or "
                f"user you run as, {fallback}"
            ) from None
        raise SpotPriceError(f"cannot read {what}: {error}. Check the credentials and the region, {fallback}") from None
    except BotoCoreError as error:
        raise SpotPriceError(
            f"cannot read {what}: {error}. Sign in with credentials that may call {IAM_ACTION} (the stack's profile, "
            f"AWS_PROFILE, or keys in the environment), {fallback}"
        ) from None
    return SpotPricing(region=region, zones=zones, prices=prices)
