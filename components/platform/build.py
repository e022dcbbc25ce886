"""The program: every part of the stack, built in the order of creation from a parsed config.

Which parts exist is the config's decision; what each part is given, `part_args`; the logical names and the aliases
to earlier releases' names, `aliases`. `entry.program` runs it for `pulumi up` and the offline preview alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from ..certmanager.add_on import ADD_ON as CERT_MANAGER
from ..cluster.add_on_part import AddOnArgs, AddOnPart
from ..cluster.component import Cluster
from ..gpu.component import GpuStack
from ..gpu.devices import NodeDevices
from ..ingress.component import Ingress, IngressArgs
from ..karpenter.component import Karpenter
from ..kserve.component import KServe, KServeArgs
from ..kubeflow.component import Kubeflow
from ..kubeflow.staging import Staged
from ..kueue.component import Kueue, KueueArgs, TeamQueues, TeamQueuesArgs
from ..network.component import Network
from ..observability.component import NAMESPACE as MONITORING_NAMESPACE
from ..observability.component import Observability
from ..storage.component import Storage
from ..storage.file_system import FsxFileSystem
from .aliases import adopted_from_part, part_options
from .config import PlatformConfig
from .part_args import (
    cluster_args,
    devices_args,
    file_system_args,
    gpu_args,
    karpenter_args,
    kubeflow_args,
    network_args,
    observability_args,
    storage_args,
)


@dataclass(frozen=True)
class Platform:
    """The components of one stack, for callers that build on them."""

    config: PlatformConfig
    network: Network
    cluster: Cluster
    karpenter: Karpenter
    #: Present when a NodePool launches NVIDIA GPUs.
    gpu: GpuStack | None
    storage: Storage
    #: Present unless ingress.loadBalancerController is false.
    ingress: Ingress | None
    #: Present unless observability.enabled is false.
    observability: Observability | None
    #: Present when kubeflow.enabled is true.
    kubeflow: Kubeflow | None = None
    #: Present when kubeflow.components.kserve is true.
    kserve: KServe | None = None
    #: Present when a NodePool launches Neuron instances or uses a node class with EFA interfaces.
    devices: NodeDevices | None = None
    #: Present when the platform runs Kueue (`PlatformConfig.queueing`).
    kueue: Kueue | None = None
    #: The Kubeflow teams' ClusterQueues and LocalQueues, with Kueue and Kubeflow teams.
    team_queues: TeamQueues | None = None
    #: The add-ons the config turns on (`PlatformConfig.add_ons`), by name.
    add_ons: Mapping[str, AddOnPart] = field(default_factory=dict)

    @property
    def cert_manager(self) -> AddOnPart | None:
        """Present when a part that needs certificates is on (Kubeflow)."""
        return _cert_manager(self.add_ons)


@dataclass(frozen=True)
class _Infrastructure:
    """The parts every other part stands on, and the controllers the namespaces made after them are deleted
    before (`cleanup`)."""

    network: Network
    cluster: Cluster
    karpenter: Karpenter
    ingress: Ingress | None
    storage: Storage
    cleanup: tuple[pulumi.Resource, ...]


@dataclass(frozen=True)
class _Services:
    """The platform services the applications use."""

    observability: Observability | None
    kueue: Kueue | None
    add_ons: Mapping[str, AddOnPart]

    @property
    def cert_manager(self) -> AddOnPart | None:
        return _cert_manager(self.add_ons)


def _cert_manager(add_ons: Mapping[str, AddOnPart]) -> AddOnPart | None:
    return add_ons.get(CERT_MANAGER.name)


def build_platform(
    config: PlatformConfig,
    kubeflow_plan: Sequence[Staged] = (),
    kubeflow_connector_secrets: dict[str, pulumi.Output[str]] | None = None,
    kubeflow_alb_client_secret: pulumi.Output[str] | None = None,
) -> Platform:
    """Every part of the stack in the order of creation (Kubeflow's objects from `part_args.kubeflow_objects`, when
    it is on). Which parts exist is the config's decision; what each part is given, `part_args`."""
    provider = aws.Provider(
        "aws", region=config.region, profile=config.profile, default_tags=aws.ProviderDefaultTagsArgs(tags=config.tags)
    )
    opts = pulumi.ResourceOptions(providers=[provider])
    base = _infrastructure(config, provider, opts)
    handle = base.cluster.handle
    gpu = None
    if config.gpu_node_image is not None:
        gpu_stack_args = gpu_args(config, config.gpu_node_image, handle, base.cleanup)
        gpu = GpuStack("gpu", gpu_stack_args, part_options("gpu", config.cluster_name, opts))
    devices = None
    if (node_devices_args := devices_args(config, handle)) is not None:
        devices = NodeDevices("devices", node_devices_args, part_options("devices", config.cluster_name, opts))
    services = _services(config, base, opts)
    kubeflow, team_queues = None, None
    if config.kubeflow.enabled:
        kubeflow, team_queues = _kubeflow(
            config, base, services, kubeflow_plan, kubeflow_connector_secrets, kubeflow_alb_client_secret, opts
        )
    kserve = None
    if config.kserve:  # new: no 0.1 name to alias
        assert services.cert_manager is not None  # KServe is a Kubeflow component
        cert_manager = services.cert_manager.release
        kserve = KServe(
            "kserve", KServeArgs(cluster=handle, cert_manager=cert_manager, cleanup_controllers=base.cleanup), opts
        )
    return Platform(
        config=config,
        network=base.network,
        cluster=base.cluster,
        karpenter=base.karpenter,
        gpu=gpu,
        storage=base.storage,
        ingress=base.ingress,
        observability=services.observability,
        kubeflow=kubeflow,
        devices=devices,
        kserve=kserve,
        kueue=services.kueue,
        team_queues=team_queues,
        add_ons=services.add_ons,
    )


def _infrastructure(config: PlatformConfig, provider: aws.Provider, opts: pulumi.ResourceOptions) -> _Infrastructure:
    """The network, the FSx file system, the cluster, Karpenter, the load balancer controller and storage."""

    def part(name: str) -> pulumi.ResourceOptions:
        return part_options(name, config.cluster_name, opts)

    network = Network("network", network_args(config), part("network"))
    fsx = None
    if (fsx_args := file_system_args(config, network)) is not None:  # made before the cluster: it needs no more
        fsx = FsxFileSystem(
            "storage-fsx", fsx_args, adopted_from_part("storage", "eksml:storage:Storage", config.cluster_name, opts)
        )
    cluster = Cluster("cluster", cluster_args(config, network, fsx, provider), part("cluster"))
    handle = cluster.handle
    karpenter = Karpenter("karpenter", karpenter_args(config, handle), part("karpenter"))
    ingress = None
    if config.ingress.load_balancer_controller:
        ingress = Ingress(
            "ingress",
            IngressArgs(cluster=handle, tags=config.tags, waf=config.ingress.waf, shield=config.ingress.shield),
            part("ingress"),
        )
    # Namespaces the stack creates are deleted while these still run, so what teams put in them (load balancers,
    # claims of fsx-lustre volumes) is cleaned up in AWS. The EBS CSI driver, an add-on, outlives them all.
    cleanup: tuple[pulumi.Resource, ...] = (ingress.controller,) if ingress is not None else ()
    storage = Storage("storage", storage_args(config, handle, fsx, cleanup), part("storage"))
    if storage.fsx_driver is not None:
        cleanup = (*cleanup, storage.fsx_driver)
    return _Infrastructure(network, cluster, karpenter, ingress, storage, cleanup)


def _services(config: PlatformConfig, base: _Infrastructure, opts: pulumi.ResourceOptions) -> _Services:
    """Observability, the add-ons and Kueue, each when the config turns it on."""
    handle, cleanup = base.cluster.handle, base.cleanup
    observability = None
    if config.observability.enabled:
        observability = Observability(
            "observability",
            observability_args(config, handle, base.storage, cleanup),
            part_options("observability", config.cluster_name, opts),
        )
    monitoring = MONITORING_NAMESPACE if config.observability.enabled else None
    add_on_args = AddOnArgs(cluster=handle, cleanup_controllers=cleanup, monitoring_namespace=monitoring)
    # Add-ons are new since 0.2: no 0.1 name to alias.
    add_ons = {add_on.name: AddOnPart(add_on, add_on_args, opts) for add_on in config.add_ons}
    kueue = None
    if config.queueing:  # new: no earlier name to alias
        assert config.kueue_flavor is not None  # config.queueing needs a GPU pool
        cohort = config.kueue_cohort()
        assert cohort is not None
        kueue_args = KueueArgs(cluster=handle, flavor=config.kueue_flavor, cohort=cohort, cleanup_controllers=cleanup)
        kueue = Kueue("kueue", kueue_args, opts)
    return _Services(observability, kueue, add_ons)


def _kubeflow(
    config: PlatformConfig,
    base: _Infrastructure,
    services: _Services,
    plan: Sequence[Staged],
    connector_secrets: dict[str, pulumi.Output[str]] | None,
    alb_client_secret: pulumi.Output[str] | None,
    opts: pulumi.ResourceOptions,
) -> tuple[Kubeflow, TeamQueues | None]:
    """Kubeflow with its planned objects and sign-in secrets, and its teams' queues when Kueue runs."""
    assert services.cert_manager is not None  # config.cert_manager follows kubeflow.enabled
    args = kubeflow_args(
        config,
        plan,
        base.cluster.handle,
        base.network,
        base.karpenter,
        base.storage,
        services.cert_manager,
        base.cleanup,
        services.observability,
        services.kueue,
    )
    if connector_secrets:
        args = dataclasses.replace(args, connector_secrets=dict(connector_secrets))
    if alb_client_secret is not None:
        args = dataclasses.replace(args, alb_client_secret=alb_client_secret)
    kubeflow = Kubeflow("kubeflow", args, part_options("kubeflow", config.cluster_name, opts))
    kueue = services.kueue
    if kueue is None or not config.kubeflow.teams:
        return kubeflow, None
    team_queues = TeamQueues(
        "kueue-teams",
        # why: the LocalQueues go in the team namespaces Kubeflow creates; Kueue's CRDs serve them all; the
        # ClusterQueues name the flavor and join the cohort.
        TeamQueuesArgs(
            cluster=base.cluster.handle,
            queues=config.team_queues(),
            after=[kueue.release, kueue.flavor, kueue.cohort, kubeflow],
        ),
        opts,
    )
    return kubeflow, team_queues
