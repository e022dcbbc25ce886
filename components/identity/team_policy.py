"""The permission policy of a team's IRSA role (pure): its prefix of one bucket, nothing else."""

from __future__ import annotations

from typing import Any

from .documents import IAM_VERSION, dns_suffix


def prefix_within(inner: str, outer: str) -> bool:
    """Whether every key under `inner` is also under `outer` (the same prefix, or one below it, compared by whole
    path segments): a role given `outer` (its policy names `outer/*`) reaches `inner`'s objects. Team prefixes are kept
    apart with it, the platform's Kubeflow teams and team stacks alike."""
    return f"{inner}/".startswith(f"{outer}/")


def team_s3_policy(
    *, partition: str, region: str, bucket: str, prefix: str, kms_key_arn: str | None = None
) -> dict[str, Any]:
    """Read, write and delete objects under `prefix/` of the bucket and list only that prefix; with a KMS-encrypted
    bucket, use its key only through S3 for that bucket.

    The bucket's objects are encrypted with S3 Bucket Keys, so the encryption context KMS sees is the bucket's ARN,
    not the object's: the key statement can be narrowed to the bucket and to S3, not to the prefix (the S3
    statements do that)."""
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ListTeamPrefix",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": bucket_arn,
            "Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
        },
        {
            "Sid": "TeamObjects",
            "Effect": "Allow",
            "Action": ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
            "Resource": f"{bucket_arn}/{prefix}/*",
        },
    ]
    if kms_key_arn is not None:
        statements.append(
            {
                "Sid": "BucketKeyThroughS3",
                "Effect": "Allow",
                "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
                "Resource": kms_key_arn,
                "Condition": {
                    "StringEquals": {"kms:ViaService": f"s3.{region}.{dns_suffix(partition)}"},
                    "StringLike": {"kms:EncryptionContext:aws:s3:arn": [bucket_arn, f"{bucket_arn}/{prefix}/*"]},
                },
            }
        )
    return {"Version": IAM_VERSION, "Statement": statements}
