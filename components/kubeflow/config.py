"""The `kubeflow:` section of the stack configuration, parsed at the edge into frozen models, and what it becomes:
the entries to render and the settings of `plan.build`.

    eks-ml-platform:kubeflow:
      enabled: true
      adminEmail: platform-team@example.org
      components: {katib: false, spark: false, knative: false, hub: false}
      teams:
        vision: {owner: lead@example.org, gpuQuota: 8, s3Prefix: teams/vision, fsxClaim: fsx-lustre}
      access: {mode: port-forward}          # or: {mode: alb, certificateArn: arn:..., scheme: internal}
      notebooks: {idleMinutes: 60}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import combinations
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator
from pydantic.alias_generators import to_camel

from components.config.validation import FieldProblems
from components.kueue.queues import gpu_share
from components.scheduling import Taint

from . import entries
from .access import Alb
from .credentials import Admin
from .plan import Settings
from .teams import FsxShare, Team


def _pattern(regex: str, what: str) -> AfterValidator:
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"expected {what}, got {value!r}")
        return value

    return AfterValidator(check)


Email = Annotated[StrictStr, _pattern(r"[^@\s]+@[^@\s]+\.[^@\s]+", "an email address like 'lead@example.org'")]
TeamName = Annotated[
    StrictStr, _pattern(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", "a DNS label (lowercase letters, digits, '-')")
]
S3Prefix = Annotated[
    StrictStr,
    _pattern(
        r"[A-Za-z0-9!_.'()-]+(/[A-Za-z0-9!_.'()-]+)*", "a key prefix like 'teams/vision' (no leading or trailing '/')"
    ),
]
CertificateArn = Annotated[
    StrictStr, _pattern(r"arn:aws(-cn|-us-gov)?:acm:[a-z0-9-]+:\d{12}:certificate/[0-9a-f-]+", "an ACM certificate ARN")
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


class Access(_Model):
    """`port-forward` exposes nothing; `alb` puts an HTTPS Application Load Balancer in front of the gateway."""

    mode: Literal["port-forward", "alb"] = Field(
        default="port-forward",
        description=(
            "`port-forward` exposes nothing; `alb` puts an HTTPS Application Load Balancer in front of the gateway"
        ),
    )
    certificate_arn: CertificateArn | None = Field(
        default=None,
        description="the ACM certificate the ALB serves; required with `alb`, refused (as are the keys below) with "
        "`port-forward`",
    )
    scheme: Literal["internal", "internet-facing"] = Field(
        default="internal", description="where the ALB is reachable from"
    )
    host: StrictStr | None = Field(default=None, description="the host name the ALB answers for; none: any")
    allowed_cidrs: tuple[StrictStr, ...] = Field(
        default=(), description="who may connect to the ALB; empty: the load balancer controller's default"
    )
    cluster_tokens: bool = Field(
        default=False,
        description="also accept the cluster's service-account tokens at the gateway (upstream's m2m-dex-and-eks: "
        "the token's subject becomes the user), so programs in the cluster call Pipelines with a projected token",
    )

    @model_validator(mode="after")
    def _alb_keys(self) -> Access:
        if self.mode == "alb" and self.certificate_arn is None:
            raise ValueError("certificateArn is required with mode alb (the ALB serves HTTPS only)")
        if self.mode == "port-forward":
            unused = sorted(to_camel(f) for f in self.model_fields_set - {"mode", "cluster_tokens"})
            if unused:
                raise ValueError(f"{', '.join(unused)} only apply to mode alb; remove them")
        return self


class Notebooks(_Model):
    idle_minutes: StrictInt = Field(
        default=60, ge=10, le=7 * 24 * 60, description="notebooks idle this long are culled, so none holds a GPU node"
    )


class KubeflowConfig(_Model):
    enabled: StrictBool = Field(
        default=False, description="install Kubeflow; while it is false its other keys are refused"
    )
    admin_email: Email | None = Field(
        default=None, description="the one Dex user (its sign-in name), who signs in first; required when enabled"
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
        if self.hub_registry_team is not None:
            if not self.components.hub:
                raise ValueError("hubRegistryTeam needs components.hub: true")
            if self.hub_registry_team not in self.teams:
                raise ValueError(f"hubRegistryTeam {self.hub_registry_team!r} is not one of the teams")
        return self


def prefix_overlaps(prefixes: Mapping[str, str]) -> list[tuple[str, str]]:
    """(key, problem) for each team whose S3 prefix is another team's or lies within it (its data would be the other
    team's role's too); two teams with the same prefix are reported once, on the later name."""
    problems = []
    for (first, first_prefix), (second, second_prefix) in combinations(sorted(prefixes.items()), 2):
        if f"{second_prefix}/".startswith(f"{first_prefix}/"):
            inner, outer = second, first
        elif f"{first_prefix}/".startswith(f"{second_prefix}/"):
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
        cluster_tokens=config.access.cluster_tokens,
    )


def settings(
    config: KubeflowConfig,
    *,
    storage_class: str,
    gpu_node_pools: tuple[str, ...],
    gpu_scheduler: str | None,
    gpu_pool_taints: Mapping[str, tuple[Taint, ...]] | None = None,
    tags: dict[str, str] | None = None,
    monitoring_namespace: str | None = None,
    fsx_capacity_gib: int | None = None,
    load_balancer_cidrs: tuple[str, ...] = (),
    queueing: bool = False,
) -> Settings:
    """The settings of `plan.build` from the config and the platform's facts (its default StorageClass, the GPU
    NodePool names, the bin-packing scheduler's name or None, the platform's Prometheus namespace or None, the size
    of its FSx file system or None, the CIDRs of the subnets an ALB would live in, or none when only AWS knows them,
    whether Kueue queues the teams' work: then each Profile's quota is the team's share with what it may borrow).
    Credentials, role ARNs and the file system's identity stay placeholders."""
    if not config.enabled or config.admin_email is None:
        raise ValueError("Kubeflow is not enabled")
    alb = None
    if config.access.mode == "alb":
        assert config.access.certificate_arn is not None
        alb = Alb(
            config.access.certificate_arn,
            config.access.scheme,
            config.access.host,
            config.access.allowed_cidrs,
            source_cidrs=load_balancer_cidrs,
        )
    return Settings(
        admin=Admin(config.admin_email),
        storage_class=storage_class,
        gpu_node_pools=gpu_node_pools,
        gpu_pool_taints=dict(gpu_pool_taints or {}),
        gpu_scheduler=gpu_scheduler,
        notebook_idle_minutes=config.notebooks.idle_minutes,
        teams=tuple(
            Team(
                name=name,
                owner=t.owner,
                gpu_quota=gpu_share(t.gpu_quota, t.gpu_borrowing_limit, queueing=queueing).ceiling,
                s3_prefix=t.s3_prefix,
                fsx_claim=t.fsx_claim,
                queued=queueing,
            )
            for name, t in sorted(config.teams.items())
        ),
        hub_registry_team=config.hub_registry_team,
        access=alb,
        tags=dict(tags or {}),
        monitoring_namespace=monitoring_namespace,
        fsx=FsxShare(fsx_capacity_gib) if fsx_capacity_gib is not None else None,
    )
