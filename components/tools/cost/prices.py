"""The pinned price table: public AWS list prices (USD, no free tier, no discounts) for the regions the stacks and
presets use, as the pricing pages in `SOURCES` published them on `SNAPSHOT_DATE`. Everything the estimate prices
comes from here (or, with `--live`, EC2 instance prices from the Price List API). The figures are data:
`prices.json` beside this module, with their sources and date.

A price that is not here is not guessed: the estimate reports it as missing. To add a region or an instance type,
copy the figure from the page named in `SOURCES` and move the date only if every figure was re-read.

Known since the snapshot: AWS lowered the on-demand prices of P4d, P4de and P5 instances in June 2025, so the
figures below overstate what those instances cost today (`--live` reads the current ones); p5.4xlarge was released
after the snapshot and is missing on purpose.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from importlib import resources
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class RegionRates:
    """List prices of one region other than instances."""

    eks_standard_hour: Decimal
    eks_extended_hour: Decimal
    nat_gateway_hour: Decimal
    public_ipv4_hour: Decimal
    gp3_gib_month: Decimal
    #: FSx for Lustre storage per GiB-month, by deployment type ("SCRATCH_2") or deployment type and per-unit
    #: throughput ("PERSISTENT_2/250").
    lustre_gib_month: Mapping[str, Decimal]
    log_ingestion_gb: Decimal
    kms_key_month: Decimal


@dataclass(frozen=True)
class PriceTable:
    """Prices by region, where they come from, and spot prices where known (the pinned table knows none: spot
    prices move by the hour and by AZ, and a spot instance never bills above the on-demand price)."""

    date: date
    source: str
    rates: Mapping[str, RegionRates]
    #: On-demand $/hour by region and instance type.
    instances: Mapping[str, Mapping[str, Decimal]]
    spot: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)

    def instance_hour(self, region: str, instance_type: str) -> Decimal | None:
        return self.instances.get(region, {}).get(instance_type)

    def spot_hour(self, region: str, instance_type: str) -> Decimal | None:
        return self.spot.get(region, {}).get(instance_type)


#: The pinned figures, beside this module.
DATA = "prices.json"


def _decimals(values: Mapping[str, str]) -> Mapping[str, Decimal]:
    return MappingProxyType({name: Decimal(price) for name, price in values.items()})


_DOCUMENT = json.loads(resources.files("components.tools.cost").joinpath(DATA).read_text(encoding="utf-8"))

SNAPSHOT_DATE = date.fromisoformat(_DOCUMENT["date"])
HOURS_PER_MONTH = Decimal(_DOCUMENT["hoursPerMonth"])
SOURCES: Mapping[str, str] = MappingProxyType(_DOCUMENT["sources"])


def _rates(rates: Mapping[str, Any]) -> RegionRates:
    return RegionRates(
        eks_standard_hour=Decimal(rates["eksStandardHour"]),
        eks_extended_hour=Decimal(rates["eksExtendedHour"]),
        nat_gateway_hour=Decimal(rates["natGatewayHour"]),
        public_ipv4_hour=Decimal(rates["publicIpv4Hour"]),
        gp3_gib_month=Decimal(rates["gp3GibMonth"]),
        lustre_gib_month=_decimals(rates["lustreGibMonth"]),
        log_ingestion_gb=Decimal(rates["logIngestionGb"]),
        kms_key_month=Decimal(rates["kmsKeyMonth"]),
    )


def _pinned() -> PriceTable:
    rates: dict[str, RegionRates] = {}
    instances: dict[str, Mapping[str, Decimal]] = {}
    for group in _DOCUMENT["regionGroups"].values():
        group_rates, group_instances = _rates(group["rates"]), _decimals(group["instances"])
        for region in group["regions"]:
            rates[region], instances[region] = group_rates, group_instances
    return PriceTable(
        date=SNAPSHOT_DATE,
        source=f"pinned table of {SNAPSHOT_DATE.isoformat()} (AWS public pricing pages)",
        rates=MappingProxyType(rates),
        instances=MappingProxyType(instances),
    )


PINNED = _pinned()

#: End of standard support per Kubernetes minor version (EKS then bills extended support); the source is named in
#: `prices.json`. A version missing here is priced at the standard rate and reported.
STANDARD_SUPPORT_ENDS: Mapping[str, date] = MappingProxyType(
    {version: date.fromisoformat(day) for version, day in _DOCUMENT["standardSupportEnds"]["versions"].items()}
)
