"""The `kubeflow:` section of the stack configuration, parsed at the edge into frozen models, and what it becomes:
the entries to render and the settings of `plan.build`.

    eks-ml-platform:kubeflow:
      enabled: true
      adminEmail: platform-team@example.org
      components: {katib: false, spark: false, knative: false, hub: false, kserve: false}
      teams:
        vision: {owner: lead@example.org, gpuQuota: 8, s3Prefix: teams/vision, fsxClaim: fsx-lustre}
      access: {mode: port-forward}          # or: {mode: alb, certificateArn: arn:..., scheme: internal}
      notebooks: {idleMinutes: 60}
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ..config.validation import FieldProblems, matches
from ..identity.team_policy import prefix_within
from ..kueue.queues import gpu_share
from ..scheduling import Taint
from . import entries
from .access import Alb
from .access_config import Access
from .auth import Contributor
from .auth_config import AuthConfig, Role, sign_in, sign_in_problems
from .credentials import Admin
from .pipelines_iam import ui_policy_size_problem
from .pipelines_store import PREFIX_MAX_LENGTH, S3Store, prefix_length_problem, server_prefix_overlap
from .plan import Settings
from .teams import FsxShare, Team
from .volumes_config import VOLUME_CLAIMS, Volumes

Email = Annotated[StrictStr, matches(r"[^@\s]+@[^@\s]+\.[^@\s]+", "an email address like 'lead@example.org'")]
TeamName = Annotated[
    StrictStr, matches(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", "a DNS label (lowercase letters, digits, '-')")
]


def _prefix_length(value: str) -> str:
    if problem := prefix_length_problem(value):
        raise ValueError(problem)
    return value


_prefix_length.constraint = f"at most {PREFIX_MAX_LENGTH} characters"  # type: ignore[attr-defined]  # the reference's
#: A team's key prefix in a platform bucket (`kubeflow.teams.<team>.s3Prefix`, a team stack's `storage.prefix`).
S3Prefix = Annotated[
    StrictStr,
    matches(r"[A-Za-z0-9!_.'()-]+(/[A-Za-z0-9!_.'()-]+)*", "a key prefix like 'teams/vision' (no '/' at either end)"),
    AfterValidator(_prefix_length),
]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class Components(_Model):
    """Optional Kubeflow components beyond the default set (Pipelines, Notebooks, Trainer, dashboard, auth)."""

    katib: StrictBool = Field(default=False, description="install Katib (hyperparameter tuning)")
    spark: StrictBool = Field(default=False, description="install the Spark operator")
    knative: StrictBool = Field(default=False, description="install Knative Serving")
    hub: StrictBool = Field(
        default=False, description="install the Hub: the model catalog, and a model registry for `hubRegistryTeam`"
    )
    kserve: StrictBool = Field(
        default=False,
        description="install KServe (model serving: InferenceServices as plain Deployments, no Knative) from its own "
        "pinned charts, its controller on the system nodes",
    )


class KubeflowTeamConfig(_Model):
    """A team of the platform's Kubeflow: its Profile, GPU quota, S3 prefix and FSx claim (a team stack's own settings
    are `components.team.config.TeamConfig`)."""

    owner: Email = Field(description="the email that owns the team's Profile")
    gpu_quota: StrictInt = Field(
        default=0,
        ge=0,
        description="the team's nominal GPU share (its Kueue ClusterQueue's quota); at most every GPU pool's limit "
        "together",
    )
    gpu_borrowing_limit: StrictInt | None = Field(
        default=None,
        ge=0,
        description="GPUs the team may borrow beyond `gpuQuota` while other teams leave theirs idle (reclaimed by "
        "preemption when they need them); its Profile's quota is `gpuQuota` plus this; none: as many as `gpuQuota` "
        "(a team at most doubles its share); without Kueue none is lent, and setting it is refused",
    )
    neuron_quota: StrictInt = Field(
        default=0,
        ge=0,
        description="Neuron devices (`aws.amazon.com/neuron`) the team's pods may request at once on the platform's "
        "Neuron pools, which Kueue does not queue: its Profile's quota holds it, and all teams' together are at most "
        "the Neuron pools' device limits; 0: none (requests of Neuron cores, `aws.amazon.com/neuroncore`, are "
        "refused: ask for whole devices)",
    )
    s3_prefix: S3Prefix = Field(
        description=(
            "the team's prefix in `kubeflow.bucket`, the only one its role may use (never within another team's)"
        )
    )
    fsx_claim: TeamName | None = Field(
        default=None,
        description="a claim of this name on the platform's FSx file system in the team's namespace (through a static "
        "volume of its own, needs `storage.fsx`), and a PodDefault that mounts it at /fsx; none: no claim",
    )
    contributors: dict[Email, Role] = Field(
        default={},
        description="who else works in the team's namespace, by email: `edit` or `view` (KFAM's RoleBinding and "
        "AuthorizationPolicy, as the dashboard's Manage Contributors makes them); each must be able to sign in",
    )


class Notebooks(_Model):
    idle_minutes: StrictInt = Field(
        default=60, ge=10, le=7 * 24 * 60, description="notebooks idle this long are culled, so none holds a GPU node"
    )


class Pipelines(_Model):
    """Where Kubeflow Pipelines keeps its artifacts."""

    artifacts: Literal["s3", "seaweedfs"] = Field(
        default="seaweedfs",
        description="`s3`: each team's runs write under `<s3Prefix>/pipelines` of `kubeflow.bucket` with the team's "
        "role, the API server under `kubeflow/pipelines` with a role of its own, and SeaweedFS is not installed; "
        "`seaweedfs`: upstream's in-cluster SeaweedFS. The default keeps an existing stack's artifacts where they are "
        "(switching loses access to those in SeaweedFS) and needs no bucket",
    )


class KubeflowConfig(_Model):
    enabled: StrictBool = Field(
        default=False, description="install Kubeflow; while it is false its other keys are refused"
    )
    admin_email: Email | None = Field(
        default=None,
        description="the Dex static user who signs in first (a cluster admin, and the way in when the identity "
        "provider is down; its password is the `kubeflowAdminPassword` output); required when enabled",
    )
    components: Components = Field(
        default=Components(),
        description="optional components beyond the default set (Pipelines, Notebooks, Trainer, dashboard, auth)",
    )
    hub_registry_team: TeamName | None = Field(
        default=None,
        description=(
            "the team whose namespace gets the Hub's model registry (needs `components.hub`); none: no registry"
        ),
    )
    teams: dict[TeamName, KubeflowTeamConfig] = Field(
        default={},
        description="teams keyed by name: each gets a namespace, a Profile, a GPU quota and an IAM role for its S3 "
        "prefix; not a name in `storage.fsx.namespaces`",
    )
    access: Access = Field(default=Access(), description="how people reach the dashboard")
    notebooks: Notebooks = Field(default=Notebooks(), description="what happens to idle notebooks")
    pipelines: Pipelines = Field(default=Pipelines(), description="where Pipelines keeps its artifacts")
    volumes: Volumes = Field(default=Volumes(), description="sizes of Kubeflow's volumes")
    auth: AuthConfig = Field(
        default=AuthConfig(),
        description="who signs in besides `adminEmail` (Dex connectors, static users) and who is a cluster admin",
    )
    bucket: TeamName = Field(
        default="datasets",
        description=(
            "the `storage.buckets` key teams get their `s3Prefix` in (each team's role may use only its prefix)"
        ),
    )
    #: Tests name the reference copy.
    tree: StrictStr | None = Field(
        default=None,
        description="a verified local copy of the pinned Kubeflow tree (a mirror) to read instead of the fetched one; "
        "none: the fetched tree",
    )

    @model_validator(mode="after")
    def _consistent(self) -> KubeflowConfig:
        if not self.enabled:
            unused = sorted(to_camel(f) for f in self.model_fields_set - {"enabled"})
            if unused:
                raise ValueError(f"{', '.join(unused)} do nothing while enabled is false; remove them")
            return self
        if self.admin_email is None:
            raise ValueError("adminEmail is required: it is the one Dex user, who signs in first and adds teams")
        overlaps = prefix_overlaps({name: team.s3_prefix for name, team in self.teams.items()})
        if overlaps:
            raise FieldProblems(overlaps)
        problems = self._volume_problems()
        if self.pipelines.artifacts == "s3":
            prefixes = {name: team.s3_prefix for name, team in self.teams.items()}
            problems += pipelines_prefix_overlaps(prefixes)
            if too_big := ui_policy_size_problem(prefixes):
                problems.append(("teams", too_big))
        if problems:
            raise FieldProblems(problems)
        if self.hub_registry_team is not None:
            if not self.components.hub:
                raise ValueError("hubRegistryTeam needs components.hub: true")
            if self.hub_registry_team not in self.teams:
                raise ValueError(f"hubRegistryTeam {self.hub_registry_team!r} is not one of the teams")
        return self

    @model_validator(mode="after")
    def _everyone_signs_in(self) -> KubeflowConfig:
        if self.enabled and self.admin_email is not None:
            problems = sign_in_problems(self.admin_email, self.auth, self.access, self.teams)
            if problems:
                raise FieldProblems(problems)
        return self

    def _volume_problems(self) -> list[tuple[str, str]]:
        installed = {
            "pipelines_database": True,
            "pipelines_artifacts": self.pipelines.artifacts == "seaweedfs",
            "katib_database": self.components.katib,
            "hub_catalog_database": self.components.hub,
            "hub_registry_database": self.hub_registry_team is not None,
        }
        return [
            (
                f"volumes.{to_camel(key)}",
                f"sizes the volume of {VOLUME_CLAIMS[key][2]}, which is not installed; remove it",
            )
            for key in sorted(self.volumes.model_fields_set)
            if getattr(self.volumes, key) is not None and not installed[key]
        ]

    def volume_sizes(self) -> dict[tuple[str, str], str]:
        """(namespace, claim) -> size for every volume given a size."""
        sizes = {}
        for key, (namespace, claim, _) in VOLUME_CLAIMS.items():
            size = getattr(self.volumes, key)
            if size is not None:
                sizes[(namespace or self.hub_registry_team or "", claim)] = size
        return sizes


def pipelines_prefix_overlaps(prefixes: Mapping[str, str]) -> list[tuple[str, str]]:
    """(key, problem) for each team whose prefix is, holds or lies within the API server's
    (`pipelines_store.SERVER_PREFIX`): its role could read and write every team's pipeline definitions."""
    return [
        (f"teams.{name}.s3Prefix", f"{prefix!r} {problem} (pipelines.artifacts: s3); choose a prefix outside it")
        for name, prefix in sorted(prefixes.items())
        if (problem := server_prefix_overlap(prefix)) is not None
    ]


def prefix_overlaps(prefixes: Mapping[str, str]) -> list[tuple[str, str]]:
    """(key, problem) for each team whose S3 prefix is another team's or lies within it (its data would be the other
    team's role's too); two teams with the same prefix are reported once, on the later name."""
    problems = []
    for (first, first_prefix), (second, second_prefix) in combinations(sorted(prefixes.items()), 2):
        if prefix_within(second_prefix, first_prefix):
            inner, outer = second, first
        elif prefix_within(first_prefix, second_prefix):
            inner, outer = first, second
        else:
            continue
        relation = "is" if first_prefix == second_prefix else "lies within"
        problems.append(
            (
                f"teams.{inner}.s3Prefix",
                (
                    f"{prefixes[inner]!r} {relation} team {outer}'s prefix {prefixes[outer]!r}, so {outer}'s role "
                    f"could read and write {inner}'s data; give each team a prefix of its own"
                ),
            )
        )
    return problems


def selected_entries(config: KubeflowConfig) -> tuple[entries.Entry, ...]:
    c = config.components
    return entries.selected(
        katib=c.katib,
        spark=c.spark,
        hub=c.hub,
        knative=c.knative,
        hub_registry=config.hub_registry_team is not None,
        cluster_tokens=config.access.cluster_tokens is not None,
    )


def _pipelines_store(config: KubeflowConfig, region: str | None) -> S3Store | None:
    """Where Pipelines keeps artifacts in S3 (the bucket's region, each team's prefix); None with SeaweedFS."""
    if config.pipelines.artifacts != "s3":
        return None
    if region is None:
        raise ValueError("pipelines.artifacts s3 needs the region of the bucket")
    return S3Store(region, {name: team.s3_prefix for name, team in sorted(config.teams.items())})


def _alb(access: Access, load_balancer_cidrs: tuple[str, ...]) -> Alb | None:
    """The ALB in front of the gateway (None with a port-forward): its certificate, scheme, host, admitted ranges,
    the subnets' ranges it lives in, and who it signs in."""
    if access.mode != "alb":
        return None
    assert access.certificate_arn is not None
    return Alb(
        access.certificate_arn,
        access.scheme,
        access.host,
        tuple(str(cidr) for cidr in access.allowed_cidrs),
        source_cidrs=load_balancer_cidrs,
        auth=access.alb_auth.spec() if access.alb_auth is not None else None,
    )


def _teams(config: KubeflowConfig, queueing: bool) -> tuple[Team, ...]:
    """The teams by name, each Profile's GPU quota its share with what it may borrow when Kueue queues the work."""
    return tuple(
        Team(
            name=name,
            owner=t.owner,
            gpu_ceiling=gpu_share(t.gpu_quota, t.gpu_borrowing_limit, queueing=queueing).ceiling,
            neuron_devices=t.neuron_quota,
            s3_prefix=t.s3_prefix,
            fsx_claim=t.fsx_claim,
            queued=queueing,
        )
        for name, t in sorted(config.teams.items())
    )


def settings(
    config: KubeflowConfig,
    *,
    storage_class: str,
    gpu_node_pools: tuple[str, ...],
    gpu_scheduler: str | None,
    gpu_pool_taints: Mapping[str, tuple[Taint, ...]] | None = None,
    training_pools: bool = False,
    tags: dict[str, str] | None = None,
    monitoring_namespace: str | None = None,
    fsx_capacity_gib: int | None = None,
    load_balancer_cidrs: tuple[str, ...] = (),
    region: str | None = None,
    queueing: bool = False,
) -> Settings:
    """The settings of `plan.build` from the config and the platform's facts (its default StorageClass, the GPU NodePool
    names, the bin-packing scheduler's name or None, whether a NodePool is for training, the platform's Prometheus
    namespace or None, the size of its FSx file system or None, the CIDRs of the subnets an ALB would live in, or none
    when only AWS knows them, whether Kueue queues the teams' work: then each Profile's quota is the team's share with
    what it may borrow). With `pipelines.artifacts: s3`, the stack's `region` (where the bucket is) is required.
    Credentials, role ARNs, the bucket's name and the file system's identity stay placeholders."""
    if not config.enabled or config.admin_email is None:
        raise ValueError("Kubeflow is not enabled")
    store = _pipelines_store(config, region)
    return Settings(
        admin=Admin(config.admin_email),
        sign_in=sign_in(config.auth, config.access),
        contributors={name: team_contributors(t) for name, t in sorted(config.teams.items()) if t.contributors},
        cluster_tokens=config.access.cluster_tokens.spec() if config.access.cluster_tokens is not None else None,
        storage_class=storage_class,
        gpu_node_pools=gpu_node_pools,
        gpu_pool_taints=dict(gpu_pool_taints or {}),
        gpu_scheduler=gpu_scheduler,
        training_pools=training_pools,
        notebook_idle_minutes=config.notebooks.idle_minutes,
        teams=_teams(config, queueing),
        hub_registry_team=config.hub_registry_team,
        access=_alb(config.access, load_balancer_cidrs),
        tags=dict(tags or {}),
        monitoring_namespace=monitoring_namespace,
        fsx=FsxShare(fsx_capacity_gib) if fsx_capacity_gib is not None else None,
        pipelines_store=store,
        volume_sizes=config.volume_sizes(),
    )


def team_contributors(team: KubeflowTeamConfig) -> tuple[Contributor, ...]:
    return tuple(Contributor(email, role) for email, role in sorted(team.contributors.items()))
