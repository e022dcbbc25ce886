"""Pure renderers for observability: the PrometheusRules generated from the stack's NodePools, the ServiceMonitor
for Karpenter, and dashboard ConfigMaps."""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Protocol

from ..karpenter.repair import AGENT_FATAL_XIDS
from .config import AlertThresholds

MONITORING_API = "monitoring.coreos.com/v1"
DASHBOARD_LABEL = "grafana_dashboard"
#: Dashboards shipped with the package (components/dashboards/*.json), by file stem.
DASHBOARDS = ("gpu-cost", "gpu-overview", "gpu-workloads", "karpenter")

#: Metric names the alerts and dashboards use, by source. DCGM fields must be among the counters the platform has the
#: exporter collect (`components.gpu.dcgm.DCGM_COUNTERS`); Karpenter's and kube-state-metrics' are their documented
#: names.
DCGM_METRICS = frozenset(
    {
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    }
)

KARPENTER_METRICS = frozenset(
    {
        "karpenter_nodepools_usage",  # {nodepool, resource_type}; GPUs are resource_type="nvidia.com/gpu"
        "karpenter_nodepools_limit",
        "karpenter_nodes_allocatable",  # {node_name, nodepool, capacity_type, instance_type, zone, resource_type}
        "karpenter_nodeclaims_created_total",
        "karpenter_nodeclaims_terminated_total",
        "karpenter_nodeclaims_disrupted_total",  # {reason, nodepool}; failed launches: insufficient_capacity, ...
        "karpenter_scheduler_scheduling_duration_seconds_bucket",
        "karpenter_pods_startup_duration_seconds",
        "karpenter_cloudprovider_errors_total",
    }
)
#: Reasons Karpenter (core, nodeclaim lifecycle: launch.go and liveness.go) gives karpenter_nodeclaims_disrupted_total
#: when it deletes a NodeClaim it could not launch or whose node never registered.
LAUNCH_FAILURE_REASONS = ("insufficient_capacity", "nodeclass_not_ready", "launch_timeout", "registration_timeout")
KUBE_STATE_METRICS = frozenset({"kube_pod_status_phase", "kube_pod_container_resource_requests"})
#: kube-state-metrics turns resource names into label-safe values.
KSM_GPU_RESOURCE = "nvidia_com_gpu"
GPU_RESOURCE_TYPE = "nvidia.com/gpu"


#: XIDs that page: exactly those the EKS node monitoring agent treats as fatal, so that a critical alert means the
#: node is being replaced and a warning means nothing will replace it (`karpenter.repair.AGENT_FATAL_XIDS`).
HARDWARE_XIDS = AGENT_FATAL_XIDS
#: DCGM keeps the last XID a GPU reported (0: none); the maximum over 5 minutes catches one between scrapes.
LAST_XID = "max by (node, gpu) (max_over_time(DCGM_FI_DEV_XID_ERRORS[5m]))"
#: The GPUs whose last XID is a hardware one.
HARDWARE_XID = " or ".join(f"({LAST_XID} == {code})" for code in HARDWARE_XIDS)
#: Where the runbook for GPU faults is (the alerts' descriptions point there).
RUNBOOK = "docs/gpu.md#when-a-gpu-node-fails"


def _on_pool(pool: str) -> str:
    """The nodes of a NodePool that have GPUs, labelled `node` as the DCGM series are (Karpenter names it
    `node_name`)."""
    allocatable = f'karpenter_nodes_allocatable{{nodepool="{pool}", resource_type="{GPU_RESOURCE_TYPE}"}}'
    return f'max by (node) (label_replace({allocatable}, "node", "$1", "node_name", "(.+)"))'


def gpu_health_rules(pool: str) -> list[dict[str, Any]]:
    """The GPU health alerts of one NodePool: hardware XIDs (a GPU fallen off the bus is XID 79), uncorrectable ECC
    errors, a failed row remap and NVLink errors, each on that pool's nodes only."""
    suffix = pool.replace("-", "_")
    on_pool = f"and on (node) {_on_pool(pool)}"
    replaced = (
        "The EKS node monitoring agent marks the node AcceleratedHardwareReady=False and Karpenter replaces it after "
        f"10 minutes. If the node is still there after 20 minutes, cordon and drain it by hand ({RUNBOOK})."
    )
    return [
        _alert(
            f"GpuHardwareXid_{suffix}",
            f"({HARDWARE_XID}) {on_pool}",
            "0m",
            "critical",
            f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.node }}}} (pool {pool}) reported hardware XID {{{{ $value }}}}",
            "The EKS node monitoring agent treats this XID as fatal: the GPU is failing (e.g. 48/63/64/95/140: "
            "memory, 74: NVLink, 79: fell off the bus, 119/120: GSP) and its workloads must restart elsewhere. "
            f"{replaced}",
        ),
        _alert(
            f"GpuEccUncorrectable_{suffix}",
            f"(max by (node, gpu) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])) > 0) {on_pool}",
            "0m",
            "critical",
            f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.node }}}} (pool {pool}) had uncorrectable ECC errors",
            f"Memory on the GPU lost data: the job on it may have computed garbage and should be rerun. {replaced}",
        ),
        _alert(
            f"GpuRowRemapFailed_{suffix}",
            f"(max by (node, gpu) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0) {on_pool}",
            "0m",
            "critical",
            f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.node }}}} (pool {pool}) could not remap a failed memory row",
            f"The GPU has run out of spare memory rows and will keep failing. {replaced}",
        ),
        _alert(
            f"GpuNvlinkErrors_{suffix}",
            (
                "((max by (node, gpu) (increase(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL[15m])) > 0) or "
                "(max by (node, gpu) (increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[15m])) > 0)) "
                f"{on_pool}"
            ),
            "15m",
            "warning",
            f"NVLink of GPU {{{{ $labels.gpu }}}} on {{{{ $labels.node }}}} (pool {pool}) keeps reporting errors",
            "Multi-GPU jobs on this node slow down or hang. Nothing replaces the node on this alone: if it persists, "
            f"or NCCL jobs fail there, cordon and drain it by hand ({RUNBOOK}).",
        ),
    ]


def dashboard(name: str) -> dict[str, Any]:
    """A dashboard shipped with the package, parsed."""
    return json.loads(resources.files(f"{__package__}.dashboards").joinpath(f"{name}.json").read_text())


def dashboard_configmap(name: str, namespace: str) -> dict[str, Any]:
    """The ConfigMap Grafana's sidecar loads a dashboard from (it watches only its own namespace for the label)."""
    text = resources.files(f"{__package__}.dashboards").joinpath(f"{name}.json").read_text()
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"dashboard-{name}", "namespace": namespace, "labels": {DASHBOARD_LABEL: "1"}},
        "data": {f"{name}.json": text},
    }


@dataclass(frozen=True)
class GpuPool:
    """A NodePool with an accelerator ceiling, for the per-pool alert: `resource` is what it caps (Karpenter's
    `resource_type` label: nvidia.com/gpu, aws.amazon.com/neuron or aws.amazon.com/neuroncore)."""

    name: str
    #: The pool's ceiling on `resource` (GPUs, Neuron devices or Neuron cores).
    accelerator_limit: int
    resource: str = GPU_RESOURCE_TYPE

    @property
    def gpu_limit(self) -> int:
        """Deprecated (0.4): `accelerator_limit`, its new name (it holds Neuron ceilings too)."""
        warnings.warn("GpuPool.gpu_limit is deprecated: use accelerator_limit", DeprecationWarning, stacklevel=2)
        return self.accelerator_limit


class _Capped(Protocol):
    @property
    def accelerator_limits(self) -> Mapping[str, int]: ...


def gpu_pools(node_pools: Mapping[str, _Capped]) -> tuple[GpuPool, ...]:
    """What `ObservabilityArgs.gpu_pools` takes: a GpuPool for each accelerator ceiling of the NodePools
    (`KarpenterConfig.node_pools`), by pool name."""
    return tuple(
        GpuPool(name=name, accelerator_limit=limit, resource=resource)
        for name, pool in sorted(node_pools.items())
        for resource, limit in pool.accelerator_limits.items()
    )


#: Alert name and what the devices are called, by capped resource.
_NEAR_LIMIT = {
    GPU_RESOURCE_TYPE: ("NodePoolGpuNearLimit", "GPU"),
    "aws.amazon.com/neuron": ("NodePoolNeuronNearLimit", "Neuron"),
    "aws.amazon.com/neuroncore": ("NodePoolNeuronCoreNearLimit", "Neuron"),
}


def _near_limit(pool: GpuPool, ratio: float) -> dict[str, Any]:
    alert, what = _NEAR_LIMIT[pool.resource]
    selector = f'nodepool="{pool.name}", resource_type="{pool.resource}"'
    summary = (
        f"NodePool {pool.name} uses over {ratio:.0%} of its {pool.accelerator_limit} GPU limit"
        if pool.resource == GPU_RESOURCE_TYPE
        else f"NodePool {pool.name} uses over {ratio:.0%} of its {pool.accelerator_limit} {pool.resource} limit"
    )
    action = (
        "New GPU pods will stay pending once the limit is reached. Raise limits.nvidia.com/gpu of the pool in "
        "stack config if the spend is intended, or find idle GPUs on the GPU by namespace and pod dashboard."
        if pool.resource == GPU_RESOURCE_TYPE
        else f"New {what} pods will stay pending once the limit is reached. Raise limits.{pool.resource} of the pool "
        "in stack config if the spend is intended."
    )
    return _alert(
        f"{alert}_{pool.name.replace('-', '_')}",
        f"karpenter_nodepools_usage{{{selector}}} / karpenter_nodepools_limit{{{selector}}} > {ratio}",
        "10m",
        "warning",
        summary,
        action,
    )


def _alert(name: str, expr: str, for_: str, severity: str, summary: str, action: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": for_,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": action},
    }


def _gpu_workload_rules(thresholds: AlertThresholds) -> list[dict[str, Any]]:
    """Alerts on what GPU pods do: a GPU held idle, an application XID, a GPU pod that stays pending."""
    idle = thresholds.gpu_idle_percent
    return [
        _alert(
            "GpuIdle",
            (
                "avg by (namespace, pod, node, gpu) "
                f'(avg_over_time(DCGM_FI_DEV_GPU_UTIL{{pod!=""}}[{thresholds.gpu_idle_for}])) < {idle}'
            ),
            "5m",
            "info",
            (
                f"{{{{ $labels.namespace }}}}/{{{{ $labels.pod }}}} holds a GPU under {idle}% busy for "
                f"{thresholds.gpu_idle_for}"
            ),
            "The GPU is paid for but idle. Ask the owner to stop the pod or move it to a smaller GPU; notebooks left "
            "running are the usual cause.",
        ),
        _alert(
            "GpuXidError",
            f"{LAST_XID} > 0 unless ({HARDWARE_XID})",
            "0m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} reported XID {{ $value }}",
            "Usually the application (13: illegal memory access, 31: MMU fault, 43: stopped channel, 45: preempted). "
            "The EKS node monitoring agent records only an event for this XID and nothing replaces the node. Check "
            "the pod's logs; look the code up in NVIDIA's XID table if it repeats on the same GPU (92/94: single-bit "
            "or contained ECC errors, a GPU to watch).",
        ),
        _alert(
            "GpuPodsPending",
            f'(sum by (namespace, pod) (kube_pod_status_phase{{phase="Pending"}}) > 0) and on (namespace, pod) '
            f'(sum by (namespace, pod) (kube_pod_container_resource_requests{{resource="{KSM_GPU_RESOURCE}"}}) > 0)',
            thresholds.pending_gpu_pods_for,
            "warning",
            (
                f"GPU pod {{{{ $labels.namespace }}}}/{{{{ $labels.pod }}}} pending for over "
                f"{thresholds.pending_gpu_pods_for}"
            ),
            "Check `kubectl describe pod` events: a NodePool at its GPU limit, no capacity for the instance types "
            "(spot or on-demand quotas), or a pod that no pool's requirements fit.",
        ),
    ]


def _karpenter_rules() -> list[dict[str, Any]]:
    """Alerts on Karpenter failing to launch nodes."""
    return [
        _alert(
            "KarpenterLaunchFailures",
            (
                "sum by (nodepool, reason) "
                f'(increase(karpenter_nodeclaims_disrupted_total{{reason=~"{"|".join(LAUNCH_FAILURE_REASONS)}"}}'
                "[15m])) > 0"
            ),
            "15m",
            "warning",
            "Karpenter fails to launch nodes for NodePool {{ $labels.nodepool }} ({{ $labels.reason }})",
            "Usually insufficient capacity or a vCPU quota (VcpuLimitExceeded) for the instance types the pools "
            "allow. Widen the pools' instance families or request a quota increase.",
        )
    ]


def alert_rules(name: str, namespace: str, pools: list[GpuPool], thresholds: AlertThresholds) -> dict[str, Any]:
    """PrometheusRule with the GPU and Karpenter alerts; one near-limit alert per accelerator ceiling of each
    NodePool of the stack (GPU, Neuron devices, Neuron cores), and the GPU health alerts of each NodePool with an
    `nvidia.com/gpu` ceiling."""
    ratio = thresholds.gpu_limit_ratio
    pool_rules = [_near_limit(pool, ratio) for pool in sorted(pools, key=lambda p: (p.name, p.resource))]
    health_rules = [
        rule
        for pool in sorted({p.name for p in pools if p.resource == GPU_RESOURCE_TYPE})
        for rule in gpu_health_rules(pool)
    ]
    return {
        "apiVersion": MONITORING_API,
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "groups": [
                {"name": group, "rules": rules}
                for group, rules in (
                    ("gpu", _gpu_workload_rules(thresholds)),
                    ("gpu-health", health_rules),
                    ("karpenter", _karpenter_rules()),
                    ("nodepool-gpu-limits", pool_rules),
                )
                if rules
            ]
        },
    }


def karpenter_service_monitor(namespace: str, monitoring_namespace: str) -> dict[str, Any]:
    """Scrape the Karpenter controller's metrics (the chart's Service, port `http-metrics`)."""
    return {
        "apiVersion": MONITORING_API,
        "kind": "ServiceMonitor",
        "metadata": {"name": "karpenter", "namespace": monitoring_namespace},
        "spec": {
            "namespaceSelector": {"matchNames": [namespace]},
            "selector": {
                "matchLabels": {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter"}
            },
            "endpoints": [{"port": "http-metrics", "path": "/metrics", "interval": "30s"}],
        },
    }
