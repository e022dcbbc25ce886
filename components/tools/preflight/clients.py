"""boto3 clients for the preflight and the live cost lookup, all from one session resolved like the stack's provider:
the `aws:profile` of the stack if it sets one (else the ambient credentials), in its `aws:region`."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import boto3
from botocore.parsers import ResponseParserError

#: The Price List API answers only in a few regions; us-east-1 serves every region's prices.
PRICING_REGION = "us-east-1"
#: How a parser error is told which call and endpoint it came from (an exception note, PEP 678).
_ANSWERED_BY = "answered by: "


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

    def __post_init__(self) -> None:
        for field in fields(self):
            _name_the_endpoint(getattr(self, field.name))

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


def _name_the_endpoint(client: Any) -> None:
    """Have a parser error of this client name its call and endpoint. botocore raises ResponseParserError, which names
    neither, when an endpoint answers something that is not the service's format (a proxy's or a captive portal's
    plain-text or HTML page where an XML service is expected), after its `after-call-error` event."""
    endpoint = client.meta.endpoint_url

    def note(exception: BaseException, event_name: str, **_: Any) -> None:
        if isinstance(exception, ResponseParserError):
            exception.add_note(f"{_ANSWERED_BY}{event_name.rpartition('.')[2]} at {endpoint}")

    client.meta.events.register("after-call-error", note, unique_id="preflight-name-the-endpoint")


def answered_by(error: ResponseParserError) -> str:
    """The call and endpoint a parser error came from (`DescribeRegions at https://ec2.us-west-2.amazonaws.com`)."""
    notes = [n.removeprefix(_ANSWERED_BY) for n in getattr(error, "__notes__", ()) if n.startswith(_ANSWERED_BY)]
    return notes[0] if notes else "an AWS endpoint"
