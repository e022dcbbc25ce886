"""Values for the EFA device plugin chart (aws/eks-charts stable/aws-efa-k8s-device-plugin) (pure).

The plugin advertises `vpc.amazonaws.com/efa` on nodes with EFA interfaces, so multi-node NCCL (and the Neuron
collective library) runs over EFA rather than TCP. Without it a pod that asks for EFA never schedules, and one that
does not silently falls back to sockets.

It runs on exactly the nodes of pools whose node class attaches EFA interfaces: those carry `eksml.io/efa=true`, and
the chart's node affinity is pointed at that label (`supportedInstanceLabels`) instead of its built-in list of
instance types, which lags new types (p6-b200). It tolerates every taint of those pools.

Keys as in the chart's values.yaml; no reference copy is pinned, so tests/test_karpenter_devices.py checks them
against the upstream key list it records.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..scheduling import EFA_LABEL, Taint
from .tolerations import device_tolerations


def efa_values(pool_taints: Iterable[Taint]) -> dict[str, Any]:
    # The chart's template tolerates the system taint itself; these come in addition.
    return {
        "supportedInstanceLabels": {"keys": [EFA_LABEL], "values": ["true"]},
        "tolerations": device_tolerations(pool_taints),
    }
