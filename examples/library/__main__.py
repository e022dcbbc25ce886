"""The platform's parts built in one program: a VPC, the cluster, Karpenter, the load balancer controller, the GPU
stack, storage and observability, wired as the package's own stack wires them."""

import pulumi
import pulumi_aws as aws
from eks_ml_platform import (
    Cluster,
    ClusterArgs,
    GpuStack,
    GpuStackArgs,
    Ingress,
    IngressArgs,
    Karpenter,
    KarpenterArgs,
    Network,
    NetworkArgs,
    Observability,
    ObservabilityArgs,
    Storage,
    StorageArgs,
)
from eks_ml_platform.cluster.component import cluster_creator
from eks_ml_platform.cluster.config import ClusterConfig, EndpointAccess
from eks_ml_platform.config import StatefulResources
from eks_ml_platform.gpu.config import GpuConfig
from eks_ml_platform.karpenter.config import KarpenterConfig
from eks_ml_platform.network.config import NetworkConfig
from eks_ml_platform.observability.config import ObservabilityConfig
from eks_ml_platform.observability.render import gpu_pools
from eks_ml_platform.storage.config import StorageConfig
from eks_ml_platform.tags import standard_tags

aws_config = pulumi.Config("aws")
region = aws_config.require("region")
profile = aws_config.get("profile")  # the kubeconfig then authenticates as the same identity
cluster_name = "ml-eu"
stateful = StatefulResources.PROTECT
tags = standard_tags(project=pulumi.get_project(), stack=pulumi.get_stack(), owner="ml-platform@example.org")
provider = aws.Provider("aws", region=region, profile=profile, default_tags=aws.ProviderDefaultTagsArgs(tags=tags))
opts = pulumi.ResourceOptions(providers=[provider])

network = Network(
    "network",
    NetworkArgs(
        cluster_name=cluster_name,
        # or existing=ExistingVpc(vpc_id=..., private_subnet_ids=...) for a VPC of your own (network.owns_vpc: False)
        config=NetworkConfig(cidr="10.40.0.0/16", availability_zones=(f"{region}a", f"{region}b")),
        region=region,
    ),
    opts,
)
cluster = Cluster(
    "cluster",
    ClusterArgs(
        cluster_name=cluster_name,
        config=ClusterConfig(endpoint=EndpointAccess(public=False)),
        vpc_id=network.vpc_id,
        private_subnet_ids=network.private_subnet_ids,
        availability_zones=network.availability_zones,
        region=region,
        stateful_resources=stateful,
        instance_tags=tags,
        aws_profile=profile,
        creator_arn=cluster_creator(cluster_name, provider),
        owns_vpc=network.owns_vpc,
        network_ready=network.egress,
    ),
    opts,
)
# Later components take the cluster's typed handle, not strings.
handle = cluster.handle
karpenter_config = KarpenterConfig()  # the preset NodePools: cpu-general and gpu-inference
karpenter = Karpenter(
    "karpenter",
    KarpenterArgs(cluster=handle, config=karpenter_config, tags=tags, csi_drivers=("ebs",)),
    opts,
)
ingress = Ingress("ingress", IngressArgs(cluster=handle, tags=tags), opts)
# Namespaces are deleted while the load balancer controller still runs, so the load balancers made for what is in
# them are deleted in AWS too.
cleanup_controllers = (ingress.controller,)
gpu = GpuStack(
    "gpu",
    GpuStackArgs(
        cluster=handle,
        config=GpuConfig(),
        node_image="al2023",  # the AMI family of the GPU pools' node class
        cleanup_controllers=cleanup_controllers,
    ),
    opts,
)
storage = Storage(
    "storage",
    StorageArgs(
        config=StorageConfig(), stateful_resources=stateful, cluster=handle, cleanup_controllers=cleanup_controllers
    ),
    opts,
)
observability = Observability(
    "observability",
    ObservabilityArgs(
        cluster=handle,
        config=ObservabilityConfig(),
        gpu_pools=gpu_pools(karpenter_config.node_pools),
        storage_class=storage.kept_volume_class,
        storage_class_name=storage.kept_volume_class_name,
        delete_volumes=stateful is StatefulResources.DESTROY,
        cleanup_controllers=cleanup_controllers,
    ),
    opts,
)
role = handle.workload_role(
    "my-controller",
    namespace="tools",
    service_account="my-controller",
    managed_policy_arns={"read": "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"},
    opts=opts,
)

pulumi.export("clusterName", handle.name)
pulumi.export("myControllerRoleArn", role.arn)
pulumi.export("grafanaAdminPassword", observability.grafana_admin_password)
pulumi.export("kubeconfig", pulumi.Output.secret(cluster.eks_cluster.kubeconfig_json))
