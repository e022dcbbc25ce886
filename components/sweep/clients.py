"""The boto3 clients the sweep uses, and how it reads AWS errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

#: Throttling and transient errors are retried by botocore itself; the sweep's own retries are for dependencies.
_RETRIES = Config(retries={"mode": "standard", "max_attempts": 8})

#: Errors that mean the object is already gone: a delete that meets one has nothing left to do.
NOT_FOUND = frozenset(
    {
        "InvalidInstanceID.NotFound",
        "InvalidLaunchTemplateId.NotFound",
        "InvalidLaunchTemplateName.NotFoundException",
        "NoSuchEntity",
        "LoadBalancerNotFound",
        "TargetGroupNotFound",
        "InvalidVolume.NotFound",
        "FileSystemNotFound",
        "InvalidVpcEndpointId.NotFound",
        "InvalidNetworkInterfaceID.NotFound",
        "InvalidGroup.NotFound",
        "InvalidPermission.NotFound",
    }
)

#: Errors that mean something still uses the object and may stop doing so shortly (a load balancer's interfaces
#: outlive it by minutes; a target group is free once its listeners are gone).
IN_USE = frozenset({"DependencyViolation", "ResourceInUse", "InvalidNetworkInterface.InUse"})

#: What a call of the sweep may raise besides programming errors.
AWS_ERRORS = (ClientError, BotoCoreError)


@dataclass(frozen=True)
class Clients:
    """One client per service the sweep calls, all for the target's region (IAM is global)."""

    ec2: Any
    elbv2: Any
    iam: Any
    fsx: Any

    @classmethod
    def from_session(cls, session: Any, region: str) -> Clients:
        """Clients of a `boto3.Session` (its credentials and profile), for `region`."""
        return cls(
            **{
                service: session.client(service, region_name=region, config=_RETRIES)
                for service in ("ec2", "elbv2", "iam", "fsx")
            }
        )


def error_code(error: BaseException) -> str:
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", ""))
    return type(error).__name__


def describe(error: BaseException) -> str:
    """`Code: message`, the way the report shows an AWS error."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        return f"{details.get('Code', 'Error')}: {details.get('Message', str(error))}"
    return f"{type(error).__name__}: {error}"


def is_gone(error: BaseException) -> bool:
    return error_code(error) in NOT_FOUND


def is_in_use(error: BaseException) -> bool:
    return error_code(error) in IN_USE
