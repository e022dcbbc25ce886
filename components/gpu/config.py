"""Stack configuration of the GPU stack: operator options, bin-packing scheduler, admission policy."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from components.config.types import ConfigModel, KeyName, Switchable
from components.config.validation import FieldProblems, matches
from components.scheduling import DEFAULT_GPU_SCHEDULER


class MigOptions(ConfigModel):
    """Multi-Instance GPU: partition A100/H100 class GPUs. Nodes pick a profile by the `nvidia.com/mig.config` label
    (set it in a NodePool's `labels`); `defaultProfile` applies to nodes without one."""

    strategy: Literal["single", "mixed"]
    default_profile: Annotated[StrictStr, matches(r"[a-z0-9][a-z0-9.-]*", "a MIG profile name like 'all-1g.10gb'")] = "all-disabled"


class BinPackingScheduler(Switchable):
    """The secondary scheduler GPU pods use: packs them onto as few nodes as possible."""

    name: KeyName = DEFAULT_GPU_SCHEDULER
    strategy: Literal["MostAllocated", "RequestedToCapacityRatio"] = "MostAllocated"
    gpu_weight: StrictInt = Field(default=10, ge=1, le=100)
    replicas: StrictInt = Field(default=2, ge=1, le=5)


class GpuAdmission(Switchable):
    """Admission checks on GPU pods in tenant namespaces."""

    action: Literal["deny", "warn", "audit"] = "deny"
    exempt_namespaces: tuple[KeyName, ...] = ()


class GpuConfig(ConfigModel):
    """The GPU stack (installed when a NodePool launches NVIDIA GPUs)."""

    node_feature_discovery: StrictBool = True
    mig: MigOptions | None = None
    time_slicing_replicas: StrictInt | None = Field(default=None, ge=2, le=48)
    scheduler: BinPackingScheduler = BinPackingScheduler()
    admission: GpuAdmission = GpuAdmission()

    @model_validator(mode="after")
    def _check(self) -> GpuConfig:
        if self.mig is not None and self.time_slicing_replicas is not None:
            raise FieldProblems([("timeSlicingReplicas", "cannot be combined with mig; choose one way to share GPUs")])
        return self
