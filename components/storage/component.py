"""Storage: S3 buckets, FSx for Lustre linked to a bucket prefix, the FSx CSI driver and its volumes, and the
default EBS StorageClass."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components import helm, k8s_objects, versions
from components.cluster.component import ClusterHandle, stateful_options
from components.config.types import StatefulResources
from components.identity.documents import to_json
from components.storage.config import BucketConfig, FsxConfig, StorageConfig
from components.storage.render import (
    DYNAMIC_FSX_TAG,
    bucket_key_policy,
    data_repository_policy,
    fsx_csi_controller_policy,
    fsx_storage_class,
    fsx_volume,
    gp3_storage_class,
    tls_only_bucket_policy,
)
from components.sweep.model import Kind
from components.sweep.resource import Sweep, SweepArgs
from components.team.namespace import TEAM_POD_SECURITY

#: Lustre network ports: 988 for the file system, 1018-1023 for the servers' replies (FSx for Lustre docs,
#: "File system access control with Amazon VPC").
LUSTRE_PORTS = {"lnet": (988, 988), "servers": (1018, 1023)}
FSX_CSI_NAMESPACE = "kube-system"
#: The controller's service account as the chart names it; its IRSA trust policy names exactly this.
FSX_CSI_CONTROLLER_SERVICE_ACCOUNT = "fsx-csi-controller-sa"
FSX_STORAGE_CLASS = "fsx-lustre"
#: Creating a file system and importing a large bucket prefix take far longer than the provider's defaults.
FSX_TIMEOUTS = pulumi.CustomTimeouts(create="90m", update="90m", delete="60m")
IMPORT_TIMEOUTS = pulumi.CustomTimeouts(create="6h", update="6h", delete="2h")


@dataclass(frozen=True)
class StorageArgs:
    cluster: ClusterHandle
    config: StorageConfig
    stateful_resources: StatefulResources
    #: The AZ and private subnet FSx lives in (None without FSx).
    fsx_zone: str | None = None
    fsx_subnet_id: pulumi.Input[str] | None = None
    #: Controllers that delete the AWS side of what teams put in namespaces (the load balancer controller): the
    #: namespaces this component creates depend on them, so they are deleted while those still run.
    cleanup_controllers: tuple[pulumi.Resource, ...] = ()


class Storage(pulumi.ComponentResource):
    """Buckets keyed by purpose, and optionally one FSx for Lustre file system with its Kubernetes volumes."""

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

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:storage:Storage", name, None, opts)
        self._name = name
        self._args = args
        self._stateful = pulumi.ResourceOptions.merge(
            pulumi.ResourceOptions(parent=self), stateful_options(args.stateful_resources)
        )
        self._kms_key: aws.kms.Key | None = None
        self.buckets = {key: self._bucket(key, bucket) for key, bucket in sorted(args.config.buckets.items())}
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.cluster.kubernetes_provider)
        default_class = gp3_storage_class()
        self.default_storage_class_name = default_class["metadata"]["name"]
        self.default_storage_class = k8s_objects.create(
            f"{name}-gp3",
            default_class,
            # why: volumes of this class are created and deleted by the EBS CSI driver; it must outlive them.
            pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[args.cluster.ebs_csi_driver])),
        )
        self.kept_volume_class, self.kept_volume_class_name = self.default_storage_class, self.default_storage_class_name
        if args.stateful_resources is not StatefulResources.DESTROY:
            kept_class = gp3_storage_class("gp3-retain", retain=True)
            self.kept_volume_class_name = kept_class["metadata"]["name"]
            self.kept_volume_class = k8s_objects.create(
                f"{name}-gp3-retain",
                kept_class,
                # why: as the default class; its volumes stay in AWS when their claims go.
                pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[args.cluster.ebs_csi_driver])),
            )

        self.file_system = None
        self.fsx_zone = args.fsx_zone
        self.data_repository_policy_arn = None
        self._key_policy = self._bucket_key_policy() if self._kms_key is not None else None
        self.bucket_key = self._kms_key
        self.fsx_storage_class_name = None
        if args.config.fsx is not None:
            self._fsx(args.config.fsx, k8s_opts)
        self.register_outputs({"buckets": {k: b.bucket for k, b in self.buckets.items()}, "fsxZone": self.fsx_zone})

    # ------------------------------------------------------------------------------------------------ buckets

    def _bucket_key(self) -> aws.kms.Key:
        if self._kms_key is None:
            self._kms_key = aws.kms.Key(
                f"{self._name}-buckets",
                description="Encryption of the platform's S3 buckets",
                enable_key_rotation=True,
                opts=self._stateful,
            )
        return self._kms_key

    def _bucket_key_policy(self) -> aws.kms.KeyPolicy:
        """The buckets' key policy, admitting FSx's S3 access to a KMS-encrypted data repository bucket."""
        assert self._kms_key is not None
        fsx = self._args.config.fsx
        repository = fsx.data_repository if fsx is not None else None
        fsx_buckets = []
        if repository is not None and self._args.config.buckets[repository.bucket].encryption == "kms":
            fsx_buckets.append(self.buckets[repository.bucket].arn)
        cluster = self._args.cluster
        return aws.kms.KeyPolicy(
            f"{self._name}-buckets",
            key_id=self._kms_key.id,
            policy=pulumi.Output.all(cluster.partition, cluster.account_id, *fsx_buckets).apply(
                lambda v: to_json(
                    bucket_key_policy(partition=v[0], account_id=v[1], region=cluster.region, fsx_bucket_arns=tuple(v[2:]))
                )
            ),
            opts=self._stateful,
        )

    def _bucket(self, key: str, config: BucketConfig) -> aws.s3.Bucket:
        name, stateful = f"{self._name}-{key}", self._stateful
        bucket = aws.s3.Bucket(
            name, force_destroy=self._args.stateful_resources is StatefulResources.DESTROY, opts=stateful
        )
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
        if config.encryption == "kms":
            default = {"sse_algorithm": "aws:kms", "kms_master_key_id": self._bucket_key().arn}
        else:
            default = {"sse_algorithm": "AES256"}
        aws.s3.BucketServerSideEncryptionConfiguration(
            name,
            bucket=bucket.id,
            rules=[{"apply_server_side_encryption_by_default": default, "bucket_key_enabled": config.encryption == "kms"}],
            opts=stateful,
        )
        if config.versioning:
            aws.s3.BucketVersioning(name, bucket=bucket.id, versioning_configuration={"status": "Enabled"}, opts=stateful)
        rules = [
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
        aws.s3.BucketLifecycleConfiguration(name, bucket=bucket.id, rules=rules, opts=stateful)
        aws.s3.BucketPolicy(
            name,
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: to_json(tls_only_bucket_policy(arn))),
            # why: S3 rejects a policy while the public access block is still being applied.
            opts=pulumi.ResourceOptions.merge(stateful, pulumi.ResourceOptions(depends_on=[block])),
        )
        return bucket

    # ---------------------------------------------------------------------------------------------------- FSx

    def _fsx(self, config: FsxConfig, k8s_opts: pulumi.ResourceOptions) -> None:
        name, args = self._name, self._args
        child = pulumi.ResourceOptions(parent=self)
        cluster = args.cluster
        group = aws.ec2.SecurityGroup(
            f"{name}-fsx",
            vpc_id=cluster.vpc_id,
            description="FSx for Lustre: Lustre traffic from the cluster's nodes and between file servers",
            tags={"Name": cluster.name.apply(lambda cluster_name: f"{cluster_name}-fsx")},
            opts=child,
        )
        rules: list[pulumi.Resource] = []
        nodes = cluster.cluster_security_group_id
        # Into the file servers from the nodes and from each other; into the nodes (Lustre clients accept
        # connections back from the servers on the same ports) from the file servers.
        paths = (("fsx", group.id, "nodes", nodes), ("fsx", group.id, "self", group.id), ("nodes", nodes, "fsx", group.id))
        for port_key, (low, high) in LUSTRE_PORTS.items():
            for target_key, target, source_key, source in paths:
                rule = aws.vpc.SecurityGroupIngressRule(
                    f"{name}-{target_key}-{port_key}-from-{source_key}",
                    security_group_id=target,
                    referenced_security_group_id=source,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    description=f"Lustre {low}-{high} from {source_key}",
                    opts=child,
                )
                rules.append(rule)
        for peer_key, peer in (("nodes", cluster.cluster_security_group_id), ("self", group.id)):
            egress = aws.vpc.SecurityGroupEgressRule(
                f"{name}-fsx-to-{peer_key}",
                security_group_id=group.id,
                referenced_security_group_id=peer,
                ip_protocol="-1",
                description=f"replies to {peer_key}",
                opts=child,
            )
            rules.append(egress)

        log_configuration = {"level": "DISABLED"}
        if config.log_level != "DISABLED":
            logs = aws.cloudwatch.LogGroup(
                f"{name}-fsx", name_prefix="/aws/fsx/", retention_in_days=90, opts=self._stateful
            )
            log_configuration = {"level": config.log_level, "destination": logs.arn}
        destroy = args.stateful_resources is StatefulResources.DESTROY
        self.file_system = aws.fsx.LustreFileSystem(
            f"{name}-fsx",
            deployment_type=config.deployment_type,
            storage_capacity=config.storage_capacity_gib,
            per_unit_storage_throughput=config.per_unit_storage_throughput,
            data_compression_type=config.compression,
            file_system_type_version=versions.FSX_LUSTRE_VERSION,
            subnet_ids=args.fsx_subnet_id,  # one subnet: the provider takes it as a single string
            security_group_ids=[group.id],
            log_configuration=log_configuration,
            skip_final_backup=destroy if config.deployment_type == "PERSISTENT_2" else None,
            tags={"Name": cluster.name.apply(lambda cluster_name: f"{cluster_name}-fsx")},
            opts=pulumi.ResourceOptions.merge(
                self._stateful,
                # why: the servers talk Lustre to each other while the file system is created (an FSx create fails
                # if the group's rules are still being added); on destroy the rules outlive it.
                pulumi.ResourceOptions(custom_timeouts=FSX_TIMEOUTS, depends_on=rules),
            ),
        )
        if config.data_repository is not None:
            self._data_repository(config)

        controller: dict = cluster.system_placement.values()
        needs = list(cluster.system_ready)
        if config.storage_class:
            # Only dynamic provisioning needs AWS access: create file systems tagged for this cluster, delete those.
            role = cluster.irsa_role(
                f"{name}-fsx-csi",
                namespace=FSX_CSI_NAMESPACE,
                service_account=FSX_CSI_CONTROLLER_SERVICE_ACCOUNT,
                inline_policies={
                    "controller": pulumi.Output.all(cluster.partition, cluster.name).apply(
                        lambda v: to_json(fsx_csi_controller_policy(partition=v[0], cluster_name=v[1]))
                    )
                },
                opts=child,
            )
            controller["serviceAccount"] = {
                # The chart creates it (its default); the name is spelled out because the trust policy names it.
                "name": FSX_CSI_CONTROLLER_SERVICE_ACCOUNT,
                "annotations": {"eks.amazonaws.com/role-arn": role.arn},
            }
            controller["extraTags"] = {DYNAMIC_FSX_TAG: cluster.name}
            controller["region"] = cluster.region
            # Deleted after the driver (which depends on it) and before the security group the claims' file systems
            # use: whatever file system the driver had not deleted yet goes here, or stays under protect/retain.
            needs.append(
                Sweep(
                    f"{name}-fsx-sweep",
                    SweepArgs(
                        cluster_name=cluster.name,
                        region=cluster.region,
                        stateful_resources=args.stateful_resources,
                        vpc_id=cluster.vpc_id,
                        profile=cluster.aws_profile,
                        kinds=frozenset({Kind.FILE_SYSTEM}),
                    ),
                    pulumi.ResourceOptions(parent=self, depends_on=[group, *rules]),
                )
            )
        driver = helm.release(
            f"{name}-fsx-csi",
            versions.FSX_CSI_DRIVER,
            namespace=FSX_CSI_NAMESPACE,
            # The node plugin must run on every node that may mount Lustre, GPU nodes included.
            values={"controller": controller, "node": {"tolerateAllTaints": True}},
            # why: the controller runs on the system nodes. (Its role ARN waits for the policy.)
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=needs)),
        )
        if config.storage_class:
            self.fsx_storage_class_name = FSX_STORAGE_CLASS
            k8s_objects.create(
                f"{name}-fsx-class",
                fsx_storage_class(
                    name=FSX_STORAGE_CLASS,
                    subnet_id=args.fsx_subnet_id,
                    security_group_id=group.id,
                    deployment_type=config.deployment_type,
                    throughput=config.per_unit_storage_throughput,
                    compression=config.compression,
                    lustre_version=versions.FSX_LUSTRE_VERSION,
                ),
                # why: file systems of this class are deleted by the driver; it must outlive them.
                pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[driver])),
            )
        fs = self.file_system
        for namespace in config.namespaces:
            pv_name = f"{config.claim_name}-{namespace}"
            rendered = pulumi.Output.all(fs.id, fs.dns_name, fs.mount_name).apply(
                lambda v, namespace=namespace, pv_name=pv_name: fsx_volume(
                    name=pv_name,
                    namespace=namespace,
                    claim=config.claim_name,
                    file_system_id=v[0],
                    dns_name=v[1],
                    mount_name=v[2],
                    capacity_gib=config.storage_capacity_gib,
                )
            )
            # Order, for destroy: the namespace goes first (its pods stop, and its claim goes with it: deleting the
            # claim first would wait on its pvc-protection finalizer for pods that only the namespace removes), then
            # the volume (no longer bound), then the file system nobody mounts any more.
            volume = k8s_objects.create(
                f"{name}-pv-{namespace}",
                {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name}, "spec": rendered[0]["spec"]},
                # why: the driver mounts and unmounts the volume.
                pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[driver])),
            )
            ns = k8s_objects.create(
                f"{name}-ns-{namespace}",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": dict(TEAM_POD_SECURITY)}},
                # why: whatever teams put here (claims, load balancers) is deleted with the namespace, while the
                # drivers and controllers that delete its AWS side still run, and before the volume it mounts.
                pulumi.ResourceOptions.merge(
                    k8s_opts,
                    pulumi.ResourceOptions(depends_on=[driver, volume, cluster.ebs_csi_driver, *args.cleanup_controllers]),
                ),
            )
            k8s_objects.create(
                f"{name}-pvc-{namespace}",
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": config.claim_name, "namespace": namespace},
                    "spec": rendered[1]["spec"],
                },
                pulumi.ResourceOptions.merge(
                    k8s_opts, pulumi.ResourceOptions(depends_on=[ns, volume], deleted_with=ns)
                ),
            )

    def _data_repository(self, config: FsxConfig) -> None:
        repository = config.data_repository
        assert repository is not None and self.file_system is not None
        bucket = self.buckets[repository.bucket]
        policy = aws.iam.Policy(
            f"{self._name}-fsx-data-repository",
            description="What the identity running pulumi up needs to link FSx to the bucket prefix",
            policy=pulumi.Output.all(self._args.cluster.partition, bucket.arn).apply(
                lambda v: to_json(data_repository_policy(partition=v[0], bucket_arn=v[1], prefix=repository.prefix))
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.data_repository_policy_arn = policy.arn
        events = ["NEW", "CHANGED", "DELETED"]
        aws.fsx.DataRepositoryAssociation(
            f"{self._name}-fsx-{repository.bucket}",
            file_system_id=self.file_system.id,
            file_system_path=repository.file_system_path,
            data_repository_path=bucket.bucket.apply(lambda b: f"s3://{b}/{repository.prefix}"),
            batch_import_meta_data_on_create=True,
            imported_file_chunk_size=repository.imported_file_chunk_size_mib,
            s3={"auto_import_policy": {"events": events}, "auto_export_policy": {"events": events}},
            delete_data_in_filesystem=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                # FSx removes the association with its file system (the bucket's data stays): detaching it first
                # would add minutes to destroy for nothing. A retained file system keeps it.
                deleted_with=self.file_system,
                custom_timeouts=IMPORT_TIMEOUTS,
                # why: on a KMS-encrypted bucket, imports and exports fail until the key admits FSx's S3 access.
                depends_on=[self._key_policy] if self._key_policy is not None else [],
            ),
        )
