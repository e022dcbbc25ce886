"""Storage: S3 buckets, the gp3 StorageClasses, and the cluster's side of FSx for Lustre (its link to a bucket prefix,
the CSI driver and the team volumes); the file system itself is `FsxFileSystem`, made before the cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from .. import k8s_objects
from ..cluster.args import stateful_options
from ..cluster.handle import ClusterHandle
from ..config.types import StatefulResources
from ..identity.documents import to_json
from . import lustre
from .config import BucketConfig, FsxConfig, StorageConfig
from .file_system import FsxFileSystem
from .render import RETAIN_CLASS_NAME, bucket_key_policy, gp3_storage_class, tls_only_bucket_policy


@dataclass(frozen=True)
class StorageArgs:
    """Fields without a default are required."""

    #: Buckets keyed by purpose, and an optional FSx for Lustre file system (`StorageConfig`; default: the `datasets`
    #: and `artifacts` buckets, no FSx).
    config: StorageConfig
    #: What `pulumi destroy` does to buckets and keys: protect, retain or destroy (force-delete); also decides the
    #: class of volumes the stack keeps (`Storage.kept_volume_class`) and what the claim file systems' sweep deletes.
    stateful_resources: StatefulResources
    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: The file system `config.fsx` describes, made before the cluster (`FsxFileSystem`). Default: None, required
    #: with `config.fsx` and refused without it.
    file_system: FsxFileSystem | None = None
    #: Controllers that delete the AWS side of what teams put in namespaces (`Ingress.controller`): the namespaces
    #: this component creates depend on them, so they are deleted while those still run. Default: none.
    cleanup_controllers: tuple[pulumi.Resource, ...] = ()
    #: The platform's Prometheus namespace, admitted into the team namespaces this component creates (None: no
    #: monitoring). Default: None.
    monitoring_namespace: str | None = None


class Storage(pulumi.ComponentResource):
    """Buckets keyed by purpose, the gp3 StorageClasses, and what the cluster needs of an FSx for Lustre file system:
    its nodes' network rules, the link to a bucket prefix, the CSI driver and the team volumes."""

    buckets: dict[str, aws.s3.Bucket]
    file_system: aws.fsx.LustreFileSystem | None
    fsx_zone: str | None
    #: The default (gp3) StorageClass, for components whose volumes use it.
    default_storage_class: pulumi.Resource
    default_storage_class_name: str
    #: The class for volumes the stack keeps through `pulumi destroy` (Prometheus'): gp3 with reclaimPolicy Retain
    #: under `protect` and `retain`, the default class under `destroy`.
    kept_volume_class: pulumi.Resource
    kept_volume_class_name: str
    #: Attach to the identity that runs `pulumi up` before the data repository association is created.
    data_repository_policy_arn: pulumi.Output[str] | None
    #: The KMS key of the buckets with `encryption: kms` (None when no bucket uses one): whoever reads or writes
    #: their objects needs to use it.
    bucket_key: aws.kms.Key | None
    #: The StorageClass that makes a file system per claim (`storage.fsx.storageClass`), None without it.
    fsx_storage_class_name: str | None
    #: The FSx CSI driver (None without FSx): static volumes of the file system depend on it.
    fsx_driver: pulumi.Resource | None

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None):
        fsx = args.config.fsx
        if (fsx is None) != (args.file_system is None) or (args.file_system and args.file_system.config != fsx):
            raise ValueError(
                "StorageArgs.file_system: expected the FsxFileSystem made from config.fsx (and None without it)"
            )
        super().__init__("eksml:storage:Storage", name, None, opts)
        config, cluster = args.config, args.cluster
        self._config = config
        stateful = pulumi.ResourceOptions.merge(
            pulumi.ResourceOptions(parent=self), stateful_options(args.stateful_resources)
        )
        k8s_opts = cluster.kubernetes_options(self)

        uses_kms = any(bucket.encryption == "kms" for bucket in config.buckets.values())
        self.bucket_key = _bucket_key(name, stateful) if uses_kms else None
        self.buckets = {
            key: _bucket(f"{name}-{key}", bucket, self.bucket_key, args.stateful_resources, stateful)
            for key, bucket in sorted(config.buckets.items())
        }
        self.default_storage_class, self.default_storage_class_name = _ebs_storage_class(
            f"{name}-gp3", gp3_storage_class(), cluster, k8s_opts
        )
        self.kept_volume_class = self.default_storage_class
        self.kept_volume_class_name = self.default_storage_class_name
        if args.stateful_resources is not StatefulResources.DESTROY:
            # Its volumes stay in AWS when their claims go.
            self.kept_volume_class, self.kept_volume_class_name = _ebs_storage_class(
                f"{name}-gp3-retain", gp3_storage_class(RETAIN_CLASS_NAME, retain=True), cluster, k8s_opts
            )
        key_policy = None
        if self.bucket_key is not None:
            key_policy = _bucket_key_policy(name, self.bucket_key, config, self.buckets, cluster, stateful)

        self.file_system = args.file_system.file_system if args.file_system is not None else None
        self.fsx_zone = args.file_system.zone if args.file_system is not None else None
        self.data_repository_policy_arn = None
        self.fsx_storage_class_name = None
        self.fsx_driver = None
        if fsx is not None and args.file_system is not None:
            self._fsx(name, fsx, args.file_system, args, key_policy, k8s_opts)
        self.register_outputs({"buckets": {k: b.bucket for k, b in self.buckets.items()}, "fsxZone": self.fsx_zone})

    def bucket_name(self, key: str | None) -> pulumi.Output[str] | None:
        """The name of the bucket kept under `key` (`storage.buckets`), None for no key or an unknown one."""
        return self.buckets[key].bucket if key is not None and key in self.buckets else None

    def bucket_key_arn(self, key: str | None) -> pulumi.Output[str] | None:
        """The KMS key whoever uses the bucket under `key` needs too: None unless that bucket uses `encryption: kms`."""
        encrypted = key is not None and key in self._config.buckets and self._config.buckets[key].encryption == "kms"
        return self.bucket_key.arn if encrypted and self.bucket_key is not None else None

    def _fsx(
        self,
        name: str,
        fsx: FsxConfig,
        made: FsxFileSystem,
        args: StorageArgs,
        key_policy: aws.kms.KeyPolicy | None,
        k8s_opts: pulumi.ResourceOptions,
    ) -> None:
        """The nodes' rules, the data repository, the CSI driver with the sweep of its claims' file systems, the
        StorageClass (with `storageClass`) and the team volumes of the file system."""
        cluster, group = args.cluster, made.security_group
        rules = lustre.client_rules(name, group, cluster, parent=self)
        if fsx.data_repository is not None:
            bucket = self.buckets[fsx.data_repository.bucket]
            self.data_repository_policy_arn = lustre.data_repository(
                name, fsx.data_repository, cluster, bucket, made.file_system, key_policy, parent=self
            )
        # Only dynamic provisioning needs AWS access: file systems for claims, tagged for this cluster.
        controller_role = lustre.csi_role(name, cluster, parent=self) if fsx.storage_class else None
        # With the file system, not with storageClass: see lustre.sweep. After the system nodes and the add-ons
        # the cluster's own sweep follows too, so destroy runs the two sweeps in one level.
        claims_sweep = lustre.sweep(
            name,
            cluster,
            args.stateful_resources,
            after=[group, *made.server_rules, *rules, *cluster.system_ready, cluster.ebs_csi_driver],
            parent=self,
        )
        driver = self.fsx_driver = lustre.csi_driver(name, cluster, controller_role, [claims_sweep], k8s_opts)
        if fsx.storage_class:
            self.fsx_storage_class_name = lustre.storage_class(
                name, fsx, made.subnet_id, group, driver, k8s_opts, stateful_resources=args.stateful_resources
            )
        for namespace in fsx.namespaces:
            lustre.team_volume(
                name,
                namespace,
                fsx,
                made.file_system,
                driver,
                cluster,
                args.cleanup_controllers,
                k8s_opts,
                monitoring_namespace=args.monitoring_namespace,
            )


# ------------------------------------------------------------------------------------------------------- buckets


def _bucket_key(name: str, stateful: pulumi.ResourceOptions) -> aws.kms.Key:
    return aws.kms.Key(
        f"{name}-buckets",
        description="Encryption of the platform's S3 buckets",
        enable_key_rotation=True,
        opts=stateful,
    )


def _bucket_key_policy(
    name: str,
    key: aws.kms.Key,
    config: StorageConfig,
    buckets: Mapping[str, aws.s3.Bucket],
    cluster: ClusterHandle,
    stateful: pulumi.ResourceOptions,
) -> aws.kms.KeyPolicy:
    """The buckets' key policy, admitting FSx's S3 access to a KMS-encrypted data repository bucket."""
    repository = config.fsx.data_repository if config.fsx is not None else None
    fsx_buckets = []
    if repository is not None and config.buckets[repository.bucket].encryption == "kms":
        fsx_buckets.append(buckets[repository.bucket].arn)
    return aws.kms.KeyPolicy(
        f"{name}-buckets",
        key_id=key.id,
        policy=pulumi.Output.all(cluster.partition, cluster.account_id, *fsx_buckets).apply(
            lambda v: to_json(
                bucket_key_policy(partition=v[0], account_id=v[1], region=cluster.region, fsx_bucket_arns=tuple(v[2:]))
            )
        ),
        opts=stateful,
    )


def _bucket(
    name: str,
    config: BucketConfig,
    key: aws.kms.Key | None,
    stateful_resources: StatefulResources,
    stateful: pulumi.ResourceOptions,
) -> aws.s3.Bucket:
    """A private, TLS-only bucket with its encryption, versioning and lifecycle rules; `key` for `encryption: kms`."""
    bucket = aws.s3.Bucket(name, force_destroy=stateful_resources is StatefulResources.DESTROY, opts=stateful)
    # Every part of a bucket shares its fate: a retained bucket keeps its policy and its public access block.
    aws.s3.BucketOwnershipControls(
        name, bucket=bucket.id, rule={"object_ownership": "BucketOwnerEnforced"}, opts=stateful
    )
    block = aws.s3.BucketPublicAccessBlock(
        name,
        bucket=bucket.id,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=stateful,
    )
    _bucket_encryption(name, bucket, config, key, stateful)
    if config.versioning:
        aws.s3.BucketVersioning(name, bucket=bucket.id, versioning_configuration={"status": "Enabled"}, opts=stateful)
    aws.s3.BucketLifecycleConfiguration(name, bucket=bucket.id, rules=_lifecycle_rules(config), opts=stateful)
    aws.s3.BucketPolicy(
        name,
        bucket=bucket.id,
        policy=bucket.arn.apply(lambda arn: to_json(tls_only_bucket_policy(arn))),
        # why: S3 rejects a policy while the public access block is still being applied.
        opts=pulumi.ResourceOptions.merge(stateful, pulumi.ResourceOptions(depends_on=[block])),
    )
    return bucket


def _bucket_encryption(
    name: str, bucket: aws.s3.Bucket, config: BucketConfig, key: aws.kms.Key | None, stateful: pulumi.ResourceOptions
) -> None:
    """Default encryption of the bucket's objects: with `key` (and S3 bucket keys) for `encryption: kms`, else
    SSE-S3."""
    default: aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgsDict
    if config.encryption == "kms":
        assert key is not None
        default = {"sse_algorithm": "aws:kms", "kms_master_key_id": key.arn}
    else:
        default = {"sse_algorithm": "AES256"}
    aws.s3.BucketServerSideEncryptionConfiguration(
        name,
        bucket=bucket.id,
        rules=[{"apply_server_side_encryption_by_default": default, "bucket_key_enabled": config.encryption == "kms"}],
        opts=stateful,
    )


def _lifecycle_rules(config: BucketConfig) -> list[aws.s3.BucketLifecycleConfigurationRuleArgsDict]:
    """Stale multipart uploads are aborted; with versioning, old versions expire."""
    rules: list[aws.s3.BucketLifecycleConfigurationRuleArgsDict] = [
        {
            "id": "abort-incomplete-uploads",
            "status": "Enabled",
            "filter": {},
            "abort_incomplete_multipart_upload": {"days_after_initiation": config.abort_incomplete_upload_days},
        }
    ]
    if config.versioning:
        rules.append(
            {
                "id": "expire-noncurrent-versions",
                "status": "Enabled",
                "filter": {},
                "noncurrent_version_expiration": {"noncurrent_days": config.noncurrent_version_expiration_days},
            }
        )
    return rules


# --------------------------------------------------------------------------------------------------------- EBS


def _ebs_storage_class(
    name: str, rendered: Mapping[str, Any], cluster: ClusterHandle, k8s_opts: pulumi.ResourceOptions
) -> tuple[pulumi.Resource, str]:
    """A StorageClass of the EBS CSI driver, and its in-cluster name."""
    storage_class = k8s_objects.create(
        name,
        rendered,
        # why: volumes of this class are created and deleted by the EBS CSI driver; it must outlive them.
        pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[cluster.ebs_csi_driver])),
    )
    return storage_class, rendered["metadata"]["name"]
