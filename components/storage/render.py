"""Pure renderers for storage: bucket policies, the FSx data-repository permissions, volumes and storage classes."""

from __future__ import annotations

from typing import Any

from ..config.types import StatefulResources
from ..identity.documents import IAM_VERSION, dns_suffix
from ..scheduling import GPU_RESOURCE, NEURON_RESOURCES
from ..tags import DYNAMIC_FSX_TAG

FSX_CSI_DRIVER = "fsx.csi.aws.com"
EBS_CSI_DRIVER = "ebs.csi.aws.com"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def tls_only_bucket_policy(bucket_arn: str) -> dict[str, Any]:
    """Refuse every request to the bucket that does not use TLS (1.2 or newer)."""
    resources = [bucket_arn, f"{bucket_arn}/*"]
    return {
        "Version": IAM_VERSION,
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": resources,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
            {
                "Sid": "DenyOutdatedTls",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": resources,
                "Condition": {"NumericLessThan": {"s3:TlsVersion": "1.2"}},
            },
        ],
    }


#: The service-linked roles FSx creates per file system to reach a data repository (FSx for Lustre guide, "Working
#: with server-side encrypted Amazon S3 buckets").
FSX_S3_ROLE_PATH = "role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_"


def bucket_key_policy(
    *, partition: str, account_id: str, region: str, fsx_bucket_arns: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The key policy of the buckets' KMS key: the account administers it through IAM (the default policy), and FSx's
    S3 service-linked roles may use it through S3, in this account, for the data repository buckets only.

    That role's name carries the file system id and it exists only once the data repository association is made,
    and a key policy cannot name a principal that does not exist yet; so it is matched by `aws:PrincipalArn`.
    With S3 Bucket Keys on, the encryption context is the bucket's ARN; without, the object's.
    """
    suffix = dns_suffix(partition)
    statements: list[dict[str, Any]] = [
        {
            "Sid": "AccountAdministersTheKeyThroughIam",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:{partition}:iam::{account_id}:root"},
            "Action": "kms:*",
            "Resource": "*",
        }
    ]
    if fsx_bucket_arns:
        statements.append(
            {
                "Sid": "FsxDataRepositoryThroughS3",
                "Effect": "Allow",
                "Principal": {"AWS": "*"},
                "Action": ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey", "kms:ReEncrypt*"],
                "Resource": "*",
                "Condition": {
                    "ArnLike": {"aws:PrincipalArn": f"arn:{partition}:iam::{account_id}:{FSX_S3_ROLE_PATH}*"},
                    "StringEquals": {"kms:CallerAccount": account_id, "kms:ViaService": f"s3.{region}.{suffix}"},
                    "StringLike": {
                        "kms:EncryptionContext:aws:s3:arn": sorted(
                            [*fsx_bucket_arns, *(f"{arn}/*" for arn in fsx_bucket_arns)]
                        )
                    },
                },
            }
        )
    return {"Version": IAM_VERSION, "Statement": statements}


def data_repository_policy(*, partition: str, bucket_arn: str, prefix: str) -> dict[str, Any]:
    """What the identity that creates a data repository association needs on the bucket prefix.

    FSx checks the caller's own S3 access when the association is created, and creates its service-linked role for
    S3 access; without these the association fails after the file system (slow to create) already exists.
    """
    objects = f"{bucket_arn}/{prefix}*"
    return {
        "Version": IAM_VERSION,
        "Statement": [
            {
                "Sid": "ReadWriteThePrefix",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                "Resource": objects,
            },
            {
                "Sid": "ListThePrefix",
                "Effect": "Allow",
                "Action": ["s3:ListBucket", "s3:GetBucketLocation", "s3:GetBucketAcl", "s3:GetBucketPolicy"],
                "Resource": bucket_arn,
            },
            {
                "Sid": "CreateTheFsxS3ServiceLinkedRole",
                "Effect": "Allow",
                "Action": ["iam:CreateServiceLinkedRole", "iam:AttachRolePolicy", "iam:PutRolePolicy"],
                "Resource": f"arn:{partition}:iam::*:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/*",
            },
        ],
    }


def fsx_volume(
    *,
    name: str,
    namespace: str,
    claim: str,
    file_system_id: str,
    dns_name: str,
    mount_name: str,
    capacity_gib: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A static PersistentVolume for an existing file system and the claim bound to it in `namespace`.

    The PV is pinned to the claim (claimRef) and the claim to the PV (volumeName), so nothing else can take either;
    the PV's reclaim policy is Retain: deleting the claim never deletes the file system.
    """
    capacity = f"{capacity_gib}Gi"
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": capacity},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": namespace, "name": claim},
            "mountOptions": ["flock"],
            "csi": {
                "driver": FSX_CSI_DRIVER,
                "volumeHandle": file_system_id,
                "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name},
            },
        },
    }
    claim_manifest = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": name,
            "resources": {"requests": {"storage": capacity}},
        },
    }
    return volume, claim_manifest


#: The platform's default StorageClass (what every claim without a class, and every Kubeflow claim, gets).
DEFAULT_CLASS_NAME = "gp3"
#: The class of volumes the stack keeps through `pulumi destroy` (statefulResources protect or retain).
RETAIN_CLASS_NAME = "gp3-retain"


def kept_volume_class_name(stateful: StatefulResources) -> str:
    """The class of the volumes that hold data (databases, object stores, workspaces, metrics): their volumes
    outlive their claims unless the stack says its stores may be destroyed."""
    return DEFAULT_CLASS_NAME if stateful is StatefulResources.DESTROY else RETAIN_CLASS_NAME


def gp3_storage_class(name: str = DEFAULT_CLASS_NAME, *, retain: bool = False) -> dict[str, Any]:
    """Encrypted gp3, created where the pod lands (so it is in the pod's AZ): the default class, or with `retain` a
    class whose volumes outlive their claims (for what the stack keeps through `pulumi destroy`)."""
    metadata: dict[str, Any] = {"name": name}
    if not retain:
        metadata["annotations"] = {DEFAULT_CLASS_ANNOTATION: "true"}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": metadata,
        "provisioner": EBS_CSI_DRIVER,
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
        "reclaimPolicy": "Retain" if retain else "Delete",
        "parameters": {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
    }


def fsx_storage_class(
    *,
    name: str,
    subnet_id: Any,
    security_group_id: Any,
    deployment_type: str,
    throughput: int | None,
    compression: str,
    lustre_version: str,
    retain: bool,
) -> dict[str, Any]:
    """A StorageClass that creates a file system per claim, in the same subnet and security group as the static one;
    with `retain`, a file system outlives its claim (for stacks that keep their stores through `pulumi destroy`).

    `subnet_id` and `security_group_id` may be values or Pulumi outputs; they are only placed, never read. The
    driver takes every parameter as a string (aws-fsx-csi-driver, "Dynamic Provisioning")."""
    parameters = {
        "subnetId": subnet_id,
        "securityGroupIds": security_group_id,
        "deploymentType": deployment_type,
        "dataCompressionType": compression,
        "fileSystemTypeVersion": lustre_version,
    }
    if throughput is not None:
        parameters["perUnitStorageThroughput"] = str(throughput)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": FSX_CSI_DRIVER,
        # Growing a claim grows the file system (fsx:UpdateFileSystem).
        "reclaimPolicy": "Retain" if retain else "Delete",
        "allowVolumeExpansion": True,
        # The file system's subnet, not the pod, fixes its AZ: waiting for a consumer would gain nothing.
        "volumeBindingMode": "Immediate",
        "mountOptions": ["flock"],
        "parameters": parameters,
    }


def fsx_csi_controller_policy(*, partition: str, cluster_name: str) -> dict[str, Any]:
    """What the FSx CSI controller needs to create, grow and delete file systems for claims: the upstream driver's
    policy (aws-fsx-csi-driver docs/install.md) narrowed to file systems tagged for this cluster."""
    return {
        "Version": IAM_VERSION,
        "Statement": [
            {
                "Sid": "CreateTaggedFileSystems",
                "Effect": "Allow",
                "Action": ["fsx:CreateFileSystem", "fsx:TagResource"],
                "Resource": "*",
                "Condition": {"StringEquals": {f"aws:RequestTag/{DYNAMIC_FSX_TAG}": cluster_name}},
            },
            {
                "Sid": "ManageOwnFileSystems",
                "Effect": "Allow",
                "Action": ["fsx:DeleteFileSystem", "fsx:UpdateFileSystem"],
                "Resource": "*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/{DYNAMIC_FSX_TAG}": cluster_name}},
            },
            {
                # Describe calls take no resource-level conditions.
                "Sid": "DescribeFileSystems",
                "Effect": "Allow",
                "Action": "fsx:DescribeFileSystems",
                "Resource": "*",
            },
            {
                "Sid": "FsxServiceLinkedRole",
                "Effect": "Allow",
                "Action": "iam:CreateServiceLinkedRole",
                "Resource": f"arn:{partition}:iam::*:role/aws-service-role/fsx.amazonaws.com/*",
                "Condition": {"StringEquals": {"iam:AWSServiceName": "fsx.amazonaws.com"}},
            },
        ],
    }


def no_accelerators_quota(namespace: str) -> dict[str, Any]:
    """The ResourceQuota of a namespace the platform makes only to mount the FSx file system: no GPUs or Neuron
    devices at all. It belongs to no team's share (no queue, no quota in Kueue), so a GPU pod there would take the
    shared pools' GPUs outside every share; GPU work that reads the file system runs in a Kubeflow team's namespace
    or a team stack's (`fsxClaims`). Extended resources take quota on requests only (Kubernetes docs, "Resource
    Quotas", extended resources)."""
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "no-accelerators", "namespace": namespace},
        "spec": {"hard": {f"requests.{resource}": "0" for resource in (GPU_RESOURCE, *NEURON_RESOURCES)}},
    }
