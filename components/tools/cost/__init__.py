"""What a stack costs, from its config and the model of the running platform: the idle baseline per month and the
spend ceiling of every NodePool.

`python -m components.tools.cost --stack <name>` prints the table (or `--json`); `preview_line(config)` is the one line
the offline preview prints. Prices come from the pinned table in `prices` (its date and sources beside it).
"""

from __future__ import annotations

from datetime import date

from components.platform_config import PlatformConfig
from components.tools.model.platform import Platform

from .calculator import Estimate, estimate, headline
from .prices import PINNED, PriceTable

__all__ = ["PINNED", "Estimate", "PriceTable", "estimate", "headline", "preview_line"]


def preview_line(config: PlatformConfig, *, on: date | None = None, platform: Platform | None = None) -> str:
    """ "about $X/month idle; up to $Y/month with every pool at its limit", at the pinned prices; the platform's own
    pods on Karpenter pools counted when `platform` (the model of the running platform) is given."""
    return headline(estimate(config, PINNED, on=on or date.today(), platform=platform))
