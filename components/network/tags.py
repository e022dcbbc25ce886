"""The tags Karpenter and the AWS Load Balancer Controller find subnets and security groups by."""

from __future__ import annotations

#: Subnet tags read by Karpenter (EC2NodeClass subnet selector) and the AWS Load Balancer Controller.
DISCOVERY_TAG = "karpenter.sh/discovery"
INTERNAL_ELB_TAG = "kubernetes.io/role/internal-elb"
EXTERNAL_ELB_TAG = "kubernetes.io/role/elb"


def private_subnet_tags(cluster_name: str) -> dict[str, str]:
    return {DISCOVERY_TAG: cluster_name, INTERNAL_ELB_TAG: "1"}


def public_subnet_tags() -> dict[str, str]:
    return {EXTERNAL_ELB_TAG: "1"}
