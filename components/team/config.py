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
        kubeflow: {owner: vision-lead@example.org}

Parsed once, at the edge, into frozen models; every error names its key path. What depends on the platform (is the
preset offered, does the bucket exist) is checked against its outputs in `components.team.plan`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, ValidationError, model_validator

from ..config.errors import ConfigError, ConfigIssue, issues_from
from ..config.types import Cidr, ConfigModel, KeyName
from ..config.validation import FieldProblems, matches
from ..kubeflow.config import S3Prefix
from ..kubeflow.teams import TEAM_SERVICE_ACCOUNT
from ..regions import Region
from ..storage.config import fsx_capacity_problem
from .quantity import QUANTITY_PATTERN

#: `organization/project/stack`, as `pulumi stack ls --all` names a stack of the Pulumi Cloud backend.
StackName = Annotated[
    StrictStr,
    matches(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", "a stack name like 'acme/eks-ml-platform/prod'"),
]
#: A namespace name: a DNS label.
NamespaceName = Annotated[
    StrictStr, matches(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a DNS label (lowercase letters, digits, '-')")
]
Quantity = Annotated[StrictStr, matches(QUANTITY_PATTERN, "a Kubernetes quantity like '500m', '64' or '256Gi'")]
Port = Annotated[StrictInt, Field(ge=1, le=65535)]
Email = Annotated[StrictStr, matches(r"[^@\s]+@[^@\s]+\.[^@\s]+", "an email address like 'lead@example.org'")]
AWS_KEYS = ("region", "profile")
PROJECT_KEYS = ("platformStack", "owner", "costCenter", "team")
#: Fields filled in from the Pulumi context (the project and stack being run), never from stack config.
CONTEXT_KEYS = ("project", "stack")


class TeamQuota(ConfigModel):
    """What the namespace may request at once (a ResourceQuota on requests: GPUs only count as requests)."""

    gpus: StrictInt = Field(
        ge=0,
        description="the team's nominal GPU share (its Kueue ClusterQueue's quota, on any pool of the platform's); "
        "the namespace's ResourceQuota on `requests.nvidia.com/gpu` is this plus `gpuBorrowingLimit`; what its own "
        "pool does not cover is guaranteed on the platform's shared pools and must fit in what the platform "
        "keeps for this team stack (its `kueue.teamStacks.<team.name>`; a platform that does not split its reserve: "
        "the whole `kueue.teamStackGpus`, which every team stack shares)",
    )
    gpu_borrowing_limit: StrictInt | None = Field(
        default=None,
        ge=0,
        description="GPUs the team may borrow beyond `gpus` while other teams leave theirs idle (reclaimed by "
        "preemption when they need them); none: as many as `gpus` (a team at most doubles its share); refused when the "
        "platform runs no Kueue",
    )
    cpu: Quantity = Field(default="64", description="CPU the namespace's pods may request at once")
    memory: Quantity = Field(default="256Gi", description="memory the namespace's pods may request at once")
    pods: StrictInt = Field(default=100, ge=1, description="pods the namespace may hold at once")
    load_balancers: StrictInt = Field(
        default=2, ge=0, description="LoadBalancer Services the namespace may hold (each is an NLB the team pays for)"
    )
    claims: StrictInt = Field(
        default=10, ge=0, description="PersistentVolumeClaims the namespace may hold, `fsxClaims` included"
    )


class DefaultRequests(ConfigModel):
    """Requests given to containers that set none (a LimitRange): without them the quota refuses such pods."""

    cpu: Quantity = Field(default="250m", description="the CPU request of a container that sets none")
    memory: Quantity = Field(default="512Mi", description="the memory request of a container that sets none")


class TeamEgress(ConfigModel):
    """Somewhere the team's pods may connect to beyond HTTPS: a package mirror, git over SSH, a database."""

    cidr: Cidr = Field(description="the addresses, as an IPv4 CIDR like '10.8.0.0/16' ('0.0.0.0/0': anywhere)")
    ports: tuple[Port, ...] = Field(min_length=1, description="the ports there, at least one (1-65535)")
    protocol: Literal["TCP", "UDP"] = Field(default="TCP", description="the protocol of those ports")


class TeamNetwork(ConfigModel):
    """What the namespace's default-deny NetworkPolicy lets through beyond DNS, Prometheus and its own pods."""

    https_egress: StrictBool = Field(
        default=True,
        description="let pods open HTTPS connections to anywhere: AWS APIs (STS, which IRSA needs, and S3), the "
        "Kubernetes API, model registries; false: no HTTPS out",
    )
    webhook_ports: tuple[Port, ...] = Field(
        default=(9443,),
        description="ports webhook servers of the team listen on, open to the control plane (its ENIs sit in the "
        "VPC); empty: none",
    )
    egress: dict[KeyName, TeamEgress] = Field(
        default_factory=dict,
        description="more places the pods may connect to, keyed by a name of your choice (each its own "
        "NetworkPolicy `allow-egress-<name>`); empty: HTTPS (`httpsEgress`), DNS and the platform's paths only",
    )


class TeamStorage(ConfigModel):
    """The team's prefix in one of the platform's buckets."""

    bucket: KeyName = Field(
        description="the platform's bucket (its `storage.buckets` key) the team's role may use a prefix of"
    )
    prefix: S3Prefix | None = Field(
        default=None, description="the team's prefix in the bucket, the only one its role may use; none: `teams/<team>`"
    )


class TeamPool(ConfigModel):
    """A NodePool for the team alone, of a kind the platform runs (its preset), no larger than the platform's."""

    preset: StrictStr = Field(
        description=(
            "the preset of one of the platform's NodePools: the kind of capacity the pool launches, on that pool's "
            "node class"
        )
    )
    limits: dict[StrictStr, Quantity] = Field(
        default_factory=dict,
        description="the most the pool may launch, per resource, no higher than the platform's pool of the kind; "
        "a resource left out: the preset's limit brought down to the platform's",
    )
    zones: tuple[StrictStr, ...] = Field(
        default=(), description="zones of the platform the pool launches in; empty: all of them"
    )


class FsxClaim(ConfigModel):
    """A claim on the platform's shared file system, or (`storageClass: true`) a file system of its own."""

    storage_class: StrictBool = Field(
        default=False,
        description="false: a claim on the platform's shared file system (its `storage.fsx`); true: a file system of "
        "the team's own from the platform's FSx class, deleted with the claim where the platform's "
        "`statefulResources` is destroy, kept in AWS otherwise",
    )
    size_gib: StrictInt | None = Field(
        default=None,
        description="the size of a file system of its own (1200, 2400 or a multiple of 2400); required with "
        "`storageClass: true`, refused without it (the shared file system is not sized by its claim)",
    )

    @model_validator(mode="after")
    def _check(self) -> FsxClaim:
        if not self.storage_class and self.size_gib is not None:
            raise FieldProblems(
                [
                    (
                        "sizeGib",
                        "is not used by a claim on the shared file system (it is not sized by its claim); remove it",
                    )
                ]
            )
        if self.storage_class and self.size_gib is None:
            raise FieldProblems(
                [("sizeGib", "is required for a file system of its own (1200, 2400 or a multiple of 2400)")]
            )
        if self.storage_class and (problem := fsx_capacity_problem("PERSISTENT_2", self.size_gib or 0)):
            raise FieldProblems([("sizeGib", problem)])
        return self


#: An InferenceService's name (KServe's DNS-1035 rule), short enough for its Service `<name>-predictor`.
InferenceServiceName = Annotated[
    StrictStr,
    matches(
        r"[a-z]([-a-z0-9]{0,51}[a-z0-9])?",
        "an InferenceService name (lowercase letters, digits and '-', starting with a letter, at most 53 characters)",
    ),
]
#: A service account as `<namespace>/<name>`.
ServiceAccountRef = Annotated[
    StrictStr,
    matches(
        r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?",
        "a service account as '<namespace>/<name>', like 'vision/default-editor'",
    ),
]


class TeamModel(ConfigModel):
    """One InferenceService of the team's namespace, published on the Kubeflow gateway (`components.kserve.route`)."""

    port: Port = Field(
        default=8080,
        description="the predictor container's port (its first `ports` entry; KServe's default 8080), which the "
        "platform model checks the gateway reaches",
    )
    token_clients: list[ServiceAccountRef] = Field(
        default_factory=list,
        description="service accounts (`<namespace>/<name>`) whose cluster tokens may call the model through the "
        "gateway (the platform's `kubeflow.access.clusterTokens` must admit their audience and namespace); none: "
        "only people signed in as the Profile's owner or a contributor",
    )

    @model_validator(mode="after")
    def _distinct_clients(self) -> TeamModel:
        if len(set(self.token_clients)) != len(self.token_clients):
            raise ValueError(f"tokenClients names a service account twice: {self.token_clients}")
        return self


class TeamKubeflow(ConfigModel):
    """The team's Kubeflow Profile, taken by the platform's profile controller (the platform must run Kubeflow)."""

    owner: Email = Field(
        description="the email that owns the team's Profile (as the platform's Dex reports it), written on the "
        "namespace as its `owner` annotation so the profile controller adopts it"
    )
    artifacts: Literal["s3", "seaweedfs"] | None = Field(
        default=None,
        description="where the team's pipeline runs must keep their artifacts, checked against the platform's "
        "`kubeflow.pipelines.artifacts` (refused when it differs); none: wherever the platform's Pipelines keep "
        "them (with `s3`, under `<prefix>/pipelines` of the team's prefix in the platform's `kubeflow.bucket`)",
    )
    models: dict[InferenceServiceName, TeamModel] = Field(
        default_factory=dict,
        description="InferenceServices of the namespace published on the Kubeflow gateway at "
        "`/serving/<team>/<name>/`, by name (the platform must run KServe, `kubeflow.components.kserve`); none: "
        "models are reached only in the cluster",
    )


class TeamConfig(ConfigModel):
    name: NamespaceName = Field(description="the team's name: its namespace, and its NodePool `team-<name>`")
    quota: TeamQuota = Field(description="what the team's namespace may request and hold at once (a ResourceQuota)")
    default_requests: DefaultRequests = Field(
        default=DefaultRequests(), description="requests given to containers that set none (a LimitRange)"
    )
    network: TeamNetwork = Field(
        default=TeamNetwork(),
        description=(
            "what the namespace's default-deny NetworkPolicy lets through beyond DNS, Prometheus and its own pods"
        ),
    )
    service_account: KeyName | None = Field(
        default=None,
        description="the service account the team's IRSA role is for (its pods run as it); none: the team's name, "
        f"or `{TEAM_SERVICE_ACCOUNT}` with `kubeflow` (the one a Profile's pods run as; another is refused then)",
    )
    storage: TeamStorage | None = Field(
        default=None,
        description="the team's prefix in a platform bucket; none: the role may use no bucket, but a team with "
        "`kubeflow` on a platform whose Pipelines keep artifacts in S3 gets `teams/<team>` of that bucket (its "
        "`kubeflow.bucket`, the only bucket such a team may name here)",
    )
    node_pool: TeamPool | None = Field(
        default=None, description="a NodePool for the team alone; none: the team's pods use the platform's pools"
    )
    fsx_claims: dict[KeyName, FsxClaim] = Field(
        default_factory=dict,
        description="claims on FSx for Lustre in the team's namespace, keyed by claim name; at most one on the "
        "platform's shared file system (it mounts all of it)",
    )
    kubeflow: TeamKubeflow | None = Field(
        default=None,
        description="a Kubeflow Profile for the team's namespace (needs a platform that runs Kubeflow): the "
        "dashboard, notebooks and pipelines there, as `default-editor` with the team's role; none: no Profile",
    )

    @property
    def service_account_name(self) -> str:
        if self.kubeflow is not None:
            return TEAM_SERVICE_ACCOUNT
        return self.service_account or self.name

    @property
    def s3_prefix(self) -> str | None:
        if self.storage is None:
            return None
        return self.own_prefix

    @property
    def own_prefix(self) -> str:
        """The team's prefix in whichever platform bucket it gets one of: `storage.prefix`, else `teams/<team>`."""
        if self.storage is not None and self.storage.prefix is not None:
            return self.storage.prefix
        return f"teams/{self.name}"

    @model_validator(mode="after")
    def _check(self) -> TeamConfig:
        problems = []
        shared = sorted(key for key, claim in self.fsx_claims.items() if not claim.storage_class)
        if len(shared) > 1:
            problems.append(("fsxClaims", f"{shared} all claim the shared file system; one claim mounts all of it"))
        if self.kubeflow is not None and self.service_account not in (None, TEAM_SERVICE_ACCOUNT):
            problems.append(
                (
                    "serviceAccount",
                    (
                        f"a Profile's pods run as {TEAM_SERVICE_ACCOUNT!r}, which the team's role is for with "
                        "`kubeflow`; remove it"
                    ),
                )
            )
        if problems:
            raise FieldProblems(problems)
        return self


class TeamStackConfig(ConfigModel):
    project: StrictStr = Field(description="the Pulumi project (from the Pulumi context, not stack config)")
    stack: StrictStr = Field(description="the Pulumi stack (from the Pulumi context, not stack config)")
    region: Region = Field(
        description="the region the team's AWS objects are created in: the platform's (checked as the platform's is)"
    )
    profile: StrictStr | None = Field(
        default=None,
        description="AWS CLI profile for the program's AWS provider and for the kubeconfig of the platform's cluster "
        "(one identity for both, with an access entry on the cluster); none: the default credential chain",
    )
    owner: StrictStr = Field(
        min_length=1, description="who answers for what the stack creates: `owner` tag on every AWS object"
    )
    cost_center: StrictStr | None = Field(
        default=None, description="`cost-center` tag on every AWS object; none: no such tag"
    )
    platform_stack: StackName = Field(description="the platform stack whose outputs the team stack attaches to")
    team: TeamConfig = Field(description="the team: its namespace, identity, NodePool, FSx claims and Kubeflow Profile")


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
    document: dict[str, Any] = dict(zip(CONTEXT_KEYS, (project, stack), strict=True))
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
