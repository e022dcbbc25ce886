"""`--live`: EC2 instance prices read now instead of from the pinned table.

On-demand prices come from the AWS Price List API (`pricing:GetProducts`, answered from us-east-1 for every region);
spot prices from EC2's spot price history of the stack's AZs (the Price List API has none). Everything else (EKS,
NAT, EBS, FSx, CloudWatch, KMS) stays the pinned table's, and the source says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from ...platform.config import PlatformConfig
from ..preflight.selection import accelerated_shapes, select
from .prices import PriceTable

#: The one product per instance type and region that the on-demand Linux price belongs to.
PRODUCT_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}
_SPOT_TYPES_PER_CALL = 100


def product_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    fields = {"instanceType": instance_type, "regionCode": region, **PRODUCT_FILTERS}
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in fields.items()]


def on_demand_hourly(price_list: Iterable[str]) -> Decimal | None:
    """The hourly USD price in a GetProducts answer (a list of JSON documents), preferring the plain RunInstances
    product; None when there is no non-zero hourly price."""
    products = [json.loads(item) for item in price_list]
    products.sort(key=lambda p: p.get("product", {}).get("attributes", {}).get("operation") != "RunInstances")
    for product in products:
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                usd = Decimal(dimension.get("pricePerUnit", {}).get("USD", "0"))
                if dimension.get("unit") == "Hrs" and usd > 0:
                    return usd
    return None


def read_on_demand(pricing: Any, region: str, instance_types: Sequence[str]) -> dict[str, Decimal]:
    prices = {}
    for instance_type in instance_types:
        answer = pricing.get_products(
            ServiceCode="AmazonEC2",
            Filters=product_filters(instance_type, region),
            FormatVersion="aws_v1",
            MaxResults=10,
        )
        hourly = on_demand_hourly(answer["PriceList"])
        if hourly is not None:
            prices[instance_type] = hourly
    return prices


def read_spot(ec2: Any, zones: Sequence[str], instance_types: Sequence[str], now: datetime) -> dict[str, Decimal]:
    """The current spot price of each type: the highest over the stack's AZs (a ceiling, like the rest)."""
    prices: dict[str, Decimal] = {}
    paginator = ec2.get_paginator("describe_spot_price_history")
    for start in range(0, len(instance_types), _SPOT_TYPES_PER_CALL):
        pages = paginator.paginate(
            InstanceTypes=list(instance_types[start : start + _SPOT_TYPES_PER_CALL]),
            ProductDescriptions=["Linux/UNIX"],
            StartTime=now,
            Filters=[{"Name": "availability-zone", "Values": list(zones)}],
        )
        for page in pages:
            for entry in page["SpotPriceHistory"]:
                price = Decimal(entry["SpotPrice"])
                prices[entry["InstanceType"]] = max(price, prices.get(entry["InstanceType"], price))
    return prices


def priced_types(config: PlatformConfig) -> tuple[list[str], list[str]]:
    """The instance types an estimate of this stack prices: (all of them, those of pools that allow spot)."""
    every = list(config.cluster.system_node_group.instance_types[:1])
    spot: list[str] = []
    shapes = accelerated_shapes()
    for pool in config.karpenter.node_pools.values():
        limits = pool.accelerator_limits
        if not limits:
            continue
        selection = select(pool)
        fitting = [s.instance_type for s in selection.allowed(shapes) if s.instances_within(limits) > 0]
        every += fitting
        if "spot" in selection.capacity_types:
            spot += fitting
    return sorted(set(every)), sorted(set(spot))


def live_table(base: PriceTable, config: PlatformConfig, *, pricing: Any, ec2: Any, now: datetime) -> PriceTable:
    """`base` with this stack's EC2 instance prices (on-demand and spot) read now."""
    every, spot_types = priced_types(config)
    region = config.region
    on_demand = read_on_demand(pricing, region, every)
    spot = read_spot(ec2, config.network.availability_zones, spot_types, now) if spot_types else {}
    # Types read now replace the pinned figures (one not answered is missing, not pinned); the others keep theirs.
    kept = {t: p for t, p in base.instances.get(region, {}).items() if t not in every}
    instances: Mapping[str, Mapping[str, Decimal]] = {**base.instances, region: {**kept, **on_demand}}
    return replace(
        base,
        date=now.date(),
        source=f"Price List API and spot price history of {now.date().isoformat()} for the accelerated and "
        f"system node types, {base.source} for the rest",
        instances=instances,
        spot={**base.spot, region: spot},
    )
