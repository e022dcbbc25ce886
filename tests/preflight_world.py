"""An AWS account for the preflight tests: moto for every API it serves, botocore's Stubber for the ones it does not
(Service Quotas for EC2 and FSx codes, EBS's default key)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from components.platform.config import PlatformConfig
from components.platform.parse import parse_config
from components.tools.preflight.clients import Clients
from components.tools.preflight.quotas import Quota
from components.tools.preview import read_project_name, read_stack_config

REPO = Path(__file__).resolve().parents[1]
PROJECT = read_project_name(REPO)
REGION = "us-west-2"
#: moto's account, and the account of the ARNs in the shipped stack files.
ACCOUNT = "123456789012"
ADMIN_ROLE = "PlatformAdmin"


def platform_config(stack: str, overrides: Mapping[str, Any] | None = None) -> PlatformConfig:
    """A shipped stack's typed config, with some keys replaced (`eks-ml-platform:` unless the key names another
    namespace, like `aws:region`)."""
    raw, _ = read_stack_config(REPO, PROJECT, stack)
    for key, value in (overrides or {}).items():
        raw[key if ":" in key else f"{PROJECT}:{key}"] = value if isinstance(value, str) else json.dumps(value)
    return parse_config(raw, project=PROJECT, stack=stack)


def fake_credentials(monkeypatch) -> None:
    """Credentials moto accepts, so no test can reach a real account."""
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)


@contextmanager
def account(region: str = REGION) -> Iterator[Clients]:
    with mock_aws():
        yield Clients.from_session(boto3.Session(region_name=region))


def create_admin_role(clients: Clients) -> None:
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": ACCOUNT}, "Action": "sts:AssumeRole"}],
    }
    clients.iam.create_role(RoleName=ADMIN_ROLE, AssumeRolePolicyDocument=json.dumps(trust))


def create_spot_role(clients: Clients) -> None:
    # moto's create_service_linked_role names the role after the service ("AWSServiceRoleForspot"); EC2's is this.
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "spot.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }
    clients.iam.create_role(
        RoleName="AWSServiceRoleForEC2Spot",
        Path="/aws-service-role/spot.amazonaws.com/",
        AssumeRolePolicyDocument=json.dumps(trust),
    )


def quota_stubber(answers: Sequence[tuple[Quota, float | None]], region: str = REGION) -> tuple[Any, Stubber]:
    """A Service Quotas client answering each quota in turn (None: neither an applied nor a default value exists),
    and its Stubber (call `assert_no_pending_responses` to prove every quota was read)."""
    client = boto3.client("service-quotas", region_name=region)
    stubber = Stubber(client)
    for quota, value in answers:
        params = {"ServiceCode": quota.service, "QuotaCode": quota.code}
        if value is None:
            stubber.add_client_error("get_service_quota", "NoSuchResourceException", expected_params=params)
            stubber.add_client_error("get_aws_default_service_quota", "NoSuchResourceException", expected_params=params)
        else:
            answer = {"ServiceCode": quota.service, "QuotaCode": quota.code, "QuotaName": quota.name, "Value": value}
            stubber.add_response("get_service_quota", {"Quota": answer}, expected_params=params)
    stubber.activate()
    return client, stubber


def with_quotas(clients: Clients, answers: Sequence[tuple[Quota, float | None]]) -> tuple[Clients, Stubber]:
    client, stubber = quota_stubber(answers)
    return replace(clients, quotas=client), stubber


def ebs_default_key_client(key_id: str, region: str = REGION) -> Any:
    """An EC2 client that answers GetEbsDefaultKmsKeyId (moto does not implement it)."""
    client = boto3.client("ec2", region_name=region)
    stubber = Stubber(client)
    stubber.add_response("get_ebs_default_kms_key_id", {"KmsKeyId": key_id}, expected_params={})
    stubber.activate()
    return client


def answer_ebs_default_key(ec2: Any, key_id: str) -> None:
    """Make a moto-backed EC2 client answer GetEbsDefaultKmsKeyId, which moto does not implement, and serve every
    other call as before (a Stubber would take over every EC2 call of the client)."""
    from botocore.awsrequest import AWSResponse
    from botocore.compat import HTTPHeaders

    def answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        return AWSResponse("https://ec2.amazonaws.com/", 200, HTTPHeaders(), None), {"KmsKeyId": key_id}

    ec2.meta.events.register("before-call.ec2.GetEbsDefaultKmsKeyId", answer)


# Fixtures of every preflight test module (imported there by name).


@pytest.fixture(autouse=True)
def credentials(monkeypatch):
    """Fake AWS credentials, so nothing reaches a real account."""
    fake_credentials(monkeypatch)


@pytest.fixture
def clients():
    """The moto account's clients, as the preflight builds them."""
    with account() as clients:
        yield clients
