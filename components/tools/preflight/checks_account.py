"""Pure checks: account-wide things the stack creates or relies on (VPCs, Elastic IPs, NAT gateways, the Spot
service-linked role, FSx for Lustre storage, the EBS default key)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...config.types import NatGateways
from ...network.config import ExistingVpc, NetworkConfig
from ...platform.config import PlatformConfig
from .quotas import (
    ELASTIC_IPS,
    FSX_QUOTA_SHARERS,
    FSX_STORAGE,
    NAT_GATEWAYS_PER_AZ,
    VPCS_PER_REGION,
    Quota,
    increase_command,
)
from .reads import EbsDefaultKey
from .results import CheckResult, failed, passed, warned

#: The role EC2 needs before it launches any spot instance in an account (EC2 User Guide, "Service-linked role for
#: Spot Instance requests"). Karpenter's controller policy does not allow creating it.
SPOT_ROLE = "AWSServiceRoleForEC2Spot"


def nat_zones(network: NetworkConfig) -> tuple[str, ...]:
    """The AZs the network creates a NAT gateway (and its Elastic IP) in (components/network/component.py)."""
    if network.existing is not None:
        return ()
    if network.nat_gateways is NatGateways.PER_AZ:
        return network.availability_zones
    return network.availability_zones[:1]


def _quota_result(
    name: str, quota: Quota, value: float | None, used: int, need: int, what: str, region: str
) -> CheckResult:
    evidence = (
        f"{quota.label} = "
        + ("not found" if value is None else f"{value:g}")
        + f"; in use {used}; the stack adds {need} {what}"
    )
    if need == 0:
        return passed(name, evidence)
    if value is None:
        return warned(name, evidence, "check the quota in the Service Quotas console")
    if used + need > value:
        return failed(name, evidence, f"free some, or {increase_command(quota, used + need, region)}")
    return passed(name, evidence)


def vpc_quota_check(network: NetworkConfig, used: int, value: float | None, region: str) -> CheckResult:
    need = 0 if network.existing is not None else 1
    return _quota_result("quota/vpcs", VPCS_PER_REGION, value, used, need, "VPC", region)


def elastic_ip_check(network: NetworkConfig, used: int, value: float | None, region: str) -> CheckResult:
    return _quota_result(
        "quota/elastic-ips", ELASTIC_IPS, value, used, len(nat_zones(network)), "(one per NAT gateway)", region
    )


def nat_gateway_check(
    network: NetworkConfig, used_by_zone: Mapping[str, int], value: float | None, region: str
) -> CheckResult:
    zones = nat_zones(network)
    name, quota = "quota/nat-gateways", NAT_GATEWAYS_PER_AZ
    shown = ", ".join(f"{zone} {used_by_zone.get(zone, 0)}" for zone in zones) or "none"
    evidence = (
        f"{quota.label} = "
        + ("not found" if value is None else f"{value:g}")
        + f"; in use in the stack's NAT AZs: {shown}; the stack adds 1 in each"
    )
    if not zones:
        return passed(name, f"the stack creates no NAT gateway ({'existing VPC' if network.existing else 'none'})")
    if value is None:
        return warned(name, evidence, "check the quota in the Service Quotas console")
    full = [zone for zone in zones if used_by_zone.get(zone, 0) + 1 > value]
    if full:
        most = max(used_by_zone.get(zone, 0) for zone in full) + 1
        return failed(
            name, evidence, f"{', '.join(full)} is full: free one, or {increase_command(quota, most, region)}"
        )
    return passed(name, evidence)


def existing_vpc_check(
    existing: ExistingVpc, stack_zones: Sequence[str], vpc_found: bool, subnet_zones: Mapping[str, str]
) -> CheckResult:
    """network.existing: the VPC and its subnets exist, one per AZ in the order of availabilityZones."""
    problems = [] if vpc_found else [f"VPC {existing.vpc_id} does not exist"]
    for zone, subnet in zip(stack_zones, existing.private_subnet_ids, strict=True):
        actual = subnet_zones.get(subnet)
        if actual is None:
            problems.append(f"subnet {subnet} does not exist")
        elif actual != zone:
            problems.append(f"subnet {subnet} is in {actual}, listed for {zone}")
    evidence = f"{existing.vpc_id}; subnets " + ", ".join(
        f"{s} ({subnet_zones.get(s, '?')})" for s in existing.private_subnet_ids
    )
    if problems:
        return failed(
            "existing-vpc",
            f"{evidence}; {'; '.join(problems)}",
            "fix network.existing: privateSubnetIds must exist and follow the order of network.availabilityZones",
        )
    return passed("existing-vpc", evidence)


def spot_role_check(spot_pools: Sequence[str], exists: bool | None) -> CheckResult:
    if not spot_pools:
        return passed("spot-service-linked-role", "no NodePool allows spot")
    pools = ", ".join(spot_pools)
    if exists:
        return passed("spot-service-linked-role", f"{SPOT_ROLE} exists (spot pools: {pools})")
    return failed(
        "spot-service-linked-role",
        f"{SPOT_ROLE} does not exist; spot pools {pools} would fail every launch",
        "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com",
    )


def fsx_storage_check(config: PlatformConfig, used_by_type: Mapping[str, int], value: float | None) -> CheckResult:
    fsx = config.storage.fsx
    assert fsx is not None
    quota = FSX_STORAGE[fsx.deployment_type]
    used = sum(gib for kind, gib in used_by_type.items() if kind in FSX_QUOTA_SHARERS[fsx.deployment_type])
    return _quota_result(
        "quota/fsx-storage", quota, value, used, fsx.storage_capacity_gib, f"GiB ({fsx.deployment_type})", config.region
    )


def data_repository_check(config: PlatformConfig) -> CheckResult | None:
    """FSx links only buckets of its own region. The bucket is one of the stack's (storage.buckets), created with the
    same provider as the file system, so it is in the region by construction; no AWS call is needed to know it."""
    fsx = config.storage.fsx
    if fsx is None or fsx.data_repository is None:
        return None
    bucket = fsx.data_repository.bucket
    return passed(
        "fsx-data-repository",
        f"storage.buckets.{bucket} is created by this stack in {config.region}, the file system's region",
    )


def ebs_key_check(key: EbsDefaultKey) -> CheckResult:
    """Every volume of the stack (system nodes, Karpenter nodes, the EBS CSI class) asks for encryption without naming
    a key, so EBS uses the account's default key. A customer managed key must let the launching principals use it."""
    name = "ebs-default-key"
    evidence = f"EBS default KMS key {key.key_id}" + (f" ({key.manager}-managed, {key.state})" if key.manager else "")
    if key.manager == "AWS":
        return passed(name, evidence)
    if key.manager is None:
        return warned(
            name,
            f"{evidence}: could not be described",
            "make sure the key exists and that this identity may call kms:DescribeKey",
        )
    if key.state != "Enabled":
        return failed(name, evidence, "enable the key, or reset the default: aws ec2 reset-ebs-default-kms-key-id")
    return warned(
        name,
        evidence,
        "the key policy must let the Karpenter controller role and AWSServiceRoleForAutoScaling use the key "
        "(kms:CreateGrant, kms:Decrypt, kms:GenerateDataKeyWithoutPlaintext, kms:ReEncrypt*, kms:DescribeKey), "
        "or nodes fail to start with Client.InvalidKMSKey.InvalidState",
    )
