"""A team stack's Kubeflow Profile (pure): the builder the platform's own Kubeflow teams use
(`components.kubeflow.teams`), fed from the team's config.

The platform's profile controller takes it: it adopts the team's namespace (whose `owner` annotation names the same
owner), keeps the service account `default-editor` the team stack created, binds it to Kubeflow's edit role and
annotates it with the team's role, and adds a ResourceQuota of the team's GPUs beside the namespace's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..kubeflow.teams import pod_defaults, profile_manifest
from .config import TeamConfig
from .namespace import Manifest


def team_profile(
    team: TeamConfig, role_arn: Any, gpu_ceiling: int, neuron: Mapping[str, str] | None = None
) -> Manifest:
    """The team's Profile: owned by `kubeflow.owner`, capped at `gpu_ceiling` GPUs (its share's ceiling,
    `TeamPlan.gpu_share`) and at `neuron` (`TeamPlan.neuron_quota`: the quota the namespace's own ResourceQuota has,
    since both apply and the lower wins), `default-editor` annotated with `role_arn` (the team's IRSA role; a Pulumi
    output in a program, only placed, never read)."""
    assert team.kubeflow is not None, "the team has no kubeflow section"
    return profile_manifest(
        name=team.name, owner=team.kubeflow.owner, gpu_ceiling=gpu_ceiling, role_arn=role_arn, neuron=neuron
    )


def team_pod_defaults(team: TeamConfig, *, queueing: bool) -> list[Manifest]:
    """The PodDefaults the platform's Kubeflow teams get too (`kubeflow.teams.pod_defaults`)."""
    return pod_defaults(team.name, queued=queueing)
