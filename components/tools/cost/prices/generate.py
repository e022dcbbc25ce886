"""Write `instance_prices.json`, the pinned EC2 on-demand prices, from a dated machine-readable source:

- Karpenter's generated price table (`from_karpenter`): what ships. Karpenter generates it for us-east-1 only, so
  the regions whose list prices are us-east-1's (`SAME_AS`) carry its figures, and the file says so;
- the AWS Price List API (`from_price_list`, `--refresh`): every instance type of every region asked for, read now.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import date
from decimal import Decimal
from typing import Any

from ..live import PRODUCT_FILTERS, on_demand_hourly
from .karpenter import KarpenterTable

#: Where the shipped table comes from.
KARPENTER_REPOSITORY = "aws/karpenter-provider-aws"
KARPENTER_PATH = "pkg/providers/pricing/zz_generated.pricing_aws.go"

#: Regions that list the same on-demand Linux prices as us-east-1 (AWS's cheapest US tier; the previous table,
#: copied by hand from aws.amazon.com/ec2/pricing/on-demand/ for both, held the same figure in both for every one
#: of its 48 instance types). `--refresh` reads each of them instead.
SAME_AS: Mapping[str, str] = {"us-west-2": "us-east-1"}

_ABOUT = (
    "EC2 on-demand prices (USD per hour, Linux, shared tenancy, no discounts) by region and instance type, generated "
    "by `python -m components.tools.cost.prices`; do not edit by hand. A type missing here is reported as missing by "
    "the estimate, never priced at $0."
)


def _strings(prices: Mapping[str, Decimal]) -> dict[str, str]:
    return {name: format(price, "f") for name, price in sorted(prices.items())}


def from_karpenter(table: KarpenterTable, ref: str) -> dict[str, Any]:
    """The data file for Karpenter's table at `ref` (a tag of its repository)."""
    same_as = {
        region: {"region": source, "why": "lists the same on-demand Linux prices as the region named"}
        for region, source in SAME_AS.items()
        if source in table.regions and region not in table.regions
    }
    return {
        "about": _ABOUT,
        "date": table.generated_at.date().isoformat(),
        "source": f"Karpenter's generated price table ({KARPENTER_REPOSITORY} {ref})",
        "sourceDetail": {
            "repository": KARPENTER_REPOSITORY,
            "ref": ref,
            "path": KARPENTER_PATH,
            "generatedAt": table.generated_at.isoformat().replace("+00:00", "Z"),
        },
        "regions": {region: _strings(prices) for region, prices in sorted(table.regions.items())},
        "sameAs": same_as,
    }


def read_region(pricing: Any, region: str) -> dict[str, Decimal]:
    """Every instance type's on-demand hourly price in `region`, from pricing:GetProducts (all pages)."""
    filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}] + [
        {"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in PRODUCT_FILTERS.items()
    ]
    by_type: dict[str, list[str]] = {}
    for page in pricing.get_paginator("get_products").paginate(
        ServiceCode="AmazonEC2", Filters=filters, FormatVersion="aws_v1"
    ):
        for item in page["PriceList"]:
            attributes = json.loads(item).get("product", {}).get("attributes", {})
            if instance_type := attributes.get("instanceType"):
                by_type.setdefault(instance_type, []).append(item)
    prices = {}
    for instance_type, items in by_type.items():
        hourly = on_demand_hourly(items)
        if hourly is not None:
            prices[instance_type] = hourly
    return prices


def from_price_list(pricing: Any, regions: Iterable[str], on: date) -> dict[str, Any]:
    """The data file read now from the Price List API, for `regions`."""
    read = {region: read_region(pricing, region) for region in sorted(set(regions))}
    empty = [region for region, prices in read.items() if not prices]
    if empty:
        raise ValueError(f"the Price List API has no EC2 on-demand prices for {', '.join(empty)}")
    return {
        "about": _ABOUT,
        "date": on.isoformat(),
        "source": "the AWS Price List API",
        "sourceDetail": {"call": "pricing:GetProducts", "serviceCode": "AmazonEC2", "filters": dict(PRODUCT_FILTERS)},
        "regions": {region: _strings(prices) for region, prices in read.items()},
        "sameAs": {},
    }


def dump(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"
