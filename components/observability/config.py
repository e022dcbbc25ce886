"""Stack configuration of observability: Prometheus, Grafana, Alertmanager and the GPU alerts' thresholds."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from ..config.types import ConfigModel, Switchable
from ..config.validation import matches
from .adapter import GPU_UTILIZATION_METRIC

PrometheusDuration = Annotated[StrictStr, matches(r"[0-9]+(m|h|d|w)", "a duration like '30m', '1h', '15d' or '2w'")]


class AlertThresholds(ConfigModel):
    """When the GPU alerts fire."""

    gpu_limit_ratio: StrictFloat = Field(
        default=0.9,
        gt=0,
        le=1,
        description="`NodePoolGpuNearLimit_<pool>` fires when a pool uses over this share of its `nvidia.com/gpu` "
        "limit for 10 minutes",
    )
    gpu_idle_percent: StrictInt = Field(
        default=10, ge=1, le=100, description="`GpuIdle` fires when a pod's GPU averages under this utilisation..."
    )
    gpu_idle_for: PrometheusDuration = Field(default="1h", description="... for this long")
    pending_gpu_pods_for: PrometheusDuration = Field(
        default="15m", description="`GpuPodsPending` fires when a pod requesting GPUs has been Pending this long"
    )


class AlertmanagerConfig(ConfigModel):
    """Where alerts go. Without a receiver they are only visible in Alertmanager and Grafana."""

    webhook_url: Annotated[StrictStr, matches(r"https://\S+", "an https:// URL")] | None = Field(
        default=None,
        description="send alerts to this webhook (any receiver of Alertmanager's webhook JSON; Slack's incoming "
        "webhooks are not), set as a secret; none: alerts are only seen in Alertmanager and Grafana",
    )


class MetricsAdapterConfig(Switchable):
    """prometheus-adapter: the custom metrics API HPAs read DCGM's per-pod GPU utilisation from."""

    enabled: StrictBool = Field(
        default=True,
        description=f"Install prometheus-adapter, serving the per-pod custom metric `{GPU_UTILIZATION_METRIC}` (DCGM) "
        "that HorizontalPodAutoscalers scale on. Default true; setting it while observability is off is an error.",
    )


class ObservabilityConfig(Switchable):
    """kube-prometheus-stack with the GPU and Karpenter dashboards and alerts."""

    retention: PrometheusDuration = Field(default="15d", description="how long Prometheus keeps metrics")
    storage_gib: StrictInt = Field(
        default=50,
        ge=10,
        le=16384,
        description="Prometheus's encrypted gp3 volume; deleted with Prometheus when `statefulResources` is "
        "`destroy`, kept otherwise",
    )
    alerts: AlertThresholds = Field(default=AlertThresholds(), description="when the GPU alerts fire")
    alertmanager: AlertmanagerConfig = Field(default=AlertmanagerConfig(), description="where alerts go")
    metrics_adapter: MetricsAdapterConfig = Field(
        default=MetricsAdapterConfig(),
        description="prometheus-adapter for GPU-utilisation HPAs (`enabled`, default true).",
    )
