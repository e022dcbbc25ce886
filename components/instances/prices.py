"""EC2 on-demand list prices as data, and what one GPU-hour costs on each NVIDIA instance type.

`instance_prices.json` beside this module is the pinned table (USD per hour, Linux, shared tenancy, no discounts; it
names its source and date). It is generated, never edited by hand: `python -m components.tools.cost.prices`. The
cost estimate reads it, and the platform's Prometheus gets the per-GPU price of every NVIDIA instance type from it
(`gpu_hour_prices`), so both price a GPU-hour alike. The table has no spot prices: they move by the hour and by AZ.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from importlib import resources
from types import MappingProxyType
from typing import Any

from .accelerators import ACCELERATED_FAMILIES, AcceleratedFamily, nvidia_gpu_counts

#: The pinned on-demand table, beside this module.
DATA = "instance_prices.json"


def _read() -> Mapping[str, Any]:
    return MappingProxyType(json.loads(resources.files(__package__ or "").joinpath(DATA).read_text("utf-8")))


#: The pinned table as written: `date`, `source`, `regions` (region -> instance type -> USD per hour, as strings),
#: `sameAs` (region -> the region whose figures it lists).
DOCUMENT = _read()


def on_demand_tables(document: Mapping[str, Any] = DOCUMENT) -> dict[str, Mapping[str, Decimal]]:
    """On-demand $/hour by region and instance type: the document's regions, and each region of `sameAs` at the
    figures of the region it names."""
    tables: dict[str, Mapping[str, Decimal]] = {
        region: MappingProxyType({name: Decimal(price) for name, price in prices.items()})
        for region, prices in document["regions"].items()
    }
    for region, same in document.get("sameAs", {}).items():
        tables[region] = tables[same["region"]]
    return tables


def gpu_hour_prices(
    region: str, families: Mapping[str, AcceleratedFamily] = ACCELERATED_FAMILIES
) -> Mapping[str, Decimal]:
    """USD per GPU-hour on demand in `region`, by NVIDIA instance type: the instance's hourly price ÷ its GPUs.
    Types the table has no price for are left out (never priced at 0); a region the table lacks gives none."""
    instances = on_demand_tables().get(region, {})
    return MappingProxyType(
        {
            instance_type: instances[instance_type] / gpus
            for instance_type, gpus in nvidia_gpu_counts(families).items()
            if instance_type in instances
        }
    )
