"""Stack configuration of storage and ingress: S3 buckets, FSx for Lustre, the load balancer controller."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from components import aws_names
from components.config.types import ConfigModel, KeyName
from components.config.validation import FieldProblems, matches

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

    encryption: Literal["s3", "kms"] = "s3"
    versioning: StrictBool = True
    noncurrent_version_expiration_days: StrictInt = Field(default=30, ge=1, le=3650)
    abort_incomplete_upload_days: StrictInt = Field(default=7, ge=1, le=365)


class DataRepository(ConfigModel):
    """Link a directory of the file system to a bucket prefix: files appear lazily, changes flow both ways."""

    bucket: KeyName
    prefix: Annotated[StrictStr, matches(r"([A-Za-z0-9!_.*'()-]+/)*", "a key prefix like 'datasets/' (ends with '/', no leading '/')")] = ""
    file_system_path: Annotated[StrictStr, matches(r"/([A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*)?", "an absolute path like '/datasets'")] = "/data"
    imported_file_chunk_size_mib: StrictInt = Field(default=1024, ge=1, le=512000)


class FsxConfig(ConfigModel):
    """A FSx for Lustre file system in one AZ, mounted by pods through static volumes."""

    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = "SCRATCH_2"
    storage_capacity_gib: StrictInt = 1200
    per_unit_storage_throughput: StrictInt | None = None
    compression: Literal["LZ4", "NONE"] = "LZ4"
    availability_zone: StrictStr | None = None
    log_level: Literal["WARN_ERROR", "WARN_ONLY", "ERROR_ONLY", "DISABLED"] = "WARN_ERROR"
    data_repository: DataRepository | None = None
    namespaces: tuple[KeyName, ...] = ()
    claim_name: KeyName = "fsx-lustre"
    #: Also offer a StorageClass that creates a new file system per claim (the CSI controller then gets an IRSA
    #: role allowed to create and delete file systems tagged for this cluster).
    storage_class: StrictBool = False

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
                    f"{self.deployment_type} needs one of {', '.join(map(str, allowed))} MB/s per TiB, "
                    f"got {self.per_unit_storage_throughput}",
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
    buckets: dict[KeyName, BucketConfig] = Field(default_factory=lambda: {"datasets": BucketConfig(), "artifacts": BucketConfig()})
    fsx: FsxConfig | None = None

    @model_validator(mode="after")
    def _bucket_names_fit(self) -> StorageConfig:
        problems = [
            (
                "buckets",
                f"the key {key!r} is {len(key)} characters long; at most {MAX_BUCKET_KEY} fit in the bucket's "
                "auto-generated name (S3 allows 63 characters)",
            )
            for key in sorted(self.buckets)
            if len(key) > MAX_BUCKET_KEY
        ]
        if problems:
            raise FieldProblems(problems)
        return self
