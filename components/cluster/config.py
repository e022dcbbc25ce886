"""Stack configuration of the EKS cluster: version, API endpoint access, logs, admins, the system node group."""

from __future__ import annotations

import re
from ipaddress import IPv4Network
from typing import Annotated

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from .. import versions
from ..config.cidrs import whole_internet_problems
from ..config.types import (
    Cidr,
    ConfigModel,
    ControlPlaneLog,
    IamPrincipalArn,
    KeyName,
    SecurityGroupId,
    one_of,
    prefix_between,
)
from ..config.validation import FieldProblems, matches
from ..instances.families import family_of_type, is_graviton, type_problem

#: A lowercase DNS-style name of 2 to 40 characters (EKS allows 100; the tags and names derived from it stay short).
CLUSTER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$")


class EndpointAccess(ConfigModel):
    """Who can reach the Kubernetes API server."""

    public: StrictBool = Field(description="public API endpoint")
    private: StrictBool = Field(
        default=True,
        description="private API endpoint; must be true: nodes in private subnets reach the API through it",
    )
    public_cidrs: tuple[Cidr, ...] = Field(
        default=(),
        description="who may reach the public endpoint; required when `public` is true, refused otherwise; "
        "ranges that admit every IPv4 address (`0.0.0.0/0`, or `0.0.0.0/1` with `128.0.0.0/1`) are refused",
    )
    private_cidrs: tuple[Cidr, ...] = Field(
        default=(),
        description="ranges (a VPN, a CI runner's subnet, a peered network) whose HTTPS the cluster security group "
        "admits, so they reach the private endpoint (it admits only itself otherwise); ranges that admit every IPv4 "
        "address, alone or together, are refused",
    )
    private_security_groups: tuple[SecurityGroupId, ...] = Field(
        default=(), description="security groups (a bastion's, a runner's) admitted the same way"
    )

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
        for key, values in (
            ("privateCidrs", self.private_cidrs),
            ("privateSecurityGroups", self.private_security_groups),
        ):
            if len(set(values)) != len(values):
                problems.append((key, "lists a value more than once"))
        # One test for every key that opens something: a range of /0, or ranges that together cover a whole family.
        problems += whole_internet_problems(
            "privateCidrs", self.private_cidrs, "the private endpoint", "list your VPN or runner ranges"
        )
        problems += whole_internet_problems(
            "publicCidrs", self.public_cidrs, "the API server", "list your egress ranges"
        )
        if problems:
            raise FieldProblems(problems)
        return self


class SystemNodeGroup(ConfigModel):
    """The small on-demand managed node group that hosts controllers (Karpenter never runs on what it manages)."""

    instance_types: tuple[StrictStr, ...] = Field(
        default=("m7i.xlarge", "m6i.xlarge"),
        min_length=1,
        description=(
            "on-demand instance types for the controllers; x86_64 only (the nodes run the x86_64 AL2023 AMI); the "
            "default holds every controller with all nodes up (the preview prints their requests)"
        ),
    )
    min_size: StrictInt = Field(default=2, ge=1, le=10, description="fewest nodes")
    max_size: StrictInt = Field(default=3, ge=1, le=10, description="most nodes")
    desired_size: StrictInt = Field(
        default=2, ge=1, le=10, description="nodes at creation; `minSize <= desiredSize <= maxSize`"
    )
    disk_size_gib: StrictInt = Field(
        default=50, ge=20, le=1000, description="size of each node's encrypted gp3 root volume"
    )

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
                    (
                        f"expected minSize <= desiredSize <= maxSize, got {self.min_size} <= "
                        f"{self.desired_size} <= {self.max_size}"
                    ),
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
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)


class ClusterConfig(ConfigModel):
    """The EKS control plane and its system node group."""

    name: (
        Annotated[StrictStr, matches(CLUSTER_NAME.pattern, "a lowercase DNS-style name of 2 to 40 characters")] | None
    ) = Field(
        default=None,
        description="EKS cluster name, also in the discovery tags and the log group's name; none: `<project>-<stack>`",
    )
    kubernetes_version: Annotated[StrictStr, one_of(versions.KUBERNETES_VERSIONS, "the supported versions")] = Field(
        default=versions.DEFAULT_KUBERNETES_VERSION,
        description="control-plane version; the EKS add-on builds follow it (see `components/versions/`)",
    )
    endpoint: EndpointAccess = Field(description="who can reach the Kubernetes API server")
    service_cidr: Annotated[Cidr, prefix_between(16, 24)] = Field(
        default=IPv4Network("172.20.0.0/16"), description="Kubernetes service addresses; must not overlap the VPC"
    )
    log_types: tuple[ControlPlaneLog, ...] = Field(
        default=(ControlPlaneLog.API, ControlPlaneLog.AUDIT, ControlPlaneLog.AUTHENTICATOR),
        description="control-plane logs sent to CloudWatch",
    )
    log_retention_days: Annotated[StrictInt, one_of(_LOG_RETENTION_DAYS, "the CloudWatch retention periods")] = Field(
        default=90, description="days the control-plane log group keeps its logs"
    )
    admin_principals: dict[KeyName, IamPrincipalArn] = Field(
        default_factory=dict,
        description="IAM roles and users given EKS access entries with `AmazonEKSClusterAdminPolicy` at cluster "
        "scope, each under a name of your choice",
    )
    system_node_group: SystemNodeGroup = Field(
        default=SystemNodeGroup(),
        description="the small on-demand managed node group that hosts the controllers (Karpenter never runs on what "
        "it manages); tainted `CriticalAddonsOnly`",
    )

    @model_validator(mode="after")
    def _check(self) -> ClusterConfig:
        if len(set(self.log_types)) != len(self.log_types):
            raise FieldProblems([("logTypes", "lists a log type more than once")])
        return self
