"""The AWS Load Balancer Controller: it turns Services of type LoadBalancer and Ingresses into NLBs and ALBs.

Anything this package creates that makes a load balancer depends on `controller`, so `pulumi destroy` deletes the
Service or Ingress (and the controller deletes its load balancer) while the controller still runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi

from .. import helm, versions
from ..cluster import capacity as system_capacity
from ..cluster.handle import ClusterHandle
from ..identity.documents import to_json
from ..scheduling import Placement
from .iam import ControllerScope, controller_policy
from .names import NAMESPACE, SERVICE_ACCOUNT


def controller_values(
    *,
    cluster_name: pulumi.Input[str],
    region: str,
    vpc_id: pulumi.Input[str],
    service_account_annotations: pulumi.Input[Mapping[str, str]],
    placement: Placement,
    tags: Mapping[str, str],
    waf: bool = False,
    shield: bool = False,
) -> dict[str, Any]:
    """Values for the aws-load-balancer-controller chart of the pinned version."""
    return {
        "clusterName": cluster_name,
        # Given rather than read from instance metadata, which pods cannot reach (hop limit 1).
        "region": region,
        "vpcId": vpc_id,
        "serviceAccount": {
            "create": True,
            "name": SERVICE_ACCOUNT,
            # The role's IRSA annotation, or none with EKS Pod Identity (WorkloadRole.service_account_annotations).
            "annotations": service_account_annotations,
        },
        "replicaCount": system_capacity.LB_CONTROLLER_REPLICAS,
        "podDisruptionBudget": {"maxUnavailable": 1},
        # The chart sets none; the system node sizing counts these (cluster.capacity.LB_CONTROLLER).
        "resources": system_capacity.LB_CONTROLLER.values(),
        # What `restricted` asks beyond the chart's defaults (non-root, no privilege escalation, read-only root):
        # no capabilities and the runtime's seccomp profile. Helm merges these into the chart's maps.
        "podSecurityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "securityContext": {"capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
        **placement.values(),
        # Load balancers are made by the controller, not Pulumi: the provider's default tags do not reach them.
        "defaultTags": dict(tags),
        # The chart's Service mutator (failurePolicy Fail, on every Service CREATE) breaks every Service create in
        # the cluster while no controller replica is ready: during the first install (other charts' Services) and
        # whenever the controller is down. Off: a LoadBalancer Service picks this controller with
        # `spec.loadBalancerClass: service.k8s.aws/nlb`.
        "enableServiceMutatorWebhook": False,
        # The controller's add-ons default to on and would call WAF and Shield on every ALB; their IAM actions are
        # granted only when these are on (iam.ControllerScope).
        "enableWaf": waf,
        "enableWafv2": waf,
        "enableShield": shield,
    }


@dataclass(frozen=True)
class IngressArgs:
    """The load balancer controller on a cluster."""

    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: Tags on every load balancer and target group the controller makes (the provider's default tags do not reach
    #: them). Default: none.
    tags: Mapping[str, str] = field(default_factory=dict)
    #: Let the controller attach WAF web ACLs (Classic regional and v2) that Ingresses name. Default: off.
    waf: bool = False
    #: Let the controller turn on Shield Advanced protection of its ALBs. Default: off.
    shield: bool = False


class Ingress(pulumi.ComponentResource):
    """The load balancer controller on the system nodes, with an IRSA role carrying its upstream policy."""

    controller: pulumi.Resource

    def __init__(self, name: str, args: IngressArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:ingress:Ingress", name, None, opts)
        cluster = args.cluster
        role = cluster.workload_role(
            f"{name}-controller",
            namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            inline_policies={
                "controller": pulumi.Output.all(
                    cluster.partition, cluster.account_id, cluster.vpc_id, cluster.name
                ).apply(
                    lambda found: to_json(
                        controller_policy(
                            ControllerScope(
                                partition=found[0],
                                region=cluster.region,
                                account_id=found[1],
                                vpc_id=found[2],
                                cluster_name=found[3],
                                waf=args.waf,
                                shield=args.shield,
                            )
                        )
                    )
                )
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.controller = helm.release(
            name,
            versions.LOAD_BALANCER_CONTROLLER,
            namespace=NAMESPACE,
            values=controller_values(
                cluster_name=cluster.name,
                region=cluster.region,
                vpc_id=cluster.vpc_id,
                service_account_annotations=role.service_account_annotations,
                placement=cluster.system_placement,
                tags=args.tags,
                waf=args.waf,
                shield=args.shield,
            ),
            # Its role ARN waits for the policy.
            opts=cluster.on_system_nodes(self),
        )
        self.register_outputs({})
