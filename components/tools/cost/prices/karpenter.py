"""Read Karpenter's generated on-demand price table (aws/karpenter-provider-aws,
`pkg/providers/pricing/zz_generated.pricing_aws.go`): a Go map of region to instance type to USD per hour, which
Karpenter's own generator writes from the AWS Price List API and ships as its fallback when the API cannot be reached.

Only the figures are read (facts: the instance type, its region and its price); the file's layout is:

    // generated at 2026-07-06T14:20:29Z for us-east-1
    ...
        "us-east-1": {
            // a1 family
            "a1.2xlarge": 0.204000, "a1.4xlarge": 0.408000, ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

_GENERATED = re.compile(r"^// generated at (\S+) for (\S+)", re.MULTILINE)
_REGION = re.compile(r'^\s*"([a-z]{2}(?:-[a-z]+)+-\d+)":\s*\{\s*$')
_PRICE = re.compile(r'"([a-z0-9-]+\.[a-z0-9-]+)":\s*([0-9]+(?:\.[0-9]+)?)')


class NotAPriceTable(ValueError):
    """The text is not Karpenter's generated price table (or its layout changed)."""


@dataclass(frozen=True)
class KarpenterTable:
    generated_at: datetime
    #: USD per hour, by region and instance type, exactly as the file writes them (trailing zeros dropped).
    regions: dict[str, dict[str, Decimal]]


def _exact(text: str) -> Decimal:
    value = Decimal(text)
    return value.quantize(Decimal(1)) if value == value.to_integral() else value.normalize()


def parse(text: str) -> KarpenterTable:
    """The figures of one generated file; raises NotAPriceTable when it holds no dated region of prices."""
    stamp = _GENERATED.search(text)
    if stamp is None:
        raise NotAPriceTable("no '// generated at <time> for <region>' line")
    regions: dict[str, dict[str, Decimal]] = {}
    current: dict[str, Decimal] | None = None
    for line in text.splitlines():
        if (region := _REGION.match(line)) is not None:
            current = regions.setdefault(region.group(1), {})
            continue
        if current is not None:
            current.update((name, _exact(price)) for name, price in _PRICE.findall(line))
    regions = {region: prices for region, prices in regions.items() if prices}
    if not regions:
        raise NotAPriceTable("no region with instance prices")
    return KarpenterTable(generated_at=datetime.fromisoformat(stamp.group(1).replace("Z", "+00:00")), regions=regions)
