"""The AWS regions a stack may name, read offline from the partition data botocore ships, and what is wrong with a name
that is none of them (with the regions it is a slip of the keyboard away from).

botocore bundles `botocore/data/partitions.json` (the regions of each partition, the same data the SDK resolves
endpoints from); the package pins boto3, and so botocore, in pyproject.toml. A region AWS opens after that release is
unknown to it until boto3 is upgraded, which the error says.
"""

from __future__ import annotations

import functools
from typing import Annotated

from pydantic import AfterValidator, StrictStr

from .aws_names import REGION

#: The partitions the package supports (their ARN partitions and DNS suffixes: components/identity/documents.py).
PARTITIONS = ("aws", "aws-cn", "aws-us-gov")
#: A name this many edits (a letter changed, added, dropped, or two swapped) from a region is offered as a correction,
#: unless more than `_CHOICES` regions are as near (`ap-southeast-9`: a guess among seven helps nobody).
_NEAR, _CHOICES = 2, 3


@functools.cache
def known_regions() -> frozenset[str]:
    """The regions of the supported partitions in the installed botocore's `partitions.json` (without the
    `aws-global` style pseudo-regions of global endpoints)."""
    import botocore.loaders  # here, not at import: the config models load without the SDK until a region is read

    data = botocore.loaders.create_loader().load_data("partitions")
    return frozenset(
        region
        for partition in data["partitions"]
        if partition["id"] in PARTITIONS
        for region in partition["regions"]
        if REGION.fullmatch(region)
    )


def region_problem(value: object) -> str | None:
    """Why `value` is not an AWS region a stack can use, or None."""
    if isinstance(value, str) and value in known_regions():
        return None
    problem = f"expected an AWS region like 'us-west-2', got {value!r}"
    near = nearest_regions(value) if isinstance(value, str) else []
    if near:
        return f"{problem}; did you mean {' or '.join(repr(r) for r in near)}?"
    if isinstance(value, str) and REGION.fullmatch(value):
        import botocore

        return (
            f"{problem}: no {', '.join(PARTITIONS)} region of that name in botocore {botocore.__version__}'s "
            "partition data (a region opened since needs a newer boto3)"
        )
    return problem


def nearest_regions(value: str) -> list[str]:
    """The few regions fewest edits from `value`, if within reach of a typo; none when many are as near."""
    distances = {region: _edits(value, region) for region in known_regions()}
    best = min(distances.values(), default=_NEAR + 1)
    near = sorted(region for region, distance in distances.items() if distance == best <= _NEAR)
    return near if len(near) <= _CHOICES else []


def _edits(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours each cost one
    (`us-esat-1` is one swap from `us-east-1`, three substitutions from `us-west-1`)."""
    previous, current = list(range(len(b) + 1)), [0] * (len(b) + 1)
    before: list[int] = []
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        before, previous = previous, current
    return previous[len(b)]


def _region(value: str) -> str:
    if problem := region_problem(value):
        raise ValueError(problem)
    return value


_region.expected = "an AWS region like 'us-west-2'"  # type: ignore[attr-defined]  # the configuration reference's
#: An AWS region of a supported partition, as stack config names it.
Region = Annotated[StrictStr, AfterValidator(_region)]


def region_argument(text: str) -> str:
    """An argparse `type` for a `--region` flag."""
    import argparse

    if problem := region_problem(text):
        raise argparse.ArgumentTypeError(problem)
    return text
