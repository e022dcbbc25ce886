"""The IAM documents of Kubeflow Pipelines' two platform roles in S3 mode (`kubeflow.pipelines.artifacts: s3`): the
API server's and the UI's. What each reads and writes follows from components/kubeflow/pipelines.py's layout of the
bucket."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..identity.documents import IAM_VERSION, ROLE_INLINE_POLICY_CHARS, dns_suffix, policy_size
from .pipelines_store import SERVER_PREFIX, S3Store


def _kms_statement(kms_key_arn: str, store: S3Store, bucket_arn: str, actions: list[str]) -> dict[str, Any]:
    return {
        "Sid": "BucketKeyThroughS3",
        "Effect": "Allow",
        "Action": actions,
        "Resource": kms_key_arn,
        "Condition": {
            "StringEquals": {"kms:ViaService": f"s3.{store.region}.{dns_suffix(store.partition)}"},
            "StringLike": {"kms:EncryptionContext:aws:s3:arn": [bucket_arn, f"{bucket_arn}/*"]},
        },
    }


def server_policy(store: S3Store, *, bucket: str, kms_key_arn: str | None = None) -> dict[str, Any]:
    """The API server's role: read, write and delete pipeline definitions under SERVER_PREFIX. It also checks at
    start that the bucket exists (a HEAD on the bucket, which S3 authorises as s3:ListBucket and with no prefix to
    narrow it by), so it may list the bucket's keys, never read another prefix's objects."""
    bucket_arn = f"arn:{store.partition}:s3:::{bucket}"
    statements: list[dict[str, Any]] = [
        {"Sid": "FindBucket", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": bucket_arn},
        {
            "Sid": "PipelineDefinitions",
            "Effect": "Allow",
            "Action": ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
            "Resource": f"{bucket_arn}/{SERVER_PREFIX}/*",
        },
    ]
    if kms_key_arn is not None:
        statements.append(_kms_statement(kms_key_arn, store, bucket_arn, ["kms:Decrypt", "kms:GenerateDataKey"]))
    return {"Version": IAM_VERSION, "Statement": statements}


def ui_policy(store: S3Store, *, bucket: str, kms_key_arn: str | None = None) -> dict[str, Any]:
    """The UI's role: read the artifacts and archived logs of every team's runs (the UI serves them to whoever the
    API's authorisation lets see the run) and the pipeline definitions; it writes nothing."""
    bucket_arn = f"arn:{store.partition}:s3:::{bucket}"
    roots = [store.team_root(team) for team in sorted(store.team_prefixes)]
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ReadRuns",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": [f"{bucket_arn}/{root}/*" for root in [SERVER_PREFIX, *roots]],
        },
        {
            "Sid": "ListRuns",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": bucket_arn,
            "Condition": {"StringLike": {"s3:prefix": [f"{root}/*" for root in [SERVER_PREFIX, *roots]]}},
        },
    ]
    if kms_key_arn is not None:
        statements.append(_kms_statement(kms_key_arn, store, bucket_arn, ["kms:Decrypt"]))
    return {"Version": IAM_VERSION, "Statement": statements}


#: The longest names a policy may carry in place of the bucket's and its key's: an S3 bucket name is at most 63
#: characters (Amazon S3 User Guide, "General purpose bucket naming rules"); a KMS key ARN in the longest partition
#: and region ends in a 36-character key id (AWS KMS Developer Guide, "Key identifiers (KeyId)").
_LONGEST_BUCKET = "b" * 63
_LONGEST_REGION = "us-gov-west-1"
_LONGEST_KEY_ARN = f"arn:aws-us-gov:kms:{_LONGEST_REGION}:123456789012:key/{'k' * 36}"


def ui_policy_size_problem(team_prefixes: Mapping[str, str]) -> str | None:
    """Why the UI role's policy, which names every team's runs twice, could pass IAM's size for a role, or None."""
    worst = ui_policy(S3Store(_LONGEST_REGION, team_prefixes), bucket=_LONGEST_BUCKET, kms_key_arn=_LONGEST_KEY_ARN)
    size = policy_size(worst)
    if size <= ROLE_INLINE_POLICY_CHARS:
        return None
    return (
        f"the Pipelines UI role's policy names each team's runs twice: with these prefixes it may reach {size} "
        f"characters (with the longest bucket name and key ARN), past the {ROLE_INLINE_POLICY_CHARS} IAM allows a "
        "role; shorten the prefixes"
    )
