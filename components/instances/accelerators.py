"""Accelerated EC2 instance families as data: a pinned table for the families presets and docs use, and facts a stack
adds for families the table does not know (`karpenter.acceleratorFamilies`).

A family is recognised as accelerated by its name (its category, `families.py`), not by this table: the table only
says what each size carries. Facts from the EC2 accelerated-computing instance type pages
(aws.amazon.com/ec2/instance-types/). `devices` maps each size to its number of GPUs (or Neuron devices); `gpu_name`
is the value Karpenter's `karpenter.k8s.aws/instance-gpu-name` label takes (the EC2 GPU name, lower-case, spaces as
'-': karpenter-provider-aws pkg/providers/instancetype/types.go).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

Vendor = Literal["nvidia", "aws"]  # "aws": Neuron (Inferentia, Trainium)


@dataclass(frozen=True)
class AcceleratedFamily:
    family: str
    vendor: Vendor
    accelerator: str  # marketing name
    gpu_name: str | None  # karpenter.k8s.aws/instance-gpu-name (NVIDIA only)
    memory_gib: int  # per device
    devices: Mapping[str, int]
    architecture: Literal["amd64", "arm64"] = "amd64"


def _family(
    family: str,
    vendor: Vendor,
    accelerator: str,
    gpu_name: str | None,
    memory_gib: int,
    devices: dict[str, int],
    architecture: Literal["amd64", "arm64"] = "amd64",
) -> AcceleratedFamily:
    return AcceleratedFamily(family, vendor, accelerator, gpu_name, memory_gib, MappingProxyType(devices), architecture)


_SMALL_TO_48 = {
    "xlarge": 1,
    "2xlarge": 1,
    "4xlarge": 1,
    "8xlarge": 1,
    "16xlarge": 1,
    "12xlarge": 4,
    "24xlarge": 4,
    "48xlarge": 8,
}

#: The pinned table. B200 memory is what EC2 reports per GPU (183,359 MiB), as Karpenter's gpu-memory label has it.
ACCELERATED_FAMILIES: Mapping[str, AcceleratedFamily] = MappingProxyType(
    {
        f.family: f
        for f in (
            _family(
                "g4dn",
                "nvidia",
                "NVIDIA T4",
                "t4",
                16,
                {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "metal": 8},
            ),
            _family("g5", "nvidia", "NVIDIA A10G", "a10g", 24, dict(_SMALL_TO_48)),
            _family(
                "g5g",
                "nvidia",
                "NVIDIA T4G",
                "t4g",
                16,
                {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 2, "metal": 2},
                "arm64",
            ),
            _family("g6", "nvidia", "NVIDIA L4", "l4", 24, dict(_SMALL_TO_48)),
            _family("g6e", "nvidia", "NVIDIA L40S", "l40s", 48, dict(_SMALL_TO_48)),
            _family("p3", "nvidia", "NVIDIA V100 16GB", "v100", 16, {"2xlarge": 1, "8xlarge": 4, "16xlarge": 8}),
            _family("p3dn", "nvidia", "NVIDIA V100 32GB", "v100", 32, {"24xlarge": 8}),
            _family("p4d", "nvidia", "NVIDIA A100 40GB", "a100", 40, {"24xlarge": 8}),
            _family("p4de", "nvidia", "NVIDIA A100 80GB", "a100", 80, {"24xlarge": 8}),
            _family("p5", "nvidia", "NVIDIA H100", "h100", 80, {"4xlarge": 1, "48xlarge": 8}),
            _family("p5e", "nvidia", "NVIDIA H200", "h200", 141, {"48xlarge": 8}),
            _family("p5en", "nvidia", "NVIDIA H200", "h200", 141, {"48xlarge": 8}),
            _family("p6-b200", "nvidia", "NVIDIA B200", "b200", 179, {"48xlarge": 8}),
            _family(
                "inf2", "aws", "AWS Inferentia2", None, 32, {"xlarge": 1, "8xlarge": 1, "24xlarge": 6, "48xlarge": 12}
            ),
            _family("trn1", "aws", "AWS Trainium", None, 32, {"2xlarge": 1, "32xlarge": 16}),
            _family("trn1n", "aws", "AWS Trainium", None, 32, {"32xlarge": 16}),
            _family("trn2", "aws", "AWS Trainium2", None, 96, {"48xlarge": 16}),
        )
    }
)

#: Instance categories without accelerators (karpenter.k8s.aws/instance-category), used by CPU pools: compute,
#: general purpose, memory, burstable, high memory, high frequency, storage (i, d, h, im, is), Graviton 1 (a) and HPC.
CPU_CATEGORIES: frozenset[str] = frozenset({"c", "m", "r", "t", "x", "z", "i", "d", "h", "a", "im", "is", "hpc"})

# ------------------------------------------------------------------------------------ facts added by stack config

#: Facts a stack adds for families the pinned table does not know, while its config is validated (set by
#: `KarpenterConfig`); outside that, only the pinned table is known.
_ADDED: ContextVar[Mapping[str, AcceleratedFamily]] = ContextVar(
    "added_accelerated_families", default=MappingProxyType({})
)


@contextmanager
def added_families(families: Mapping[str, AcceleratedFamily]) -> Iterator[None]:
    token = _ADDED.set(MappingProxyType(dict(families)))
    try:
        yield
    finally:
        _ADDED.reset(token)


def known_families() -> Mapping[str, AcceleratedFamily]:
    """The pinned table plus what the stack being validated added."""
    return {**ACCELERATED_FAMILIES, **_ADDED.get()}


def facts(family: str) -> AcceleratedFamily | None:
    return ACCELERATED_FAMILIES.get(family) or _ADDED.get().get(family)


def nvidia_gpu_names() -> frozenset[str]:
    return frozenset(f.gpu_name for f in known_families().values() if f.gpu_name)
