"""Values for prometheus-adapter (pure): the custom metrics API that serves DCGM's per-pod GPU utilisation, so a
HorizontalPodAutoscaler can scale on it.

Only custom metrics (`custom.metrics.k8s.io`). The chart's default rules (every `container_*` series and every
namespaced metric, relisted each minute) are off; resource metrics (`metrics.k8s.io`, what `kubectl top` and CPU or
memory HPAs read) are left to metrics-server, which the chart would otherwise displace: it registers the same
APIService when `rules.resource` is set. No external metrics either.

refcheck pins no copy of this chart, so it cannot check these values; `tests/test_observability.py` lists the keys
set here with where each was verified upstream.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ..cluster.capacity import METRICS_ADAPTER, METRICS_ADAPTER_REPLICAS
from ..scheduling import Placement

#: The custom metric the adapter serves per pod: the average utilisation (0 to 100) of the GPUs the pod holds. HPAs
#: name it (`metrics[].pods.metric.name`), as examples/workloads/inference.yaml does.
GPU_UTILIZATION_METRIC = "gpu_utilization"
#: DCGM's GPU utilisation field (dcgm-exporter's default counters).
DCGM_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
#: The labels dcgm-exporter puts on a GPU's series when a pod holds that GPU (its kubelet pod-resources mapping).
#: The GPU Operator's ServiceMonitor keeps them as the workload's (honorLabels, components/gpu/operator.py); a GPU no
#: pod holds has neither.
DCGM_POD_LABEL = "pod"
DCGM_NAMESPACE_LABEL = "namespace"

#: The port of the Service kube-prometheus-stack puts in front of Prometheus (its `prometheus.service.port`; the
#: stack's values set it from here, so both ends read one number).
PROMETHEUS_PORT = 9090

#: Two replicas and a budget of one: while the APIService has no ready backend, API discovery of
#: custom.metrics.k8s.io fails, and with it namespace deletion and garbage collection stall until it is back.
REPLICAS = METRICS_ADAPTER_REPLICAS
#: One rule over one metric keeps the adapter small (the system node sizing counts these requests); memory is
#: limited so a runaway relist cannot take the system node down with it. No CPU limit (throttling would only slow
#: the HPA's queries).
REQUESTS = MappingProxyType({"cpu": f"{METRICS_ADAPTER.cpu_m}m", "memory": f"{METRICS_ADAPTER.memory_mi}Mi"})
LIMITS = MappingProxyType({"memory": "256Mi"})


def prometheus_url(release_name: str, namespace: str) -> str:
    """The in-cluster URL of kube-prometheus-stack's Prometheus Service: `<fullname>-prometheus`, where the chart's
    fullname is the release name when that name contains the chart's (the platform names releases after their chart).
    The adapter appends `prometheus.port`."""
    return f"http://{release_name}-prometheus.{namespace}.svc"


def gpu_utilization_rule() -> dict[str, Any]:
    """The adapter rule (its config.md's `rules` format) that serves DCGM's utilisation per pod, averaged over the
    pod's GPUs; only series that carry both workload labels are discovered."""
    return {
        "seriesQuery": f'{DCGM_GPU_UTIL}{{{DCGM_NAMESPACE_LABEL}!="",{DCGM_POD_LABEL}!=""}}',
        "resources": {
            "overrides": {
                DCGM_NAMESPACE_LABEL: {"resource": "namespace"},
                DCGM_POD_LABEL: {"resource": "pod"},
            }
        },
        "name": {"matches": f"^{DCGM_GPU_UTIL}$", "as": GPU_UTILIZATION_METRIC},
        "metricsQuery": "avg(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
    }


def adapter_values(*, prometheus_url: Any, placement: Placement) -> dict[str, Any]:
    """Values for the prometheus-adapter chart at the pinned version. `prometheus_url` may be an Output (it is
    only placed)."""
    return {
        "prometheus": {"url": prometheus_url, "port": PROMETHEUS_PORT},
        "rules": {"default": False, "custom": [gpu_utilization_rule()]},
        "replicas": REPLICAS,
        "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1},
        "resources": {"requests": dict(REQUESTS), "limits": dict(LIMITS)},
        **placement.values(),
    }
