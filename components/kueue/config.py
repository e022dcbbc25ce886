"""The platform's Kueue settings (pure)."""

from __future__ import annotations

from pydantic import Field, StrictBool, StrictInt

from ..config.types import ConfigModel


class KueueConfig(ConfigModel):
    """Kueue: fair GPU shares per team (see [Teams and GPU shares](../README.md#teams-and-gpu-shares))."""

    enabled: StrictBool = Field(
        default=True,
        description="install Kueue when a NodePool launches NVIDIA GPUs: a ClusterQueue per team in one cohort, a "
        "ResourceFlavor for the GPU pools and a LocalQueue in each team namespace; false: teams have their "
        "ResourceQuota only (no queue, no borrowing)",
    )
    team_stack_gpus: StrictInt = Field(
        default=0,
        ge=0,
        description="GPUs of the shared GPU pools set aside as nominal quota for team stacks' queues, all of them "
        "together (each team stack's `quota.gpus` not covered by its own pool counts against it; exported in the "
        "`kueue` output, and a team stack's preview refuses a guarantee past it); the Kubeflow teams' `gpuQuota`s "
        "and this add up to no more than the pools' GPU limits, and what is left is lent to any team up to its "
        "borrowing limit",
    )
