"""Device plugins for the accelerators the NVIDIA GPU Operator does not cover: AWS Neuron (inf2, trn1, trn2) and EFA,
with the admission policy for Neuron pods.

Installed by the stack when a NodePool can launch Neuron instances, or uses a node class with EFA interfaces; each
plugin tolerates every taint of the pools it serves. The releases wait for the system nodes and cluster DNS like
every release; they own no cloud resources, so destroy order among them does not matter.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from .. import helm, k8s_objects, versions
from ..cluster.handle import ClusterHandle
from ..scheduling import Taint
from .admission import AdmissionOptions
from .efa import efa_values
from .neuron import neuron_values
from .neuron_admission import neuron_admission_manifests

NAMESPACE = "kube-system"


@dataclass(frozen=True)
class NodeDevicesArgs:
    """`neuron_taints`: taints of the pools that launch Neuron instances (None: no such pool); `efa_taints`: those
    of the pools whose node class attaches EFA interfaces (None: no such pool). `admission` is the Neuron pods'
    policy (None: off). Each defaults to None; `cluster` is required."""

    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    neuron_taints: tuple[Taint, ...] | None = None
    efa_taints: tuple[Taint, ...] | None = None
    admission: AdmissionOptions | None = None


class NodeDevices(pulumi.ComponentResource):
    """The Neuron and EFA device plugins, as the stack's pools need them."""

    def __init__(self, name: str, args: NodeDevicesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:gpu:NodeDevices", name, None, opts)
        cluster = args.cluster
        k8s_opts = cluster.kubernetes_options(self)
        # why: Helm waits for the DaemonSet's pods, which need cluster DNS and the system nodes' controllers.
        ready = cluster.on_system_nodes(self)
        if args.neuron_taints is not None:
            helm.release(
                f"{name}-neuron",
                versions.NEURON_HELM_CHART,
                namespace=NAMESPACE,
                values=neuron_values(args.neuron_taints),
                opts=ready,
            )
            if args.admission is not None:
                manifests = neuron_admission_manifests(args.admission)
                policy = k8s_objects.create(f"{name}-neuron-admission-policy", manifests["policy"], k8s_opts)
                k8s_objects.create(
                    f"{name}-neuron-admission-binding",
                    manifests["binding"],
                    # why: a binding whose policy does not exist yet enforces nothing.
                    pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[policy])),
                )
        if args.efa_taints is not None:
            helm.release(
                f"{name}-efa",
                versions.EFA_DEVICE_PLUGIN,
                namespace=NAMESPACE,
                values=efa_values(args.efa_taints),
                opts=ready,
            )
        self.register_outputs({})
