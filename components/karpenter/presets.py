"""NodePool and EC2NodeClass presets, written as a user would write them in stack config (plain data: the models in
`nodepools` merge a pool's fields into its preset and validate the result)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..instances import accelerators as gpu_facts
from ..scheduling import GPU_RESOURCE, GPU_TAINT, NEURON_RESOURCE, NEURON_TAINT, TRAINING_WORKLOAD, WORKLOAD_LABEL


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


_TEN_PERCENT_AT_A_TIME = [{"nodes": "10%"}]

#: Presets, written as a user would write them in stack config.
_BASE_POOL_PRESETS: Mapping[str, Mapping[str, Any]] = {
    # Everything that is not a GPU job: cheapest fitting c/m/r instance of a recent generation, either arch.
    "cpu-general": {
        "nodeClass": "default",
        "capacityTypes": ["spot", "on-demand"],
        "architectures": ["amd64", "arm64"],
        "instanceCategories": ["c", "m", "r"],
        "generationAbove": 5,
        "labels": {WORKLOAD_LABEL: "general"},
        "limits": {"cpu": "1000", "memory": "4000Gi"},
        "disruption": {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "1m",
            "budgets": _TEN_PERCENT_AT_A_TIME,
        },
    },
    # Inference on T4 / A10G / L4 class GPUs, spot or on-demand, released quickly once idle.
    "gpu-inference": {
        "nodeClass": "gpu",
        "capacityTypes": ["spot", "on-demand"],
        "gpuNames": ["t4", "a10g", "l4"],
        "instanceSizes": ["xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge"],
        "labels": {WORKLOAD_LABEL: "inference"},
        "taints": [GPU_TAINT.as_dict()],
        "limits": {GPU_RESOURCE: "16"},
        "disruption": {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "5m",
            "budgets": [{"nodes": "20%"}],
        },
    },
    # Training on A100 / H100 class GPUs: on-demand only, never consolidated while busy, no voluntary disruption
    # during working hours, at most one node at a time otherwise, and drift replacement only at weekends. Nodes never
    # expire: in Karpenter v1 expiry is forceful (it drains a node whatever its budgets and its pods'
    # `karpenter.sh/do-not-disrupt` say, karpenter.sh/docs/concepts/disruption/#forceful-methods), so a 30-day-old
    # node would be drained mid-job. A training node still goes once it is empty (WhenEmpty, 30m), and a new AMI
    # replaces it as drift, which waits for its trainer pods (they carry do-not-disrupt).
    "gpu-training": {
        "nodeClass": "gpu-training",
        "capacityTypes": ["on-demand"],
        "gpuNames": ["a100", "h100"],
        "labels": {WORKLOAD_LABEL: TRAINING_WORKLOAD},
        "taints": [GPU_TAINT.as_dict()],
        "limits": {GPU_RESOURCE: "16"},
        "expireAfter": "Never",
        "terminationGracePeriod": "2h",
        "disruption": {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "30m",
            "budgets": [
                {"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "12h"},
                {"nodes": "1"},
                {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 0 * * mon-fri", "duration": "24h"},
            ],
        },
    },
    # Inferentia / Trainium, tainted and capped like the GPU pools.
    "neuron": {
        "nodeClass": "gpu",
        "capacityTypes": ["on-demand"],
        "instanceFamilies": ["inf2", "trn1"],
        "labels": {WORKLOAD_LABEL: "inference"},
        "taints": [NEURON_TAINT.as_dict()],
        "limits": {NEURON_RESOURCE: "16"},
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m", "budgets": [{"nodes": "1"}]},
    },
}


def _inference_tier(family: str, capacity: str, weight: int) -> dict[str, Any]:
    tier = deep_merge(_BASE_POOL_PRESETS["gpu-inference"], {"weight": weight, "capacityTypes": [capacity]})
    tier["instanceFamilies"] = [family]
    tier["gpuNames"] = [gpu_facts.ACCELERATED_FAMILIES[family].gpu_name]
    return tier


#: Spot-first inference tiers: Karpenter tries the highest weight first and falls back in order.
NODE_POOL_PRESETS: Mapping[str, Mapping[str, Any]] = {
    **_BASE_POOL_PRESETS,
    "gpu-inference-a10g-spot": _inference_tier("g5", "spot", 100),
    "gpu-inference-t4-spot": _inference_tier("g4dn", "spot", 50),
    "gpu-inference-a10g-on-demand": _inference_tier("g5", "on-demand", 10),
}

NODE_CLASS_PRESETS: Mapping[str, Mapping[str, Any]] = {
    "default": {"amiFamily": "al2023", "rootVolumeGib": 80},
    # Container images with CUDA are large; the AL2023 alias picks the NVIDIA (or Neuron) variant by instance type.
    "gpu": {"amiFamily": "al2023", "rootVolumeGib": 200, "rootVolumeIops": 6000, "rootVolumeThroughputMibps": 250},
    # Every instance the gpu-training pool preset launches (A100, H100) has local NVMe (EC2 instance types guide,
    # docs.aws.amazon.com/ec2/latest/instancetypes/ac.html, instance store: p4d/p4de.24xlarge 8 x 1000 GB,
    # p5.48xlarge 8 x 3840 GB, p5.4xlarge 1 x 3840 GB; so do p5e/p5en and p6-b200). RAID0 makes them one
    # array, and on AL2023 nodeadm mounts it and bind-mounts containerd's, the kubelet's and pod logs' directories
    # onto it (awslabs/amazon-eks-ami, templates/shared/runtime/bin/setup-local-disks, run for
    # `localStorage.strategy: RAID0`, which Karpenter sets from instanceStorePolicy): the image cache and scratch
    # live on NVMe, and the root volume holds only the OS. On a type without instance store the policy does nothing.
    "gpu-training": {
        "amiFamily": "al2023",
        "rootVolumeGib": 200,
        "rootVolumeIops": 6000,
        "rootVolumeThroughputMibps": 250,
        "instanceStorePolicy": "RAID0",
    },
}

DEFAULT_NODE_CLASSES = {name: {"preset": name} for name in ("default", "gpu", "gpu-training")}
DEFAULT_NODE_POOLS = {name: {"preset": name} for name in ("cpu-general", "gpu-inference")}
