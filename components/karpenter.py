"""Karpenter: controller IAM, node role, interruption handling and the two pinned Helm releases.

Order, and so teardown: the controller release waits for its IAM role and policy, the queue, the node role's access
entry, the CRD release and the system node group that hosts it. NodePools and EC2NodeClasses (built on this
component) depend on the controller release, so `pulumi destroy` deletes them while the controller still runs and
can terminate the instances it launched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import pulumi
import pulumi_aws as aws

from . import helm, versions
from .cluster import ClusterHandle
from .config import KarpenterConfig
from .iam import aws_managed_policy_arn, service_trust_policy, to_json
from .karpenter_iam import INTERRUPTION_EVENTS, ControllerScope, controller_policy, event_pattern, queue_policy

#: Where the chart runs the controller, and the service account it creates: the IRSA trust policy names exactly this.
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "karpenter"


def controller_values(
    *,
    cluster_name: pulumi.Input[str],
    cluster_endpoint: pulumi.Input[str],
    queue_name: pulumi.Input[str],
    role_arn: pulumi.Input[str],
    region: str,
    config: KarpenterConfig,
    node_selector: Mapping[str, str],
    tolerations: tuple[Mapping[str, str], ...],
) -> dict[str, Any]:
    """Values for the `karpenter` chart (keys as in its values.yaml of the pinned version)."""
    return {
        "settings": {
            "clusterName": cluster_name,
            "clusterEndpoint": cluster_endpoint,
            "interruptionQueue": queue_name,  # the queue's name, not its ARN or URL
        },
        "serviceAccount": {
            "create": True,
            "name": SERVICE_ACCOUNT,
            "annotations": {"eks.amazonaws.com/role-arn": role_arn},
        },
        "replicas": 2,
        "podDisruptionBudget": {"name": "karpenter", "maxUnavailable": 1},
        # Only on the system node group: Karpenter never runs on capacity it manages.
        "nodeSelector": {"kubernetes.io/os": "linux", **node_selector},
        "tolerations": [dict(t) for t in tolerations],
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        "controller": {
            # IMDS is out of reach from pods (hop limit 1), so the region is given rather than discovered.
            "env": [{"name": "AWS_REGION", "value": region}],
            "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"},
                "limits": {"memory": "1Gi"},
            },
        },
        "logLevel": config.log_level,
    }


@dataclass(frozen=True)
class KarpenterArgs:
    cluster: ClusterHandle
    config: KarpenterConfig


class Karpenter(pulumi.ComponentResource):
    """Karpenter v1 on the cluster's system nodes, with interruption handling."""

    node_role: aws.iam.Role
    queue: aws.sqs.Queue
    controller: pulumi.Resource
    node_role_arn: pulumi.Output[str]
    queue_name: pulumi.Output[str]

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:karpenter:Karpenter", name, None, opts)
        cluster = args.cluster
        child = pulumi.ResourceOptions(parent=self)
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id

        # --- nodes: the role the instances Karpenter launches run as, admitted to the cluster as EC2 Linux nodes
        self.node_role = aws.iam.Role(
            f"{name}-node",
            assume_role_policy=to_json(service_trust_policy("ec2.amazonaws.com")),
            description="Nodes launched by Karpenter",
            opts=child,
        )
        node_policies = [
            aws.iam.RolePolicyAttachment(
                f"{name}-node-{key}",
                role=self.node_role.name,
                policy_arn=aws_managed_policy_arn(cluster.partition, policy),
                opts=child,
            )
            # The CNI policy is on the aws-node IRSA role, not on the nodes.
            for key, policy in (("worker", "AmazonEKSWorkerNodePolicy"), ("ecr-pull", "AmazonEC2ContainerRegistryPullOnly"))
        ]
        access_entry = aws.eks.AccessEntry(
            f"{name}-node",
            cluster_name=cluster.name,
            principal_arn=self.node_role.arn,
            type="EC2_LINUX",
            opts=child,
        )

        # --- interruption handling: EventBridge → SQS → controller
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
        targets = []
        for key, (source, detail_type) in INTERRUPTION_EVENTS.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{key}",
                description=f"{detail_type} events for Karpenter",
                event_pattern=to_json(event_pattern(source, detail_type)),
                opts=child,
            )
            targets.append(
                aws.cloudwatch.EventTarget(f"{name}-{key}", rule=rule.name, arn=self.queue.arn, opts=child)
            )

        # --- controller identity
        scope = pulumi.Output.all(
            cluster.partition, cluster.name, account_id, self.node_role.arn, self.queue.arn
        ).apply(
            lambda v: to_json(
                controller_policy(
                    ControllerScope(
                        partition=v[0], region=cluster.region, cluster_name=v[1], account_id=v[2],
                        node_role_arn=v[3], queue_arn=v[4],
                    )
                )
            )
        )
        role = cluster.irsa_role(
            f"{name}-controller",
            namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            inline_policies={"controller": scope},
            opts=child,
        )

        # --- the two releases
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=cluster.kubernetes_provider)
        crds = helm.release(
            f"{name}-crd",
            versions.KARPENTER_CRD,
            namespace=NAMESPACE,
            values={},
            opts=pulumi.ResourceOptions.merge(
                k8s_opts,
                # why: the CRDs need a cluster to exist in; nothing else orders them.
                pulumi.ResourceOptions(depends_on=[cluster.system_node_group]),
            ),
        )
        self.controller = helm.release(
            name,
            versions.KARPENTER,
            namespace=NAMESPACE,
            values=controller_values(
                cluster_name=cluster.name,
                cluster_endpoint=cluster.endpoint,
                queue_name=self.queue.name,
                role_arn=role.arn,
                region=cluster.region,
                config=args.config,
                node_selector=cluster.system_node_labels,
                tolerations=cluster.system_tolerations,
            ),
            skip_crds=True,  # owned by the karpenter-crd release, so an upgrade updates them
            opts=pulumi.ResourceOptions.merge(
                k8s_opts,
                pulumi.ResourceOptions(
                    # why: the controller needs its CRDs, permissions (the inline policy is no data edge), nodes it
                    # may join, interruption events, and system nodes to run on; destroy removes it before all.
                    depends_on=[crds, role, access_entry, *node_policies, policy, *targets, cluster.system_node_group],
                ),
            ),
        )
        self.node_role_arn = self.node_role.arn
        self.queue_name = self.queue.name
        self.register_outputs({"nodeRoleArn": self.node_role_arn, "queueName": self.queue_name})
