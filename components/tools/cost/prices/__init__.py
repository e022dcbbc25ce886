"""The pinned price table: public AWS list prices (USD, no free tier, no discounts). Everything the estimate prices
comes from here (or, with `--live`, EC2 instance prices read now). The figures are data beside this package:

- `components/instances/instance_prices.json`: EC2 on-demand prices per region and instance type, generated (never
  edited by hand) by `python -m components.tools.cost.prices` from a dated, machine-readable source it names:
  Karpenter's generated price table, or the AWS Price List API with `--refresh` (on the ground floor, since the
  platform's Prometheus prices GPU-hours from it too: `components.instances.prices`);
- `prices.json`: everything else (EKS, NAT, EBS, FSx, CloudWatch Logs, KMS), copied from the pricing pages it names,
  with their date.

A price that is not here is not guessed: the estimate reports it as missing.
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

from ....instances import prices as instance_prices


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


#: The pinned figures: the hand-copied rates beside this package, and the generated instance prices.
DATA = "prices.json"
INSTANCE_DATA = instance_prices.DATA


def _decimals(values: Mapping[str, str]) -> Mapping[str, Decimal]:
    return MappingProxyType({name: Decimal(price) for name, price in values.items()})


def _read(name: str) -> dict[str, Any]:
    return dict(
        json.loads(resources.files((__package__ or "").rpartition(".")[0]).joinpath(name).read_text(encoding="utf-8"))
    )


_DOCUMENT = _read(DATA)
INSTANCES_DOCUMENT = instance_prices.DOCUMENT

#: The date of the hand-copied rates, and of the generated instance prices.
SNAPSHOT_DATE = date.fromisoformat(_DOCUMENT["date"])
INSTANCE_DATE = date.fromisoformat(INSTANCES_DOCUMENT["date"])
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


def instance_tables(document: Mapping[str, Any]) -> dict[str, Mapping[str, Decimal]]:
    """On-demand $/hour by region and instance type from an `instance_prices.json` document: its regions, and each
    region of `sameAs` at the figures of the region it names."""
    return instance_prices.on_demand_tables(document)


def _pinned() -> PriceTable:
    rates: dict[str, RegionRates] = {}
    for group in _DOCUMENT["regionGroups"].values():
        group_rates = _rates(group["rates"])
        for region in group["regions"]:
            rates[region] = group_rates
    return PriceTable(
        date=INSTANCE_DATE,
        source=(
            f"pinned table: EC2 instances from {INSTANCES_DOCUMENT['source']} of {INSTANCE_DATE.isoformat()}, "
            f"the rest from the AWS pricing pages of {SNAPSHOT_DATE.isoformat()}"
        ),
        rates=MappingProxyType(rates),
        instances=MappingProxyType(instance_tables(INSTANCES_DOCUMENT)),
    )


PINNED = _pinned()

#: End of standard support per Kubernetes minor version (EKS then bills extended support); the source is named in
#: `prices.json`. A version missing here is priced at the standard rate and reported.
STANDARD_SUPPORT_ENDS: Mapping[str, date] = MappingProxyType(
    {version: date.fromisoformat(day) for version, day in _DOCUMENT["standardSupportEnds"]["versions"].items()}
)
