"""What the platform offers team stacks, read from its stack outputs (pure).

The platform stack exports these under stable names (components/platform/outputs.py `export_team_contract`,
listed in the README as a contract); a team stack reads them once, through a StackReference
(`components.cluster.attach`), and parses them here. A missing or malformed output is reported by its name, never
guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr, ValidationError
from pydantic.alias_generators import to_camel

from ..config.errors import issues_from
from ..karpenter.specs import NodePoolSpec
from ..kubeflow.config import KubeflowConfig
from ..kubeflow.pipelines_store import SERVER_PREFIX
from ..kueue.queues import Flavor
from ..scheduling import Taint


class _Outputs(BaseModel):
    # Outputs this package does not read are someone else's: ignored, not rejected.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)


class OfferedPool(_Outputs):
    """One NodePool of the platform, as far as a team pool of the same kind is concerned."""

    preset: StrictStr | None = None
    node_class: StrictStr
    limits: dict[StrictStr, StrictStr]
    capacity_types: tuple[StrictStr, ...]
    #: Its node class attaches EFA interfaces (`efaLayout`), so a team pool on that class carries the label the EFA
    #: device plugin selects its nodes by. A platform from before this output says nothing: False.
    efa: bool = False


class OfferedTaint(_Outputs):
    key: StrictStr
    value: StrictStr = ""
    effect: StrictStr

    def taint(self) -> Taint:
        return Taint(self.key, self.value, self.effect)


class OfferedFlavor(_Outputs):
    name: StrictStr
    node_labels: dict[StrictStr, StrictStr]
    #: Numbers come back from a stack reference as floats: a whole one is accepted.
    gpus: int


class OfferedQueueing(_Outputs):
    """The platform's Kueue: the cohort team ClusterQueues join, and the one ResourceFlavor of its GPU pools. (A
    platform that exported a list of flavors, one per pool, has no `flavor`: it is reported as older.)"""

    cohort: StrictStr
    flavor: OfferedFlavor
    #: The GPUs of the shared pools the platform keeps for team stacks' nominal quotas there (its
    #: `kueue.teamStackGpus`), all team stacks together. A platform too old to export it is reported as older: a
    #: team stack cannot tell whether its guarantee is backed.
    team_stack_gpus: int
    #: The reserve split by team stack (`kueue.teamStacks`, by `team.name`): each stack's guarantee on the shared
    #: pools comes out of its own part. Empty (or a platform older than the split): one reserve shared by all.
    #: Numbers come back from a stack reference as floats: whole ones are accepted.
    team_stacks: dict[StrictStr, int] = {}

    def shared_flavor(self) -> Flavor:
        return Flavor(self.flavor.name, dict(self.flavor.node_labels), self.flavor.gpus)


class OfferedPipelines(_Outputs):
    """Where the platform's Kubeflow Pipelines keep artifacts. With `s3`: the `buckets` key of the bucket, the prefix
    its API server keeps pipeline definitions under, and its Kubeflow teams' prefixes there (no team stack's may
    overlap them)."""

    artifacts: Literal["s3", "seaweedfs"]
    bucket: StrictStr | None = None
    server_prefix: StrictStr | None = None
    team_prefixes: dict[StrictStr, StrictStr] = {}


class PlatformOffer(_Outputs):
    """The platform stack's outputs a team stack builds on (names as exported)."""

    cluster_name: StrictStr
    region: StrictStr
    availability_zones: tuple[StrictStr, ...]
    #: Present when the platform runs the GPU stack; the scheduler name is None when its bin-packing scheduler is off.
    gpu_taint: StrictStr | None = None
    gpu_scheduler_name: StrictStr | None = None
    #: Present when Karpenter handles spot interruptions (a team pool may then allow spot).
    karpenter_interruption_queue: StrictStr | None = None
    node_pools: dict[StrictStr, OfferedPool]
    node_pool_startup_taints: tuple[OfferedTaint, ...] = ()
    buckets: dict[StrictStr, StrictStr]
    #: The KMS key of each bucket encrypted with one (objects there can only be read and written with it).
    bucket_kms_key_arns: dict[StrictStr, StrictStr] = {}
    fsx_file_system_id: StrictStr | None = None
    fsx_dns_name: StrictStr | None = None
    fsx_mount_name: StrictStr | None = None
    fsx_availability_zone: StrictStr | None = None
    #: Numbers come back from a stack reference as floats: a whole one is accepted.
    fsx_storage_capacity_gib: int | None = None
    fsx_storage_class: StrictStr | None = None
    #: Namespaces the platform itself creates (with their FSx claim): a team stack must not create them again.
    fsx_namespaces: tuple[StrictStr, ...] = ()
    monitoring_namespace: StrictStr | None = None
    #: Present when the platform created the VPC.
    vpc_cidr: StrictStr | None = None
    #: Whether the platform runs Kubeflow (its profile controller takes a team's Profile); a platform too old to
    #: export it counts as one that does not.
    kubeflow_enabled: StrictBool = False
    #: Namespaces the platform's Kubeflow creates for its own teams (`kubeflow.teams`): a team stack must not create
    #: them again.
    kubeflow_teams: tuple[StrictStr, ...] = ()
    #: Present when the platform runs Kubeflow; a platform too old to export it keeps no Pipelines artifacts in S3.
    kubeflow_pipelines: OfferedPipelines | None = None
    #: Present when the platform runs Kueue: a team stack then makes its ClusterQueue in the cohort and its LocalQueue.
    kueue: OfferedQueueing | None = None
    #: How the platform's pods get AWS credentials (its `identity`), which the team's role follows.
    identity: Literal["irsa", "podIdentity"] = "irsa"

    @property
    def has_shared_file_system(self) -> bool:
        return None not in (
            self.fsx_file_system_id,
            self.fsx_dns_name,
            self.fsx_mount_name,
            self.fsx_storage_capacity_gib,
        )

    def pools_of(self, preset: str) -> dict[str, OfferedPool]:
        return {name: pool for name, pool in sorted(self.node_pools.items()) if pool.preset == preset}


#: The output names a team stack reads.
OFFER_OUTPUTS: tuple[str, ...] = tuple(
    sorted(field.alias or name for name, field in PlatformOffer.model_fields.items())
)


class PlatformContractError(Exception):
    """The platform stack's outputs miss or misstate what a team stack needs."""

    def __init__(self, stack: str, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(
            f"the outputs of the platform stack {stack} are not what this package reads ({len(problems)} problem(s)); "
            f"is the platform on an older version?\n{lines}"
        )


def parse_offer(outputs: Mapping[str, Any], *, stack: str) -> PlatformOffer:
    """The offer in a platform stack's outputs, or PlatformContractError naming each output that is wrong."""
    try:
        return PlatformOffer.model_validate(dict(outputs))
    except ValidationError as error:
        # issues_from names a top-level `region` as the stack config key `aws:region`; here it is an output.
        problems = [
            f"output {issue.path.removeprefix('aws:')}: {issue.message}" for issue in issues_from(error, PlatformOffer)
        ]
        raise PlatformContractError(stack, problems) from None


def offered_pipelines(config: KubeflowConfig) -> dict[str, Any]:
    """How the platform exports where its Pipelines keep artifacts (the `kubeflowPipelines` output)."""
    if config.pipelines.artifacts != "s3":
        return {"artifacts": config.pipelines.artifacts}
    return {
        "artifacts": "s3",
        "bucket": config.bucket,
        "serverPrefix": SERVER_PREFIX,
        "teamPrefixes": {name: team.s3_prefix for name, team in sorted(config.teams.items())},
    }


def offered_pool(pool: NodePoolSpec, *, efa: bool = False) -> dict[str, Any]:
    """How the platform exports one of its pools (the `nodePools` output); `efa`: its node class attaches EFA."""
    return {
        "preset": pool.preset,
        "nodeClass": pool.node_class,
        "limits": dict(pool.limits),
        "capacityTypes": list(pool.capacity_types),
        "efa": efa,
    }
