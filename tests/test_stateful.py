"""Stateful resources are never replaced by a config change that should only update them.

A replaced file system or bucket is a new, empty one; under `retain` the old one also keeps billing, forgotten by
the stack. Prod's `protect` makes the engine refuse any such replacement; this test keeps the program from planning
one for the changes users make every day.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import PROJECT, run_stack, stack_config

#: Inputs that replace each stateful resource when they change (ForceNew in the terraform-provider-aws schema that
#: pulumi-aws bridges). The FSx security group is here because the file system's securityGroupIds is.
REPLACING: dict[str, tuple[str, ...]] = {
    "aws:fsx/lustreFileSystem:LustreFileSystem": (
        "deploymentType",
        "subnetIds",
        "securityGroupIds",
        "fileSystemTypeVersion",
        "kmsKeyId",
        "storageType",
        "driveCacheType",
        "importPath",
        "exportPath",
        "copyTagsToBackups",
        "efaEnabled",
    ),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": (
        "fileSystemId",
        "fileSystemPath",
        "dataRepositoryPath",
        "batchImportMetaDataOnCreate",
    ),
    "aws:ec2/securityGroup:SecurityGroup": ("name", "namePrefix", "description", "vpcId"),
    "aws:s3/bucket:Bucket": ("bucket", "bucketPrefix", "objectLockEnabled"),
    "aws:kms/key:Key": ("customerMasterKeySpec", "keyUsage", "multiRegion"),
    "aws:cloudwatch/logGroup:LogGroup": ("name", "namePrefix", "logGroupClass"),
}


def replacing_inputs(inventory) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (r.type, r.name): {key: r.inputs.get(key) for key in REPLACING[r.type]}
        for r in inventory.resources
        if r.type in REPLACING
    }


def prod_section(key: str) -> dict[str, Any]:
    return json.loads(stack_config("prod")[f"{PROJECT}:{key}"])


def _storage(**fsx) -> dict[str, Any]:
    storage = prod_section("storage")
    return {"storage": {**storage, "fsx": {**storage["fsx"], **fsx}}}


#: Changes a team makes to a running prod stack: each must update stateful resources in place, never replace them.
EVERYDAY_CHANGES: dict[str, dict[str, Any]] = {
    "owner and cost centre": {"owner": "ml-infra", "costCenter": "ml-shared"},
    "log retention": {"cluster": {**prod_section("cluster"), "logRetentionDays": 731}},
    "a bigger file system": _storage(storageCapacityGib=9600),
    "another team on FSx": _storage(namespaces=["team-a", "team-b", "team-c"]),
    "no dynamic FSx class": _storage(storageClass=False),
    "FSx logging": _storage(logLevel="ERROR_ONLY"),
    "bucket lifecycle": {
        "storage": {
            **prod_section("storage"),
            "buckets": {
                **prod_section("storage")["buckets"],
                "artifacts": {"encryption": "kms", "noncurrentVersionExpirationDays": 30},
            },
        }
    },
    "stateful policy": {"statefulResources": "retain"},
}


@pytest.fixture(scope="module")
def baseline(prod):
    return replacing_inputs(prod)


@pytest.mark.stack
@pytest.mark.parametrize("change", sorted(EVERYDAY_CHANGES))
def test_an_everyday_change_replaces_no_stateful_resource(change, baseline):
    assert replacing_inputs(run_stack("prod", EVERYDAY_CHANGES[change])) == baseline


def test_the_fsx_security_group_description_is_the_same_for_every_stack(dev, prod):
    """Its description is immutable: one derived from config would replace the group, and with it the file system."""
    group = "storage-fsx"
    assert (
        dev.one("aws:ec2/securityGroup:SecurityGroup", group).inputs["description"]
        == (prod.one("aws:ec2/securityGroup:SecurityGroup", group).inputs["description"])
    )


def test_the_table_covers_every_stateful_resource_prod_protects(prod):
    protected = {r.type for r in prod.resources if r.protect and r.type.startswith("aws:")}
    # Not data stores: their replacement loses nothing (the policies and settings are re-created as they were).
    settings = {
        "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "aws:s3/bucketVersioning:BucketVersioning",
        "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
        "aws:s3/bucketPolicy:BucketPolicy",
        "aws:kms/keyPolicy:KeyPolicy",
    }
    assert protected - settings <= set(REPLACING)


@pytest.mark.stack
@pytest.mark.parametrize(("stack", "kept"), [("dev", False), ("prod", True)])
def test_kubeflows_volumes_outlive_their_claims_exactly_where_the_stack_keeps_its_stores(stack, kept, request):
    """MySQL's and SeaweedFS' claims, and every notebook workspace the spawner makes, use the class whose volumes
    stay in AWS when a claim goes (prod: statefulResources protect), and the plain class where stores may go (dev)."""
    inventory = request.getfixturevalue(stack)
    wanted = "gp3-retain" if kept else "gp3"
    chosen = next(
        r
        for r in inventory.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
        if r.inputs["metadata"]["name"] == wanted
    )
    assert chosen.inputs["reclaimPolicy"] == ("Retain" if kept else "Delete")
    claims = [
        r
        for r in inventory.of_type("kubernetes:core/v1:PersistentVolumeClaim")
        if r.inputs["metadata"].get("namespace") == "kubeflow"
    ]
    assert {c.inputs["metadata"]["name"] for c in claims} >= {"mysql-pv-claim"}
    assert {c.inputs["spec"]["storageClassName"] for c in claims} == {wanted}
    (spawner,) = [
        r
        for r in inventory.of_type("kubernetes:core/v1:ConfigMap")
        if "spawner_ui_config.yaml" in (r.inputs.get("data") or {})
    ]
    assert f"storageClassName: {wanted}\n" in spawner.inputs["data"]["spawner_ui_config.yaml"]


def _fsx_class(inventory: Any) -> Any:
    return next(
        r
        for r in inventory.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
        if r.inputs["metadata"]["name"] == "fsx-lustre"
    )


@pytest.mark.stack
def test_teams_file_systems_of_the_fsx_class_outlive_their_claims_exactly_where_the_stack_keeps_its_stores(
    prod, stack_once
):
    """A team's own file system (team.fsxClaims with storageClass, or any claim of the class) holds its data: under
    prod's protect its claim going, or its namespace going in a destroy, must not delete it; under destroy it goes."""
    assert _fsx_class(prod).inputs["reclaimPolicy"] == "Retain"
    retained = stack_once("prod", {"statefulResources": "retain"})
    assert _fsx_class(retained).inputs["reclaimPolicy"] == "Retain"
    destroyed = stack_once("prod", {"statefulResources": "destroy"})
    assert _fsx_class(destroyed).inputs["reclaimPolicy"] == "Delete"
