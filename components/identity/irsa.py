"""The IRSA role every controller uses, and the node role of EKS nodes (IAM documents in `documents`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.identity.documents import irsa_trust_policy, node_trust_policy, to_json


def aws_managed_policy_arn(partition: pulumi.Input[str], path_and_name: str) -> pulumi.Output[str]:
    """ARN of an AWS managed policy (e.g. `AmazonEKSWorkerNodePolicy`, `service-role/...`) in the partition."""
    return pulumi.Output.concat("arn:", partition, ":iam::aws:policy/", path_and_name)


@dataclass(frozen=True)
class IrsaRoleArgs:
    """A role for one Kubernetes service account.

    `namespace` and `service_account` must be exactly what the chart or add-on creates, or the pod's token will
    not match the trust policy. Policies are keyed by name so adding one never re-creates the others.
    """

    #: The cluster's IAM OIDC provider (`ClusterHandle.oidc_provider_arn`; `ClusterHandle.irsa_role` fills it).
    oidc_provider_arn: pulumi.Input[str]
    #: Its issuer, with or without `https://` (`ClusterHandle.oidc_issuer`).
    oidc_issuer: pulumi.Input[str]
    #: The namespace of the only service account that may assume the role.
    namespace: str
    #: That service account's name: the role trusts `system:serviceaccount:<namespace>:<service_account>` alone.
    service_account: str
    #: Managed policies to attach, by a name of their own. Default: none.
    managed_policy_arns: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    #: Inline policy documents (JSON), by name. Default: none.
    inline_policies: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


class IrsaRole(pulumi.ComponentResource):
    """An IAM role assumable only by one service account of one cluster (IAM Roles for Service Accounts)."""

    role: aws.iam.Role
    #: The role's ARN, resolved once its policies are attached.
    arn: pulumi.Output[str]

    def __init__(self, name: str, args: IrsaRoleArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:iam:IrsaRole", name, None, opts)
        trust = pulumi.Output.all(args.oidc_provider_arn, args.oidc_issuer).apply(
            lambda values: to_json(
                irsa_trust_policy(
                    oidc_provider_arn=values[0],
                    oidc_issuer=values[1],
                    namespace=args.namespace,
                    service_account=args.service_account,
                )
            )
        )
        self.role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=trust,
            description=f"IRSA role for {args.namespace}/{args.service_account}",
            opts=pulumi.ResourceOptions(parent=self),
        )
        grants: list[pulumi.CustomResource] = [
            aws.iam.RolePolicyAttachment(
                f"{name}-{policy_name}",
                role=self.role.name,
                policy_arn=policy_arn,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for policy_name, policy_arn in sorted(args.managed_policy_arns.items())
        ]
        grants += [
            aws.iam.RolePolicy(
                f"{name}-{policy_name}", role=self.role.name, policy=document, opts=pulumi.ResourceOptions(parent=self)
            )
            for policy_name, document in sorted(args.inline_policies.items())
        ]
        # Known only once the policies are attached: a chart or add-on given this ARN waits for them through it,
        # with no depends_on to remember (a pod that assumes the role earlier is denied and may not retry).
        self.arn = pulumi.Output.all(self.role.arn, *(grant.id for grant in grants)).apply(lambda values: values[0])
        self.register_outputs({"arn": self.arn})


#: What every EKS node needs: to join the cluster and pull images. The CNI policy is on the aws-node IRSA role.
#: AmazonSSMManagedInstanceCore, which Karpenter's getting-started template also attaches, is left out on purpose:
#: shell access through Session Manager is an operator's choice, not something every node should carry.
NODE_MANAGED_POLICIES = {"worker": "AmazonEKSWorkerNodePolicy", "ecr-pull": "AmazonEC2ContainerRegistryPullOnly"}


def node_role(
    name: str, *, partition: pulumi.Input[str], description: str, opts: pulumi.ResourceOptions
) -> tuple[aws.iam.Role, list[aws.iam.RolePolicyAttachment]]:
    """An EC2 instance role for EKS nodes, with its policy attachments (which nodes must wait for)."""
    trust = pulumi.Output.from_input(partition).apply(lambda known: to_json(node_trust_policy(known)))
    role = aws.iam.Role(name, assume_role_policy=trust, description=description, opts=opts)
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{name}-{key}", role=role.name, policy_arn=aws_managed_policy_arn(partition, policy), opts=opts
        )
        for key, policy in NODE_MANAGED_POLICIES.items()
    ]
    return role, attachments
