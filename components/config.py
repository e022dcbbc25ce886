"""Stack configuration: parsed once, at the edge, into frozen typed models.

`parse_config` takes the raw Pulumi config of a stack (every `namespace:key` with its string value, as Pulumi hands
it to the program) and returns a `PlatformConfig` or raises `ConfigError` listing every problem at once, each naming
its full key path and what was expected. Components never read config themselves; they take these models (or
plainer values) as arguments.
"""

from __future__ import annotations

import difflib
import json
import re
from enum import StrEnum
from ipaddress import IPv4Network, ip_network
from typing import Annotated, Any, Iterable, Literal, Mapping

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from . import network_plan, versions
from .scheduling import DEFAULT_GPU_SCHEDULER
from .nodepools import DEFAULT_NODE_CLASSES, DEFAULT_NODE_POOLS, NodeClassSpec, NodePoolSpec
from .validation import FieldProblems, matches

PROJECT_NAMESPACE = "eks-ml-platform"
#: Keys of the `aws:` namespace the program reads; the AWS provider is explicit, so any other `aws:` key would
#: be silently ignored by it and is rejected instead.
AWS_KEYS = ("region", "profile")

_REGION = re.compile(r"^(us|eu|ap|sa|ca|me|af|il|mx|cn|us-gov)-[a-z]+-\d$")
_CLUSTER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$")


class ConfigIssue(BaseModel):
    """One problem in a stack's configuration."""

    model_config = ConfigDict(frozen=True)

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(Exception):
    """The stack configuration is invalid; `issues` lists every problem found."""

    def __init__(self, issues: Iterable[ConfigIssue]):
        self.issues = tuple(sorted(set(issues), key=lambda issue: (issue.path, issue.message)))
        lines = "\n".join(f"  - {issue}" for issue in self.issues)
        super().__init__(f"invalid stack configuration ({len(self.issues)} problem(s)):\n{lines}")


# --------------------------------------------------------------------------------------------------- value types


def _cidr(value: Any) -> IPv4Network:
    if isinstance(value, IPv4Network):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected an IPv4 CIDR string like '10.0.0.0/16', got {type(value).__name__}")
    try:
        network = ip_network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"expected an IPv4 CIDR like '10.0.0.0/16' with no host bits set, got {value!r} ({exc})")
    if not isinstance(network, IPv4Network):
        raise ValueError(f"expected an IPv4 CIDR, got the IPv6 network {value!r}")
    return network


Cidr = Annotated[IPv4Network, BeforeValidator(_cidr)]


def _one_of(allowed: Iterable[Any], what: str):
    choices = tuple(allowed)

    def check(value: Any) -> Any:
        if value not in choices:
            raise ValueError(f"expected one of {what} {', '.join(repr(c) for c in choices)}, got {value!r}")
        return value

    return AfterValidator(check)


def _prefix_between(low: int, high: int):
    def check(value: IPv4Network) -> IPv4Network:
        if not low <= value.prefixlen <= high:
            raise ValueError(f"expected a prefix length between /{low} and /{high}, got /{value.prefixlen}")
        return value

    return AfterValidator(check)


VpcId = Annotated[StrictStr, matches(r"vpc-[0-9a-f]{8,17}", "a VPC id like 'vpc-0123456789abcdef0'")]
SubnetId = Annotated[StrictStr, matches(r"subnet-[0-9a-f]{8,17}", "a subnet id like 'subnet-0123456789abcdef0'")]
IamPrincipalArn = Annotated[
    StrictStr,
    matches(
        r"arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/[\w+=,.@/-]+",
        "an IAM role or user ARN like 'arn:aws:iam::123456789012:role/Admin'",
    ),
]
KeyName = Annotated[
    StrictStr, matches(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", "a lowercase name of letters, digits and '-'")
]


class Environment(StrEnum):
    """Which set of defaults a stack starts from: `dev` is cheap, `prod` is safe."""

    DEV = "dev"
    PROD = "prod"


class NatGateways(StrEnum):
    """`single`: one NAT gateway for the VPC (cheap, one AZ's outage cuts egress); `perAz`: one per AZ."""

    SINGLE = "single"
    PER_AZ = "perAz"


class StatefulResources(StrEnum):
    """What `pulumi destroy` does with stateful resources (KMS keys, log groups, buckets, file systems).

    `protect`: destroy refuses until they are unprotected; `retain`: destroy leaves them in AWS and forgets them;
    `destroy`: destroy deletes them, emptying buckets first.
    """

    PROTECT = "protect"
    RETAIN = "retain"
    DESTROY = "destroy"


class ControlPlaneLog(StrEnum):
    API = "api"
    AUDIT = "audit"
    AUTHENTICATOR = "authenticator"
    CONTROLLER_MANAGER = "controllerManager"
    SCHEDULER = "scheduler"


# --------------------------------------------------------------------------------------------------------- models


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, use_enum_values=False
    )


class ExistingVpc(_Model):
    """Bring your own VPC: nothing network-related is created except the discovery tags on the given subnets."""

    vpc_id: VpcId
    private_subnet_ids: tuple[SubnetId, ...] = Field(min_length=2)
    public_subnet_ids: tuple[SubnetId, ...] = ()

    @model_validator(mode="after")
    def _distinct(self) -> ExistingVpc:
        shared = set(self.private_subnet_ids) & set(self.public_subnet_ids)
        if shared:
            raise FieldProblems([("publicSubnetIds", f"{sorted(shared)} are also listed as private subnets")])
        return self


class NetworkConfig(_Model):
    """The VPC: created from `cidr`, or taken as it is from `existing`."""

    cidr: Annotated[Cidr, _prefix_between(network_plan.MIN_VPC_PREFIX, network_plan.MAX_VPC_PREFIX)] = IPv4Network(
        "10.0.0.0/16"
    )
    availability_zones: tuple[StrictStr, ...] = Field(min_length=2, max_length=network_plan.MAX_AZS)
    nat_gateways: NatGateways = NatGateways.SINGLE
    existing: ExistingVpc | None = None

    @model_validator(mode="after")
    def _check(self) -> NetworkConfig:
        problems: list[tuple[str, str]] = []
        if len(set(self.availability_zones)) != len(self.availability_zones):
            problems.append(("availabilityZones", "lists an availability zone more than once"))
        if self.existing is not None:
            for key in ("cidr", "nat_gateways"):
                if key in self.model_fields_set:
                    problems.append((to_camel(key), "is not used when network.existing is set; remove it"))
        if problems:
            raise FieldProblems(problems)
        return self


class EndpointAccess(_Model):
    """Who can reach the Kubernetes API server."""

    public: StrictBool
    private: StrictBool = True
    public_cidrs: tuple[Cidr, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> EndpointAccess:
        problems: list[tuple[str, str]] = []
        if not self.public and not self.private:
            problems.append(("private", "must be true when public is false, or nothing can reach the API server"))
        if self.public and not self.public_cidrs:
            problems.append(
                ("publicCidrs", "must list the CIDRs allowed to reach the public endpoint (it is never opened to all)")
            )
        if not self.public and self.public_cidrs:
            problems.append(("publicCidrs", "is only used when public is true; remove it"))
        if problems:
            raise FieldProblems(problems)
        return self


class SystemNodeGroup(_Model):
    """The small on-demand managed node group that hosts controllers (Karpenter never runs on what it manages)."""

    instance_types: tuple[StrictStr, ...] = Field(default=("m7i.large", "m6i.large"), min_length=1)
    min_size: StrictInt = Field(default=2, ge=1, le=10)
    max_size: StrictInt = Field(default=3, ge=1, le=10)
    desired_size: StrictInt = Field(default=2, ge=1, le=10)
    disk_size_gib: StrictInt = Field(default=50, ge=20, le=1000)

    @model_validator(mode="after")
    def _check(self) -> SystemNodeGroup:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise FieldProblems(
                [
                    (
                        "desiredSize",
                        f"expected minSize <= desiredSize <= maxSize, got {self.min_size} <= "
                        f"{self.desired_size} <= {self.max_size}",
                    )
                ]
            )
        return self


#: The values CloudWatch Logs accepts for a log group's retention.
_LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
)


class ClusterConfig(_Model):
    """The EKS control plane and its system node group."""

    name: Annotated[StrictStr, matches(_CLUSTER_NAME.pattern, "a lowercase DNS-style name of 2 to 40 characters")] | None = None
    kubernetes_version: Annotated[
        StrictStr, _one_of(versions.KUBERNETES_VERSIONS, "the supported versions")
    ] = versions.DEFAULT_KUBERNETES_VERSION
    endpoint: EndpointAccess
    service_cidr: Annotated[Cidr, _prefix_between(16, 24)] = IPv4Network("172.20.0.0/16")
    log_types: tuple[ControlPlaneLog, ...] = (ControlPlaneLog.API, ControlPlaneLog.AUDIT, ControlPlaneLog.AUTHENTICATOR)
    log_retention_days: Annotated[
        StrictInt, _one_of(_LOG_RETENTION_DAYS, "the CloudWatch retention periods")
    ] = 90
    admin_principals: dict[KeyName, IamPrincipalArn] = Field(default_factory=dict)
    system_node_group: SystemNodeGroup = SystemNodeGroup()

    @model_validator(mode="after")
    def _check(self) -> ClusterConfig:
        if len(set(self.log_types)) != len(self.log_types):
            raise FieldProblems([("logTypes", "lists a log type more than once")])
        return self




class KarpenterConfig(_Model):
    """The Karpenter controller, its node classes and node pools (mappings keyed by name)."""

    log_level: Literal["debug", "info", "error"] = "info"
    node_classes: dict[KeyName, NodeClassSpec] = Field(
        default_factory=lambda: {k: NodeClassSpec.model_validate(v) for k, v in DEFAULT_NODE_CLASSES.items()}
    )
    node_pools: dict[KeyName, NodePoolSpec] = Field(
        default_factory=lambda: {k: NodePoolSpec.model_validate(v) for k, v in DEFAULT_NODE_POOLS.items()}
    )

    @model_validator(mode="after")
    def _check(self) -> KarpenterConfig:
        problems = [
            (f"nodePools.{name}.nodeClass", f"names no node class in karpenter.nodeClasses ({', '.join(sorted(self.node_classes))})")
            for name, pool in self.node_pools.items()
            if pool.node_class not in self.node_classes
        ]
        if problems:
            raise FieldProblems(problems)
        return self


class MigOptions(_Model):
    """Multi-Instance GPU: partition A100/H100 class GPUs. Nodes pick a profile by the `nvidia.com/mig.config` label
    (set it in a NodePool's `labels`); `defaultProfile` applies to nodes without one."""

    strategy: Literal["single", "mixed"]
    default_profile: Annotated[StrictStr, matches(r"[a-z0-9][a-z0-9.-]*", "a MIG profile name like 'all-1g.10gb'")] = "all-disabled"


class BinPackingScheduler(_Model):
    """The secondary scheduler GPU pods use: packs them onto as few nodes as possible."""

    enabled: StrictBool = True
    name: KeyName = DEFAULT_GPU_SCHEDULER
    strategy: Literal["MostAllocated", "RequestedToCapacityRatio"] = "MostAllocated"
    gpu_weight: StrictInt = Field(default=10, ge=1, le=100)
    replicas: StrictInt = Field(default=2, ge=1, le=5)


class GpuAdmission(_Model):
    """Admission checks on GPU pods in tenant namespaces."""

    enabled: StrictBool = True
    action: Literal["deny", "warn", "audit"] = "deny"
    exempt_namespaces: tuple[KeyName, ...] = ()


class GpuConfig(_Model):
    """The GPU stack (installed when a NodePool launches NVIDIA GPUs)."""

    node_feature_discovery: StrictBool = True
    mig: MigOptions | None = None
    time_slicing_replicas: StrictInt | None = Field(default=None, ge=2, le=48)
    scheduler: BinPackingScheduler = BinPackingScheduler()
    admission: GpuAdmission = GpuAdmission()

    @model_validator(mode="after")
    def _check(self) -> GpuConfig:
        if self.mig is not None and self.time_slicing_replicas is not None:
            raise FieldProblems([("timeSlicingReplicas", "cannot be combined with mig; choose one way to share GPUs")])
        return self


class PlatformConfig(_Model):
    """Everything a stack of the platform is configured with."""

    project: StrictStr
    stack: StrictStr
    region: StrictStr
    profile: StrictStr | None = None
    environment: Environment
    owner: StrictStr = Field(min_length=1)
    cost_center: StrictStr | None = None
    stateful_resources: StatefulResources
    network: NetworkConfig
    cluster: ClusterConfig
    karpenter: KarpenterConfig = KarpenterConfig()
    gpu: GpuConfig = GpuConfig()

    @property
    def gpu_node_image(self) -> Literal["al2023", "bottlerocket"] | None:
        """The AMI family of the nodes NVIDIA pools launch (one family: the GPU Operator runs one configuration)."""
        families = self._gpu_node_images()
        return next(iter(families)) if len(families) == 1 else None

    def _gpu_node_images(self) -> set[str]:
        classes = self.karpenter.node_classes
        return {
            classes[pool.node_class].ami_family
            for pool in self.karpenter.node_pools.values()
            if pool.accelerator == "nvidia" and pool.node_class in classes
        }

    @property
    def cluster_name(self) -> str:
        return self.cluster.name or f"{self.project}-{self.stack}"

    @model_validator(mode="after")
    def _check(self) -> PlatformConfig:
        problems: list[tuple[str, str]] = []
        problems.extend(_region_problems(self.region, self.network.availability_zones))
        for name, pool in self.karpenter.node_pools.items():
            for index, zone in enumerate(pool.zones):
                if zone not in self.network.availability_zones:
                    problems.append(
                        (
                            f"karpenter.nodePools.{name}.zones[{index}]",
                            f"{zone!r} is not one of the stack's availability zones {list(self.network.availability_zones)}",
                        )
                    )
        if self.network.existing is None and self.network.cidr.overlaps(self.cluster.service_cidr):
            problems.append(
                (
                    "cluster.serviceCidr",
                    f"{self.cluster.service_cidr} overlaps the VPC CIDR {self.network.cidr}; "
                    "Kubernetes service addresses must not collide with pod and node addresses",
                )
            )
        images = self._gpu_node_images()
        if len(images) > 1:
            problems.append(
                ("karpenter.nodeClasses", f"NVIDIA pools use node classes of several AMI families {sorted(images)}; use one")
            )
        if not images and "gpu" in self.model_fields_set:
            problems.append(("gpu", "is configured but no NodePool launches NVIDIA GPUs; remove it or add a GPU pool"))
        if images == {"bottlerocket"}:
            for key, value in (("gpu.mig", self.gpu.mig), ("gpu.timeSlicingReplicas", self.gpu.time_slicing_replicas)):
                if value is not None:
                    problems.append((key, "is not available on Bottlerocket, which runs its own device plugin"))
        if not _CLUSTER_NAME.match(self.cluster_name):
            problems.append(
                (
                    "cluster.name",
                    f"the default name {self.cluster_name!r} (project-stack) is not a lowercase DNS-style name of "
                    "2 to 40 characters; set cluster.name",
                )
            )
        if problems:
            raise FieldProblems(problems)
        return self


def _region_problems(region: Any, zones: Any) -> list[tuple[str, str]]:
    if not region:  # missing: reported once, as required
        return []
    if not isinstance(region, str) or not _REGION.match(region):
        return [("aws:region", f"expected an AWS region like 'us-west-2', got {region!r}")]
    problems = []
    for index, zone in enumerate(zones if isinstance(zones, (list, tuple)) else ()):
        if isinstance(zone, str) and not re.fullmatch(re.escape(region) + r"[a-z]", zone):
            problems.append(
                (
                    f"network.availabilityZones[{index}]",
                    f"expected an availability zone of {region} like '{region}a', got {zone!r}",
                )
            )
    return problems


# ------------------------------------------------------------------------------------------- environment defaults


def environment_defaults(environment: Environment, region: str, existing_vpc: bool = False) -> dict[str, Any]:
    """What an environment implies for every key the user leaves out (keys as they are written in stack config).

    An existing VPC brings its own NAT and AZs, so neither is implied for it.
    """
    if environment is Environment.DEV:
        defaults: dict[str, Any] = {
            "statefulResources": StatefulResources.DESTROY.value,
            "network": {"availabilityZones": [f"{region}a", f"{region}b"], "natGateways": NatGateways.SINGLE.value},
            "cluster": {"endpoint": {"public": True, "private": True}},
        }
    else:
        defaults = {
            "statefulResources": StatefulResources.PROTECT.value,
            "network": {
                "availabilityZones": [f"{region}a", f"{region}b", f"{region}c"],
                "natGateways": NatGateways.PER_AZ.value,
            },
            "cluster": {"endpoint": {"public": False, "private": True}},
        }
    if existing_vpc:  # its NAT and its AZs are whatever the existing subnets have: never guessed
        del defaults["network"]["natGateways"]
        del defaults["network"]["availabilityZones"]
    return defaults


def _fill_defaults(values: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    filled = dict(values)
    for key, default in defaults.items():
        if key not in filled:
            filled[key] = default
        elif isinstance(default, Mapping) and isinstance(filled[key], dict):
            filled[key] = _fill_defaults(filled[key], default)
    return filled


# ------------------------------------------------------------------------------------------------------- parsing


def _decode(value: Any) -> Any:
    """Pulumi hands structured config to the program as JSON text; scalars stay strings."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def parse_config(raw: Mapping[str, Any], *, project: str, stack: str) -> PlatformConfig:
    """Turn a stack's raw config (`namespace:key` -> value) into a `PlatformConfig`, or raise `ConfigError`."""
    issues: list[ConfigIssue] = []
    values: dict[str, Any] = {}
    aws: dict[str, Any] = {}
    for full_key in sorted(raw):
        namespace, _, key = full_key.partition(":")
        value = _decode(raw[full_key])
        if namespace == PROJECT_NAMESPACE:
            values[key] = value
        elif namespace == "aws" and key in AWS_KEYS:
            aws[key] = value
        elif namespace == "aws":
            issues.append(
                ConfigIssue(
                    path=full_key,
                    message=f"is not read: the program's AWS provider takes only {', '.join('aws:' + k for k in AWS_KEYS)}; "
                    "set other provider options through AWS_* environment variables",
                )
            )
        elif namespace != "pulumi":
            issues.append(
                ConfigIssue(path=full_key, message=f"is not read by this program (its keys are {PROJECT_NAMESPACE}:*)")
            )

    region = aws.get("region")
    if region is None:
        issues.append(ConfigIssue(path="aws:region", message="is required (e.g. 'us-west-2')"))
        region = ""  # the remaining keys are still checked
    environment = values.get("environment")
    if environment in {e.value for e in Environment}:
        network = values.get("network")
        existing_vpc = isinstance(network, dict) and "existing" in network
        values = _fill_defaults(values, environment_defaults(Environment(environment), str(region), existing_vpc))

    document = {**values, "project": project, "stack": stack, "region": region}
    if "profile" in aws:
        document["profile"] = aws["profile"]
    # Checked here as well as on the model, so a wrong AZ is reported even when other keys fail to validate.
    network = values.get("network")
    zones = network.get("availabilityZones") if isinstance(network, dict) else None
    issues.extend(ConfigIssue(path=path, message=message) for path, message in _region_problems(region, zones))
    try:
        config = PlatformConfig.model_validate(document)
    except ValidationError as exc:
        issues.extend(_issues_from(exc))
        raise ConfigError(issues) from None
    if issues:
        raise ConfigError(issues)
    return config


def _issues_from(error: ValidationError) -> list[ConfigIssue]:
    issues = []
    for detail in error.errors():
        loc = tuple(detail["loc"])
        cause = (detail.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblems):
            for key, message in cause.problems:
                issues.append(ConfigIssue(path=_join(loc, key), message=message))
            continue
        if loc and loc[-1] == "[key]":
            issues.append(ConfigIssue(path=_join(loc[:-1]), message=f"the key {loc[-2]!r}: {detail['msg'].removeprefix('Value error, ')}"))
            continue
        if detail["type"] == "extra_forbidden":
            issues.append(ConfigIssue(path=_join(loc), message=_unknown_key_message(loc)))
            continue
        if detail["type"] == "missing":
            issues.append(ConfigIssue(path=_join(loc), message="is required"))
            continue
        ctx = detail.get("ctx") or {}
        if detail["type"] == "too_short":
            issues.append(ConfigIssue(path=_join(loc), message=f"expected at least {ctx['min_length']} item(s), got {ctx['actual_length']}"))
            continue
        if detail["type"] == "too_long":
            issues.append(ConfigIssue(path=_join(loc), message=f"expected at most {ctx['max_length']} item(s), got {ctx['actual_length']}"))
            continue
        message = detail["msg"].removeprefix("Value error, ")
        if detail["type"] not in {"value_error"}:
            message = f"{message}, got {detail['input']!r}"
        issues.append(ConfigIssue(path=_join(loc), message=message))
    return issues


def _join(loc: tuple[Any, ...], extra: str | None = None) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            parts[-1] = f"{parts[-1]}[{part}]"
        else:
            parts.append(str(part))
    if extra is not None:
        if extra.startswith("aws:"):
            return extra
        parts.extend(extra.split("."))
    if parts and parts[0] in {"project", "stack"}:
        return parts[0]
    if parts and parts[0] == "region":
        return "aws:region"
    return ".".join(parts)


def _unknown_key_message(loc: tuple[Any, ...]) -> str:
    known = _known_keys(PlatformConfig, loc[:-1])
    known -= {"project", "stack", "region", "profile"}
    hint = difflib.get_close_matches(str(loc[-1]), sorted(known), n=1)
    suffix = f"; did you mean {hint[0]!r}?" if hint else ""
    return f"unknown key (expected one of {', '.join(sorted(known))}){suffix}"


def _known_keys(model: type[BaseModel], path: tuple[Any, ...]) -> set[str]:
    """The keys a model accepts at `path` (walking through nested models, mappings and sequences)."""
    current: Any = model
    for part in path:
        if isinstance(part, int):
            continue
        target = _model_in(current)
        if target is None:
            return set()
        fields = {field.alias or name: field for name, field in target.model_fields.items()}
        if part in fields:
            current = fields[part].annotation
        else:  # a mapping key: the value type carries on
            current = target
    target = _model_in(current)
    if target is None:
        return set()
    return {field.alias or name for name, field in target.model_fields.items()}


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None
