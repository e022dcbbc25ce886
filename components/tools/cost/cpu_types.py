"""General-purpose, compute- and memory-optimised instance types (categories c, m and r) as the estimate sizes them,
from their names alone: the pinned price table names every type, and no other offline catalog is at hand.

EC2 names a size after its vCPUs and these categories after their memory per vCPU ("Amazon EC2 instance type naming
conventions", docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html, and the per-family
specification tables): medium 1 vCPU, large 2, xlarge 4, Nxlarge 4 × N; c 2 GiB, m 4 GiB, r 8 GiB of memory per
vCPU; a `g` among the attribute letters after the generation means a Graviton (arm64) processor. Checked against
EC2's DescribeInstanceTypes (as moto ships it): exact for every c, m and r type of generation 6 and later; older
generations differ (c4, c5n, m3, r4, ...), so they are not sized, nor are metal sizes or other categories.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..preflight.selection import InstanceShape

_FAMILY = re.compile(r"(?P<category>[cmr])(?P<generation>\d+)(?P<attributes>[a-z]*)(?:-flex)?")
_GIB_PER_VCPU = {"c": 2, "m": 4, "r": 8}
_FIRST_GENERATION = 6
_NAMED_SIZES = {"medium": 1, "large": 2, "xlarge": 4}


@dataclass(frozen=True)
class CpuType:
    shape: InstanceShape
    memory_gib: int

    @property
    def vcpus(self) -> int:
        return self.shape.vcpus or 0


def _vcpus(size: str) -> int | None:
    if size in _NAMED_SIZES:
        return _NAMED_SIZES[size]
    multiple = re.fullmatch(r"(\d+)xlarge", size)
    return 4 * int(multiple.group(1)) if multiple else None


def cpu_type(instance_type: str) -> CpuType | None:
    """The type's vCPUs, memory and architecture, None where the naming rules above do not decide them."""
    family, _, size = instance_type.partition(".")
    match = _FAMILY.fullmatch(family)
    vcpus = _vcpus(size)
    if match is None or vcpus is None or int(match["generation"]) < _FIRST_GENERATION:
        return None
    architecture = "arm64" if "g" in match["attributes"] else "amd64"
    return CpuType(InstanceShape(instance_type, architecture, vcpus=vcpus), vcpus * _GIB_PER_VCPU[match["category"]])


def cpu_catalog(instance_types: Iterable[str]) -> list[CpuType]:
    return [found for name in sorted(instance_types) if (found := cpu_type(name)) is not None]
