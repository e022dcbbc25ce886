"""Amazon Managed Prometheus: the same query API as Prometheus' own, behind SigV4 signatures of the service `aps`.

A workspace's query endpoint is `<workspace URL>/api/v1/query`, where the workspace URL is
`https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>` (or a VPC endpoint's name for the same host); the
signing identity needs aps:QueryMetrics (docs.aws.amazon.com/prometheus/latest/userguide/AMP-onboard-query-APIs.html).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from ...aws_names import REGION_PATTERN

SERVICE = "aps"
IAM_ACTION = "aps:QueryMetrics"
_HOST_REGION = re.compile(rf"(?:^|\.)aps-workspaces\.({REGION_PATTERN})\.")

#: Signs a GET of a URL: the headers to send with it.
Signer = Callable[[str], Mapping[str, str]]


def workspace_region(host: str) -> str | None:
    """The region in a workspace endpoint's host name, if it names one."""
    found = _HOST_REGION.search(host)
    return found.group(1) if found else None


def sigv4_signer(credentials: Any, region: str) -> Signer:
    """Signs each query with `credentials` (botocore's) for `aps` in `region`, at the time it is sent."""

    def sign(url: str) -> Mapping[str, str]:
        request = AWSRequest(method="GET", url=url)
        SigV4Auth(credentials, SERVICE, region).add_auth(request)
        return dict(request.headers.items())

    return sign
