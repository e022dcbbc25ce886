"""The stack's outputs: what its operators read (`pulumi stack output`), and the contract team stacks attach by.

The team contract's names are read by components/cluster/attach.py and components/team/offer.py; they change only
with those.
"""

from __future__ import annotations

import pulumi

from ..cluster.attach import certificate_authority_of
from ..kueue.queues import offered as offered_queueing
from ..observability.component import NAMESPACE as MONITORING_NAMESPACE
from ..scheduling import CSI_STARTUP_TAINTS
from ..team.offer import offered_pipelines, offered_pool
from .build import Platform


def export_outputs(platform: Platform) -> None:
    """Every output of the stack: what its operators read, then the team contract."""
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
