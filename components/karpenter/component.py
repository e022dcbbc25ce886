"""Karpenter: controller IAM, node role, interruption handling and the two pinned Helm releases.

Order, and so teardown: the controller release waits for its IAM role and policy, the queue, the node role's access
entry, the CRD release and the system node group that hosts it. NodePools and EC2NodeClasses (built on this
component) depend on the controller release, so `pulumi destroy` deletes them while the controller still runs and
can terminate the instances it launched.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from .. import helm, k8s_objects, versions
from ..cluster import capacity as system_capacity
from ..cluster.create_order import created_after
from ..cluster.handle import ClusterHandle
from ..identity.documents import to_json
from ..identity.roles import node_role
from ..network.tags import DISCOVERY_TAG
from ..scheduling import CSI_STARTUP_TAINTS, Placement
from .config import KarpenterConfig
from .iam import (
    INTERRUPTION_EVENTS,
    ControllerScope,
    controller_policy,
    event_pattern,
    queue_policy,
)
from .render import NodeClassContext, render_nodeclass, render_nodepools
from .repair import FEATURE_GATE as NODE_REPAIR
from .specs import NodeClassSpec
from .validation import delete_timeout

#: Where the chart runs the controller, and the service account it creates: the IRSA trust policy names exactly this.
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "karpenter"


def controller_values(
    *,
    cluster_name: pulumi.Input[str],
    cluster_endpoint: pulumi.Input[str],
    queue_name: pulumi.Input[str],
    service_account_annotations: pulumi.Input[Mapping[str, str]],
    region: str,
    config: KarpenterConfig,
    placement: Placement,
) -> dict[str, Any]:
    """Values for the `karpenter` chart (keys as in its values.yaml of the pinned version).

    There is no webhook to turn off: Karpenter v1 charts dropped the conversion webhook (and its `webhook.*` keys).
    """
    return {
        "settings": {
            "clusterName": cluster_name,
            "clusterEndpoint": cluster_endpoint,
            "interruptionQueue": queue_name,  # the queue's name, not its ARN or URL
            # Replace nodes whose kubelet or EKS node monitoring agent reports them unhealthy (karpenter/repair.py
            # lists the conditions and waits); the chart's other gates keep their defaults.
            "featureGates": {NODE_REPAIR: True},
        },
        "serviceAccount": {
            "create": True,
            "name": SERVICE_ACCOUNT,
            # The role's IRSA annotation, or none with EKS Pod Identity (WorkloadRole.service_account_annotations).
            "annotations": service_account_annotations,
        },
        "replicas": system_capacity.KARPENTER_REPLICAS,
        "podDisruptionBudget": {"name": "karpenter", "maxUnavailable": 1},
        # Only on the system node group: Karpenter never runs on capacity it manages.
        "nodeSelector": {"kubernetes.io/os": "linux", **placement.node_selector},
        "tolerations": placement.values()["tolerations"],
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        "controller": {
            # IMDS is out of reach from pods (hop limit 1), so the region is given rather than discovered.
            "env": [{"name": "AWS_REGION", "value": region}],
            "resources": {
                "requests": dict(system_capacity.quantity(system_capacity.KARPENTER_CONTROLLER)),
                "limits": {"memory": system_capacity.quantity(system_capacity.KARPENTER_CONTROLLER)["memory"]},
            },
        },
        "logLevel": config.log_level,
    }


def _node_class_spec(class_name: str, spec: NodeClassSpec, tags: Mapping[str, str], names: list[str]) -> dict[str, Any]:
    """An EC2NodeClass's spec, once the cluster's and the node role's names (`names`) are known."""
    context = NodeClassContext(cluster_name=names[0], node_role_name=names[1], tags=tags)
    spec_: dict[str, Any] = render_nodeclass(class_name, spec, context)["spec"]
    return spec_


@dataclass(frozen=True)
class KarpenterArgs:
    """Karpenter on a cluster. Fields without a default are required."""

    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: Controller log level, accelerator families, EC2NodeClasses and NodePools (`KarpenterConfig`; its defaults are
    #: the cpu-general and gpu-inference presets).
    config: KarpenterConfig
    #: Tags on every instance and volume Karpenter launches (the provider's default tags do not reach them). Default:
    #: none.
    tags: Mapping[str, str] = field(default_factory=dict)
    #: The storage drivers (keys of `scheduling.CSI_STARTUP_TAINTS`) whose node agents must be ready before pods with
    #: volumes land on a node: their startup taints go on every NodePool. Default: `("ebs",)`; `("ebs", "fsx")` with
    #: an FSx file system.
    csi_drivers: tuple[str, ...] = ("ebs",)


class Karpenter(pulumi.ComponentResource):
    """Karpenter v1 on the cluster's system nodes, with interruption handling."""

    node_role: aws.iam.Role
    queue: aws.sqs.Queue
    controller: pulumi.Resource
    node_role_arn: pulumi.Output[str]
    queue_name: pulumi.Output[str]
    node_classes: dict[str, k8s.apiextensions.CustomResource]
    node_pools: dict[str, k8s.apiextensions.CustomResource]
    #: GPU ceiling per NodePool (None for pools without GPUs): the most GPUs the pool will ever run at once.
    gpu_limits: dict[str, int | None]
    #: Accelerator ceilings per NodePool, by resource (nvidia.com/gpu, aws.amazon.com/neuron or neuroncore); {} for
    #: pools without accelerators.
    accelerator_limits: dict[str, dict[str, int]]

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:karpenter:Karpenter", name, None, opts)
        cluster = args.cluster
        access_entry, node_policies = self._node_identity(name, cluster)
        interruption = self._interruption_handling(name)
        k8s_opts = cluster.kubernetes_options(self)
        crds = helm.release(
            f"{name}-crd",
            versions.KARPENTER_CRD,
            namespace=NAMESPACE,
            values={},
            opts=pulumi.ResourceOptions.merge(
                k8s_opts,
                # why: the CRDs need a cluster to exist in; nothing else orders them.
                pulumi.ResourceOptions(depends_on=list(cluster.system_ready)),
            ),
        )
        self.controller = self._controller(
            name, args, k8s_opts, crds, waits=[access_entry, *node_policies, *interruption, *cluster.system_ready]
        )
        # why: EC2NodeClasses and NodePools need the controller (and its CRDs) to exist, and must be deleted while
        # it still runs, so it can drain and terminate the instances it launched.
        # Their deletes are what makes Karpenter clean up in AWS: never left to go with the cluster.
        after_controller = k8s_objects.own_delete(
            pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[self.controller, crds]))
        )
        self.node_classes = self._node_classes(name, args, after_controller)
        self._node_pools(name, args, after_controller)
        self.node_role_arn = self.node_role.arn
        self.queue_name = self.queue.name
        for path, message in args.config.warnings():
            pulumi.log.warn(f"{path}: {message}", resource=self)
        self.register_outputs(
            {
                "nodeRoleArn": self.node_role_arn,
                "queueName": self.queue_name,
                "gpuLimits": self.gpu_limits,
                "acceleratorLimits": self.accelerator_limits,
            }
        )

    def _node_identity(
        self, name: str, cluster: ClusterHandle
    ) -> tuple[aws.eks.AccessEntry, list[aws.iam.RolePolicyAttachment]]:
        """The role the instances Karpenter launches run as (`node_role`), admitted to the cluster as EC2 Linux
        nodes: the access entry, and the role's policy attachments."""
        self.node_role, node_policies = node_role(
            f"{name}-node",
            partition=cluster.partition,
            description="Nodes launched by Karpenter",
            opts=pulumi.ResourceOptions(parent=self),
        )
        access_entry = aws.eks.AccessEntry(
            f"{name}-node",
            cluster_name=cluster.name,
            principal_arn=self.node_role.arn,
            type="EC2_LINUX",
            # EKS removes access entries with the cluster.
            opts=pulumi.ResourceOptions(parent=self, deleted_with=cluster.eks_cluster),
        )
        return access_entry, node_policies

    def _interruption_handling(self, name: str) -> list[pulumi.Resource]:
        """EventBridge → SQS → controller: the queue (`queue`), its policy and a rule per interruption event; returns
        what the controller waits for (the policy and the rules' targets)."""
        child = pulumi.ResourceOptions(parent=self)
        self.queue = aws.sqs.Queue(
            f"{name}-interruption",
            message_retention_seconds=300,
            sqs_managed_sse_enabled=True,
            opts=child,
        )
        policy = aws.sqs.QueuePolicy(
            f"{name}-interruption",
            queue_url=self.queue.url,
            policy=self.queue.arn.apply(lambda arn: to_json(queue_policy(arn))),
            opts=child,
        )
        targets: list[pulumi.Resource] = []
        for key, (source, detail_type) in INTERRUPTION_EVENTS.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{key}",
                description=f"{detail_type} events for Karpenter",
                event_pattern=to_json(event_pattern(source, detail_type)),
                opts=child,
            )
            targets.append(aws.cloudwatch.EventTarget(f"{name}-{key}", rule=rule.name, arn=self.queue.arn, opts=child))
        return [policy, *targets]

    def _controller(
        self,
        name: str,
        args: KarpenterArgs,
        k8s_opts: pulumi.ResourceOptions,
        crds: k8s.helm.v3.Release,
        *,
        waits: list[pulumi.Resource],
    ) -> k8s.helm.v3.Release:
        """The controller's role (its policy scoped to this cluster, node role and queue) and its release, which
        waits for `waits`."""
        cluster = args.cluster
        scope = pulumi.Output.all(
            cluster.partition, cluster.name, cluster.account_id, self.node_role.arn, self.queue.arn
        ).apply(
            lambda v: to_json(
                controller_policy(
                    ControllerScope(
                        partition=v[0],
                        region=cluster.region,
                        cluster_name=v[1],
                        account_id=v[2],
                        node_role_arn=v[3],
                        queue_arn=v[4],
                    )
                )
            )
        )
        role = cluster.workload_role(
            f"{name}-controller",
            namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            inline_policies={"controller": scope},
            opts=pulumi.ResourceOptions(parent=self),
        )
        return helm.release(
            name,
            versions.KARPENTER,
            namespace=NAMESPACE,
            values=controller_values(
                # The CRDs go with the cluster on destroy (the karpenter-crd release makes no delete call), so the
                # controller waits for them on create only: an edge would add a level to every destroy.
                cluster_name=created_after(cluster.name, crds),
                cluster_endpoint=cluster.endpoint,
                queue_name=self.queue.name,
                service_account_annotations=role.service_account_annotations,
                region=cluster.region,
                config=args.config,
                placement=cluster.system_placement,
            ),
            skip_crds=True,  # owned by the karpenter-crd release, so an upgrade updates them
            # why: the controller needs nodes it may join, interruption events, and system nodes to run on; destroy
            # removes it before all.
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=waits)),
        )

    def _node_classes(
        self, name: str, args: KarpenterArgs, after_controller: pulumi.ResourceOptions
    ) -> dict[str, k8s.apiextensions.CustomResource]:
        """An EC2NodeClass per configured class, once the cluster security group carries the discovery tag."""
        cluster, config = args.cluster, args.config
        # Karpenter nodes join the EKS cluster security group (found by the discovery tag), so they and the system
        # nodes reach each other and the control plane.
        sg_tag = aws.ec2.Tag(
            f"{name}-cluster-sg-discovery",
            resource_id=cluster.cluster_security_group_id,
            key=DISCOVERY_TAG,
            value=cluster.name,
            opts=pulumi.ResourceOptions(parent=self),
        )
        context = pulumi.Output.all(cluster.name, self.node_role.name)
        node_classes = {}
        for class_name, spec in sorted(config.node_classes.items()):
            node_class_spec = context.apply(functools.partial(_node_class_spec, class_name, spec, args.tags))
            node_classes[class_name] = k8s.apiextensions.CustomResource(
                f"{name}-class-{class_name}",
                api_version="karpenter.k8s.aws/v1",
                kind="EC2NodeClass",
                metadata={"name": class_name},
                spec=node_class_spec,
                opts=pulumi.ResourceOptions.merge(
                    after_controller,
                    # why: without the tagged security group Karpenter finds none and launches nothing.
                    pulumi.ResourceOptions(
                        depends_on=[sg_tag],
                        # Its finalizer waits for every node of its pools to drain and terminate.
                        custom_timeouts=pulumi.CustomTimeouts(
                            delete=delete_timeout(
                                pool.termination_grace_period
                                for pool in config.node_pools.values()
                                if pool.node_class == class_name
                            )
                        ),
                    ),
                ),
            )
        return node_classes

    def _node_pools(self, name: str, args: KarpenterArgs, after_controller: pulumi.ResourceOptions) -> None:
        """A NodePool per configured pool (`node_pools`), each created once its class exists, with its accelerator
        ceilings (`gpu_limits`, `accelerator_limits`)."""
        config = args.config
        startup_taints = [CSI_STARTUP_TAINTS[driver] for driver in args.csi_drivers]
        self.node_pools = {}
        self.gpu_limits = {}
        self.accelerator_limits = {}
        rendered_pools = render_nodepools(config, startup_taints)
        for pool_name, pool in sorted(config.node_pools.items()):
            rendered = rendered_pools[pool_name]
            self.node_pools[pool_name] = k8s.apiextensions.CustomResource(
                f"{name}-pool-{pool_name}",
                api_version=rendered["apiVersion"],
                kind=rendered["kind"],
                metadata=rendered["metadata"],
                # The pool names its class only by string, so it is created once the class exists. On destroy the
                # two go in one level: the class's finalizer waits for the pool's nodes anyway (see above), and
                # Karpenter launches nothing for a class being deleted.
                spec=created_after(rendered["spec"], self.node_classes[pool.node_class]),
                opts=pulumi.ResourceOptions.merge(
                    after_controller,
                    # Deleting the pool drains and terminates its nodes, each bounded by the grace period.
                    pulumi.ResourceOptions(
                        custom_timeouts=pulumi.CustomTimeouts(delete=delete_timeout([pool.termination_grace_period])),
                    ),
                ),
            )
            self.gpu_limits[pool_name] = pool.gpu_limit
            self.accelerator_limits[pool_name] = pool.accelerator_limits
