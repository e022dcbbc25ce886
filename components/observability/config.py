"""Stack configuration of observability: Prometheus, Grafana, Alertmanager and the GPU alerts' thresholds."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictFloat, StrictInt, StrictStr

from components.config.types import ConfigModel, Switchable
from components.config.validation import matches

PrometheusDuration = Annotated[StrictStr, matches(r"[0-9]+(m|h|d|w)", "a duration like '30m', '1h', '15d' or '2w'")]


class AlertThresholds(ConfigModel):
    """When the GPU alerts fire."""

    gpu_limit_ratio: StrictFloat = Field(default=0.9, gt=0, le=1)
    gpu_idle_percent: StrictInt = Field(default=10, ge=1, le=100)
    gpu_idle_for: PrometheusDuration = "1h"
    pending_gpu_pods_for: PrometheusDuration = "15m"


class AlertmanagerConfig(ConfigModel):
    """Where alerts go. Without a receiver they are only visible in Alertmanager and Grafana."""

    webhook_url: Annotated[StrictStr, matches(r"https://\S+", "an https:// URL")] | None = None


class ObservabilityConfig(Switchable):
    """kube-prometheus-stack with the GPU and Karpenter dashboards and alerts."""

    retention: PrometheusDuration = "15d"
    storage_gib: StrictInt = Field(default=50, ge=10, le=16384)
    alerts: AlertThresholds = AlertThresholds()
    alertmanager: AlertmanagerConfig = AlertmanagerConfig()
