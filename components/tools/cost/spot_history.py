"""What spot capacity cost between two instants: EC2's spot price history, averaged over time and zones.

A spot price holds from the time EC2 records it until the next change in the same zone. The history EC2 answers for
`[StartTime, EndTime]` also holds the change before `StartTime`, the price in effect when the range opens; it
reaches back 90 days (docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSpotPriceHistory.html). The
average price of a type is the integral of its price over every zone's part of `[start, end)` divided by the time
those parts last: with a price for the whole range in every zone, the mean of the zones' time-weighted averages.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from ...instances.accelerators import ACCELERATED_FAMILIES

#: The product description of Linux instances in a VPC (the only kind an EKS node is).
PRODUCT_DESCRIPTION = "Linux/UNIX"
#: The IAM action the history needs.
IAM_ACTION = "ec2:DescribeSpotPriceHistory"
_TYPES_PER_CALL = 100


@dataclass(frozen=True)
class HistoryEntry:
    instance_type: str
    zone: str
    at: datetime
    usd_per_hour: Decimal


@dataclass(frozen=True)
class SpotPrice:
    """A type's spot price averaged over a range: USD per instance-hour and per GPU-hour, and the zones it covers."""

    instance_type: str
    usd_per_hour: Decimal
    zones: tuple[str, ...]
    #: None when the type's GPUs are not known (the pinned accelerated families do not list it).
    usd_per_gpu_hour: Decimal | None


def gpus_of(instance_type: str) -> int | None:
    """How many GPUs an NVIDIA instance type carries, from the pinned accelerated families; None if not listed."""
    family, _, size = instance_type.partition(".")
    facts = ACCELERATED_FAMILIES.get(family)
    if facts is None or facts.vendor != "nvidia":
        return None
    return facts.devices.get(size) or None


def average_prices(entries: Iterable[HistoryEntry], start: datetime, end: datetime) -> dict[str, SpotPrice]:
    """Each type's price averaged over `[start, end)` and over the zones with a price in it (see the module's note).
    A type with no price in effect at any instant of the range is left out."""
    by_zone: dict[tuple[str, str], list[HistoryEntry]] = defaultdict(list)
    for entry in entries:
        by_zone[(entry.instance_type, entry.zone)].append(entry)
    dollar_seconds: dict[str, Decimal] = defaultdict(Decimal)
    seconds: dict[str, int] = defaultdict(int)
    zones: dict[str, set[str]] = defaultdict(set)
    for (instance_type, zone), found in by_zone.items():
        changes = sorted(found, key=lambda entry: entry.at)
        for entry, following in zip(changes, [*changes[1:], None], strict=True):
            since = max(entry.at, start)
            until = min(following.at if following else end, end)
            held = int((until - since).total_seconds())
            if held > 0:
                dollar_seconds[instance_type] += entry.usd_per_hour * held
                seconds[instance_type] += held
                zones[instance_type].add(zone)
    prices = {}
    for instance_type, total in sorted(seconds.items()):
        hourly = dollar_seconds[instance_type] / total
        gpus = gpus_of(instance_type)
        prices[instance_type] = SpotPrice(
            instance_type=instance_type,
            usd_per_hour=hourly,
            zones=tuple(sorted(zones[instance_type])),
            usd_per_gpu_hour=hourly / gpus if gpus else None,
        )
    return prices


def read_history(
    ec2: Any, instance_types: Sequence[str], start: datetime, end: datetime, zones: Sequence[str] = ()
) -> list[HistoryEntry]:
    """Linux/UNIX spot price changes of `instance_types` in effect during `[start, end]`, every page of them, in the
    client's region; only in `zones` when some are named. Raises botocore's errors as they come."""
    paginator = ec2.get_paginator("describe_spot_price_history")
    found = []
    for first in range(0, len(instance_types), _TYPES_PER_CALL):
        request: dict[str, Any] = {
            "InstanceTypes": list(instance_types[first : first + _TYPES_PER_CALL]),
            "ProductDescriptions": [PRODUCT_DESCRIPTION],
            "StartTime": start,
            "EndTime": end,
        }
        if zones:
            request["Filters"] = [{"Name": "availability-zone", "Values": list(zones)}]
        for page in paginator.paginate(**request):
            found += [
                HistoryEntry(
                    instance_type=item["InstanceType"],
                    zone=item["AvailabilityZone"],
                    at=item["Timestamp"],
                    usd_per_hour=Decimal(item["SpotPrice"]),
                )
                for item in page["SpotPriceHistory"]
            ]
    return found


def spot_prices(
    ec2: Any, instance_types: Sequence[str], start: datetime, end: datetime, zones: Sequence[str] = ()
) -> Mapping[str, SpotPrice]:
    """The average spot price of each of `instance_types` over `[start, end)` (those without history left out)."""
    if not instance_types:
        return {}
    return average_prices(read_history(ec2, sorted(set(instance_types)), start, end, zones), start, end)
