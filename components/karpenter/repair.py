"""Karpenter's node repair at the pinned version: the feature gate that turns it on, and the node conditions it
replaces a node on, with how long each must hold first (pure data, read by the controller values, the docs and the
tests).

Sources, for Karpenter 1.14 on AWS: Karpenter's docs, "Disruption" > "Node Auto Repair"
(https://karpenter.sh/docs/concepts/disruption/#node-auto-repair), which names the kubelet's `Ready` condition and
the conditions of the EKS node monitoring agent, and the EKS user guide's table of repair conditions, actions and
waits for Karpenter (https://docs.aws.amazon.com/eks/latest/userguide/node-repair.html). The feature gate is
`settings.featureGates.nodeRepair` of the chart's values.yaml at v1.14.1 (alpha, off by default).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The chart's values key under `settings.featureGates`.
FEATURE_GATE = "nodeRepair"


@dataclass(frozen=True)
class RepairCondition:
    """A node condition Karpenter replaces a node on once it has held `status` for `after` minutes."""

    type: str
    statuses: tuple[str, ...]
    after_minutes: int
    #: What sets it: the kubelet, or the EKS node monitoring agent (`eks-node-monitoring-agent` add-on).
    set_by: str
    meaning: str


_AGENT = "EKS node monitoring agent"

#: Every condition node repair acts on, and its wait (the EKS guide's "Repair after"). Without the monitoring agent
#: only the kubelet's `Ready` is ever set, so a node with a failed GPU would stay Ready and keep taking pods.
REPAIR_CONDITIONS: tuple[RepairCondition, ...] = (
    RepairCondition("Ready", ("False", "Unknown"), 30, "kubelet", "the node stopped reporting or is not ready"),
    RepairCondition(
        "AcceleratedHardwareReady", ("False",), 10, _AGENT, "a GPU or Neuron device failed (XIDs, DCGM diagnostics)"
    ),
    RepairCondition("ContainerRuntimeReady", ("False",), 30, _AGENT, "containerd cannot run containers"),
    RepairCondition("KernelReady", ("False",), 30, _AGENT, "kernel bugs, soft lockups, exhausted process limits"),
    RepairCondition("NetworkingReady", ("False",), 30, _AGENT, "interfaces, routes or the VPC CNI failed"),
    RepairCondition("StorageReady", ("False",), 30, _AGENT, "disks or file systems failed, I/O stalls"),
)

#: The XIDs the EKS node monitoring agent treats as fatal: for these it sets `AcceleratedHardwareReady=False` (reason
#: `NvidiaXID<code>Error`), which node repair acts on; any other XID only makes a Kubernetes event
#: (`NvidiaXID<code>Warning`) and nothing replaces the node. The agent repairs nothing itself: Karpenter's node repair
#: replaces the node (it never reboots one). Source: aws/eks-node-monitoring-agent at v1.7.0 (the pinned add-on),
#: monitors/nvidia/dcgm/dcgm_policies.go `WellKnownXidCodes`, and docs/node-health-issues.adoc ("NvidiaXID[Code]Error:
#: Condition", "NvidiaXID[Code]Warning: Event"). 63 (a row remapped) is NVIDIA's "ignore", which the agent replaces on
#: EC2's advice; 92 and 94 (a high single-bit ECC rate, a contained ECC error) are not on it.
AGENT_FATAL_XIDS: tuple[int, ...] = (
    46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158
)  # fmt: skip

#: Karpenter stops repairing a NodePool's nodes while more than this share of them is unhealthy (a fault that is
#: not the nodes', such as a bad AMI or a zone outage, would otherwise replace the whole pool).
UNHEALTHY_POOL_SHARE = 0.2
