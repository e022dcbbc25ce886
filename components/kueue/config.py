"""The platform's Kueue settings (pure)."""

from __future__ import annotations

from pydantic import Field, StrictBool

from ..config.types import ConfigModel


class KueueConfig(ConfigModel):
    """Kueue: fair GPU shares per team (see [Teams and GPU shares](../README.md#teams-and-gpu-shares))."""

    enabled: StrictBool = Field(
        default=True,
        description="install Kueue when a NodePool launches NVIDIA GPUs: a ClusterQueue per team in one cohort, a "
        "ResourceFlavor for the GPU pools and a LocalQueue in each team namespace; false: teams have their "
        "ResourceQuota only (no queue, no borrowing)",
    )
