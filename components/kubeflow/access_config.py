"""`kubeflow.access`: how people reach the dashboard (a port-forward, or an HTTPS ALB in front of the gateway, with
the ranges it admits, the cluster's tokens and ALB sign-in), parsed at the edge into a frozen model."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, StrictStr, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..config.cidrs import parse_cidr, whole_internet_problems
from ..config.types import ConfigModel
from ..config.validation import FieldProblems, matches
from .alb_auth_config import AlbAuthConfig
from .auth_config import ClusterTokens

CertificateArn = Annotated[
    StrictStr, matches(r"arn:aws(-cn|-us-gov)?:acm:[a-z0-9-]+:\d{12}:certificate/[0-9a-f-]+", "an ACM certificate ARN")
]


def _alb_range(value: object) -> IPv4Network:
    network = parse_cidr(value)
    # The Ingress sets no `ip-address-type`, so the ALB is `ipv4` (the annotation's default), and the controller's
    # security group admits IPv6 ranges only on a `dualstack` ALB (aws-load-balancer-controller v3.5.0,
    # pkg/ingress/model_build_managed_sg.go): an IPv6 range here could not admit anyone.
    if not isinstance(network, IPv4Network):
        raise ValueError(f"{network} is an IPv6 range: the load balancer is IPv4-only (no dualstack); list IPv4 ranges")
    return network


#: A range the Kubeflow ALB admits.
AlbCidr = Annotated[IPv4Network, BeforeValidator(_alb_range)]


class Access(ConfigModel):
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
    allowed_cidrs: tuple[AlbCidr, ...] = Field(
        default=(),
        description="the IPv4 ranges that may connect to the ALB; required with `internet-facing` (the load "
        "balancer controller admits `0.0.0.0/0` without them); empty with `internal`: that default, inside the VPC; "
        "ranges that admit every address, alone or together, are refused",
    )
    cluster_tokens: ClusterTokens | None = Field(
        default=None,
        description="also accept the cluster's service-account tokens at the gateway (upstream's m2m-dex-and-eks: "
        "the token's subject becomes the user), so programs in the cluster call Pipelines with a projected token "
        "of an accepted audience; `true` takes the defaults below; none (or false): only Dex's tokens",
    )
    alb_auth: AlbAuthConfig | None = Field(
        default=None,
        description="the ALB signs people in (OIDC or Cognito) before a request reaches the gateway, where Dex still "
        "signs them in to Kubeflow; none: the ALB forwards every request",
    )

    @field_validator("cluster_tokens", mode="before")
    @classmethod
    def _tokens_switch(cls, value: object) -> object:
        if value is True:
            return {}
        if value is False:
            return None
        return value

    @model_validator(mode="after")
    def _allowed(self) -> Access:
        if self.mode == "alb" and (problems := _allowed_cidr_problems(self.scheme, self.allowed_cidrs)):
            raise FieldProblems(problems)
        return self

    @model_validator(mode="after")
    def _alb_keys(self) -> Access:
        if self.mode == "alb" and self.certificate_arn is None:
            raise ValueError("certificateArn is required with mode alb (the ALB serves HTTPS only)")
        if self.mode == "port-forward":
            unused = sorted(to_camel(f) for f in self.model_fields_set - {"mode", "cluster_tokens"})
            if unused:
                raise ValueError(f"{', '.join(unused)} only apply to mode alb; remove them")
        return self


def _allowed_cidr_problems(scheme: str, cidrs: tuple[IPv4Network, ...]) -> list[tuple[str, str]]:
    """Why the ALB should not admit these ranges (`allowedCidrs`, the controller's `inbound-cidrs`)."""
    key = "allowedCidrs"
    if scheme == "internet-facing" and not cidrs:
        # Without `inbound-cidrs` the controller admits 0.0.0.0/0 to an `ipv4` ALB (aws-load-balancer-controller
        # docs, guide/ingress/annotations.md, "inbound-cidrs"): the whole internet, which the API endpoint never is.
        return [(key, "must list the ranges that may connect: the load balancer controller then admits 0.0.0.0/0")]
    problems = [(key, "lists a range more than once")] if len(set(cidrs)) != len(cidrs) else []
    return problems + whole_internet_problems(
        key, cidrs, "the Kubeflow load balancer", "list the ranges that may connect"
    )
