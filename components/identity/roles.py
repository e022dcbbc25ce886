"""The role every pod of the platform that calls AWS uses (IRSA, or EKS Pod Identity), and the node role of EKS
nodes (IAM documents in `documents`).

`WorkloadRole` was `IrsaRole` up to 0.3, when it made IRSA roles only; the old names still import, with a
DeprecationWarning, and the component keeps the stacks made under its old type token (`FORMER_TYPE`)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from .documents import irsa_trust_policy, node_trust_policy, pod_identity_trust_policy, to_json

#: The service account annotation IRSA reads. With EKS Pod Identity it must be absent: the SDKs' credential chain
#: tries web identity (what the annotation sets up) before container credentials (what Pod Identity sets up), so a
#: leftover annotation would win, and fail once the role no longer trusts the OIDC provider.
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"


@dataclass(frozen=True)
class PodIdentityTarget:
    """Where an EKS Pod Identity role is used: its cluster, and whether the role makes its own association."""

    #: The cluster's name (the association is made in it).
    cluster_name: pulumi.Input[str]
    #: Its ARN, which Pod Identity tags each session with (`documents.eks_cluster_arn`).
    cluster_arn: pulumi.Input[str]
    #: The account of the cluster and the role.
    account_id: pulumi.Input[str]
    #: The `eks-pod-identity-agent` add-on: the association waits for it, so no pod is given credentials no agent
    #: serves, and on destroy goes before it. None: it exists already (a cluster this program did not create).
    agent: pulumi.Resource | None = None
    #: False for an EKS managed add-on's role: the add-on makes the association itself
    #: (`aws.eks.Addon(pod_identity_associations=...)`), and a second one for the same service account is refused.
    #: Default: the role makes it.
    associate: bool = True


def aws_managed_policy_arn(partition: pulumi.Input[str], path_and_name: str) -> pulumi.Output[str]:
    """ARN of an AWS managed policy (e.g. `AmazonEKSWorkerNodePolicy`, `service-role/...`) in the partition."""
    return pulumi.Output.concat("arn:", partition, ":iam::aws:policy/", path_and_name)


@dataclass(frozen=True)
class WorkloadRoleArgs:
    """A role for one Kubernetes service account.

    `namespace` and `service_account` must be exactly what the chart or add-on creates, or the pod's token will
    not match the trust policy. Policies are keyed by name so adding one never re-creates the others.
    """

    #: The cluster's IAM OIDC provider (`ClusterHandle.oidc_provider_arn`; `ClusterHandle.workload_role` fills it).
    #: Unused with `pod_identity`.
    oidc_provider_arn: pulumi.Input[str]
    #: Its issuer, with or without `https://` (`ClusterHandle.oidc_issuer`). Unused with `pod_identity`.
    oidc_issuer: pulumi.Input[str]
    #: The namespace of the only service account that may assume the role.
    namespace: str
    #: That service account's name: the role trusts `system:serviceaccount:<namespace>:<service_account>` alone.
    service_account: str
    #: Managed policies to attach, by a name of their own. Default: none.
    managed_policy_arns: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    #: Inline policy documents (JSON), by name. Default: none.
    inline_policies: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    #: None: IRSA (the default). Set: the role trusts EKS Pod Identity for the service account in that cluster, and
    #: the service account must carry no IRSA annotation (`WorkloadRole.service_account_annotations` is then empty).
    pod_identity: PodIdentityTarget | None = None


#: The component's type token, and the one it had as `IrsaRole` (up to 0.3): the alias to it keeps the role of a stack
#: deployed by 0.3, and its children inherit it (see `__init__`).
TYPE = "eksml:iam:WorkloadRole"
FORMER_TYPE = "eksml:iam:IrsaRole"


class WorkloadRole(pulumi.ComponentResource):
    """An IAM role assumable only by one service account of one cluster: through IAM Roles for Service Accounts, or
    through EKS Pod Identity (`WorkloadRoleArgs.pod_identity`). One component for both, so every consumer follows the
    cluster's choice and its URN does not change with it."""

    role: aws.iam.Role
    #: The role's ARN, resolved once its policies are attached (and, with Pod Identity, its association made).
    arn: pulumi.Output[str]
    #: What the service account must be annotated with: `{IRSA_ANNOTATION: arn}` with IRSA, nothing with Pod
    #: Identity. Resolved when `arn` is, so a chart or object given it waits for the policies and the association.
    service_account_annotations: pulumi.Output[dict[str, str]]
    #: The Pod Identity association this role made (None with IRSA, or when an add-on makes it).
    association: aws.eks.PodIdentityAssociation | None
    #: The one service account that may assume the role, and its namespace.
    namespace: str
    service_account: str

    def __init__(self, name: str, args: WorkloadRoleArgs, opts: pulumi.ResourceOptions | None = None):
        # The engine matches this component against its URN under FORMER_TYPE, and each child named `<name>-...`
        # against the same name under that URN: a parent's aliases are inherited by its children (pulumi/pulumi
        # sdk/python/lib/pulumi/runtime/resource.py `all_aliases` / `inherited_child_alias` in the pinned SDK; an
        # engine that takes alias specs, `prepare_aliases`, applies the same rule), so upgrading replaces nothing.
        former = pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=FORMER_TYPE)])
        super().__init__(TYPE, name, None, pulumi.ResourceOptions.merge(opts, former))
        self.namespace, self.service_account = args.namespace, args.service_account
        target = args.pod_identity
        kind = "IRSA" if target is None else "EKS Pod Identity"
        self.role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=_trust_policy(args),
            description=f"{kind} role for {args.namespace}/{args.service_account}",
            opts=pulumi.ResourceOptions(parent=self),
        )
        grants = self._policies(name, args)
        self.association = None
        if target is not None and target.associate:
            self.association = self._associate(name, args, target)
            grants.append(self.association)
        # Known only once the policies are attached (and the association made): a chart or add-on given this ARN or
        # these annotations waits for them through it, with no depends_on to remember (a pod that assumes the role
        # earlier is denied and may not retry; one created before its association gets no credentials at all).
        waited: Sequence[pulumi.Output[str]] = [grant.id for grant in grants]
        self.arn = pulumi.Output.all(self.role.arn, *waited).apply(lambda values: values[0])
        self.service_account_annotations = self.arn.apply(lambda arn: {IRSA_ANNOTATION: arn} if target is None else {})
        self.register_outputs({"arn": self.arn})

    def _policies(self, name: str, args: WorkloadRoleArgs) -> list[pulumi.CustomResource]:
        """The managed policies attached and the inline policies put on the role, each under its own name."""
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
        return grants

    def _associate(
        self, name: str, args: WorkloadRoleArgs, target: PodIdentityTarget
    ) -> aws.eks.PodIdentityAssociation:
        """The Pod Identity association of the role with its service account."""
        return aws.eks.PodIdentityAssociation(
            f"{name}-association",
            cluster_name=target.cluster_name,
            namespace=args.namespace,
            service_account=args.service_account,
            role_arn=self.role.arn,
            opts=pulumi.ResourceOptions(
                parent=self,
                # why: credentials are served by the agent; on destroy the association goes before it.
                depends_on=[target.agent] if target.agent is not None else [],
            ),
        )


def _trust_policy(args: WorkloadRoleArgs) -> pulumi.Output[str]:
    """The role's trust policy (JSON): the cluster's OIDC provider for the one service account with IRSA, EKS Pod
    Identity for it in the one cluster otherwise."""
    target = args.pod_identity
    if target is None:
        return pulumi.Output.all(args.oidc_provider_arn, args.oidc_issuer).apply(
            lambda values: to_json(
                irsa_trust_policy(
                    oidc_provider_arn=values[0],
                    oidc_issuer=values[1],
                    namespace=args.namespace,
                    service_account=args.service_account,
                )
            )
        )
    return pulumi.Output.all(target.account_id, target.cluster_arn).apply(
        lambda values: to_json(
            pod_identity_trust_policy(
                account_id=values[0],
                cluster_arn=values[1],
                namespace=args.namespace,
                service_account=args.service_account,
            )
        )
    )


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


#: The names before 0.4, by the name they now have.
_DEPRECATED = {"IrsaRole": "WorkloadRole", "IrsaRoleArgs": "WorkloadRoleArgs"}


def __getattr__(name: str) -> Any:
    """`IrsaRole` and `IrsaRoleArgs` (renamed in 0.4: the role is a Pod Identity role too), with a warning."""
    new = _DEPRECATED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{name} is deprecated: use {new} (the same class)", DeprecationWarning, stacklevel=2)
    return globals()[new]
