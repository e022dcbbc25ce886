"""The platform's Kueue settings (pure)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StrictInt, model_validator

from ..config.types import ConfigModel, KeyName
from ..config.validation import FieldProblems


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
    team_stacks: dict[KeyName, Annotated[StrictInt, Field(ge=0)]] = Field(
        default={},
        description="the reserve split among the team stacks by their `team.name`: GPUs of the shared GPU pools each "
        "may be guaranteed (exported in the `kueue` output; a team stack not listed, or asking for more than its "
        "own, is refused at its preview); set, `teamStackGpus` is their sum and need not be given",
    )

    @model_validator(mode="after")
    def _reserve_adds_up(self) -> KueueConfig:
        """Given both, the reserve is the sum of its parts: a different `teamStackGpus` is one of two typos."""
        given = "team_stack_gpus" in self.model_fields_set
        if self.team_stacks and given and self.team_stack_gpus != sum(self.team_stacks.values()):
            parts = " + ".join(f"{name} {gpus}" for name, gpus in sorted(self.team_stacks.items()))
            message = (
                f"is {self.team_stack_gpus}, but kueue.teamStacks adds up to {sum(self.team_stacks.values())} "
                f"({parts}); remove teamStackGpus (the sum is the reserve) or make the two agree"
            )
            raise FieldProblems([("teamStackGpus", message)])
        return self

    @property
    def reserve(self) -> int:
        """The GPUs of the shared pools kept for all team stacks' guarantees together."""
        return sum(self.team_stacks.values()) if self.team_stacks else self.team_stack_gpus

    @property
    def reserve_set(self) -> bool:
        """Whether the stack config names a reserve (either key)."""
        return bool(self.team_stacks) or "team_stack_gpus" in self.model_fields_set

    @property
    def reserve_key(self) -> str:
        """The key the reserve was given under, for messages."""
        return "kueue.teamStacks" if self.team_stacks else "kueue.teamStackGpus"
