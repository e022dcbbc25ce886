"""The stack program: parse config, build the platform, export outputs.

`__main__.py` (what `pulumi up` runs) and the offline preview both call `program()`, so the preview shows exactly
what would be deployed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pulumi
import pulumi_aws as aws

from .certmanager.component import CertManager, CertManagerArgs
from .cluster.attach import certificate_authority_of
from .cluster.component import Cluster, ClusterArgs, cluster_creator
from .cluster.handle import ClusterHandle
from .config.errors import ConfigError
from .config.types import StatefulResources
from .gpu.component import GpuStack, GpuStackArgs
from .gpu.devices import NodeDevices, NodeDevicesArgs
from .ingress.component import Ingress, IngressArgs
from .karpenter.component import Karpenter, KarpenterArgs
from .karpenter.training import is_training_pool
from .kserve.component import KServe, KServeArgs
from .kubeflow.component import FsxForTeams, Kubeflow, KubeflowArgs, planned_objects
from .kubeflow.config import settings
from .kubeflow.fetch import TreeError
from .kubeflow.render import RenderError
from .kubeflow.staging import Staged
from .kueue.component import Kueue, KueueArgs, TeamQueues, TeamQueuesArgs
from .kueue.queues import offered as offered_queueing
from .network.component import Network, NetworkArgs
from .observability.component import NAMESPACE as MONITORING_NAMESPACE
from .observability.component import Observability, ObservabilityArgs
from .platform_config import PROJECT_NAMESPACE, PlatformConfig, parse_config, secret_problems
from .scheduling import CSI_STARTUP_TAINTS, GPU_TAINT
from .storage.component import Storage, StorageArgs
from .storage.file_system import FsxFileSystem, FsxFileSystemArgs
from .storage.render import kept_volume_class_name
from .team.offer import offered_pipelines, offered_pool


def raw_config() -> dict[str, Any]:
    """Every config key of the running stack, as Pulumi hands them to the program."""
    return {**pulumi.runtime.get_config_env(), **pulumi.runtime.config.CONFIG.get()}


def load_config() -> PlatformConfig:
    return parse_config(raw_config(), project=pulumi.get_project(), stack=pulumi.get_stack())


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
    #: Present when a part that needs certificates is on (Kubeflow).
    cert_manager: CertManager | None = None
    #: Present when kubeflow.components.kserve is true.
    kserve: KServe | None = None
    #: Present when a NodePool launches Neuron instances or uses a node class with EFA interfaces.
    devices: NodeDevices | None = None
    #: Present when the platform runs Kueue (`PlatformConfig.queueing`).
    kueue: Kueue | None = None
    #: The Kubeflow teams' ClusterQueues and LocalQueues, with Kueue and Kubeflow teams.
    team_queues: TeamQueues | None = None


#: Logical names of the parts. Fixed on purpose: the URN already carries project and stack, and every child's name
#: (and so every auto-generated AWS name, `<logical name>-<7 hex>`) starts with its part's name, so a name that grew
#: with the configurable cluster name could overflow an AWS limit.
PART_NAMES = ("network", "cluster", "karpenter", "gpu", "devices", "storage", "ingress", "observability", "kubeflow")


def part_options(part: str, cluster_name: str, base: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """Options of one part, with an alias to its name in 0.1 stacks (`<cluster>` for network and cluster,
    `<cluster>-<part>` for the others).

    Children inherit the alias (the engine swaps the parent's name at the start of each child's name), so a stack
    deployed with 0.1 keeps every resource, and every auto-generated physical name, across the rename.
    """
    assert part in PART_NAMES, part
    legacy = cluster_name if part in ("network", "cluster") else f"{cluster_name}-{part}"
    return pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(aliases=[pulumi.Alias(name=legacy)]))


def adopted_from_part(
    part: str, part_type: str, cluster_name: str, base: pulumi.ResourceOptions
) -> pulumi.ResourceOptions:
    """Options of a component whose children earlier releases made as children of the part `part` (of type
    `part_type`): each child keeps its name, and gets aliases to its URN under that part as 0.2 named it (`part`) and
    as 0.1 did (`<cluster>-<part>`, the child's name starting with it in place of `part`), so no child is replaced.

    A transformation, run by the SDK for every child, because a child's own alias to another parent is not
    multiplied by that parent's aliases (only by its present parent's)."""
    assert part in PART_NAMES, part
    legacy = f"{cluster_name}-{part}"

    def adopt(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        if args.type_.startswith("eksml:"):  # the adopting component itself is new
            return None
        assert args.name.startswith(part), (args.name, part)
        aliases: list[pulumi.Input[str] | pulumi.Alias] = [
            pulumi.Alias(parent=pulumi.create_urn(part, part_type)),
            pulumi.Alias(name=legacy + args.name[len(part) :], parent=pulumi.create_urn(legacy, part_type)),
        ]
        merged = pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(aliases=aliases))
        return pulumi.ResourceTransformationResult(args.props, merged)

    return pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(transformations=[adopt]))


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


def connector_secrets(config: PlatformConfig, raw: dict[str, Any]) -> dict[str, pulumi.Output[str]]:
    """The client secret of each Kubeflow connector, from the stack's config (`secret_problems` found none)."""
    return {
        name: pulumi.Output.secret(str(raw[f"{PROJECT_NAMESPACE}:{connector.client_secret_key}"]))
        for name, connector in sorted(config.kubeflow.auth.connectors.items())
    }


def alb_client_secret(config: PlatformConfig, raw: dict[str, Any]) -> pulumi.Output[str] | None:
    """The client secret of the Kubeflow ALB's OIDC action, from the stack's config (`secret_problems` found no
    problem with it); None without one."""
    auth = config.kubeflow.access.alb_auth
    if auth is None or auth.client_secret_key is None:
        return None
    return pulumi.Output.secret(str(raw[f"{PROJECT_NAMESPACE}:{auth.client_secret_key}"]))


def build_platform(
    config: PlatformConfig,
    kubeflow_plan: Sequence[Staged] = (),
    kubeflow_connector_secrets: dict[str, pulumi.Output[str]] | None = None,
    kubeflow_alb_client_secret: pulumi.Output[str] | None = None,
) -> Platform:
    """Every part of the stack in the order of creation (Kubeflow's objects from `kubeflow_objects`, when it is on).
    Which parts exist is the config's decision; what each part is given, its `_<part>_args` below."""
    provider = aws.Provider(
        "aws", region=config.region, profile=config.profile, default_tags=aws.ProviderDefaultTagsArgs(tags=config.tags)
    )
    opts = pulumi.ResourceOptions(providers=[provider])

    def part(name: str) -> pulumi.ResourceOptions:
        return part_options(name, config.cluster_name, opts)

    network = Network("network", _network_args(config), part("network"))
    fsx = None
    if (fsx_args := _file_system_args(config, network)) is not None:  # made before the cluster: it needs no more
        fsx = FsxFileSystem(
            "storage-fsx", fsx_args, adopted_from_part("storage", "eksml:storage:Storage", config.cluster_name, opts)
        )
    cluster = Cluster("cluster", _cluster_args(config, network, fsx, provider), part("cluster"))
    handle = cluster.handle
    karpenter = Karpenter("karpenter", _karpenter_args(config, handle), part("karpenter"))
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
    storage = Storage("storage", _storage_args(config, handle, fsx, cleanup), part("storage"))
    if storage.fsx_driver is not None:
        cleanup = (*cleanup, storage.fsx_driver)
    gpu = None
    if config.gpu_node_image is not None:
        gpu = GpuStack("gpu", _gpu_args(config, config.gpu_node_image, handle, cleanup), part("gpu"))
    devices = None
    if (devices_args := _devices_args(config, handle)) is not None:
        devices = NodeDevices("devices", devices_args, part("devices"))
    observability = None
    if config.observability.enabled:
        observability = Observability(
            "observability", _observability_args(config, handle, storage, cleanup), part("observability")
        )
    cert_manager = None
    monitoring = MONITORING_NAMESPACE if config.observability.enabled else None
    if config.cert_manager:  # new in 0.2: no 0.1 name to alias
        cert_manager = CertManager(
            "cert-manager",
            CertManagerArgs(cluster=handle, cleanup_controllers=cleanup, monitoring_namespace=monitoring),
            opts,
        )
    kueue = None
    if config.queueing:  # new: no earlier name to alias
        assert config.kueue_flavor is not None  # config.queueing needs a GPU pool
        cohort = config.kueue_cohort()
        assert cohort is not None
        kueue_args = KueueArgs(cluster=handle, flavor=config.kueue_flavor, cohort=cohort, cleanup_controllers=cleanup)
        kueue = Kueue("kueue", kueue_args, opts)
    kubeflow = None
    team_queues = None
    if config.kubeflow.enabled:
        assert cert_manager is not None  # config.cert_manager follows kubeflow.enabled
        kubeflow_args = _kubeflow_args(
            config, kubeflow_plan, handle, network, karpenter, storage, cert_manager, cleanup, observability, kueue
        )
        if kubeflow_connector_secrets:
            kubeflow_args = dataclasses.replace(kubeflow_args, connector_secrets=dict(kubeflow_connector_secrets))
        if kubeflow_alb_client_secret is not None:
            kubeflow_args = dataclasses.replace(kubeflow_args, alb_client_secret=kubeflow_alb_client_secret)
        kubeflow = Kubeflow("kubeflow", kubeflow_args, part("kubeflow"))
        if kueue is not None and config.kubeflow.teams:
            team_queues = TeamQueues(
                "kueue-teams",
                # why: the LocalQueues go in the team namespaces Kubeflow creates; Kueue's CRDs serve them all; the
                # ClusterQueues name the flavor and join the cohort.
                TeamQueuesArgs(
                    cluster=handle,
                    queues=config.team_queues(),
                    after=[kueue.release, kueue.flavor, kueue.cohort, kubeflow],
                ),
                opts,
            )
    kserve = None
    if config.kserve:  # new: no 0.1 name to alias
        assert cert_manager is not None  # KServe is a Kubeflow component
        kserve = KServe(
            "kserve", KServeArgs(cluster=handle, cert_manager=cert_manager.release, cleanup_controllers=cleanup), opts
        )
    return Platform(
        config=config,
        network=network,
        cluster=cluster,
        karpenter=karpenter,
        gpu=gpu,
        storage=storage,
        ingress=ingress,
        observability=observability,
        kubeflow=kubeflow,
        cert_manager=cert_manager,
        devices=devices,
        kserve=kserve,
        kueue=kueue,
        team_queues=team_queues,
    )


def _network_args(config: PlatformConfig) -> NetworkArgs:
    return NetworkArgs(cluster_name=config.cluster_name, config=config.network, region=config.region)


def _file_system_args(config: PlatformConfig, network: Network) -> FsxFileSystemArgs | None:
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


def _cluster_args(
    config: PlatformConfig, network: Network, fsx: FsxFileSystem | None, provider: aws.Provider
) -> ClusterArgs:
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


def _karpenter_args(config: PlatformConfig, handle: ClusterHandle) -> KarpenterArgs:
    return KarpenterArgs(cluster=handle, config=config.karpenter, tags=config.tags, csi_drivers=config.csi_drivers)


def _gpu_args(
    config: PlatformConfig,
    node_image: Literal["al2023", "bottlerocket"],
    handle: ClusterHandle,
    cleanup: tuple[pulumi.Resource, ...],
) -> GpuStackArgs:
    return GpuStackArgs(
        cluster=handle,
        monitoring_namespace=MONITORING_NAMESPACE if config.observability.enabled else None,
        kubeflow_notebooks=config.kubeflow.enabled,
        config=config.gpu,
        node_image=node_image,
        cleanup_controllers=cleanup,
        pool_taints=config.karpenter.gpu_taints(),
    )


def _devices_args(config: PlatformConfig, handle: ClusterHandle) -> NodeDevicesArgs | None:
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


def _storage_args(
    config: PlatformConfig, handle: ClusterHandle, fsx: FsxFileSystem | None, cleanup: tuple[pulumi.Resource, ...]
) -> StorageArgs:
    return StorageArgs(
        config=config.storage,
        stateful_resources=config.stateful_resources,
        cluster=handle,
        file_system=fsx,
        cleanup_controllers=cleanup,
        monitoring_namespace=MONITORING_NAMESPACE if config.observability.enabled else None,
    )


def _observability_args(
    config: PlatformConfig, handle: ClusterHandle, storage: Storage, cleanup: tuple[pulumi.Resource, ...]
) -> ObservabilityArgs:
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


def _kubeflow_args(
    config: PlatformConfig,
    plan: Sequence[Staged],
    handle: ClusterHandle,
    network: Network,
    karpenter: Karpenter,
    storage: Storage,
    cert_manager: CertManager,
    cleanup: tuple[pulumi.Resource, ...],
    observability: Observability | None,
    kueue: Kueue | None,
) -> KubeflowArgs:
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


def export_outputs(platform: Platform) -> None:
    handle = platform.cluster.handle
    pulumi.export("region", platform.config.region)
    pulumi.export("clusterName", handle.name)
    pulumi.export("kubernetesVersion", handle.kubernetes_version)
    pulumi.export("vpcId", platform.network.vpc_id)
    pulumi.export("privateSubnetIds", platform.network.private_subnet_ids)
    pulumi.export("availabilityZones", list(handle.availability_zones))
    pulumi.export("oidcProviderArn", handle.oidc_provider_arn)
    pulumi.export("systemNodeGroup", handle.system_node_group.node_group_name)
    pulumi.export("karpenterNodeRoleArn", platform.karpenter.node_role_arn)
    pulumi.export("karpenterInterruptionQueue", platform.karpenter.queue_name)
    # Kept under its first name for stacks that read it; nodePoolAcceleratorLimits covers Neuron pools too.
    pulumi.export("nodePoolGpuLimits", platform.karpenter.gpu_limits)
    pulumi.export("nodePoolAcceleratorLimits", platform.karpenter.accelerator_limits)
    if platform.gpu is not None:
        pulumi.export("gpuSchedulerName", platform.gpu.scheduler_name)
        pulumi.export("gpuTaint", platform.gpu.gpu_taint)
    storage = platform.storage
    pulumi.export("buckets", {key: bucket.bucket for key, bucket in storage.buckets.items()})
    if storage.file_system is not None:
        pulumi.export("fsxFileSystemId", storage.file_system.id)
        pulumi.export("fsxAvailabilityZone", storage.fsx_zone)
    if storage.data_repository_policy_arn is not None:
        pulumi.export("fsxDataRepositoryPolicyArn", storage.data_repository_policy_arn)
    if platform.observability is not None:
        pulumi.export("grafanaAdminPassword", platform.observability.grafana_admin_password)
    if platform.kubeflow is not None:
        pulumi.export("kubeflowAdminPassword", platform.kubeflow.admin_password)
        if platform.kubeflow.user_passwords:
            pulumi.export("kubeflowUserPasswords", platform.kubeflow.user_passwords)
        pulumi.export("kubeflowTeamRoles", platform.kubeflow.team_roles)
    pulumi.export("kubeconfig", pulumi.Output.secret(platform.cluster.eks_cluster.kubeconfig_json))
    export_team_contract(platform)


def export_team_contract(platform: Platform) -> None:
    """What team stacks read to attach to this platform (README, "Using the components in another stack"): names
    are a contract, changed only with the components that read them (components/cluster/attach.py,
    components/team/offer.py)."""
    config, handle = platform.config, platform.cluster.handle
    kubeconfig = platform.cluster.eks_cluster.kubeconfig_json
    pulumi.export("clusterEndpoint", handle.endpoint)
    pulumi.export("clusterCertificateAuthority", kubeconfig.apply(certificate_authority_of))
    pulumi.export("clusterSecurityGroupId", handle.cluster_security_group_id)
    pulumi.export("oidcIssuer", handle.oidc_issuer)
    pulumi.export("identity", handle.identity.value)
    if config.network.existing is None:
        pulumi.export("vpcCidr", str(config.network.cidr))
    efa_pools = config.karpenter.efa_pools()
    pulumi.export(
        "nodePools",
        {name: offered_pool(pool, efa=name in efa_pools) for name, pool in sorted(config.karpenter.node_pools.items())},
    )
    pulumi.export("nodePoolStartupTaints", [CSI_STARTUP_TAINTS[driver].as_dict() for driver in config.csi_drivers])
    storage = platform.storage
    if storage.bucket_key is not None:
        pulumi.export(
            "bucketKmsKeyArns",
            {
                key: storage.bucket_key.arn
                for key, bucket in sorted(config.storage.buckets.items())
                if bucket.encryption == "kms"
            },
        )
    if storage.file_system is not None and config.storage.fsx is not None:
        pulumi.export("fsxDnsName", storage.file_system.dns_name)
        pulumi.export("fsxMountName", storage.file_system.mount_name)
        pulumi.export("fsxStorageCapacityGib", config.storage.fsx.storage_capacity_gib)
        pulumi.export("fsxNamespaces", list(config.storage.fsx.namespaces))
        if storage.fsx_storage_class_name is not None:
            pulumi.export("fsxStorageClass", storage.fsx_storage_class_name)
    if platform.observability is not None:
        pulumi.export("monitoringNamespace", MONITORING_NAMESPACE)
    # Always, true or false: a team stack asking for a Profile is told plainly when no profile controller runs.
    pulumi.export("kubeflowEnabled", platform.kubeflow is not None)
    pulumi.export("kubeflowTeams", sorted(config.kubeflow.teams) if platform.kubeflow is not None else [])
    if platform.kubeflow is not None:
        pulumi.export("kubeflowPipelines", offered_pipelines(config.kubeflow))
    if platform.kueue is not None and config.kueue_flavor is not None:
        pulumi.export("kueue", offered_queueing(config.kueue_flavor, config.kueue.reserve, config.kueue.team_stacks))


def program() -> None:
    """The whole stack. A config error ends the run with the list of problems, never a traceback."""
    try:
        config = load_config()
        raw = raw_config()
        secret_keys = [key for key in raw if pulumi.runtime.is_config_secret(key)]
        if problems := secret_problems(config, raw, secret_keys):
            raise ConfigError(problems)
    except ConfigError as error:
        raise pulumi.RunError(str(error)) from None
    if (warning := config.system_capacity.warning()) is not None:
        pulumi.log.warn(f"cluster.systemNodeGroup: {warning}")
    kubeflow_plan: list[Staged] = []
    if config.kubeflow.enabled:
        try:
            kubeflow_plan = kubeflow_objects(config)
        except (TreeError, RenderError, ValueError) as error:
            raise pulumi.RunError(f"kubeflow: {error}") from None
    export_outputs(
        build_platform(config, kubeflow_plan, connector_secrets(config, raw), alb_client_secret(config, raw))
    )
