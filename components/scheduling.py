"""Scheduling contracts shared by the components: taints, labels and resource names.

Karpenter's NodePools, the GPU admission policies and the docs all read these, so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str  # Kubernetes spelling: NoSchedule, PreferNoSchedule, NoExecute

    def as_dict(self) -> dict[str, str]:
        # An empty value is left out: the NodePool schema rejects "" as a taint value.
        rendered = {"key": self.key, "value": self.value, "effect": self.effect}
        return {k: v for k, v in rendered.items() if v != ""}

    def toleration(self) -> dict[str, str]:
        """The toleration of exactly this taint: its key, value and effect."""
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}

    def key_toleration(self) -> dict[str, str]:
        """The toleration of this taint's key and effect, whatever its value."""
        return {"key": self.key, "operator": "Exists", "effect": self.effect}


GPU_RESOURCE = "nvidia.com/gpu"
#: Neuron devices, and their cores: the Neuron device plugin advertises both, and Karpenter counts both on an
#: instance type (so a NodePool may be capped on either).
NEURON_RESOURCE = "aws.amazon.com/neuron"
NEURON_CORE_RESOURCE = "aws.amazon.com/neuroncore"
ACCELERATOR_RESOURCES = (GPU_RESOURCE, NEURON_RESOURCE, NEURON_CORE_RESOURCE)
#: Every name a Neuron device plugin has advertised: `aws.amazon.com/neuron` (whole devices) and
#: `aws.amazon.com/neuroncore` (cores) today ("the device plugin registers two resource types", Neuron docs,
#: deploy/includes/k8s-neuron-device-plugin.rst, awsdocs-neuron.readthedocs-hosted.com/en/latest/deploy/includes/
#: k8s-neuron-device-plugin.html), and `aws.amazon.com/neurondevice`, the devices' name in older releases (Neuron docs
#: v1.12.0, containers/kubernetes-getting-started.html). A team namespace's quota caps all three, so a node with an
#: older plugin opens no way around it. They share the prefix `NEURON_RESOURCE`.
NEURON_RESOURCES = (NEURON_RESOURCE, NEURON_CORE_RESOURCE, "aws.amazon.com/neurondevice")
#: The EFA device plugin's resource: the EFA interfaces of a node.
EFA_RESOURCE = "vpc.amazonaws.com/efa"
#: Set on the nodes of NodePools whose node class attaches EFA interfaces: the EFA device plugin runs exactly there.
EFA_LABEL = "eksml.io/efa"

#: Every GPU node carries this taint, so only pods that ask for a GPU (and tolerate it) land there. Without it a GPU
#: pool fills with ordinary pods and never scales to zero.
GPU_TAINT = Taint(GPU_RESOURCE, "true", "NoSchedule")
NEURON_TAINT = Taint(NEURON_RESOURCE, "true", "NoSchedule")

#: Taints the CSI node agents remove once they are ready, so no pod that mounts a volume lands on a node before the
#: driver can attach it (Karpenter startupTaints). Keyed by driver.
CSI_STARTUP_TAINTS: dict[str, Taint] = {
    "ebs": Taint("ebs.csi.aws.com/agent-not-ready", "", "NoExecute"),
    "fsx": Taint("fsx.csi.aws.com/agent-not-ready", "", "NoExecute"),
}

#: Team NodePools (made by team stacks, after the platform) carry `eksml.io/team=<team>:NoSchedule` besides their
#: accelerator taint, so only the team's pods land there. Node-level agents the platform installs tolerate it by key
#: and effect, whatever the team: the GPU Operator *replaces* its operands' tolerations with its list
#: (gpu-operator controllers/object_controls.go), so an agent that does not list it never runs on a team's nodes.
TEAM_TAINT_KEY = "eksml.io/team"
#: The team taint whatever the team (its value), as node agents tolerate it.
ANY_TEAM_TAINT = Taint(TEAM_TAINT_KEY, "", "NoSchedule")

#: Name of the secondary bin-packing scheduler GPU pods are placed by (overridable in stack config).
DEFAULT_GPU_SCHEDULER = "gpu-binpack"

#: What a NodePool's nodes are for (general, inference, training): policies and dashboards read it.
WORKLOAD_LABEL = "eksml.io/workload"
#: The value of a training pool: on-demand or reserved, never expiring, so trainer pods (confined to such pools)
#: are not drained mid-job (`karpenter.training`).
TRAINING_WORKLOAD = "training"

#: Set on the nodes of the platform's GPU pools that every team shares (Kueue's `platform-gpus` flavor selects them
#: by it), never on a team stack's own pool: what Kueue admits on the shared flavor then runs on shared nodes only,
#: not on a team pool whose taint the pod tolerates. The platform sets it; a pool's `labels` may not.
GPU_SHARE_LABEL = "eksml.io/gpu-share"
GPU_SHARE_PLATFORM = "platform"


@dataclass(frozen=True)
class Placement:
    """Where a controller's pods run: the nodes they select and the taints they tolerate."""

    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, str], ...]

    def values(self) -> dict[str, Any]:
        """As Helm charts and pod specs spell it."""
        return {"nodeSelector": dict(self.node_selector), "tolerations": [dict(t) for t in self.tolerations]}


#: The system node group: labelled for controllers and tainted so nothing else lands there (Karpenter never runs on
#: capacity it manages).
SYSTEM_TAINT = Taint("CriticalAddonsOnly", "true", "NoSchedule")
SYSTEM_PLACEMENT = Placement(
    node_selector=MappingProxyType({"eksml.io/node-role": "system"}),
    tolerations=(SYSTEM_TAINT.key_toleration(),),
)
