"""Kubernetes resource quantities as numbers (pure), to compare limits and requests."""

from __future__ import annotations

import re
from decimal import Decimal

_SUFFIXES = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
}
QUANTITY_PATTERN = r"([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?"
_QUANTITY = re.compile(QUANTITY_PATTERN)


def parse_quantity(text: str | int) -> Decimal:
    """'500m' -> 0.5, '4Gi' -> 4294967296, 8 -> 8; ValueError for anything else."""
    match = _QUANTITY.fullmatch(str(text))
    if match is None:
        raise ValueError(f"expected a Kubernetes quantity like '500m', '8' or '64Gi', got {text!r}")
    return Decimal(match[1]) * _SUFFIXES[match[2] or ""]
