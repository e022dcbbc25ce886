"""The idle baseline: what a stack costs a month with no workload, item by item (control plane, NAT gateways, the
system node group and its volumes, FSx, Prometheus' volume, control-plane logs, KMS keys). A basis text is shown only
where its rate exists; a price missing from the table is noted by the Pricer and left out of the sums."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal

from ...config.types import ControlPlaneLog
from ...platform.config import PlatformConfig
from ..preflight.checks_account import nat_zones
from .pricer import CostLine, Pricer, hours, quantity
from .prices import HOURS_PER_MONTH, STANDARD_SUPPORT_ENDS

#: Assumed control-plane log volume per month by log type (GB ingested), low and high: an estimate for a cluster of
#: this size, not a price. Audit logs grow with API traffic (controllers, CI, kubectl) and dominate.
LOG_VOLUME_GB: Mapping[ControlPlaneLog, tuple[Decimal, Decimal]] = {
    ControlPlaneLog.API: (Decimal(1), Decimal(10)),
    ControlPlaneLog.AUDIT: (Decimal(2), Decimal(30)),
    ControlPlaneLog.AUTHENTICATOR: (Decimal("0.5"), Decimal(5)),
    ControlPlaneLog.CONTROLLER_MANAGER: (Decimal(1), Decimal(10)),
    ControlPlaneLog.SCHEDULER: (Decimal("0.5"), Decimal(5)),
}


def _control_plane(config: PlatformConfig, pricer: Pricer, on: date, notes: list[str]) -> CostLine:
    """The EKS control plane at the standard or, past the version's end of standard support on `on`, extended rate."""
    version = config.cluster.kubernetes_version
    ends = STANDARD_SUPPORT_ENDS.get(version)
    extended = ends is not None and on > ends
    if ends is None:
        notes.append(f"the end of standard support of Kubernetes {version} is not pinned: priced at the standard rate")
    rate = pricer.rate("eks_extended_hour" if extended else "eks_standard_hour")
    support = "extended support" if extended else "standard support"
    return pricer.line(f"EKS control plane ({version}, {support})", rate, HOURS_PER_MONTH, hours(rate))


def _nat_gateways(config: PlatformConfig, pricer: Pricer) -> list[CostLine]:
    """The NAT gateways' hours and their public IPv4 addresses (one per zone that has one)."""
    nats = len(nat_zones(config.network))
    if not nats:
        return []
    nat, ipv4 = pricer.rate("nat_gateway_hour"), pricer.rate("public_ipv4_hour")
    month = nats * HOURS_PER_MONTH
    return [
        pricer.line(f"NAT gateways ({nats}, hours only)", nat, month, f"{nats} × {hours(nat)}"),
        pricer.line(f"public IPv4 addresses of the NAT gateways ({nats})", ipv4, month, f"{nats} × {hours(ipv4)}"),
    ]


def _system_nodes(config: PlatformConfig, pricer: Pricer) -> list[CostLine]:
    """The system node group's instances and their root volumes."""
    group = config.cluster.system_node_group
    # EKS launches on-demand node groups in the order of instanceTypes (the "prioritized" allocation strategy).
    first = group.instance_types[0]
    hourly = pricer.instance(first)
    gp3 = pricer.rate("gp3_gib_month")
    root_gib = group.desired_size * group.disk_size_gib
    return [
        pricer.line(
            f"system node group ({group.desired_size} × {first}, on-demand)",
            hourly,
            group.desired_size * HOURS_PER_MONTH,
            f"{group.desired_size} × {hours(hourly)}",
        ),
        pricer.line(
            f"system node root volumes ({group.desired_size} × {group.disk_size_gib} GiB gp3)",
            gp3,
            Decimal(root_gib),
            f"{root_gib} GiB × ${gp3}/GiB-month",
        ),
    ]


def _storage(config: PlatformConfig, pricer: Pricer) -> list[CostLine]:
    """The FSx for Lustre file system and Prometheus' volume, where the stack has them."""
    lines = []
    fsx = config.storage.fsx
    if fsx is not None:
        throughput = fsx.per_unit_storage_throughput
        key = fsx.deployment_type if throughput is None else f"{fsx.deployment_type}/{throughput}"
        rate = pricer.lustre(key)
        capacity = fsx.storage_capacity_gib
        lines.append(
            pricer.line(
                f"FSx for Lustre ({key}, {capacity} GiB)",
                rate,
                Decimal(capacity),
                f"{capacity} GiB × ${rate}/GiB-month",
            )
        )
    if config.observability.enabled:
        gp3 = pricer.rate("gp3_gib_month")
        gib = config.observability.storage_gib
        lines.append(
            pricer.line(f"Prometheus volume ({gib} GiB gp3)", gp3, Decimal(gib), f"{gib} GiB × ${gp3}/GiB-month")
        )
    return lines


def _control_plane_logs(config: PlatformConfig, pricer: Pricer) -> list[CostLine]:
    """The control-plane logs ingested, at the assumed volume of each log type the cluster sends."""
    log_types = config.cluster.log_types
    if not log_types:
        return []
    low = sum((LOG_VOLUME_GB[t][0] for t in log_types), Decimal(0))
    high = sum((LOG_VOLUME_GB[t][1] for t in log_types), Decimal(0))
    rate = pricer.rate("log_ingestion_gb")
    names = ", ".join(t.value for t in log_types)
    return [
        pricer.line(
            f"control-plane logs ingested ({len(log_types)} log types)",
            rate,
            low,
            f"{quantity(low)}-{quantity(high)} GB assumed ({names}) × ${rate}/GB",
            high=high,
        )
    ]


def _keys_and_endpoints(config: PlatformConfig, pricer: Pricer) -> list[CostLine]:
    """The KMS keys (Kubernetes secrets, and the buckets' when one is KMS-encrypted) and the free S3 endpoint."""
    bucket_key = any(b.encryption == "kms" for b in config.storage.buckets.values())
    keys = 2 if bucket_key else 1
    kms = pricer.rate("kms_key_month")
    what = "Kubernetes secrets, buckets" if bucket_key else "Kubernetes secrets"
    lines = [pricer.line(f"KMS keys ({keys}: {what})", kms, Decimal(keys), f"{keys} × ${kms}/month")]
    if config.network.existing is None and pricer.rates is not None:  # free, so shown only where the rest is priced
        lines.append(CostLine("S3 gateway endpoint", Decimal(0), Decimal(0), "free"))
    return lines


def baseline(config: PlatformConfig, pricer: Pricer, on: date, notes: list[str]) -> list[CostLine]:
    """What the stack costs a month with no workload. (A basis text is shown only where its rate exists.)"""
    return [
        _control_plane(config, pricer, on, notes),
        *_nat_gateways(config, pricer),
        *_system_nodes(config, pricer),
        *_storage(config, pricer),
        *_control_plane_logs(config, pricer),
        *_keys_and_endpoints(config, pricer),
    ]
