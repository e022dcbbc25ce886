"""Accelerated EC2 instance families as data: a pinned table for the families presets and docs use, and facts a stack
adds for families the table does not know (`karpenter.acceleratorFamilies`).

A family is recognised as accelerated by its name (its category, `families.py`), not by this table: the table only
says what each size carries. Facts from the EC2 accelerated-computing instance type pages
(aws.amazon.com/ec2/instance-types/). `devices` maps each size to its number of GPUs (or Neuron devices); `gpu_name`
is the value Karpenter's `karpenter.k8s.aws/instance-gpu-name` label takes (the EC2 GPU name, lower-case, spaces as
'-': karpenter-provider-aws pkg/providers/instancetype/types.go). The table is data: `accelerated_families.yaml`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Literal

import yaml

#: The pinned table of accelerated families, beside this module.
DATA = "accelerated_families.yaml"

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


def _read_table() -> tuple[Mapping[str, AcceleratedFamily], frozenset[str]]:
    document = yaml.load(  # libyaml: the pure-Python reader took 10 ms of every start
        resources.files(__package__ or "").joinpath(DATA).read_text(encoding="utf-8"), Loader=yaml.CSafeLoader
    )
    families = {
        name: AcceleratedFamily(
            family=name,
            vendor=facts["vendor"],
            accelerator=facts["accelerator"],
            gpu_name=facts["gpuName"],
            memory_gib=facts["memoryGiB"],
            devices=MappingProxyType(dict(facts["devices"])),
            architecture=facts.get("architecture", "amd64"),
        )
        for name, facts in document["families"].items()
    }
    return MappingProxyType(families), frozenset(document["cpuCategories"])


#: The pinned table (`accelerated_families.yaml`, which names its sources), and the instance categories without
#: accelerators (karpenter.k8s.aws/instance-category), used by CPU pools.
ACCELERATED_FAMILIES, CPU_CATEGORIES = _read_table()

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


def nvidia_gpu_counts(families: Mapping[str, AcceleratedFamily] = ACCELERATED_FAMILIES) -> Mapping[str, int]:
    """The GPUs of each NVIDIA instance type of `families` (`<family>.<size>`), for the GPU cost rules."""
    return MappingProxyType(
        {
            f"{family.family}.{size}": devices
            for family in families.values()
            if family.vendor == "nvidia"
            for size, devices in sorted(family.devices.items())
            if devices > 0
        }
    )
