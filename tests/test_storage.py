"""Storage: bucket security, FSx sizing rules, Lustre network rules, data repository permissions, volumes, and what
destroy may do to each store."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from components.config.types import StatefulResources
from components.storage.component import Storage, StorageArgs
from components.storage.config import FsxConfig, StorageConfig, fsx_capacity_problem
from components.storage.file_system import FsxFileSystem
from tests.conftest import run_stack

BUCKET = "aws:s3/bucket:Bucket"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


def _parts(inventory, stack, key):
    name = f"storage-{key}"
    return {r.type.rsplit(":", 1)[1]: r for r in inventory.resources if r.name == name and r.type.startswith("aws:s3/")}


@pytest.mark.parametrize("key", ["datasets", "artifacts"])
def test_buckets_are_private_owner_enforced_encrypted_and_versioned(dev, key):
    parts = _parts(dev, "dev", key)
    bucket = parts["Bucket"]
    assert parts["BucketPublicAccessBlock"].inputs == {
        "bucket": bucket.id,
        "blockPublicAcls": True,
        "blockPublicPolicy": True,
        "ignorePublicAcls": True,
        "restrictPublicBuckets": True,
    }
    assert parts["BucketOwnershipControls"].inputs["rule"] == {"objectOwnership": "BucketOwnerEnforced"}
    (rule,) = parts["BucketServerSideEncryptionConfiguration"].inputs["rules"]
    assert rule["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "AES256"}
    assert parts["BucketVersioning"].inputs["versioningConfiguration"] == {"status": "Enabled"}


def test_bucket_policy_refuses_anything_but_tls(dev):
    parts = _parts(dev, "dev", "datasets")
    arn = parts["Bucket"].outputs["arn"]
    policy = json.loads(parts["BucketPolicy"].inputs["policy"])
    assert policy["Statement"] == [
        {
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [arn, f"{arn}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        },
        {
            "Sid": "DenyOutdatedTls",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [arn, f"{arn}/*"],
            "Condition": {"NumericLessThan": {"s3:TlsVersion": "1.2"}},
        },
    ]
    assert dev.depends_on(parts["BucketPolicy"], parts["BucketPublicAccessBlock"])


def test_lifecycle_aborts_stale_uploads_and_expires_old_versions(dev):
    rules = {r["id"]: r for r in _parts(dev, "dev", "artifacts")["BucketLifecycleConfiguration"].inputs["rules"]}
    assert rules["abort-incomplete-uploads"]["abortIncompleteMultipartUpload"] == {"daysAfterInitiation": 7}
    assert rules["expire-noncurrent-versions"]["noncurrentVersionExpiration"] == {"noncurrentDays": 7}


def test_prod_buckets_use_a_rotating_kms_key(prod):
    parts = _parts(prod, "prod", "datasets")
    key = prod.one("aws:kms/key:Key", "storage-buckets")
    (rule,) = parts["BucketServerSideEncryptionConfiguration"].inputs["rules"]
    assert rule["applyServerSideEncryptionByDefault"] == {
        "sseAlgorithm": "aws:kms",
        "kmsMasterKeyId": key.outputs["arn"],
    }
    assert rule["bucketKeyEnabled"] is True
    assert key.inputs["enableKeyRotation"] is True


def test_dev_buckets_and_file_system_are_destroyable_and_prod_ones_protected(dev, prod):
    for bucket in dev.of_type(BUCKET):
        assert bucket.inputs["forceDestroy"] is True
        assert bucket.protect is False
    for bucket in prod.of_type(BUCKET):
        assert bucket.inputs["forceDestroy"] is False
        assert bucket.protect is True
    assert dev.one(FSX).protect is False
    assert prod.one(FSX).protect is True
    assert prod.one(FSX).inputs["skipFinalBackup"] is False  # a protected prod file system keeps a final backup


@pytest.mark.stack
def test_retained_buckets_keep_their_guards(stack_once):
    inventory = stack_once("dev", {"statefulResources": "retain"})
    for resource in inventory.resources:
        if resource.type.startswith("aws:s3/") or resource.type == FSX:
            assert resource.retain_on_delete, resource.name


# ---------------------------------------------------------------------------------------------------- FSx


class _MadeFileSystem(FsxFileSystem):
    """An FsxFileSystem as `Storage` reads it (its config), without registering anything."""

    def __init__(self, config: FsxConfig):  # no super().__init__: Storage refuses before using it
        self.config = config


@pytest.mark.parametrize(
    ("config", "file_system"),
    [
        (StorageConfig(fsx=FsxConfig()), None),  # FSx asked for, no file system given
        (StorageConfig(), _MadeFileSystem(FsxConfig())),  # a file system given, no FSx asked for
        (StorageConfig(fsx=FsxConfig(namespaces=("team-a",))), _MadeFileSystem(FsxConfig())),  # made from other config
    ],
)
def test_storage_refuses_a_file_system_that_is_not_the_one_its_config_describes(config, file_system):
    """Before registering anything: a library program that forgets the file system, or passes another one, learns
    which argument is wrong instead of getting a Storage without volumes."""
    # no cluster: the file system is refused before the cluster is read
    args = StorageArgs(
        config=config,
        stateful_resources=StatefulResources.DESTROY,
        cluster=None,  # type: ignore[arg-type]
        file_system=file_system,
    )
    with pytest.raises(ValueError, match=r"StorageArgs.file_system: expected the FsxFileSystem made from config.fsx"):
        Storage("storage", args)


@pytest.mark.parametrize("capacity", [1200, 2400, 4800, 9600, 24000])
def test_fsx_capacities_aws_accepts(capacity):
    assert fsx_capacity_problem("SCRATCH_2", capacity) is None


@pytest.mark.parametrize(
    ("capacity", "message"),
    [
        (1000, "SCRATCH_2 accepts 1200, 2400 or a multiple of 2400 GiB, got 1000 (nearest: 1200 or 2400)"),
        (3600, "SCRATCH_2 accepts 1200, 2400 or a multiple of 2400 GiB, got 3600 (nearest: 2400 or 4800)"),
        (5000, "SCRATCH_2 accepts 1200, 2400 or a multiple of 2400 GiB, got 5000 (nearest: 4800 or 7200)"),
    ],
)
def test_fsx_capacities_aws_refuses_are_explained(capacity, message):
    assert fsx_capacity_problem("SCRATCH_2", capacity) == message


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"deploymentType": "PERSISTENT_2"}, "PERSISTENT_2 needs one of 125, 250, 500, 1000 MB/s per TiB, got None"),
        (
            {"deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": 200},
            "PERSISTENT_2 needs one of 125, 250, 500, 1000 MB/s per TiB, got 200",
        ),
        ({"deploymentType": "SCRATCH_2", "perUnitStorageThroughput": 125}, "is not used by SCRATCH_2; remove it"),
    ],
)
def test_fsx_throughput_must_fit_the_deployment_type(fields, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        FsxConfig.model_validate(fields)


def test_file_system_lives_in_one_private_subnet_of_the_exported_zone(dev):
    fs = dev.one(FSX)
    subnet = dev.one("aws:ec2/subnet:Subnet", "network-private-us-west-2a")
    assert fs.inputs["subnetIds"] == subnet.id
    assert dev.stack_outputs["fsxAvailabilityZone"] == "us-west-2a"
    assert fs.inputs["fileSystemTypeVersion"] == "2.15"
    assert fs.inputs["dataCompressionType"] == "LZ4"


def test_lustre_ports_are_open_from_the_nodes_and_between_file_servers_only(dev):
    fs = dev.one(FSX)
    (group_id,) = fs.inputs["securityGroupIds"]
    cluster_sg = dev.one("eks:index:Cluster").outputs["clusterSecurityGroupId"]
    into_fsx = sorted(
        (r.inputs["fromPort"], r.inputs["toPort"], r.inputs["referencedSecurityGroupId"] == group_id)
        for r in dev.of_type(INGRESS)
        if r.inputs["securityGroupId"] == group_id
    )
    assert into_fsx == [(988, 988, False), (988, 988, True), (1018, 1023, False), (1018, 1023, True)]
    for rule in dev.of_type(INGRESS):
        assert "cidrIpv4" not in rule.inputs  # never from an address range, only from known groups
        assert rule.inputs["ipProtocol"] == "tcp"
        assert rule.inputs["referencedSecurityGroupId"] in {group_id, cluster_sg}


def test_data_repository_links_the_prefix_both_ways_with_long_timeouts(dev):
    association = dev.one("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation")
    bucket = _parts(dev, "dev", "datasets")["Bucket"]
    assert association.inputs["dataRepositoryPath"] == f"s3://{bucket.outputs['bucket']}/training/"
    assert association.inputs["fileSystemPath"] == "/datasets"
    assert association.inputs["batchImportMetaDataOnCreate"] is True
    events = ["NEW", "CHANGED", "DELETED"]
    assert association.inputs["s3"] == {"autoImportPolicy": {"events": events}, "autoExportPolicy": {"events": events}}
    assert association.inputs["deleteDataInFilesystem"] is False


def test_data_repository_permissions_cover_exactly_the_prefix(dev):
    bucket = _parts(dev, "dev", "datasets")["Bucket"].outputs["arn"]
    policy = json.loads(dev.one("aws:iam/policy:Policy").inputs["policy"])
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    assert by_sid["ReadWriteThePrefix"]["Resource"] == f"{bucket}/training/*"
    assert set(by_sid["ReadWriteThePrefix"]["Action"]) >= {"s3:GetObject", "s3:PutObject", "s3:DeleteObject"}
    assert by_sid["ListThePrefix"]["Resource"] == bucket
    assert by_sid["CreateTheFsxS3ServiceLinkedRole"]["Resource"].endswith(
        "aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/*"
    )
    assert dev.stack_outputs["fsxDataRepositoryPolicyArn"].startswith("arn:aws:iam::")


def test_each_namespace_gets_a_claim_bound_to_its_own_volume_of_the_file_system(prod):
    fs = prod.one(FSX)
    # the storage part's own (Kubeflow's claims are its part's)
    claims = {
        r.inputs["metadata"]["namespace"]: r
        for r in prod.of_type("kubernetes:core/v1:PersistentVolumeClaim")
        if r.name.startswith("storage-")
    }
    volumes = {
        r.inputs["metadata"]["name"]: r
        for r in prod.of_type("kubernetes:core/v1:PersistentVolume")
        if r.name.startswith("storage-")
    }
    assert set(claims) == {"team-a", "team-b"}
    for namespace, claim in claims.items():
        volume = volumes[claim.inputs["spec"]["volumeName"]]
        assert volume.inputs["spec"]["claimRef"] == {"namespace": namespace, "name": "fsx-lustre"}
        assert volume.inputs["spec"]["csi"]["volumeHandle"] == fs.id
        assert volume.inputs["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        assert volume.inputs["spec"]["accessModes"] == ["ReadWriteMany"]


def test_volumes_are_removed_while_the_csi_driver_still_runs(prod):
    driver = prod.release("aws-fsx-csi-driver")
    for kind in ("PersistentVolume", "PersistentVolumeClaim"):
        for resource in (r for r in prod.of_type(f"kubernetes:core/v1:{kind}") if r.name.startswith("storage-")):
            assert prod.depends_on(resource, driver)


def test_fsx_csi_controller_runs_on_system_nodes_and_its_node_plugin_everywhere(dev):
    driver = dev.release("aws-fsx-csi-driver")
    values = driver.inputs["values"]
    assert values["controller"]["nodeSelector"] == {"eksml.io/node-role": "system"}
    assert values["node"]["tolerateAllTaints"] is True
    assert driver.inputs["version"] == "1.17.0"


def test_pools_wait_for_both_csi_agents_when_fsx_is_on(dev):
    pool = next(p for p in dev.of_type("kubernetes:karpenter.sh/v1:NodePool"))
    assert pool.inputs["spec"]["template"]["spec"]["startupTaints"] == [
        {"key": "ebs.csi.aws.com/agent-not-ready", "effect": "NoExecute"},
        {"key": "fsx.csi.aws.com/agent-not-ready", "effect": "NoExecute"},
    ]


def test_default_storage_class_is_encrypted_gp3_bound_where_the_pod_lands(dev):
    (storage_class,) = dev.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
    assert storage_class.inputs["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert storage_class.inputs["parameters"]["encrypted"] == "true"
    assert storage_class.inputs["parameters"]["type"] == "gp3"
    assert storage_class.inputs["volumeBindingMode"] == "WaitForFirstConsumer"


def test_storage_references_are_checked():
    from tests.test_config import problems, raw

    found = problems(raw(storage={"fsx": {"availabilityZone": "us-west-2c", "dataRepository": {"bucket": "models"}}}))
    assert found["storage.fsx.availabilityZone"].startswith("'us-west-2c' is not one of the stack's availability zones")
    assert found["storage.fsx.dataRepository.bucket"] == "names no bucket in storage.buckets (artifacts, datasets)"


# ------------------------------------------------------------------------------------ dynamic FSx volumes

FSX_CSI_ROLE = "storage-fsx-csi-role"


def _fsx_driver(inventory):
    return inventory.release("aws-fsx-csi-driver")


def _classes(inventory):
    return {r.inputs["metadata"]["name"]: r for r in inventory.of_type("kubernetes:storage.k8s.io/v1:StorageClass")}


def test_dynamic_fsx_class_creates_file_systems_beside_the_static_one(prod):
    fs = prod.one(FSX)
    fsx_class = _classes(prod)["fsx-lustre"]
    assert fsx_class.inputs["provisioner"] == "fsx.csi.aws.com"
    assert fsx_class.inputs["parameters"] == {
        "subnetId": fs.inputs["subnetIds"],
        "securityGroupIds": fs.inputs["securityGroupIds"][0],
        "deploymentType": "PERSISTENT_2",
        "perUnitStorageThroughput": "250",
        "dataCompressionType": "LZ4",
        "fileSystemTypeVersion": "2.15",
    }
    assert "annotations" not in fsx_class.inputs["metadata"]  # gp3 stays the only default class
    # why: on destroy the class (and so no new claim) goes first, and the driver outlives it.
    assert prod.depends_on(fsx_class, _fsx_driver(prod))


def test_fsx_csi_controller_may_delete_only_file_systems_it_tagged_for_this_cluster(prod):
    role = prod.one("aws:iam/role:Role", FSX_CSI_ROLE)
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    subjects = [v for k, v in statement["Condition"]["StringEquals"].items() if k.endswith(":sub")]
    assert subjects == ["system:serviceaccount:kube-system:fsx-csi-controller-sa"]

    policy = json.loads(prod.one("aws:iam/rolePolicy:RolePolicy", "storage-fsx-csi-controller").inputs["policy"])
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    tag = "eksml.io/fsx-csi-cluster"
    assert by_sid["CreateTaggedFileSystems"]["Condition"] == {
        "StringEquals": {f"aws:RequestTag/{tag}": "eks-ml-platform-prod"}
    }
    assert by_sid["ManageOwnFileSystems"]["Action"] == ["fsx:DeleteFileSystem", "fsx:UpdateFileSystem"]
    assert by_sid["ManageOwnFileSystems"]["Condition"] == {
        "StringEquals": {f"aws:ResourceTag/{tag}": "eks-ml-platform-prod"}
    }
    unconditioned = [s["Action"] for s in policy["Statement"] if "Condition" not in s]
    assert unconditioned == ["fsx:DescribeFileSystems"]

    values = _fsx_driver(prod).inputs["values"]["controller"]
    assert values["extraTags"] == {tag: "eks-ml-platform-prod"}  # what the conditions above match
    assert values["serviceAccount"] == {
        "name": "fsx-csi-controller-sa",
        "annotations": {"eks.amazonaws.com/role-arn": role.outputs["arn"]},
    }
    assert values["region"] == "us-west-2"


def test_without_the_dynamic_class_the_fsx_driver_gets_no_aws_access(dev):
    assert set(_classes(dev)) == {"gp3"}
    assert not [r for r in dev.of_type("aws:iam/role:Role") if "fsx-csi" in r.name]
    assert set(_fsx_driver(dev).inputs["values"]["controller"]) == {"nodeSelector", "tolerations"}


def test_fsx_may_use_the_bucket_key_of_a_kms_encrypted_data_repository_through_s3_only(prod):
    """Without this statement FSx's S3 service-linked role cannot read or write the encrypted prefix."""
    key_policy = prod.one("aws:kms/keyPolicy:KeyPolicy", "storage-buckets")
    statements = {s["Sid"]: s for s in json.loads(key_policy.inputs["policy"])["Statement"]}
    bucket_arn = prod.one("aws:s3/bucket:Bucket", "storage-datasets").outputs["arn"]
    assert statements["AccountAdministersTheKeyThroughIam"]["Principal"] == {"AWS": "arn:aws:iam::123456789012:root"}
    fsx = statements["FsxDataRepositoryThroughS3"]
    assert fsx["Condition"] == {
        "ArnLike": {
            "aws:PrincipalArn": "arn:aws:iam::123456789012:role/aws-service-role/"
            "s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_*"
        },
        "StringEquals": {"kms:CallerAccount": "123456789012", "kms:ViaService": "s3.us-west-2.amazonaws.com"},
        "StringLike": {"kms:EncryptionContext:aws:s3:arn": [bucket_arn, f"{bucket_arn}/*"]},
    }
    association = prod.one("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation")
    assert key_policy.urn in association.dependencies
    assert key_policy.protect  # shares the fate of the key it belongs to


@pytest.mark.stack
def test_without_a_kms_data_repository_the_bucket_key_keeps_only_the_account_statement():
    inventory = run_stack(
        "dev", {"storage": {"buckets": {"models": {"encryption": "kms"}}}, "kubeflow": {"enabled": False}}
    )
    key_policy = json.loads(inventory.one("aws:kms/keyPolicy:KeyPolicy").inputs["policy"])
    assert [s["Sid"] for s in key_policy["Statement"]] == ["AccountAdministersTheKeyThroughIam"]
