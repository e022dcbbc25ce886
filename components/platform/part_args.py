"""What the program gives each part: its args, from the config and the parts built before it.

One function a part (`<part>_args`), so what a part is handed is read in one place; `build.build_platform` decides
which parts exist and in which order. Kubeflow's objects are planned here too (`kubeflow_objects`), from the config
alone, before anything is created.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pulumi
import pulumi_aws as aws

from ..cluster.add_on_part import AddOnPart
from ..cluster.component import ClusterArgs, cluster_creator
from ..cluster.handle import ClusterHandle
from ..config.types import StatefulResources
from ..gpu.component import GpuStackArgs
from ..gpu.devices import NodeDevicesArgs
from ..karpenter.component import Karpenter, KarpenterArgs
from ..karpenter.training import is_training_pool
from ..kubeflow.component import FsxForTeams, KubeflowArgs, planned_objects
from ..kubeflow.config import settings
from ..kubeflow.gpu_scheduling import kubeflow_exemption
from ..kubeflow.staging import Staged
from ..kueue.component import Kueue
from ..network.component import Network, NetworkArgs
from ..observability.component import NAMESPACE as MONITORING_NAMESPACE
from ..observability.component import Observability, ObservabilityArgs
from ..scheduling import GPU_TAINT
from ..storage.component import Storage, StorageArgs
from ..storage.file_system import FsxFileSystem, FsxFileSystemArgs
from ..storage.render import kept_volume_class_name
from .config import PlatformConfig


def kubeflow_objects(config: PlatformConfig) -> list[Staged]:
    """Kubeflow's objects, planned from the config alone (the facts `build_platform` gives the other parts come from
    the same config), so a missing tree or a refused plan stops the run before anything is created."""
    kubeflow = config.kubeflow
    facts = settings(
        kubeflow,
        # Kubeflow's MySQL, SeaweedFS and notebook workspaces hold users' data: kept as the stack keeps its stores.
        storage_class=kept_volume_class_name(config.stateful_resources),
        gpu_node_pools=tuple(name for name, pool in sorted(config.karpenter.node_pools.items()) if pool.gpu_limit),
        gpu_pool_taints={
            name: tuple(t.taint for t in pool.taints if t.key != GPU_TAINT.key)
            for name, pool in sorted(config.karpenter.node_pools.items())
            if pool.gpu_limit
        },
        gpu_scheduler=config.gpu.scheduler_name if config.gpu_node_image is not None else None,
        training_pools=any(is_training_pool(p.labels) for p in config.karpenter.node_pools.values()),
        tags=config.tags,
        monitoring_namespace=MONITORING_NAMESPACE if config.observability.enabled else None,
        fsx_capacity_gib=config.storage.fsx.storage_capacity_gib if config.storage.fsx is not None else None,
        load_balancer_cidrs=config.load_balancer_cidrs,
        region=config.region,
        queueing=config.queueing,
    )
    return planned_objects(kubeflow, facts)


def network_args(config: PlatformConfig) -> NetworkArgs:
    """The VPC's: the stack's network section, in its region."""
    return NetworkArgs(cluster_name=config.cluster_name, config=config.network, region=config.region)


def file_system_args(config: PlatformConfig, network: Network) -> FsxFileSystemArgs | None:
    """The FSx file system's, in the private subnet of its zone; None without `storage.fsx`."""
    if config.storage.fsx is None or config.fsx_zone is None:
        return None
    return FsxFileSystemArgs(
        config=config.storage.fsx,
        stateful_resources=config.stateful_resources,
        cluster_name=config.cluster_name,
        vpc_id=network.vpc_id,
        zone=config.fsx_zone,
        subnet_id=network.private_subnet_by_zone[config.fsx_zone],
        # why: destroy then deletes it beside the system node group (see FsxFileSystemArgs.after), not in a level
        # of its own.
        after=network.egress,
    )


def cluster_args(
    config: PlatformConfig, network: Network, fsx: FsxFileSystem | None, provider: aws.Provider
) -> ClusterArgs:
    """The cluster's, in the network's private subnets, after its egress (the system nodes leave first on destroy)."""
    return ClusterArgs(
        cluster_name=config.cluster_name,
        config=config.cluster,
        vpc_id=network.vpc_id,
        private_subnet_ids=network.private_subnet_ids,
        availability_zones=network.availability_zones,
        region=config.region,
        stateful_resources=config.stateful_resources,
        instance_tags=config.tags,
        aws_profile=config.profile,
        creator_arn=cluster_creator(config.cluster_name, provider),
        owns_vpc=network.owns_vpc,
        network_ready=network.egress,
        network_subnets=network.subnets,
        identity=config.identity,
    )


def karpenter_args(config: PlatformConfig, handle: ClusterHandle) -> KarpenterArgs:
    """Karpenter's: its node classes and pools, with the startup taints of the stack's CSI drivers."""
    return KarpenterArgs(cluster=handle, config=config.karpenter, tags=config.tags, csi_drivers=config.csi_drivers)


def gpu_args(
    config: PlatformConfig,
    node_image: Literal["al2023", "bottlerocket"],
    handle: ClusterHandle,
    cleanup: tuple[pulumi.Resource, ...],
) -> GpuStackArgs:
    """The GPU stack's, with Kubeflow's notebook and pipeline pods exempt from the scheduler rule when Kubeflow
    runs (they cannot name the bin-packing scheduler: `kubeflow.gpu_scheduling`)."""
    return GpuStackArgs(
        cluster=handle,
        monitoring_namespace=MONITORING_NAMESPACE if config.observability.enabled else None,
        scheduler_exemption=kubeflow_exemption if config.kubeflow.enabled else None,
        config=config.gpu,
        node_image=node_image,
        cleanup_controllers=cleanup,
        pool_taints=config.karpenter.gpu_taints(),
    )


def devices_args(config: PlatformConfig, handle: ClusterHandle) -> NodeDevicesArgs | None:
    """The Neuron and EFA plugins', tolerating every taint of the pools that need them; None when no pool does."""
    neuron_taints, efa_taints = config.karpenter.neuron_taints(), config.karpenter.efa_taints()
    if neuron_taints is None and efa_taints is None:
        return None
    return NodeDevicesArgs(
        cluster=handle,
        neuron_taints=neuron_taints,
        efa_taints=efa_taints,
        admission=config.gpu.admission.device_options,
    )


def storage_args(
    config: PlatformConfig, handle: ClusterHandle, fsx: FsxFileSystem | None, cleanup: tuple[pulumi.Resource, ...]
) -> StorageArgs:
    """Storage's: the buckets, the volume classes and the FSx driver for the file system made before the cluster."""
    return StorageArgs(
        config=config.storage,
        stateful_resources=config.stateful_resources,
        cluster=handle,
        file_system=fsx,
        cleanup_controllers=cleanup,
        monitoring_namespace=MONITORING_NAMESPACE if config.observability.enabled else None,
    )


def observability_args(
    config: PlatformConfig, handle: ClusterHandle, storage: Storage, cleanup: tuple[pulumi.Resource, ...]
) -> ObservabilityArgs:
    """Observability's, with the GPU pools, prices and shares its dashboards and cost rules compare use with."""
    return ObservabilityArgs(
        cluster=handle,
        config=config.observability,
        gpu_pools=config.gpu_pools,
        gpu_hour_prices=config.gpu_hour_prices,
        instance_gpus=config.instance_gpus,
        gpu_shares=config.gpu.time_slicing_replicas or 1,
        # Prometheus' volume is kept as the stack keeps its stores.
        storage_class=storage.kept_volume_class,
        storage_class_name=storage.kept_volume_class_name,
        delete_volumes=config.stateful_resources is StatefulResources.DESTROY,
        cleanup_controllers=cleanup,
    )


def kubeflow_args(
    config: PlatformConfig,
    plan: Sequence[Staged],
    handle: ClusterHandle,
    network: Network,
    karpenter: Karpenter,
    storage: Storage,
    cert_manager: AddOnPart,
    cleanup: tuple[pulumi.Resource, ...],
    observability: Observability | None,
    kueue: Kueue | None,
) -> KubeflowArgs:
    """Kubeflow's, with its planned objects (`kubeflow_objects`) and what they stand on."""
    # the class kubeflow_objects planned with
    assert storage.kept_volume_class_name == kept_volume_class_name(config.stateful_resources)
    # Teams get prefixes of this bucket, and Pipelines' artifacts with s3 (config refuses either without it); their
    # roles may use its key through S3.
    team_bucket = config.kubeflow.bucket
    return KubeflowArgs(
        cluster=handle,
        config=config.kubeflow,
        objects=plan,
        # the class its claims are planned on (kept through destroy where the stack keeps its stores)
        storage_class=storage.kept_volume_class,
        cert_manager=cert_manager.release,
        bucket_name=storage.bucket_name(team_bucket),
        bucket_kms_key_arn=storage.bucket_key_arn(team_bucket),
        fsx=FsxForTeams(storage.file_system, storage.fsx_driver)
        if storage.file_system is not None and storage.fsx_driver is not None
        else None,
        cleanup_controllers=cleanup,
        # the ALB's sources the plan could not name (it left a placeholder for them)
        vpc_cidrs=network.existing_cidrs() if config.alb_reads_vpc_cidrs else None,
        node_pools=tuple(karpenter.node_pools[name] for name in config.karpenter.untainted_pools),
        # the monitors' CRDs (the plan has monitors exactly when observability is on)
        monitoring=observability.release if observability is not None else None,
        kueue=kueue.release if kueue is not None else None,
    )
