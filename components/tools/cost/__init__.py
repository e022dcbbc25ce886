"""What a stack costs, from its config and the model of the running platform: the idle baseline per month and the
spend ceiling of every NodePool.

`python -m components.tools.cost --stack <name>` prints the table (or `--json`); `headline(estimate(...))` is the one
line the offline preview prints. Prices come from the pinned table in `prices` (its date and sources beside it).
"""

from __future__ import annotations

from .calculator import Estimate, estimate, headline
from .prices import PINNED, PriceTable

__all__ = ["PINNED", "Estimate", "PriceTable", "estimate", "headline"]
