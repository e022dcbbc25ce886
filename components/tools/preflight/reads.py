"""Read-only AWS calls of the preflight, each returning plain data for the pure checks in `checks_*`.

Only Describe/Get/List calls live here; nothing creates, changes or deletes anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from .quotas import Quota
from .selection import InstanceShape, shape_from_ec2

#: EC2 takes at most this many values per filter.
_FILTER_VALUES = 200


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _chunks(values: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


# --------------------------------------------------------------------------------------------------- identity


@dataclass(frozen=True)
class Identity:
    account: str
    arn: str

    @property
    def partition(self) -> str:
        return self.arn.split(":")[1]


def caller_identity(sts: Any) -> Identity:
    answer = sts.get_caller_identity()
    return Identity(account=answer["Account"], arn=answer["Arn"])


def region_opt_in(ec2: Any, region: str) -> str | None:
    """The region's opt-in status ('opt-in-not-required', 'opted-in', 'not-opted-in'), None if EC2 knows no such
    region."""
    regions = ec2.describe_regions(AllRegions=True)["Regions"]
    return next((r.get("OptInStatus", "opt-in-not-required") for r in regions if r["RegionName"] == region), None)


def principal_exists(iam: Any, arn: str) -> bool:
    """Whether an IAM role or user ARN names an existing principal (its name is the last path segment)."""
    resource = arn.split(":", 5)[5]
    kind, _, path = resource.partition("/")
    name = path.rsplit("/", 1)[-1]
    try:
        if kind == "role":
            iam.get_role(RoleName=name)
        else:
            iam.get_user(UserName=name)
    except ClientError as error:
        if _code(error) == "NoSuchEntity":
            return False
        raise
    return True


def role_exists(iam: Any, name: str) -> bool:
    try:
        iam.get_role(RoleName=name)
    except ClientError as error:
        if _code(error) == "NoSuchEntity":
            return False
        raise
    return True


# -------------------------------------------------------------------------------------------------- capacity


@dataclass(frozen=True)
class Zone:
    name: str
    zone_id: str
    state: str


def availability_zones(ec2: Any) -> dict[str, Zone]:
    """Every availability zone of the region (Local and Wavelength zones left out), by name."""
    answer = ec2.describe_availability_zones(AllAvailabilityZones=False)["AvailabilityZones"]
    return {
        z["ZoneName"]: Zone(z["ZoneName"], z["ZoneId"], z["State"])
        for z in answer
        if z.get("ZoneType", "availability-zone") == "availability-zone"
    }


def instance_shapes(ec2: Any, filters: Sequence[Mapping[str, Any]]) -> list[InstanceShape]:
    paginator = ec2.get_paginator("describe_instance_types")
    return [
        shape_from_ec2(info) for page in paginator.paginate(Filters=list(filters)) for info in page["InstanceTypes"]
    ]


def offerings(ec2: Any, zones: Sequence[str]) -> dict[str, frozenset[str]]:
    """The AZs (of `zones`) each instance type is offered in."""
    found: dict[str, set[str]] = {}
    paginator = ec2.get_paginator("describe_instance_type_offerings")
    pages = paginator.paginate(LocationType="availability-zone", Filters=[{"Name": "location", "Values": list(zones)}])
    for page in pages:
        for offering in page["InstanceTypeOfferings"]:
            found.setdefault(offering["InstanceType"], set()).add(offering["Location"])
    return {instance_type: frozenset(found_zones) for instance_type, found_zones in found.items()}


def quota_value(quotas: Any, quota: Quota) -> float | None:
    """The quota's value in this account and region: the applied value, else AWS's default; None if neither exists."""
    for call in (quotas.get_service_quota, quotas.get_aws_default_service_quota):
        try:
            return float(call(ServiceCode=quota.service, QuotaCode=quota.code)["Quota"]["Value"])
        except ClientError as error:
            if _code(error) != "NoSuchResourceException":
                raise
    return None


# --------------------------------------------------------------------------------------------------- network


def vpc_count(ec2: Any) -> int:
    return sum(len(page["Vpcs"]) for page in ec2.get_paginator("describe_vpcs").paginate())


def elastic_ip_count(ec2: Any) -> int:
    return len(ec2.describe_addresses(Filters=[{"Name": "domain", "Values": ["vpc"]}])["Addresses"])


def nat_gateways_by_zone(ec2: Any) -> dict[str, int]:
    """NAT gateways that count against the per-AZ quota (pending or available), by AZ."""
    subnets: list[str] = []
    for page in ec2.get_paginator("describe_nat_gateways").paginate(
        Filter=[{"Name": "state", "Values": ["pending", "available"]}]
    ):
        subnets += [gateway["SubnetId"] for gateway in page["NatGateways"]]
    zones = subnet_zones(ec2, sorted(set(subnets))) if subnets else {}
    counts: dict[str, int] = {}
    for subnet in subnets:
        zone = zones.get(subnet)
        if zone is not None:
            counts[zone] = counts.get(zone, 0) + 1
    return counts


def subnet_zones(ec2: Any, subnet_ids: Sequence[str]) -> dict[str, str]:
    """The AZ of each of the given subnets that exists."""
    zones: dict[str, str] = {}
    for chunk in _chunks(list(subnet_ids), _FILTER_VALUES):
        answer = ec2.describe_subnets(Filters=[{"Name": "subnet-id", "Values": list(chunk)}])
        zones.update({s["SubnetId"]: s["AvailabilityZone"] for s in answer["Subnets"]})
    return zones


def vpc_exists(ec2: Any, vpc_id: str) -> bool:
    return bool(ec2.describe_vpcs(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Vpcs"])


# --------------------------------------------------------------------------------------------------- storage


def lustre_storage_by_type(fsx: Any) -> dict[str, int]:
    """GiB of FSx for Lustre storage the account already has, by deployment type."""
    used: dict[str, int] = {}
    for page in fsx.get_paginator("describe_file_systems").paginate():
        for system in page["FileSystems"]:
            if system.get("FileSystemType") != "LUSTRE" or system.get("Lifecycle") == "DELETING":
                continue
            kind = (system.get("LustreConfiguration") or {}).get("DeploymentType", "")
            used[kind] = used.get(kind, 0) + int(system.get("StorageCapacity", 0))
    return used


@dataclass(frozen=True)
class EbsDefaultKey:
    key_id: str
    #: "AWS" (the aws/ebs key), "CUSTOMER", or None when the key could not be described.
    manager: str | None
    state: str | None


def ebs_default_key(ec2: Any, kms: Any) -> EbsDefaultKey:
    """The KMS key EBS encrypts with when a volume asks for encryption without naming a key (as every volume of
    the stack does)."""
    key_id = ec2.get_ebs_default_kms_key_id()["KmsKeyId"]
    if key_id == "alias/aws/ebs":
        return EbsDefaultKey(key_id, "AWS", "Enabled")
    try:
        metadata = kms.describe_key(KeyId=key_id)["KeyMetadata"]
    except ClientError as error:
        if _code(error) in {"NotFoundException", "AccessDeniedException"}:
            return EbsDefaultKey(key_id, None, None)
        raise
    return EbsDefaultKey(key_id, metadata.get("KeyManager"), metadata.get("KeyState"))


# ----------------------------------------------------------------------------------------------------- names


def cluster_tags(eks: Any, name: str) -> dict[str, str] | None:
    """The tags of the EKS cluster of that name, None when there is none."""
    try:
        return dict(eks.describe_cluster(name=name)["cluster"].get("tags") or {})
    except ClientError as error:
        if _code(error) == "ResourceNotFoundException":
            return None
        raise


def log_group_tags(logs: Any, name: str) -> dict[str, str] | None:
    """The tags of the log group of exactly that name, None when there is none."""
    groups = logs.describe_log_groups(logGroupNamePrefix=name)["logGroups"]
    if not any(group["logGroupName"] == name for group in groups):
        return None
    return dict(logs.list_tags_log_group(logGroupName=name).get("tags") or {})


def queues_named(sqs: Any, prefix: str) -> dict[str, dict[str, str]]:
    """SQS queues whose name starts with `prefix`, by URL, with their tags."""
    urls = sqs.list_queues(QueueNamePrefix=prefix).get("QueueUrls") or []
    return {url: dict(sqs.list_queue_tags(QueueUrl=url).get("Tags") or {}) for url in urls}
