"""boto3 clients for the preflight and the live cost lookup, all from one session resolved like the stack's provider:
the `aws:profile` of the stack if it sets one (else the ambient credentials), in its `aws:region`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3

#: The Price List API answers only in a few regions; us-east-1 serves every region's prices.
PRICING_REGION = "us-east-1"


def session_for(profile: str | None, region: str) -> boto3.Session:
    return boto3.Session(profile_name=profile, region_name=region)


@dataclass(frozen=True)
class Clients:
    """One client per service the preflight reads (tests put moto-backed or stubbed clients here)."""

    sts: Any
    ec2: Any
    iam: Any
    quotas: Any
    fsx: Any
    eks: Any
    logs: Any
    sqs: Any
    kms: Any

    @classmethod
    def from_session(cls, session: boto3.Session) -> Clients:
        return cls(
            sts=session.client("sts"),
            ec2=session.client("ec2"),
            iam=session.client("iam"),
            quotas=session.client("service-quotas"),
            fsx=session.client("fsx"),
            eks=session.client("eks"),
            logs=session.client("logs"),
            sqs=session.client("sqs"),
            kms=session.client("kms"),
        )
