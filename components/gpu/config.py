"""Stack configuration of the GPU stack: operator options, bin-packing scheduler, admission policy."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from ..config.types import ConfigModel, KeyName, Switchable
from ..config.validation import FieldProblems, matches
from ..scheduling import DEFAULT_GPU_SCHEDULER
from .admission import AdmissionOptions


class MigOptions(ConfigModel):
    """Multi-Instance GPU: partition A100/H100 class GPUs. Nodes pick a profile by the `nvidia.com/mig.config` label
    (set it in a NodePool's `labels`); `defaultProfile` applies to nodes without one."""

    strategy: Literal["single", "mixed"] = Field(
        description="`single`: slices appear as `nvidia.com/gpu`, so admission and bin-packing keep working; "
        "`mixed`: as `nvidia.com/mig-<profile>`, which neither looks at"
    )
    default_profile: Annotated[StrictStr, matches(r"[a-z0-9][a-z0-9.-]*", "a MIG profile name like 'all-1g.10gb'")] = (
        Field(
            default="all-disabled",
            description=(
                "the profile of nodes without an `nvidia.com/mig.config` label (set it in a NodePool's `labels`)"
            ),
        )
    )


class BinPackingScheduler(Switchable):
    """The secondary scheduler GPU pods use: packs them onto as few nodes as possible."""

    name: KeyName = Field(default=DEFAULT_GPU_SCHEDULER, description="the `schedulerName` GPU pods set")
    strategy: Literal["MostAllocated", "RequestedToCapacityRatio"] = Field(
        default="MostAllocated",
        description="how a node is scored: the fuller the better, or `RequestedToCapacityRatio` (a linear score from "
        "empty to full)",
    )
    gpu_weight: StrictInt = Field(
        default=10, ge=1, le=100, description="weight of GPUs against CPU and memory (1 each)"
    )
    replicas: StrictInt = Field(default=2, ge=1, le=5, description="leader-elected replicas on the system nodes")


class GpuAdmission(Switchable):
    """Admission checks on GPU pods in tenant namespaces."""

    action: Literal["deny", "warn", "audit"] = Field(
        default="deny",
        description="what a broken rule does: rejects the pod, admits it with a warning, or only records it in the "
        "audit log (the last two while teams migrate)",
    )
    exempt_namespaces: tuple[KeyName, ...] = Field(
        default=(),
        description="namespaces not checked, beside the system ones and those labelled `eksml.io/gpu-admission=exempt`",
    )

    @property
    def device_options(self) -> AdmissionOptions | None:
        """The checks on pods that request Neuron or EFA devices (no scheduler rule: they are not GPU pods); None
        when admission is off."""
        return AdmissionOptions(action=self.action, exempt_namespaces=self.exempt_namespaces) if self.enabled else None


class GpuConfig(ConfigModel):
    """The GPU stack (installed when a NodePool launches NVIDIA GPUs)."""

    node_feature_discovery: StrictBool = Field(
        default=True, description="run Node Feature Discovery with the operator (false when the cluster already has it)"
    )
    mig: MigOptions | None = Field(
        default=None,
        description="Multi-Instance GPU: partition A100/H100 class GPUs into isolated slices; none: off. Not with "
        "`timeSlicingReplicas`, not on Bottlerocket",
    )
    time_slicing_replicas: StrictInt | None = Field(
        default=None,
        ge=2,
        le=48,
        description="advertise each GPU this many times, with no memory isolation (notebooks, light inference); "
        "none: off. Not with `mig`, not on Bottlerocket",
    )
    scheduler: BinPackingScheduler = Field(
        default=BinPackingScheduler(),
        description="the second scheduler that packs GPU pods onto as few nodes as possible",
    )
    admission: GpuAdmission = Field(
        default=GpuAdmission(), description="the admission policy on GPU and Neuron pods outside system namespaces"
    )

    @property
    def scheduler_name(self) -> str | None:
        """The bin-packing scheduler GPU pods name, or None when it is off."""
        return self.scheduler.name if self.scheduler.enabled else None

    @model_validator(mode="after")
    def _check(self) -> GpuConfig:
        if self.mig is not None and self.time_slicing_replicas is not None:
            raise FieldProblems([("timeSlicingReplicas", "cannot be combined with mig; choose one way to share GPUs")])
        return self
