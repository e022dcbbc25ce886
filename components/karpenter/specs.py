"""Typed Karpenter NodePool and EC2NodeClass specs (`pool_spec.py`, `class_spec.py` with
`kubelet_spec.py` and `user_data_spec.py`; presets in `presets.py`, checks
in `pool_checks.py` and `validation.py`).

A pool in stack config names a preset and overrides it field by field:

    karpenter:
      nodePools:
        gpu-inference:
          preset: gpu-inference
          limits: {nvidia.com/gpu: 8}

Mappings merge into the preset's; lists replace the preset's. The merged spec is then validated as a whole, so a
preset can never hide a mistake (a GPU pool without its taint or GPU limit is an error whatever its origin).
"""

from __future__ import annotations

from .class_spec import (
    CapacityReservationTermSpec,
    NetworkInterfaceSpec,
    NodeClassSpec,
    SecurityGroupTermSpec,
    SubnetTermSpec,
)
from .kubelet_spec import KubeletSpec
from .pool_fields import BudgetSpec, DisruptionSpec, RequirementSpec, TaintSpec
from .pool_spec import NodePoolSpec
from .presets import DEFAULT_NODE_CLASSES, DEFAULT_NODE_POOLS, NODE_CLASS_PRESETS, NODE_POOL_PRESETS
from .user_data_spec import UserDataSpec

__all__ = [
    "DEFAULT_NODE_CLASSES",
    "DEFAULT_NODE_POOLS",
    "NODE_CLASS_PRESETS",
    "NODE_POOL_PRESETS",
    "BudgetSpec",
    "CapacityReservationTermSpec",
    "DisruptionSpec",
    "KubeletSpec",
    "NetworkInterfaceSpec",
    "NodeClassSpec",
    "NodePoolSpec",
    "RequirementSpec",
    "SecurityGroupTermSpec",
    "SubnetTermSpec",
    "TaintSpec",
    "UserDataSpec",
]
