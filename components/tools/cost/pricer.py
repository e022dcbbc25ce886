"""Prices looked up for one region, with what was missing, and the cost line a price makes: what the idle baseline
(`baseline`), the pool ceilings and the platform's pods (`calculator`) are priced with."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from .prices import HOURS_PER_MONTH, PriceTable, RegionRates


@dataclass(frozen=True)
class CostLine:
    """One baseline item per month; `low`/`high` are None when a price is missing."""

    item: str
    low: Decimal | None
    high: Decimal | None
    basis: str


def quantity(value: Decimal) -> str:
    """A decimal without trailing zeros (10, 2.5), as a basis text shows it."""
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def hours(rate: Decimal | None) -> str:
    """The basis text of a month of an hourly rate."""
    return f"${rate}/h × {HOURS_PER_MONTH} h"


class Pricer:
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
        """A rate of the region's RegionRates by field name; None when the region has none."""
        return None if self.rates is None else getattr(self.rates, name)

    def lustre(self, key: str) -> Decimal | None:
        """FSx for Lustre's GiB-month rate of a deployment type (and throughput); a missing one is noted."""
        rate = None if self.rates is None else self.rates.lustre_gib_month.get(key)
        if rate is None and self.rates is not None:
            self.missing.append(f"{self.region} FSx for Lustre {key}")
        return rate

    def instance(self, instance_type: str) -> Decimal | None:
        """An instance type's on-demand hourly price; a missing one is noted."""
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
