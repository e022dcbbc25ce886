"""Values for the AWS Neuron Helm chart (pure): its device plugin only, on the nodes of the Neuron pools.

The device plugin advertises `aws.amazon.com/neuron` (devices) and `aws.amazon.com/neuroncore` on inf2 / trn1 /
trn2 nodes; without it a Neuron pod stays pending on a node Karpenter launched for it. It must tolerate every taint
of the Neuron pools (the Neuron taint, and whatever else a pool adds), or it never lands there. The chart's own
affinity keeps it on Neuron instance types, so tolerating broadly sends it nowhere else.

Off, with the reason:
- the scheduler extension (`scheduler.enabled`): it runs a second kube-scheduler pinned by the chart to an older
  minor than the cluster's. It is needed only for pods that ask for some of a multi-device node's devices and must
  get connected ones; pods that take a whole node's devices, or one device or core, place correctly without it
  (README, "Neuron pools");
- the node problem detector (`npd.enabled`): its recovery half needs IAM permissions to replace instances, and
  Karpenter's own repair is the one owner of node replacement here (as the EKS user guide installs it).

Keys as in the chart's values.yaml (aws-neuron/neuron-helm-charts charts/neuron-helm-chart/values.yaml; no
reference copy is pinned, so tests/test_karpenter_devices.py checks them against the upstream key list it records).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..scheduling import NEURON_TAINT, SYSTEM_TAINT, Taint
from .tolerations import device_tolerations


def neuron_values(pool_taints: Iterable[Taint]) -> dict[str, Any]:
    # The chart's own default tolerations, which setting the list replaces, are the system and Neuron taints.
    system = {"key": SYSTEM_TAINT.key, "operator": "Exists"}
    return {
        "devicePlugin": {"enabled": True, "tolerations": [system, *device_tolerations((*pool_taints, NEURON_TAINT))]},
        "scheduler": {"enabled": False},
        "npd": {"enabled": False},
    }
