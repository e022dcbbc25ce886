"""A team stack's configuration: the platform stack it attaches to and its team (pure).

    config:
      aws:region: us-west-2
      team-vision:platformStack: acme/eks-ml-platform/prod
      team-vision:owner: vision-leads
      team-vision:team:
        name: vision
        quota: {gpus: 16}
        storage: {bucket: datasets}
        nodePool: {preset: gpu-inference-a10g-spot, limits: {nvidia.com/gpu: "8"}}
        fsxClaims: {datasets: {}}

Parsed once, at the edge, into frozen models; every error names its key path. What depends on the platform (is the
preset offered, does the bucket exist) is checked against its outputs in `components.team.plan`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, StrictBool, StrictInt, StrictStr, ValidationError, model_validator

from components.config.errors import ConfigError, ConfigIssue, issues_from
from components.config.types import ConfigModel, KeyName
from components.config.validation import FieldProblems, matches
from components.storage.config import fsx_capacity_problem
from components.team.quantity import QUANTITY_PATTERN

#: `organization/project/stack`, as `pulumi stack ls --all` names a stack of the Pulumi Cloud backend.
StackName = Annotated[
    StrictStr, matches(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", "a stack name like 'acme/eks-ml-platform/prod'")
]
#: A namespace name: a DNS label.
NamespaceName = Annotated[StrictStr, matches(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a DNS label (lowercase letters, digits, '-')")]
Prefix = Annotated[
    StrictStr, matches(r"[A-Za-z0-9!_.'()-]+(/[A-Za-z0-9!_.'()-]+)*", "a key prefix like 'teams/vision' (no '/' at either end, no '*')")
]
Quantity = Annotated[StrictStr, matches(QUANTITY_PATTERN, "a Kubernetes quantity like '500m', '64' or '256Gi'")]
Port = Annotated[StrictInt, Field(ge=1, le=65535)]
AWS_KEYS = ("region", "profile")
PROJECT_KEYS = ("platformStack", "owner", "costCenter", "team")


class TeamQuota(ConfigModel):
    """What the namespace may request at once (a ResourceQuota on requests: GPUs only count as requests)."""

    gpus: StrictInt = Field(ge=0)
    cpu: Quantity = "64"
    memory: Quantity = "256Gi"
    pods: StrictInt = Field(default=100, ge=1)
    #: Each LoadBalancer Service is an NLB the team pays for.
    load_balancers: StrictInt = Field(default=2, ge=0)
    claims: StrictInt = Field(default=10, ge=0)


class DefaultRequests(ConfigModel):
    """Requests given to containers that set none (a LimitRange): without them the quota refuses such pods."""

    cpu: Quantity = "250m"
    memory: Quantity = "512Mi"


class TeamNetwork(ConfigModel):
    """What the namespace's default-deny NetworkPolicy lets through beyond DNS, Prometheus and its own pods."""

    #: HTTPS to anywhere: AWS APIs (STS, which IRSA needs, and S3), the Kubernetes API, model registries.
    https_egress: StrictBool = True
    #: Ports webhook servers of the team listen on, open to the control plane (its ENIs sit in the VPC).
    webhook_ports: tuple[Port, ...] = (9443,)


class TeamStorage(ConfigModel):
    """The team's prefix in one of the platform's buckets (`teams/<team>` unless given)."""

    bucket: KeyName
    prefix: Prefix | None = None


class TeamPool(ConfigModel):
    """A NodePool for the team alone, of a kind the platform runs (its preset), no larger than the platform's."""

    preset: StrictStr
    limits: dict[StrictStr, Quantity] = Field(default_factory=dict)
    zones: tuple[StrictStr, ...] = ()


class FsxClaim(ConfigModel):
    """A claim on the platform's shared file system, or (`storageClass: true`) a file system of its own."""

    storage_class: StrictBool = False
    size_gib: StrictInt | None = None

    @model_validator(mode="after")
    def _check(self) -> FsxClaim:
        if not self.storage_class and self.size_gib is not None:
            raise FieldProblems([("sizeGib", "is not used by a claim on the shared file system (it is not sized by its claim); remove it")])
        if self.storage_class and self.size_gib is None:
            raise FieldProblems([("sizeGib", "is required for a file system of its own (1200, 2400 or a multiple of 2400)")])
        if self.storage_class and (problem := fsx_capacity_problem("PERSISTENT_2", self.size_gib or 0)):
            raise FieldProblems([("sizeGib", problem)])
        return self


class TeamConfig(ConfigModel):
    name: NamespaceName
    quota: TeamQuota
    default_requests: DefaultRequests = DefaultRequests()
    network: TeamNetwork = TeamNetwork()
    #: The service account the team's IRSA role is for (its pods run as it); the team's name unless given.
    service_account: KeyName | None = None
    storage: TeamStorage | None = None
    node_pool: TeamPool | None = None
    fsx_claims: dict[KeyName, FsxClaim] = Field(default_factory=dict)

    @property
    def service_account_name(self) -> str:
        return self.service_account or self.name

    @property
    def s3_prefix(self) -> str | None:
        if self.storage is None:
            return None
        return self.storage.prefix or f"teams/{self.name}"

    @model_validator(mode="after")
    def _check(self) -> TeamConfig:
        shared = sorted(key for key, claim in self.fsx_claims.items() if not claim.storage_class)
        if len(shared) > 1:
            raise FieldProblems([("fsxClaims", f"{shared} all claim the shared file system; one claim mounts all of it")])
        return self


class TeamStackConfig(ConfigModel):
    project: StrictStr
    stack: StrictStr
    region: StrictStr
    profile: StrictStr | None = None
    #: Who answers for what the stack creates (the `owner` tag), and the cost centre it is billed to.
    owner: StrictStr = Field(min_length=1)
    cost_center: StrictStr | None = None
    platform_stack: StackName
    team: TeamConfig


def _decode(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def parse_team_config(raw: Mapping[str, Any], *, project: str, stack: str) -> TeamStackConfig:
    """A team stack's raw config (`namespace:key` -> value) as a TeamStackConfig, or ConfigError with every problem."""
    issues: list[ConfigIssue] = []
    document: dict[str, Any] = {"project": project, "stack": stack}
    for full_key in sorted(raw):
        namespace, _, key = full_key.partition(":")
        if namespace == project and key in PROJECT_KEYS:
            document[key] = _decode(raw[full_key])
        elif namespace == "aws" and key in AWS_KEYS:
            document[key] = raw[full_key]
        elif namespace != "pulumi":
            expected = ", ".join([*(f"{project}:{k}" for k in PROJECT_KEYS), *(f"aws:{k}" for k in AWS_KEYS)])
            issues.append(ConfigIssue(path=full_key, message=f"is not read by this program (it reads {expected})"))
    try:
        config = TeamStackConfig.model_validate(document)
    except ValidationError as error:
        issues.extend(issues_from(error, TeamStackConfig))
        raise ConfigError(issues) from None
    if issues:
        raise ConfigError(issues)
    return config
