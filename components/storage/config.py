"""Stack configuration of storage and ingress: S3 buckets, FSx for Lustre, the load balancer controller."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from .. import aws_names
from ..config.types import ConfigModel, KeyName
from ..config.validation import FieldProblems, matches

#: Per-unit storage throughput (MB/s per TiB) FSx for Lustre accepts, by deployment type; scratch takes none.
FSX_THROUGHPUT = {"SCRATCH_2": (), "PERSISTENT_2": (125, 250, 500, 1000)}
FSX_CAPACITY_STEP_GIB = 2400


def fsx_capacity_problem(deployment_type: str, capacity_gib: int) -> str | None:
    """Why AWS would refuse this capacity for the deployment type (SSD types: 1200, 2400, then steps of 2400 GiB)."""
    if capacity_gib in (1200, 2400) or (capacity_gib > 0 and capacity_gib % FSX_CAPACITY_STEP_GIB == 0):
        return None
    below = max(1200, capacity_gib // FSX_CAPACITY_STEP_GIB * FSX_CAPACITY_STEP_GIB)
    above = max(2400, (capacity_gib // FSX_CAPACITY_STEP_GIB + 1) * FSX_CAPACITY_STEP_GIB)
    return (
        f"{deployment_type} accepts 1200, 2400 or a multiple of {FSX_CAPACITY_STEP_GIB} GiB, got {capacity_gib} "
        f"(nearest: {below} or {above})"
    )


class BucketConfig(ConfigModel):
    """An S3 bucket: always encrypted, private, TLS-only and owner-enforced; these choose the rest."""

    encryption: Literal["s3", "kms"] = Field(
        default="s3", description="SSE-S3, or SSE-KMS with a rotating stack key and bucket keys"
    )
    versioning: StrictBool = Field(default=True, description="keep old versions of objects")
    noncurrent_version_expiration_days: StrictInt = Field(
        default=30, ge=1, le=3650, description="days after which old versions are deleted"
    )
    abort_incomplete_upload_days: StrictInt = Field(
        default=7, ge=1, le=365, description="days after which unfinished multipart uploads are aborted"
    )


class DataRepository(ConfigModel):
    """Link a directory of the file system to a bucket prefix: files appear lazily, changes flow both ways."""

    bucket: KeyName = Field(description="the `storage.buckets` key of the linked bucket")
    prefix: Annotated[
        StrictStr, matches(r"([A-Za-z0-9!_.*'()-]+/)*", "a key prefix like 'datasets/' (ends with '/', no leading '/')")
    ] = Field(default="", description="the linked key prefix; empty: the whole bucket")
    file_system_path: Annotated[
        StrictStr, matches(r"/([A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*)?", "an absolute path like '/datasets'")
    ] = Field(default="/data", description="the linked directory of the file system")
    imported_file_chunk_size_mib: StrictInt = Field(
        default=1024, ge=1, le=512000, description="stripe size of imported files"
    )


class FsxConfig(ConfigModel):
    """A FSx for Lustre file system in one AZ, mounted by pods through static volumes."""

    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = Field(
        default="SCRATCH_2", description="`SCRATCH_2`: no replication, cheapest; `PERSISTENT_2`: replicated"
    )
    storage_capacity_gib: StrictInt = Field(default=1200, description="1200, 2400 or a multiple of 2400")
    per_unit_storage_throughput: StrictInt | None = Field(
        default=None,
        description="MB/s per TiB: 125, 250, 500 or 1000; required with `PERSISTENT_2`, refused with `SCRATCH_2`",
    )
    compression: Literal["LZ4", "NONE"] = Field(default="LZ4", description="data compression")
    availability_zone: StrictStr | None = Field(
        default=None,
        description="one of `network.availabilityZones` (pin training pools there with `zones`); none: the first",
    )
    log_level: Literal["WARN_ERROR", "WARN_ONLY", "ERROR_ONLY", "DISABLED"] = Field(
        default="WARN_ERROR", description="what the file system logs to CloudWatch"
    )
    data_repository: DataRepository | None = Field(
        default=None,
        description="link a directory to a bucket prefix: objects appear in the file system as they change in S3, "
        "and files written in the directory are exported back; none: no link",
    )
    namespaces: tuple[KeyName, ...] = Field(
        default=(), description="namespaces, created by the stack, that each get a claim on the file system"
    )
    claim_name: KeyName = Field(default="fsx-lustre", description="the name of those claims")
    storage_class: StrictBool = Field(
        default=False,
        description="also offer the StorageClass `fsx-lustre`, a new file system per claim (the CSI controller then "
        "gets an IRSA role allowed to create and delete file systems tagged for this cluster)",
    )

    @model_validator(mode="after")
    def _check(self) -> FsxConfig:
        problems = []
        capacity = fsx_capacity_problem(self.deployment_type, self.storage_capacity_gib)
        if capacity:
            problems.append(("storageCapacityGib", capacity))
        allowed = FSX_THROUGHPUT[self.deployment_type]
        if not allowed and self.per_unit_storage_throughput is not None:
            problems.append(("perUnitStorageThroughput", f"is not used by {self.deployment_type}; remove it"))
        if allowed and self.per_unit_storage_throughput not in allowed:
            problems.append(
                (
                    "perUnitStorageThroughput",
                    (
                        f"{self.deployment_type} needs one of {', '.join(map(str, allowed))} MB/s per TiB, "
                        f"got {self.per_unit_storage_throughput}"
                    ),
                )
            )
        if len(set(self.namespaces)) != len(self.namespaces):
            problems.append(("namespaces", "lists a namespace more than once"))
        if problems:
            raise FieldProblems(problems)
        return self


#: A bucket is auto-named from its logical name `storage-<key>`; the key may be only as long as leaves that name
#: (plus pulumi-aws's `-<7 hex>`) within S3's 63 characters.
BUCKET_LOGICAL_PREFIX = "storage-"
MAX_BUCKET_KEY = aws_names.longest_logical_name("aws:s3/bucket:Bucket") - len(BUCKET_LOGICAL_PREFIX)


class StorageConfig(ConfigModel):
    buckets: dict[KeyName, BucketConfig] = Field(
        default_factory=lambda: {"datasets": BucketConfig(), "artifacts": BucketConfig()},
        description="S3 buckets keyed by purpose, each private, owner-enforced, encrypted and TLS-only; setting this "
        "key replaces the default set",
    )
    fsx: FsxConfig | None = Field(
        default=None,
        description="an FSx for Lustre file system in one AZ, mounted through static volumes; none: no file system",
    )

    @model_validator(mode="after")
    def _bucket_names_fit(self) -> StorageConfig:
        problems = [
            (
                "buckets",
                (
                    f"the key {key!r} is {len(key)} characters long; at most {MAX_BUCKET_KEY} fit in the bucket's "
                    "auto-generated name (S3 allows 63 characters)"
                ),
            )
            for key in sorted(self.buckets)
            if len(key) > MAX_BUCKET_KEY
        ]
        if problems:
            raise FieldProblems(problems)
        return self
