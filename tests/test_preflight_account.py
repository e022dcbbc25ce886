"""Preflight account checks against moto: VPC, Elastic IP and NAT gateway quotas for what the network creates, an
existing VPC's subnets, the Spot service-linked role, FSx for Lustre storage, and the EBS default key (Stubber for
the EC2 and FSx quota codes and for GetEbsDefaultKmsKeyId, which moto does not serve)."""

from __future__ import annotations

from components.tools.preflight import reads
from components.tools.preflight.checks_account import (
    data_repository_check,
    ebs_key_check,
    elastic_ip_check,
    existing_vpc_check,
    fsx_storage_check,
    nat_gateway_check,
    nat_zones,
    spot_role_check,
    vpc_quota_check,
)
from components.tools.preflight.quotas import ELASTIC_IPS, FSX_STORAGE, NAT_GATEWAYS_PER_AZ, VPCS_PER_REGION
from components.tools.preflight.results import Status
from tests import preflight_world
from tests.preflight_world import (
    REGION,
    create_spot_role,
    ebs_default_key_client,
    platform_config,
    quota_stubber,
)

# The moto world's fixtures, requested by name below: bound here, not imported, since every parameter of the
# same name would shadow an import.
credentials = preflight_world.credentials
clients = preflight_world.clients
account = preflight_world.account


def _subnet(clients, zone):
    vpc = clients.ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    return vpc, clients.ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.0.0/24", AvailabilityZone=zone)["Subnet"][
        "SubnetId"
    ]


def _quota(quota, value):
    client, stubber = quota_stubber([(quota, value)])
    answer = reads.quota_value(client, quota)
    stubber.assert_no_pending_responses()
    return answer


# ---------------------------------------------------------------------------------------------------- VPCs


def test_a_new_vpc_within_the_quota_passes(clients):
    network = platform_config("prod").network
    # moto serves the vpc quota codes: VPCs per Region 5; the region's default VPC is in use
    result = vpc_quota_check(
        network, reads.vpc_count(clients.ec2), reads.quota_value(clients.quotas, VPCS_PER_REGION), REGION
    )
    assert result.status is Status.PASS
    assert result.evidence == "VPCs per Region (L-F678F1CE) = 5; in use 1; the stack adds 1 VPC"


def test_a_region_with_every_vpc_in_use_fails(clients):
    for index in range(4):
        clients.ec2.create_vpc(CidrBlock=f"10.{index}.0.0/16")
    result = vpc_quota_check(
        platform_config("prod").network,
        reads.vpc_count(clients.ec2),
        reads.quota_value(clients.quotas, VPCS_PER_REGION),
        REGION,
    )
    assert result.status is Status.FAIL
    assert "--quota-code L-F678F1CE --desired-value 6" in result.fix


def test_an_unknown_vpc_quota_warns():
    assert vpc_quota_check(platform_config("prod").network, 1, None, REGION).status is Status.WARN


# --------------------------------------------------------------------------------------------- Elastic IPs


def test_prod_needs_an_elastic_ip_per_nat_gateway_and_passes_within_the_quota(clients):
    network = platform_config("prod").network
    assert nat_zones(network) == ("us-west-2a", "us-west-2b", "us-west-2c")
    result = elastic_ip_check(network, reads.elastic_ip_count(clients.ec2), _quota(ELASTIC_IPS, 5), REGION)
    assert result.status is Status.PASS
    assert "in use 0; the stack adds 3" in result.evidence


def test_elastic_ips_already_allocated_can_leave_too_few_for_the_nat_gateways(clients):
    for _ in range(3):
        clients.ec2.allocate_address(Domain="vpc")
    result = elastic_ip_check(
        platform_config("prod").network, reads.elastic_ip_count(clients.ec2), _quota(ELASTIC_IPS, 5), REGION
    )
    assert result.status is Status.FAIL
    assert "in use 3; the stack adds 3" in result.evidence


def test_an_elastic_ip_quota_that_cannot_be_read_warns(clients):
    result = elastic_ip_check(
        platform_config("prod").network, reads.elastic_ip_count(clients.ec2), _quota(ELASTIC_IPS, None), REGION
    )
    assert result.status is Status.WARN


# -------------------------------------------------------------------------------------------- NAT gateways


def test_dev_adds_one_nat_gateway_in_its_first_zone(clients):
    network = platform_config("dev").network
    result = nat_gateway_check(
        network, reads.nat_gateways_by_zone(clients.ec2), reads.quota_value(clients.quotas, NAT_GATEWAYS_PER_AZ), REGION
    )
    assert nat_zones(network) == ("us-west-2a",)
    assert result.status is Status.PASS


def test_a_zone_already_at_its_nat_gateway_quota_fails(clients):
    _, subnet = _subnet(clients, "us-west-2b")
    for _ in range(5):
        clients.ec2.create_nat_gateway(
            SubnetId=subnet, AllocationId=clients.ec2.allocate_address(Domain="vpc")["AllocationId"]
        )
    result = nat_gateway_check(
        platform_config("prod").network,
        reads.nat_gateways_by_zone(clients.ec2),
        reads.quota_value(clients.quotas, NAT_GATEWAYS_PER_AZ),
        REGION,
    )
    assert result.status is Status.FAIL
    assert "us-west-2b 5" in result.evidence
    assert result.fix.startswith("us-west-2b is full")


def test_an_unknown_nat_gateway_quota_warns():
    assert nat_gateway_check(platform_config("dev").network, {}, None, REGION).status is Status.WARN


def _existing(vpc, subnets, zones):
    return platform_config(
        "dev",
        {"network": {"availabilityZones": zones, "existing": {"vpcId": vpc, "privateSubnetIds": subnets}}},
    ).network


def test_an_existing_vpc_creates_no_nat_gateway_and_its_subnets_must_follow_the_zone_order(clients):
    vpc, first = _subnet(clients, "us-west-2a")
    second = clients.ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24", AvailabilityZone="us-west-2b")["Subnet"][
        "SubnetId"
    ]
    network = _existing(vpc, [first, second], ["us-west-2a", "us-west-2b"])
    assert nat_gateway_check(network, {}, None, REGION).status is Status.PASS
    zones = reads.subnet_zones(clients.ec2, [first, second])
    assert (
        existing_vpc_check(
            network.existing, network.availability_zones, reads.vpc_exists(clients.ec2, vpc), zones
        ).status
        is Status.PASS
    )

    swapped = _existing(vpc, [second, first], ["us-west-2a", "us-west-2b"])
    result = existing_vpc_check(swapped.existing, swapped.availability_zones, True, zones)
    assert result.status is Status.FAIL
    assert f"subnet {second} is in us-west-2b, listed for us-west-2a" in result.evidence


def test_an_existing_vpc_that_does_not_exist_fails(clients):
    network = _existing(
        "vpc-0123456789abcdef0", ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"], ["us-west-2a", "us-west-2b"]
    )
    result = existing_vpc_check(
        network.existing,
        network.availability_zones,
        reads.vpc_exists(clients.ec2, "vpc-0123456789abcdef0"),
        reads.subnet_zones(clients.ec2, network.existing.private_subnet_ids),
    )
    assert result.status is Status.FAIL
    assert "VPC vpc-0123456789abcdef0 does not exist" in result.evidence


# ------------------------------------------------------------------------------------------------ spot role


def test_spot_pools_fail_without_the_spot_service_linked_role(clients):
    result = spot_role_check(["gpu-inference"], reads.role_exists(clients.iam, "AWSServiceRoleForEC2Spot"))
    assert result.status is Status.FAIL
    assert result.fix == "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com"


def test_spot_pools_pass_with_the_spot_service_linked_role(clients):
    create_spot_role(clients)
    assert (
        spot_role_check(["gpu-inference"], reads.role_exists(clients.iam, "AWSServiceRoleForEC2Spot")).status
        is Status.PASS
    )


def test_stacks_without_spot_pools_need_no_spot_role():
    assert spot_role_check([], None).status is Status.PASS


# ----------------------------------------------------------------------------------------------------- FSx


def _lustre(clients, gib, deployment_type):
    clients.fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=gib,
        SubnetIds=["subnet-0123456789abcdef0"],
        LustreConfiguration={"DeploymentType": deployment_type},
    )


def test_fsx_storage_within_the_quota_passes(clients):
    config = platform_config("dev")  # SCRATCH_2, 1200 GiB
    _lustre(clients, 2400, "PERSISTENT_2")  # counts against another quota
    result = fsx_storage_check(
        config, reads.lustre_storage_by_type(clients.fsx), _quota(FSX_STORAGE["SCRATCH_2"], 2400)
    )
    assert result.status is Status.PASS
    assert (
        result.evidence
        == "Lustre Scratch storage capacity (L-AD2FC696) = 2400; in use 0; the stack adds 1200 GiB (SCRATCH_2)"
    )


def test_fsx_storage_the_account_already_uses_can_leave_too_little(clients):
    _lustre(clients, 2400, "SCRATCH_2")
    result = fsx_storage_check(
        platform_config("dev"), reads.lustre_storage_by_type(clients.fsx), _quota(FSX_STORAGE["SCRATCH_2"], 2400)
    )
    assert result.status is Status.FAIL
    assert "--quota-code L-AD2FC696 --desired-value 3600" in result.fix


def test_an_fsx_quota_that_cannot_be_read_warns(clients):
    result = fsx_storage_check(
        platform_config("prod"), reads.lustre_storage_by_type(clients.fsx), _quota(FSX_STORAGE["PERSISTENT_2"], None)
    )
    assert result.status is Status.WARN


def test_the_data_repository_bucket_is_the_stacks_own_in_its_region():
    result = data_repository_check(platform_config("prod"))
    assert result is not None  # prod links its file system to a bucket
    assert result.status is Status.PASS
    assert result.evidence == "storage.buckets.datasets is created by this stack in us-west-2, the file system's region"


# ------------------------------------------------------------------------------------------------- EBS key


def test_the_aws_managed_ebs_key_passes(clients):
    key = reads.ebs_default_key(ebs_default_key_client("alias/aws/ebs"), clients.kms)
    assert ebs_key_check(key).status is Status.PASS


def test_a_customer_managed_default_key_warns_that_node_roles_need_grants(clients):
    arn = clients.kms.create_key()["KeyMetadata"]["Arn"]
    result = ebs_key_check(reads.ebs_default_key(ebs_default_key_client(arn), clients.kms))
    assert result.status is Status.WARN
    assert "CUSTOMER-managed, Enabled" in result.evidence
    assert "kms:CreateGrant" in result.fix


def test_a_disabled_default_key_fails(clients):
    metadata = clients.kms.create_key()["KeyMetadata"]
    clients.kms.disable_key(KeyId=metadata["KeyId"])
    result = ebs_key_check(reads.ebs_default_key(ebs_default_key_client(metadata["Arn"]), clients.kms))
    assert result.status is Status.FAIL
    assert "reset-ebs-default-kms-key-id" in result.fix
