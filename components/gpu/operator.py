"""Values for the NVIDIA GPU Operator chart, per node image family (pure).

One owner per layer: the EKS AL2023 NVIDIA AMI and Bottlerocket's NVIDIA variants ship the driver and the container
toolkit, so the operator must not install them again; Bottlerocket also runs its own device plugin, so the
operator's stays off there. DCGM exporter metrics keep the `pod` and `namespace` of the workload (honorLabels), not
the exporter's own, which Prometheus would otherwise rename to `exported_pod` / `exported_namespace`. The exporter
labels only GPUs that a pod holds; the scrape target's own `pod` / `namespace` / `container` are dropped so a free
GPU's series carries no pod at all instead of the exporter's (which `honorLabels` would fill in).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import yaml

from ..scheduling import ANY_TEAM_TAINT, GPU_RESOURCE, GPU_TAINT, Placement, Taint
from .dcgm import exporter_config
from .tolerations import device_tolerations

NodeImage = Literal["al2023", "bottlerocket"]
TIME_SLICING_CONFIG = "time-slicing"


@dataclass(frozen=True)
class GpuOperatorOptions:
    node_image: NodeImage
    node_feature_discovery: bool = True
    mig_strategy: Literal["single", "mixed"] | None = None
    mig_default_profile: str = "all-disabled"
    time_slicing_replicas: int | None = None
    #: Every taint the platform's GPU pools carry (the GPU taint and any of their own): the operator replaces its
    #: operands' tolerations with `daemonsets.tolerations`, so a taint missing there keeps the device plugin off.
    pool_taints: tuple[Taint, ...] = ()


def _linux(placement: Placement) -> dict[str, Any]:
    values = placement.values()
    return {**values, "nodeSelector": {"kubernetes.io/os": "linux", **values["nodeSelector"]}}


def time_slicing_config(replicas: int) -> str:
    """The device plugin's sharing config: each GPU is advertised `replicas` times."""
    return yaml.safe_dump(
        {
            "version": "v1",
            "flags": {"migStrategy": "none"},
            "sharing": {"timeSlicing": {"resources": [{"name": GPU_RESOURCE, "replicas": replicas}]}},
        },
        sort_keys=True,
    )


def operator_values(
    options: GpuOperatorOptions,
    *,
    system_placement: Placement,
) -> dict[str, Any]:
    # The operands and NFD's worker run on every GPU node: the platform's pools and the teams' (team taint).
    # (The GPU taint by key and effect, as the operator's docs tolerate it.)
    tolerations = device_tolerations(options.pool_taints, first=(GPU_TAINT, ANY_TEAM_TAINT))
    bottlerocket = options.node_image == "bottlerocket"
    device_plugin: dict[str, Any] = {"enabled": not bottlerocket}
    if options.time_slicing_replicas is not None:
        device_plugin["config"] = {
            "create": True,
            "name": TIME_SLICING_CONFIG,
            "default": "any",
            "data": {"any": time_slicing_config(options.time_slicing_replicas)},
        }
    controllers = _linux(system_placement)
    values: dict[str, Any] = {
        # The chart's pre-upgrade hook applies the CRDs of the new version (Helm itself never upgrades crds/).
        "operator": {**controllers, "upgradeCRD": True},
        # The node image owns these layers.
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "devicePlugin": device_plugin,
        "daemonsets": {"tolerations": tolerations},
        "nfd": {"enabled": options.node_feature_discovery},
        "dcgmExporter": {
            "enabled": True,
            # The operator's default counters plus the ECC and NVLink error counters the health alerts read.
            "config": exporter_config(),
            "serviceMonitor": {
                "enabled": True,
                "honorLabels": True,
                "relabelings": [
                    {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"},
                    {"regex": "pod|namespace|container", "action": "labeldrop"},
                ],
            },
        },
        "migManager": {"enabled": options.mig_strategy is not None and not bottlerocket},
    }
    if options.mig_strategy is not None:
        values["mig"] = {"strategy": options.mig_strategy}
        values["migManager"]["config"] = {"default": options.mig_default_profile}
    if options.node_feature_discovery:
        # The chart's containers already drop every capability, run non-root (master, gc) and forbid privilege
        # escalation; it only lacks a seccomp profile (its podSecurityContext values are empty), which `restricted`
        # asks of master and gc. The worker reads the host's /sys and /proc through hostPath volumes, so it stays in
        # a privileged namespace, but needs no syscall the runtime's profile blocks.
        seccomp = {"podSecurityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}
        values["node-feature-discovery"] = {
            "master": {**controllers, **seccomp},
            "gc": {**controllers, **seccomp},
            "worker": {"tolerations": tolerations, **seccomp},
        }
    return values
