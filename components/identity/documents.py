"""IAM documents as pure functions: plain dicts serialised with sorted keys, so diffs stay quiet and the offline
preview shows them exactly as AWS receives them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

IAM_VERSION = "2012-10-17"
STS_AUDIENCE = "sts.amazonaws.com"
#: IAM User Guide, "IAM and AWS STS quotas": a role's inline policies together are at most 10,240 characters, white
#: space not counted.
ROLE_INLINE_POLICY_CHARS = 10_240


def policy_size(document: Mapping[str, Any]) -> int:
    """A policy's size as IAM counts it against its quotas: without white space (none of ours is inside a string)."""
    return len(json.dumps(document, sort_keys=True, separators=(",", ":")))


def to_json(document: Mapping[str, Any]) -> str:
    """An IAM document as AWS receives it, with sorted keys."""
    return json.dumps(document, sort_keys=True, indent=2)


def service_trust_policy(service: str) -> dict[str, Any]:
    """Trust policy letting an AWS service (e.g. `ec2.amazonaws.com`) assume a role."""
    return {
        "Version": IAM_VERSION,
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
    }


def dns_suffix(partition: str) -> str:
    """The domain a partition's service endpoints end with."""
    return "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"


def node_trust_policy(partition: str) -> dict[str, Any]:
    """Trust policy of EKS node roles: EC2, whose service principal in the China partition is `ec2.amazonaws.com.cn`
    (EKS refuses a node group whose role lacks it there; Karpenter's template has `ec2.${AWS::URLSuffix}`)."""
    return service_trust_policy(f"ec2.{dns_suffix(partition)}")


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


#: The service EKS Pod Identity assumes roles as (EKS User Guide, "Create IAM role with trust policy required by EKS
#: Pod Identity", docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html).
POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"


def eks_cluster_arn(*, partition: str, region: str, account_id: str, cluster_name: str) -> str:
    """The ARN of an EKS cluster, as EKS Pod Identity's `eks-cluster-arn` session tag carries it."""
    return f"arn:{partition}:eks:{region}:{account_id}:cluster/{cluster_name}"


def pod_identity_trust_policy(
    *, account_id: str, cluster_arn: str, namespace: str, service_account: str
) -> dict[str, Any]:
    """Trust policy admitting EKS Pod Identity for exactly one service account of one cluster of this account.

    The service principal alone names no cluster: any association in the account could then hand the role to any
    pod. EKS Pod Identity tags every session it opens with the cluster's ARN, the namespace and the service account
    (`eks-cluster-arn`, `kubernetes-namespace`, `kubernetes-service-account`: EKS User Guide, pod-id-role.html and
    "Enable or disable session tags", pod-id-abac.html), which is why it needs `sts:TagSession`; pinning those tags
    with StringEquals admits only that cluster's association for that service account. `aws:SourceAccount` keeps
    another account's EKS from acting on the role. `aws:SourceArn` is not used: in these requests it is the
    association's ARN (`...:podidentityassociation/<cluster>/<id>`, awslabs/mountpoint-s3-csi-driver#781), not
    the cluster's, and an association's ID is known only once it exists.
    """
    return {
        "Version": IAM_VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": POD_IDENTITY_SERVICE},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:SourceAccount": account_id,
                        "aws:RequestTag/eks-cluster-arn": cluster_arn,
                        "aws:RequestTag/kubernetes-namespace": namespace,
                        "aws:RequestTag/kubernetes-service-account": service_account,
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
