"""Value types and the base model of the stack configuration (shared by the config modules)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from ipaddress import IPv4Network, ip_network
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    model_validator,
)
from pydantic.alias_generators import to_camel

from .validation import FieldProblems, matches


def _cidr(value: Any) -> IPv4Network:
    if isinstance(value, IPv4Network):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected an IPv4 CIDR string like '10.0.0.0/16', got {type(value).__name__}")
    try:
        network = ip_network(value, strict=True)
    except ValueError as exc:
        raise ValueError(
            f"expected an IPv4 CIDR like '10.0.0.0/16' with no host bits set, got {value!r} ({exc})"
        ) from None
    if not isinstance(network, IPv4Network):
        raise ValueError(f"expected an IPv4 CIDR, got the IPv6 network {value!r}")
    return network


Cidr = Annotated[IPv4Network, BeforeValidator(_cidr)]


def one_of(allowed: Iterable[Any], what: str) -> AfterValidator:
    choices = tuple(allowed)

    def check(value: Any) -> Any:
        if value not in choices:
            raise ValueError(f"expected one of {what} {', '.join(repr(c) for c in choices)}, got {value!r}")
        return value

    check.choices = choices  # type: ignore[attr-defined]  # listed by the configuration reference
    return AfterValidator(check)


def prefix_between(low: int, high: int) -> AfterValidator:
    def check(value: IPv4Network) -> IPv4Network:
        if not low <= value.prefixlen <= high:
            raise ValueError(f"expected a prefix length between /{low} and /{high}, got /{value.prefixlen}")
        return value

    check.constraint = f"/{low} to /{high}"  # type: ignore[attr-defined]  # shown by the configuration reference
    return AfterValidator(check)


VpcId = Annotated[StrictStr, matches(r"vpc-[0-9a-f]{8,17}", "a VPC id like 'vpc-0123456789abcdef0'")]
SecurityGroupId = Annotated[StrictStr, matches(r"sg-[0-9a-f]{8,17}", "a security group id like 'sg-0123456789abcdef0'")]
SubnetId = Annotated[StrictStr, matches(r"subnet-[0-9a-f]{8,17}", "a subnet id like 'subnet-0123456789abcdef0'")]
IamPrincipalArn = Annotated[
    StrictStr,
    matches(
        r"arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/[\w+=,.@/-]+",
        "an IAM role or user ARN like 'arn:aws:iam::123456789012:role/Admin'",
    ),
]
#: AWS Tagging, "Tag naming limits and requirements": a value is at most 256 characters of letters, digits, spaces
#: and `_ . : / = + - @`. AWS refuses anything else at create time, after other resources already exist.
_TAG_VALUE = re.compile(r"[\w\s.:/=+\-@]*")
_TAG_VALUE_LIMIT = 256


def _tag_value(value: str) -> str:
    if len(value) > _TAG_VALUE_LIMIT:
        raise ValueError(f"expected a tag value of at most {_TAG_VALUE_LIMIT} characters, got {len(value)}")
    if not _TAG_VALUE.fullmatch(value):
        bad = sorted({c for c in value if not _TAG_VALUE.fullmatch(c)})
        raise ValueError(
            f"expected a tag value of letters, digits, spaces and _ . : / = + - @, got {value!r} "
            f"(AWS refuses {' '.join(repr(c) for c in bad)})"
        )
    return value


_tag_value.expected = "an AWS tag value (at most 256 letters, digits, spaces and _ . : / = + - @)"  # type: ignore[attr-defined]
TagValue = Annotated[StrictStr, AfterValidator(_tag_value)]
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


class Identity(StrEnum):
    """How pods of the platform get their AWS credentials.

    `irsa`: IAM roles for service accounts (the cluster's OIDC provider, the service account annotated with its role);
    `podIdentity`: EKS Pod Identity (the `eks-pod-identity-agent` add-on and an association per service account, no
    annotation).
    """

    IRSA = "irsa"
    POD_IDENTITY = "podIdentity"


class ControlPlaneLog(StrEnum):
    API = "api"
    AUDIT = "audit"
    AUTHENTICATOR = "authenticator"
    CONTROLLER_MANAGER = "controllerManager"
    SCHEDULER = "scheduler"


class ConfigModel(BaseModel):
    """Frozen, camelCase keys in stack config, unknown keys rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, use_enum_values=False
    )


class Switchable(ConfigModel):
    """A section with an `enabled` switch. While it is off its other keys would do nothing, so setting them is an
    error rather than something silently ignored."""

    enabled: StrictBool = Field(
        default=True, description="turns the section on; while it is false its other keys are refused"
    )

    @model_validator(mode="after")
    def _unused_while_disabled(self) -> Switchable:
        unused = sorted(to_camel(field) for field in self.model_fields_set - {"enabled"})
        if not self.enabled and unused:
            raise FieldProblems([(key, "is not used while enabled is false; remove it") for key in unused])
        return self
