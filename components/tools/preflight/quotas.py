"""Service Quotas codes the preflight reads, each with the name the Service Quotas console shows for it.

EC2 counts running instances in vCPUs per instance class, separately for on-demand and spot. Codes as listed by
`aws service-quotas list-aws-default-service-quotas --service-code ec2` (and `vpc`, `fsx`); names from the same
listing. The class of an instance is its family's category (the letters before the generation digit): Amazon EC2
User Guide, "On-Demand Instance quotas" (docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...instances.families import category_of, family_of_type

CapacityType = Literal["on-demand", "spot"]


@dataclass(frozen=True)
class Quota:
    service: str  # the Service Quotas service code
    code: str
    name: str

    @property
    def label(self) -> str:
        return f"{self.name} ({self.code})"


@dataclass(frozen=True)
class VcpuClass:
    """Instance categories that share one pair of vCPU quotas."""

    key: str
    categories: frozenset[str]
    on_demand: Quota
    spot: Quota | None  # HPC instances cannot run as spot

    def quota(self, capacity_type: CapacityType) -> Quota | None:
        return self.on_demand if capacity_type == "on-demand" else self.spot


def _ec2(code: str, name: str) -> Quota:
    return Quota("ec2", code, name)


VCPU_CLASSES: tuple[VcpuClass, ...] = (
    VcpuClass(
        "standard",
        frozenset({"a", "c", "d", "h", "i", "im", "is", "m", "r", "t", "z"}),
        _ec2("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"),
        _ec2("L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests"),
    ),
    VcpuClass(
        "g-vt",
        frozenset({"g", "gr", "vt"}),
        _ec2("L-DB2E81BA", "Running On-Demand G and VT instances"),
        _ec2("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ),
    VcpuClass(
        "p",
        frozenset({"p"}),
        _ec2("L-417A185B", "Running On-Demand P instances"),
        _ec2("L-7212CCBC", "All P Spot Instance Requests"),
    ),
    VcpuClass(
        "inf",
        frozenset({"inf"}),
        _ec2("L-1945791B", "Running On-Demand Inf instances"),
        _ec2("L-B5D1601B", "All Inf Spot Instance Requests"),
    ),
    VcpuClass(
        "trn",
        frozenset({"trn"}),
        _ec2("L-2C3B7624", "Running On-Demand Trn instances"),
        _ec2("L-6B0D517C", "All Trn Spot Instance Requests"),
    ),
    VcpuClass(
        "dl",
        frozenset({"dl"}),
        _ec2("L-6E869C2A", "Running On-Demand DL instances"),
        _ec2("L-85EED4F7", "All DL Spot Instance Requests"),
    ),
    VcpuClass(
        "x",
        frozenset({"x"}),
        _ec2("L-7295265B", "Running On-Demand X instances"),
        _ec2("L-E3A00192", "All X Spot Instance Requests"),
    ),
    VcpuClass("hpc", frozenset({"hpc"}), _ec2("L-F7808C92", "Running On-Demand HPC instances"), None),
)
_BY_CATEGORY = {category: cls for cls in VCPU_CLASSES for category in cls.categories}


def vcpu_class(instance_type: str) -> VcpuClass | None:
    """The quota class an instance type counts against, None for a category without a known class."""
    return _BY_CATEGORY.get(category_of(family_of_type(instance_type)) or "")


#: Network quotas: what the network section creates counts against these.
VPCS_PER_REGION = Quota("vpc", "L-F678F1CE", "VPCs per Region")
NAT_GATEWAYS_PER_AZ = Quota("vpc", "L-FE5A380F", "NAT gateways per Availability Zone")
ELASTIC_IPS = Quota("ec2", "L-0263D0A3", "EC2-VPC Elastic IPs")

#: FSx for Lustre storage, summed over the account's file systems of a kind (GiB), by deployment type.
FSX_STORAGE: dict[str, Quota] = {
    "SCRATCH_2": Quota("fsx", "L-AD2FC696", "Lustre Scratch storage capacity"),
    "PERSISTENT_2": Quota("fsx", "L-8F1B9C74", "Lustre Persistent_2 storage capacity"),
}
#: Deployment types whose file systems count against the same storage quota.
FSX_QUOTA_SHARERS: dict[str, frozenset[str]] = {
    "SCRATCH_2": frozenset({"SCRATCH_1", "SCRATCH_2"}),
    "PERSISTENT_2": frozenset({"PERSISTENT_2"}),
}


def increase_command(quota: Quota, value: int, region: str) -> str:
    return (
        f"aws service-quotas request-service-quota-increase --service-code {quota.service} "
        f"--quota-code {quota.code} --desired-value {value} --region {region}"
    )
