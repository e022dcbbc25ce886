"""Kubeflow Notebooks (JWA) on this platform: the spawner form written by us, and idle notebooks culled.

The form offers the GPU NodePools and nothing GPU-related is preselected: a notebook gets a GPU only when its
author picks the NVIDIA vendor, the GPU toleration group and (optionally) a pool. New workspaces use the platform's
StorageClass, and the access-ml-pipeline PodDefault (present in every team namespace) is selected by default.

Every notebook pod is `karpenter.sh/do-not-disrupt`: an evicted notebook loses its kernel's state, and JWA cannot
annotate the pod, so a PodDefault in each team namespace does it for every pod the notebook controller labels
(`notebook-protection`, selected by the label, not offered in the form: no one can leave it out). Consolidation
and drift then wait for the notebook to stop; culling (`idle_minutes`) is what frees an idle notebook's node.
Expiry and spot reclaims are not held back by the annotation: a GPU notebook placed on a spot or expiring pool
(the inference pools the form offers) can still lose its kernel there, which docs/kubeflow.md states.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from ..scheduling import GPU_RESOURCE, GPU_TAINT, Taint
from .objects import Manifest
from .transform import DO_NOT_DISRUPT, replace

JWA_CONFIG = ("ConfigMap", "kubeflow", "jupyter-web-app-config")
NOTEBOOK_CONTROLLER_CONFIG = ("ConfigMap", "kubeflow", "notebook-controller-config")
SPAWNER_KEY = "spawner_ui_config.yaml"
ACCESS_ML_PIPELINE = "access-ml-pipeline"
GPU_TOLERATION_GROUP = "nvidia-gpu"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
NOTEBOOK_PROTECTION = "notebook-protection"
#: The label the notebook controller puts on every notebook pod, valued with the Notebook's name
#: (kubeflow/notebooks components/notebook-controller/controllers/notebook_controller.go, `notebook-name`).
NOTEBOOK_POD_LABEL = "notebook-name"
#: Upstream's container image choices (image, imageGroupOne, imageGroupTwo) are kept as released.
_IMAGE_KEYS = ("image", "imageGroupOne", "imageGroupTwo")


def notebook_protection(namespace: str) -> Manifest:
    """The PodDefault that marks every notebook pod of the namespace `karpenter.sh/do-not-disrupt` (the PodDefault
    CRD's `spec.annotations`, kubeflow/notebooks components/admission-webhook, at the pinned Kubeflow tree)."""
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "PodDefault",
        "metadata": {"name": NOTEBOOK_PROTECTION, "namespace": namespace},
        "spec": {
            "desc": "Keep Karpenter from disrupting a running notebook's node",
            "selector": {"matchExpressions": [{"key": NOTEBOOK_POD_LABEL, "operator": "Exists"}]},
            "annotations": {DO_NOT_DISRUPT: "true"},
        },
    }


def gpu_toleration() -> dict[str, str]:
    """Exactly the taint every GPU node carries."""
    return GPU_TAINT.toleration()


def pool_affinity(pool: str) -> dict[str, Any]:
    return {
        "configKey": f"nodepool-{pool}",
        "displayName": f"NodePool {pool}",
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": NODEPOOL_LABEL, "operator": "In", "values": [pool]}]}
                    ]
                }
            }
        },
    }


def pool_toleration_group(pool: str, taints: Sequence[Taint]) -> dict[str, Any]:
    """The toleration group of a GPU pool with taints of its own: the GPU taint and those, exactly."""
    return {
        "groupKey": f"{GPU_TOLERATION_GROUP}-{pool}",
        "displayName": f"NVIDIA GPU nodes of NodePool {pool}",
        "tolerations": [gpu_toleration(), *(t.toleration() for t in taints)],
    }


def _workspace_volume(storage_class: str) -> dict[str, Any]:
    """Each notebook's home: a 5Gi claim of its own, named for the notebook, of the platform's storage class."""
    return {
        "mount": "/home/jovyan",
        "newPvc": {
            "metadata": {"name": "{notebook-name}-workspace"},
            "spec": {
                "storageClassName": storage_class,
                "resources": {"requests": {"storage": "5Gi"}},
                "accessModes": ["ReadWriteOnce"],
            },
        },
    }


def _toleration_groups(gpu_pools: Sequence[str], pool_taints: Mapping[str, Sequence[Taint]]) -> list[dict[str, Any]]:
    """The GPU toleration group, and one more for each GPU pool with taints besides the GPU taint."""
    return [
        {
            "groupKey": GPU_TOLERATION_GROUP,
            "displayName": "NVIDIA GPU nodes",
            "tolerations": [gpu_toleration()],
        },
        *(
            pool_toleration_group(pool, taints)
            for pool, taints in sorted(pool_taints.items())
            if pool in gpu_pools and taints
        ),
    ]


def spawner_config(
    upstream: str,
    *,
    gpu_pools: Sequence[str],
    storage_class: str,
    pool_taints: Mapping[str, Sequence[Taint]] | None = None,
) -> dict[str, Any]:
    """The spawner form (`spawner_ui_config.yaml`) as a dict; `upstream` is the released file, read only for its
    image choices. `pool_taints`: the taints GPU pools carry besides the GPU taint, each then a toleration group of
    its own (a notebook for such a pool picks the pool and its group)."""
    released = (yaml.safe_load(upstream) or {}).get("spawnerFormDefaults", {})
    missing = [k for k in _IMAGE_KEYS if k not in released]
    if missing:
        raise ValueError(f"the released spawner form has no {', '.join(missing)}")
    editable = {"readOnly": False}
    return {
        "spawnerFormDefaults": {
            "allowCustomImage": True,
            "hideRegistry": True,
            "hideTag": False,
            "imagePullPolicy": {**editable, "value": "IfNotPresent"},
            **{k: released[k] for k in _IMAGE_KEYS},
            "cpu": {**editable, "value": "0.5", "limitFactor": "1.2"},
            "memory": {**editable, "value": "1.0Gi", "limitFactor": "1.2"},
            "gpus": {
                **editable,
                "value": {"vendor": "", "vendors": [{"limitsKey": GPU_RESOURCE, "uiName": "NVIDIA"}], "num": "none"},
            },
            "workspaceVolume": {**editable, "value": _workspace_volume(storage_class)},
            "dataVolumes": {**editable, "value": []},
            "affinityConfig": {**editable, "value": "", "options": [pool_affinity(p) for p in gpu_pools]},
            "tolerationGroup": {**editable, "value": "", "options": _toleration_groups(gpu_pools, pool_taints or {})},
            "shm": {**editable, "value": True},
            "configurations": {**editable, "value": [ACCESS_ML_PIPELINE]},
            "environment": {**editable, "value": {}},
        }
    }


def apply(
    objects: list[Manifest],
    *,
    gpu_pools: Sequence[str],
    storage_class: str,
    idle_minutes: int,
    pool_taints: Mapping[str, Sequence[Taint]] | None = None,
) -> list[Manifest]:
    """Our spawner form in JWA's ConfigMap, and culling of notebooks idle for `idle_minutes` (upstream ships it
    off, so a forgotten GPU notebook holds its GPU, and its node, forever)."""
    if idle_minutes < 1:
        raise ValueError("idle_minutes must be at least 1")

    def form(obj: Manifest) -> Manifest:
        config = spawner_config(
            obj["data"][SPAWNER_KEY], gpu_pools=gpu_pools, storage_class=storage_class, pool_taints=pool_taints
        )
        obj["data"][SPAWNER_KEY] = yaml.safe_dump(config, sort_keys=False)
        return obj

    def culling(obj: Manifest) -> Manifest:
        obj["data"]["ENABLE_CULLING"] = "true"
        obj["data"]["CULL_IDLE_TIME"] = str(idle_minutes)
        return obj

    return replace(objects, {JWA_CONFIG: form, NOTEBOOK_CONTROLLER_CONFIG: culling})
