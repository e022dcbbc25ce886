"""The GPU stack: NVIDIA GPU Operator, the bin-packing scheduler and the GPU admission policies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi

from .. import helm, k8s_objects, versions
from ..cluster.handle import ClusterHandle
from ..scheduling import GPU_TAINT, Taint
from . import network_policy
from .admission import AdmissionOptions, admission_manifests
from .config import GpuConfig
from .efa_admission import efa_admission_manifests
from .operator import GpuOperatorOptions, NodeImage, operator_values
from .scheduler import SchedulerOptions, scheduler_manifests

OPERATOR_NAMESPACE = "gpu-operator"


@dataclass(frozen=True)
class GpuStackArgs:
    """The GPU stack on a cluster. Fields without a default are required."""

    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: Operator options (MIG, time-slicing, DCGM), the bin-packing scheduler and the admission policy (`GpuConfig`).
    config: GpuConfig
    #: The AMI family of the GPU pools' node class (`al2023` or `bottlerocket`): it decides which layers (driver,
    #: toolkit, device plugin) the operator leaves to the image.
    node_image: NodeImage
    #: Controllers that delete the AWS side of namespaced objects (`Ingress.controller`); the namespace is deleted
    #: while they run. Default: none.
    cleanup_controllers: tuple[pulumi.Resource, ...] = ()
    #: Gives pods that cannot name the bin-packing scheduler an exemption from that rule only: takes the GPU admission
    #: policy and the scheduler's name, returns the policy (Kubeflow's notebook and pipeline pods:
    #: `kubeflow.gpu_scheduling.kubeflow_exemption`). Default: None, no pod is exempt.
    scheduler_exemption: Callable[[dict[str, Any], str], dict[str, Any]] | None = None
    #: Every taint of the GPU pools the operands must run on besides the GPU and team taints
    #: (`KarpenterConfig.gpu_taints()`). Default: none.
    pool_taints: tuple[Taint, ...] = ()
    #: Where Prometheus runs: its pods may scrape the DCGM exporter and the operator (None: no allowance).
    #: Default: None.
    monitoring_namespace: str | None = None


class GpuStack(pulumi.ComponentResource):
    """Everything a GPU node needs beyond its image, and the rules that keep GPU pods packed and placed."""

    operator: pulumi.Resource
    scheduler_name: str | None
    gpu_taint: str

    def __init__(self, name: str, args: GpuStackArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:gpu:GpuStack", name, None, opts)
        cluster, config = args.cluster, args.config
        on_system_nodes = cluster.on_system_nodes(self)  # the operator and the scheduler
        # Owned by the stack (not created by Helm), so destroy removes it; the operator's DaemonSets need host access.
        namespace = cluster.owned_namespace(
            f"{name}-namespace",
            OPERATOR_NAMESPACE,
            parent=self,
            pod_security="privileged",
            cleanup_controllers=args.cleanup_controllers,
            policies=network_policy.policies(OPERATOR_NAMESPACE, args.monitoring_namespace),
        )
        self.operator = self._operator(name, args, namespace.metadata["name"], on_system_nodes)
        self.scheduler_name = config.scheduler_name
        if config.scheduler.enabled:
            self._scheduler(name, cluster, config, on_system_nodes)
        if config.admission.enabled:
            self._admission(name, args, cluster.kubernetes_options(self))
        self.gpu_taint = f"{GPU_TAINT.key}={GPU_TAINT.value}:{GPU_TAINT.effect}"
        self.register_outputs({"schedulerName": self.scheduler_name, "gpuTaint": self.gpu_taint})

    @staticmethod
    def _operator(
        name: str, args: GpuStackArgs, namespace: pulumi.Input[str], opts: pulumi.ResourceOptions
    ) -> pulumi.Resource:
        """The GPU Operator's Helm release, told which layers the node image already brings."""
        cluster, config = args.cluster, args.config
        mig = config.mig
        return helm.release(
            f"{name}-operator",
            versions.GPU_OPERATOR,
            namespace=namespace,
            values=operator_values(
                GpuOperatorOptions(
                    node_image=args.node_image,
                    node_feature_discovery=config.node_feature_discovery,
                    mig_strategy=mig.strategy if mig else None,
                    mig_default_profile=mig.default_profile if mig else "all-disabled",
                    time_slicing_replicas=config.time_slicing_replicas,
                    pool_taints=args.pool_taints,
                ),
                system_placement=cluster.system_placement,
            ),
            # The operator's CRD upgrade hook needs it (see the chart's operator.upgradeCRD).
            disable_openapi_validation=True,
            opts=opts,
        )

    @staticmethod
    def _scheduler(name: str, cluster: ClusterHandle, config: GpuConfig, opts: pulumi.ResourceOptions) -> None:
        """The bin-packing scheduler's objects, with the kube-scheduler image of the cluster's Kubernetes version."""
        image = versions.KUBE_SCHEDULER[cluster.kubernetes_version]
        manifests = scheduler_manifests(
            SchedulerOptions(
                name=config.scheduler.name,
                image=f"{versions.KUBE_SCHEDULER_IMAGE}:{image.image_tag}",
                strategy=config.scheduler.strategy,
                gpu_weight=config.scheduler.gpu_weight,
                replicas=config.scheduler.replicas,
            ),
            placement=cluster.system_placement,
        )
        for key, manifest in manifests.items():
            k8s_objects.create(f"{name}-scheduler-{key}", manifest, opts)

    def _admission(self, name: str, args: GpuStackArgs, k8s_opts: pulumi.ResourceOptions) -> None:
        """The GPU and EFA admission policies, each with its binding."""
        config = args.config
        policies = admission_manifests(
            AdmissionOptions(
                action=config.admission.action,
                scheduler_name=self.scheduler_name,
                exempt_namespaces=config.admission.exempt_namespaces,
            )
        )
        if args.scheduler_exemption is not None and self.scheduler_name is not None:
            # The pods an application cannot make name the scheduler (Kubeflow's notebooks: PodDefaults do not set
            # it) are exempt from that rule only, as the program says.
            policies["policy"] = args.scheduler_exemption(policies["policy"], self.scheduler_name)
        efa = efa_admission_manifests(
            AdmissionOptions(action=config.admission.action, exempt_namespaces=config.admission.exempt_namespaces)
        )
        for prefix, manifests in ((f"{name}-admission", policies), (f"{name}-efa-admission", efa)):
            policy = k8s_objects.create(f"{prefix}-policy", manifests["policy"], k8s_opts)
            k8s_objects.create(
                f"{prefix}-binding",
                manifests["binding"],
                # why: a binding whose policy does not exist yet is rejected by nothing but enforces nothing.
                pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[policy])),
            )
