"""Accelerated EC2 instance families: one table, used to validate NodePool specs and (later) to estimate cost.

Facts from the EC2 accelerated-computing instance type pages (aws.amazon.com/ec2/instance-types/). `devices` maps
each size to its number of GPUs (or Neuron devices); `gpu_name` is the value Karpenter's
`karpenter.k8s.aws/instance-gpu-name` label takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class AcceleratedFamily:
    family: str
    vendor: str  # "nvidia" or "aws" (Neuron)
    accelerator: str  # marketing name
    gpu_name: str | None  # karpenter.k8s.aws/instance-gpu-name (NVIDIA only)
    memory_gib: int  # per device
    devices: Mapping[str, int]


_SMALL_TO_48 = {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "24xlarge": 4, "48xlarge": 8}

ACCELERATED_FAMILIES: Mapping[str, AcceleratedFamily] = MappingProxyType(
    {
        f.family: f
        for f in (
            AcceleratedFamily("g4dn", "nvidia", "NVIDIA T4", "t4", 16, MappingProxyType(
                {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "metal": 8})),
            AcceleratedFamily("g5", "nvidia", "NVIDIA A10G", "a10g", 24, MappingProxyType(dict(_SMALL_TO_48))),
            AcceleratedFamily("g6", "nvidia", "NVIDIA L4", "l4", 24, MappingProxyType(dict(_SMALL_TO_48))),
            AcceleratedFamily("g6e", "nvidia", "NVIDIA L40S", "l40s", 48, MappingProxyType(dict(_SMALL_TO_48))),
            AcceleratedFamily("p4d", "nvidia", "NVIDIA A100 40GB", "a100", 40, MappingProxyType({"24xlarge": 8})),
            AcceleratedFamily("p4de", "nvidia", "NVIDIA A100 80GB", "a100", 80, MappingProxyType({"24xlarge": 8})),
            AcceleratedFamily("p5", "nvidia", "NVIDIA H100", "h100", 80, MappingProxyType({"4xlarge": 1, "48xlarge": 8})),
            AcceleratedFamily("p5e", "nvidia", "NVIDIA H200", "h200", 141, MappingProxyType({"48xlarge": 8})),
            AcceleratedFamily("p5en", "nvidia", "NVIDIA H200", "h200", 141, MappingProxyType({"48xlarge": 8})),
            AcceleratedFamily("inf2", "aws", "AWS Inferentia2", None, 32, MappingProxyType(
                {"xlarge": 1, "8xlarge": 1, "24xlarge": 6, "48xlarge": 12})),
            AcceleratedFamily("trn1", "aws", "AWS Trainium", None, 32, MappingProxyType({"2xlarge": 1, "32xlarge": 16})),
            AcceleratedFamily("trn1n", "aws", "AWS Trainium", None, 32, MappingProxyType({"32xlarge": 16})),
            AcceleratedFamily("trn2", "aws", "AWS Trainium2", None, 96, MappingProxyType({"48xlarge": 16})),
        )
    }
)

NVIDIA_GPU_NAMES: frozenset[str] = frozenset(f.gpu_name for f in ACCELERATED_FAMILIES.values() if f.gpu_name)
NVIDIA_FAMILIES: frozenset[str] = frozenset(f.family for f in ACCELERATED_FAMILIES.values() if f.vendor == "nvidia")
NEURON_FAMILIES: frozenset[str] = frozenset(f.family for f in ACCELERATED_FAMILIES.values() if f.vendor == "aws")

#: Instance categories without accelerators (karpenter.k8s.aws/instance-category), used by CPU pools: compute,
#: general purpose, memory, burstable, high memory, high frequency, storage (i, d, h, im, is), Graviton 1 (a) and HPC.
CPU_CATEGORIES: frozenset[str] = frozenset({"c", "m", "r", "t", "x", "z", "i", "d", "h", "a", "im", "is", "hpc"})


def families_with_gpu(gpu_name: str) -> list[str]:
    return sorted(f.family for f in ACCELERATED_FAMILIES.values() if f.gpu_name == gpu_name)


def max_devices(family: str) -> int:
    return max(ACCELERATED_FAMILIES[family].devices.values())
