"""The kubelet settings of an EC2NodeClass (keys as in the pinned EC2NodeClass CRD), and the checks the kubelet would
otherwise fail at a node's start."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from .spec_types import DURATION, QUANTITY, Quantity, Spec

_SIGNALS = Literal[
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
]
_RESERVED = Literal["cpu", "memory", "ephemeral-storage", "pid"]


class KubeletSpec(Spec):
    """Kubelet settings Karpenter passes to the node and uses for its own capacity maths (keys as in the CRD)."""

    max_pods: StrictInt | None = Field(default=None, ge=1, description="most pods per node")
    pods_per_core: StrictInt | None = Field(default=None, ge=1, description="most pods per CPU core")
    system_reserved: dict[_RESERVED, Quantity] | None = Field(default=None, description="reserved for the OS's daemons")
    kube_reserved: dict[_RESERVED, Quantity] | None = Field(
        default=None, description="reserved for Kubernetes' daemons"
    )
    eviction_hard: dict[_SIGNALS, StrictStr] | None = Field(
        default=None, description="hard eviction thresholds: a percentage like `10%` or a quantity like `500Mi`"
    )
    eviction_soft: dict[_SIGNALS, StrictStr] | None = Field(
        default=None, description="soft eviction thresholds, each with its `evictionSoftGracePeriod`"
    )
    eviction_soft_grace_period: dict[_SIGNALS, StrictStr] | None = Field(
        default=None, description="how long each soft threshold may be crossed before pods are evicted, like `1m30s`"
    )
    eviction_max_pod_grace_period: StrictInt | None = Field(
        default=None, ge=0, description="the most seconds a pod evicted by a soft threshold gets to stop"
    )
    image_gc_high_threshold_percent: StrictInt | None = Field(
        default=None,
        ge=0,
        le=100,
        alias="imageGCHighThresholdPercent",
        description="disk use at which unused images are removed; above `imageGCLowThresholdPercent`",
    )
    image_gc_low_threshold_percent: StrictInt | None = Field(
        default=None, ge=0, le=100, alias="imageGCLowThresholdPercent", description="disk use image removal stops at"
    )
    cluster_dns: tuple[StrictStr, ...] | None = Field(
        default=None, alias="clusterDNS", description="IP addresses of the DNS servers pods use"
    )
    cpu_cfs_quota: StrictBool | None = Field(
        default=None, alias="cpuCFSQuota", description="enforce containers' CPU limits with CFS quota"
    )

    def problems(self) -> list[tuple[str, str]]:
        problems = []
        high, low = self.image_gc_high_threshold_percent, self.image_gc_low_threshold_percent
        if high is not None and low is not None and high <= low:
            problems.append(
                ("imageGCHighThresholdPercent", f"must be above imageGCLowThresholdPercent ({low}); got {high}")
            )
        soft, grace = set(self.eviction_soft or {}), set(self.eviction_soft_grace_period or {})
        problems += [
            ("evictionSoftGracePeriod", f"needs a grace period for the soft threshold {s}")
            for s in sorted(soft - grace)
        ]
        problems += [("evictionSoft", f"has no threshold for the grace period of {s}") for s in sorted(grace - soft)]
        for field, values in (("evictionHard", self.eviction_hard), ("evictionSoft", self.eviction_soft)):
            for signal, value in (values or {}).items():
                percent = value.endswith("%") and value[:-1].replace(".", "", 1).isdigit() and float(value[:-1]) <= 100
                if not percent and not QUANTITY.fullmatch(value):
                    problems.append(
                        (
                            f"{field}.{signal}",
                            f"expected a percentage like '10%' or a quantity like '500Mi', got {value!r}",
                        )
                    )
        for signal, value in (self.eviction_soft_grace_period or {}).items():
            if value == "Never" or not DURATION.fullmatch(value):
                problems.append(
                    (f"evictionSoftGracePeriod.{signal}", f"expected a duration like '1m30s', got {value!r}")
                )
        for index, address in enumerate(self.cluster_dns or ()):
            try:
                ipaddress.ip_address(address)
            except ValueError:
                problems.append((f"clusterDNS[{index}]", f"expected an IP address, got {address!r}"))
        return problems


__all__ = ["KubeletSpec"]
