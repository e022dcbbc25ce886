"""IAM documents and the IRSA role helper every controller uses.

Documents are plain dicts built by pure functions and serialised with sorted keys, so diffs stay quiet and the
offline preview can show them exactly as AWS receives them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

import pulumi
import pulumi_aws as aws

IAM_VERSION = "2012-10-17"
STS_AUDIENCE = "sts.amazonaws.com"


def to_json(document: Mapping[str, Any]) -> str:
    """An IAM document as AWS receives it, with sorted keys."""
    return json.dumps(document, sort_keys=True, indent=2)


def service_trust_policy(service: str) -> dict[str, Any]:
    """Trust policy letting an AWS service (e.g. `ec2.amazonaws.com`) assume a role."""
    return {
        "Version": IAM_VERSION,
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
    }


def issuer_host_path(issuer: str) -> str:
    """The OIDC issuer as IAM condition keys spell it: without the `https://` scheme."""
    return issuer.removeprefix("https://")


def irsa_trust_policy(
    *, oidc_provider_arn: str, oidc_issuer: str, namespace: str, service_account: str
) -> dict[str, Any]:
    """Trust policy admitting exactly one Kubernetes service account through the cluster's OIDC provider.

    Both `sub` and `aud` are pinned with StringEquals: without `aud`, any token the issuer signs for another audience
    would be accepted; without `sub` (or with StringLike and a wildcard), every service account in the cluster could
    assume the role.
    """
    issuer = issuer_host_path(oidc_issuer)
    return {
        "Version": IAM_VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": oidc_provider_arn},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                        f"{issuer}:aud": STS_AUDIENCE,
                    }
                },
            }
        ],
    }


def same_principal(a: str, b: str) -> bool:
    """Whether two IAM principal ARNs name the same user or role (paths aside: an assumed role's session context
    gives the role's ARN with its path, config may give it without)."""

    def key(arn: str) -> tuple[str, str, str, str]:
        parts = arn.split(":", 5)
        if len(parts) < 6:
            return (arn, "", "", "")
        kind, _, rest = parts[5].partition("/")
        return (parts[1], parts[4], kind, rest.rsplit("/", 1)[-1])

    return key(a) == key(b)


def aws_managed_policy_arn(partition: pulumi.Input[str], path_and_name: str) -> pulumi.Output[str]:
    """ARN of an AWS managed policy (e.g. `AmazonEKSWorkerNodePolicy`, `service-role/...`) in the partition."""
    return pulumi.Output.concat("arn:", partition, ":iam::aws:policy/", path_and_name)


@dataclass(frozen=True)
class IrsaRoleArgs:
    """A role for one Kubernetes service account.

    `namespace` and `service_account` must be exactly what the chart or add-on creates, or the pod's token will
    not match the trust policy. Policies are keyed by name so adding one never re-creates the others.
    """

    oidc_provider_arn: pulumi.Input[str]
    oidc_issuer: pulumi.Input[str]
    namespace: str
    service_account: str
    managed_policy_arns: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    inline_policies: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


class IrsaRole(pulumi.ComponentResource):
    """An IAM role assumable only by one service account of one cluster (IAM Roles for Service Accounts)."""

    role: aws.iam.Role
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
        for policy_name, policy_arn in sorted(args.managed_policy_arns.items()):
            aws.iam.RolePolicyAttachment(
                f"{name}-{policy_name}",
                role=self.role.name,
                policy_arn=policy_arn,
                opts=pulumi.ResourceOptions(parent=self),
            )
        for policy_name, document in sorted(args.inline_policies.items()):
            aws.iam.RolePolicy(
                f"{name}-{policy_name}",
                role=self.role.name,
                policy=document,
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.arn = self.role.arn
        self.register_outputs({"arn": self.arn})


#: What every EKS node needs: to join the cluster and pull images. The CNI policy is on the aws-node IRSA role.
#: AmazonSSMManagedInstanceCore, which Karpenter's getting-started template also attaches, is left out on purpose:
#: shell access through Session Manager is an operator's choice, not something every node should carry.
NODE_MANAGED_POLICIES = {"worker": "AmazonEKSWorkerNodePolicy", "ecr-pull": "AmazonEC2ContainerRegistryPullOnly"}


def node_role(
    name: str, *, partition: pulumi.Input[str], description: str, opts: pulumi.ResourceOptions
) -> tuple[aws.iam.Role, list[aws.iam.RolePolicyAttachment]]:
    """An EC2 instance role for EKS nodes, with its policy attachments (which nodes must wait for)."""
    role = aws.iam.Role(
        name, assume_role_policy=to_json(service_trust_policy("ec2.amazonaws.com")), description=description, opts=opts
    )
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{name}-{key}", role=role.name, policy_arn=aws_managed_policy_arn(partition, policy), opts=opts
        )
        for key, policy in NODE_MANAGED_POLICIES.items()
    ]
    return role, attachments
