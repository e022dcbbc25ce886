"""Stack configuration: parsed once, at the edge, into frozen typed models.

`parse_config` takes the raw Pulumi config of a stack (every `namespace:key` with its string value, as Pulumi hands
it to the program) and returns a `PlatformConfig` or raises `ConfigError` listing every problem at once, each naming
its full key path and what was expected. Components never read config themselves; they take these models (or
plainer values) as arguments.
"""

from __future__ import annotations

import json
import re
from ipaddress import IPv4Network
from typing import Annotated, Any, Literal, Mapping

from pydantic import Field, StrictBool, StrictInt, StrictStr, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from . import network_plan, system_capacity, versions
from .config_errors import ConfigError, ConfigIssue, issues_from
from .config_gpu import BinPackingScheduler, GpuAdmission, GpuConfig, MigOptions
from .config_observability import AlertmanagerConfig, AlertThresholds, ObservabilityConfig
from .config_storage import BucketConfig, DataRepository, FsxConfig, IngressConfig, StorageConfig
from .config_types import (
    Cidr,
    ConfigModel,
    ControlPlaneLog,
    Environment,
    IamPrincipalArn,
    KeyName,
    NatGateways,
    SecurityGroupId,
    StatefulResources,
    SubnetId,
    VpcId,
    one_of,
    prefix_between,
)
from .nodepool_families import family_of_type, is_graviton, type_problem
from .nodepools import DEFAULT_NODE_CLASSES, DEFAULT_NODE_POOLS, NodeClassSpec, NodePoolSpec
from .validation import FieldProblems, matches

__all__ = [
    "AlertmanagerConfig",
    "AlertThresholds",
    "ObservabilityConfig",
    "BinPackingScheduler",
    "BucketConfig",
    "DataRepository",
    "FsxConfig",
    "IngressConfig",
    "StorageConfig",
    "ClusterConfig",
    "ConfigError",
    "ConfigIssue",
    "ControlPlaneLog",
    "EndpointAccess",
    "Environment",
    "ExistingVpc",
    "GpuAdmission",
    "GpuConfig",
    "KarpenterConfig",
    "MigOptions",
    "NatGateways",
    "NetworkConfig",
    "PlatformConfig",
    "StatefulResources",
    "SystemNodeGroup",
    "parse_config",
]

PROJECT_NAMESPACE = "eks-ml-platform"
#: Keys of the `aws:` namespace the program reads; the AWS provider is explicit, so any other `aws:` key would
#: be silently ignored by it and is rejected instead.
AWS_KEYS = ("region", "profile")

_REGION = re.compile(r"^(us|eu|ap|sa|ca|me|af|il|mx|cn|us-gov)-[a-z]+-\d$")
_CLUSTER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$")


class ExistingVpc(ConfigModel):
    """Bring your own VPC: nothing network-related is created except the discovery tags on the given subnets."""

    vpc_id: VpcId
    #: Load balancers find public subnets by their `kubernetes.io/role/elb` tag, which stays the VPC owner's.
    private_subnet_ids: tuple[SubnetId, ...] = Field(min_length=2)

    @model_validator(mode="after")
    def _distinct(self) -> ExistingVpc:
        if len(set(self.private_subnet_ids)) != len(self.private_subnet_ids):
            raise FieldProblems([("privateSubnetIds", "lists a subnet more than once")])
        return self


class NetworkConfig(ConfigModel):
    """The VPC: created from `cidr`, or taken as it is from `existing`."""

    cidr: Annotated[Cidr, prefix_between(network_plan.MIN_VPC_PREFIX, network_plan.MAX_VPC_PREFIX)] = IPv4Network(
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
            if len(self.existing.private_subnet_ids) != len(self.availability_zones):
                problems.append(
                    (
                        "existing.privateSubnetIds",
                        f"lists {len(self.existing.private_subnet_ids)} subnets for {len(self.availability_zones)} "
                        "availability zones; give one per AZ, in the order of availabilityZones",
                    )
                )
            for key in ("cidr", "nat_gateways"):
                if key in self.model_fields_set:
                    problems.append((to_camel(key), "is not used when network.existing is set; remove it"))
        if problems:
            raise FieldProblems(problems)
        return self


class EndpointAccess(ConfigModel):
    """Who can reach the Kubernetes API server."""

    public: StrictBool
    private: StrictBool = True
    public_cidrs: tuple[Cidr, ...] = ()
    #: Who may reach the private endpoint from inside the VPC or a network joined to it (a VPN, a CI runner's
    #: subnet, a bastion): the cluster security group admits only itself otherwise.
    private_cidrs: tuple[Cidr, ...] = ()
    private_security_groups: tuple[SecurityGroupId, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> EndpointAccess:
        problems: list[tuple[str, str]] = []
        if not self.private:
            # The public endpoint admits only publicCidrs, never the NAT gateways' addresses; with public off
            # nothing at all could reach the API server.
            problems.append(("private", "must be true: nodes in private subnets reach the API server through it"))
        if self.public and not self.public_cidrs:
            problems.append(
                ("publicCidrs", "must list the CIDRs allowed to reach the public endpoint (it is never opened to all)")
            )
        if not self.public and self.public_cidrs:
            problems.append(("publicCidrs", "is only used when public is true; remove it"))
        for key, values in (("privateCidrs", self.private_cidrs), ("privateSecurityGroups", self.private_security_groups)):
            if len(set(values)) != len(values):
                problems.append((key, "lists a value more than once"))
        for index, cidr in enumerate(self.private_cidrs):
            if cidr.prefixlen == 0:
                problems.append((f"privateCidrs[{index}]", f"{cidr} admits every address; list your VPN or runner ranges"))
        for index, cidr in enumerate(self.public_cidrs):
            if cidr.prefixlen == 0:
                problems.append(
                    (f"publicCidrs[{index}]", f"{cidr} opens the API server to the whole internet; list your egress ranges")
                )
        if problems:
            raise FieldProblems(problems)
        return self


class SystemNodeGroup(ConfigModel):
    """The small on-demand managed node group that hosts controllers (Karpenter never runs on what it manages)."""

    instance_types: tuple[StrictStr, ...] = Field(default=("m7i.large", "m6i.large"), min_length=1)
    min_size: StrictInt = Field(default=2, ge=1, le=10)
    max_size: StrictInt = Field(default=3, ge=1, le=10)
    desired_size: StrictInt = Field(default=2, ge=1, le=10)
    disk_size_gib: StrictInt = Field(default=50, ge=20, le=1000)

    @model_validator(mode="after")
    def _check(self) -> SystemNodeGroup:
        problems = [
            (f"instanceTypes[{index}]", problem)
            for index, name in enumerate(self.instance_types)
            if (problem := _x86_instance_type_problem(name))
        ]
        if not self.min_size <= self.desired_size <= self.max_size:
            problems.append(
                (
                    "desiredSize",
                    f"expected minSize <= desiredSize <= maxSize, got {self.min_size} <= "
                    f"{self.desired_size} <= {self.max_size}",
                )
            )
        if problems:
            raise FieldProblems(problems)
        return self


def _x86_instance_type_problem(name: str) -> str | None:
    """Why the system node group's x86_64 AMI could not run on this instance type, if it could not."""
    if type_problem(name):
        return f"expected an EC2 instance type like 'm7i.large', got {name!r}"
    if is_graviton(family_of_type(name)):
        return f"{name!r} is an Arm (Graviton) type; the system nodes run the x86_64 AL2023 AMI"
    return None


#: The values CloudWatch Logs accepts for a log group's retention.
_LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
)


class ClusterConfig(ConfigModel):
    """The EKS control plane and its system node group."""

    name: Annotated[StrictStr, matches(_CLUSTER_NAME.pattern, "a lowercase DNS-style name of 2 to 40 characters")] | None = None
    kubernetes_version: Annotated[
        StrictStr, one_of(versions.KUBERNETES_VERSIONS, "the supported versions")
    ] = versions.DEFAULT_KUBERNETES_VERSION
    endpoint: EndpointAccess
    service_cidr: Annotated[Cidr, prefix_between(16, 24)] = IPv4Network("172.20.0.0/16")
    log_types: tuple[ControlPlaneLog, ...] = (ControlPlaneLog.API, ControlPlaneLog.AUDIT, ControlPlaneLog.AUTHENTICATOR)
    log_retention_days: Annotated[
        StrictInt, one_of(_LOG_RETENTION_DAYS, "the CloudWatch retention periods")
    ] = 90
    admin_principals: dict[KeyName, IamPrincipalArn] = Field(default_factory=dict)
    system_node_group: SystemNodeGroup = SystemNodeGroup()

    @model_validator(mode="after")
    def _check(self) -> ClusterConfig:
        if len(set(self.log_types)) != len(self.log_types):
            raise FieldProblems([("logTypes", "lists a log type more than once")])
        return self




class KarpenterConfig(ConfigModel):
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


class PlatformConfig(ConfigModel):
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
    storage: StorageConfig = StorageConfig()
    ingress: IngressConfig = IngressConfig()
    observability: ObservabilityConfig = ObservabilityConfig()

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
    def system_capacity(self) -> system_capacity.SystemCapacity:
        """What the system node group hosts with this config, and its room."""
        gpu = self.gpu_node_image is not None
        group = self.cluster.system_node_group
        return system_capacity.system_capacity(
            instance_types=group.instance_types,
            nodes=group.desired_size,
            fsx=self.storage.fsx is not None,
            gpu_operator=gpu,
            binpack_scheduler_replicas=self.gpu.scheduler.replicas if gpu and self.gpu.scheduler.enabled else None,
            observability=self.observability.enabled,
        )

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
        problems.extend(self._storage_problems())
        if (full := self.system_capacity.problem()) is not None:
            problems.append(("cluster.systemNodeGroup", full))
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


    def _storage_problems(self) -> list[tuple[str, str]]:
        fsx = self.storage.fsx
        if fsx is None:
            return []
        problems = []
        if fsx.availability_zone is not None and fsx.availability_zone not in self.network.availability_zones:
            problems.append(
                (
                    "storage.fsx.availabilityZone",
                    f"{fsx.availability_zone!r} is not one of the stack's availability zones {list(self.network.availability_zones)}",
                )
            )
        repository = fsx.data_repository
        if repository is not None and repository.bucket not in self.storage.buckets:
            problems.append(
                (
                    "storage.fsx.dataRepository.bucket",
                    f"names no bucket in storage.buckets ({', '.join(sorted(self.storage.buckets))})",
                )
            )
        return problems

    @property
    def fsx_zone(self) -> str | None:
        """The AZ FSx lives in (training pools that read from it belong there too)."""
        fsx = self.storage.fsx
        return None if fsx is None else fsx.availability_zone or self.network.availability_zones[0]


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
    if isinstance(environment, str) and environment in {e.value for e in Environment}:
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
        issues.extend(issues_from(exc, PlatformConfig))
        raise ConfigError(issues) from None
    if issues:
        raise ConfigError(issues)
    return config


