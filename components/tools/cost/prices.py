"""The pinned price table: public AWS list prices (USD, no free tier, no discounts) for the regions the stacks and
presets use, as the pricing pages in `SOURCES` published them on `SNAPSHOT_DATE`. Everything the estimate prices
comes from here (or, with `--live`, EC2 instance prices from the Price List API).

A price that is not here is not guessed: the estimate reports it as missing. To add a region or an instance type,
copy the figure from the page named in `SOURCES` and move `SNAPSHOT_DATE` only if every figure was re-read.

Known since the snapshot: AWS lowered the on-demand prices of P4d, P4de and P5 instances in June 2025, so the
figures below overstate what those instances cost today (`--live` reads the current ones); p5.4xlarge was released
after the snapshot and is missing on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from types import MappingProxyType
from typing import Mapping

SNAPSHOT_DATE = date(2025, 5, 1)
HOURS_PER_MONTH = Decimal(730)

SOURCES: Mapping[str, str] = MappingProxyType(
    {
        "EC2 instances (on-demand, Linux, shared tenancy)": "https://aws.amazon.com/ec2/pricing/on-demand/",
        "EKS control plane": "https://aws.amazon.com/eks/pricing/",
        "NAT gateway hours, public IPv4 addresses": "https://aws.amazon.com/vpc/pricing/",
        "EBS gp3": "https://aws.amazon.com/ebs/pricing/",
        "FSx for Lustre": "https://aws.amazon.com/fsx/lustre/pricing/",
        "CloudWatch Logs ingestion (standard class)": "https://aws.amazon.com/cloudwatch/pricing/",
        "KMS customer managed keys": "https://aws.amazon.com/kms/pricing/",
    }
)


@dataclass(frozen=True)
class RegionRates:
    """List prices of one region other than instances."""

    eks_standard_hour: Decimal
    eks_extended_hour: Decimal
    nat_gateway_hour: Decimal
    public_ipv4_hour: Decimal
    gp3_gib_month: Decimal
    #: FSx for Lustre storage per GiB-month, by deployment type ("SCRATCH_2") or deployment type and per-unit
    #: throughput ("PERSISTENT_2/250").
    lustre_gib_month: Mapping[str, Decimal]
    log_ingestion_gb: Decimal
    kms_key_month: Decimal


@dataclass(frozen=True)
class PriceTable:
    """Prices by region, where they come from, and spot prices where known (the pinned table knows none: spot
    prices move by the hour and by AZ, and a spot instance never bills above the on-demand price)."""

    date: date
    source: str
    rates: Mapping[str, RegionRates]
    #: On-demand $/hour by region and instance type.
    instances: Mapping[str, Mapping[str, Decimal]]
    spot: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)

    def instance_hour(self, region: str, instance_type: str) -> Decimal | None:
        return self.instances.get(region, {}).get(instance_type)

    def spot_hour(self, region: str, instance_type: str) -> Decimal | None:
        return self.spot.get(region, {}).get(instance_type)


def _table(rows: str) -> Mapping[str, Decimal]:
    """'type price' per line."""
    pairs = (line.split() for line in rows.strip().splitlines())
    return MappingProxyType({name: Decimal(price) for name, price in pairs})


#: us-east-1 and us-west-2 list the same price for every item below.
_INSTANCES = _table(
    """
    m6i.large 0.096
    m6i.xlarge 0.192
    m6i.2xlarge 0.384
    m7i.large 0.1008
    m7i.xlarge 0.2016
    m7i.2xlarge 0.4032
    g4dn.xlarge 0.526
    g4dn.2xlarge 0.752
    g4dn.4xlarge 1.204
    g4dn.8xlarge 2.176
    g4dn.12xlarge 3.912
    g4dn.16xlarge 4.352
    g4dn.metal 7.824
    g5.xlarge 1.006
    g5.2xlarge 1.212
    g5.4xlarge 1.624
    g5.8xlarge 2.448
    g5.12xlarge 5.672
    g5.16xlarge 4.096
    g5.24xlarge 8.144
    g5.48xlarge 16.288
    g6.xlarge 0.8048
    g6.2xlarge 0.9776
    g6.4xlarge 1.3232
    g6.8xlarge 2.0144
    g6.12xlarge 4.6016
    g6.16xlarge 3.3968
    g6.24xlarge 6.6752
    g6.48xlarge 13.3504
    g6e.xlarge 1.861
    g6e.2xlarge 2.24208
    g6e.4xlarge 3.00424
    g6e.8xlarge 4.52856
    g6e.12xlarge 10.49264
    g6e.16xlarge 7.57719
    g6e.24xlarge 15.06559
    g6e.48xlarge 30.13118
    p4d.24xlarge 32.7726
    p4de.24xlarge 40.96575
    p5.48xlarge 98.32
    inf2.xlarge 0.7582
    inf2.8xlarge 1.9679
    inf2.24xlarge 6.4906
    inf2.48xlarge 12.9813
    trn1.2xlarge 1.34375
    trn1.32xlarge 21.50
    trn1n.32xlarge 24.78
    """
)

_US = RegionRates(
    eks_standard_hour=Decimal("0.10"),
    eks_extended_hour=Decimal("0.60"),
    nat_gateway_hour=Decimal("0.045"),
    public_ipv4_hour=Decimal("0.005"),
    gp3_gib_month=Decimal("0.08"),
    lustre_gib_month=MappingProxyType(
        {
            "SCRATCH_2": Decimal("0.140"),
            "PERSISTENT_2/125": Decimal("0.145"),
            "PERSISTENT_2/250": Decimal("0.210"),
            "PERSISTENT_2/500": Decimal("0.340"),
            "PERSISTENT_2/1000": Decimal("0.600"),
        }
    ),
    log_ingestion_gb=Decimal("0.50"),
    kms_key_month=Decimal("1.00"),
)

PINNED = PriceTable(
    date=SNAPSHOT_DATE,
    source=f"pinned table of {SNAPSHOT_DATE.isoformat()} (AWS public pricing pages)",
    rates=MappingProxyType({"us-east-1": _US, "us-west-2": _US}),
    instances=MappingProxyType({"us-east-1": _INSTANCES, "us-west-2": _INSTANCES}),
)

#: End of standard support per Kubernetes minor version (EKS then bills extended support). Source: "Understand the
#: Kubernetes version lifecycle on EKS", docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html. A version
#: missing here is priced at the standard rate and reported.
STANDARD_SUPPORT_ENDS: Mapping[str, date] = MappingProxyType({"1.34": date(2026, 12, 2)})
