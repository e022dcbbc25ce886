"""Which AWS objects belong to the cluster: pure predicates over the tags the controllers and AWS put on them.

Every rule here names a cluster by an exact tag value (or a tag key that carries the name), so a resource of another
cluster, or an untagged one, is never selected. The only VPC-scoped rules (CNI interfaces, the GuardDuty endpoint)
are applied to objects already filtered to the stack's VPC.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum

from ..network.tags import DISCOVERY_TAG
from ..tags import DYNAMIC_FSX_TAG

#: Karpenter (aws/karpenter-provider-aws v1): instances carry the NodePool, node classes and profiles the cluster.
NODEPOOL_TAG = "karpenter.sh/nodepool"
EKS_CLUSTER_NAME_TAG = "eks:eks-cluster-name"
LAUNCH_TEMPLATE_CLUSTER_TAG = "karpenter.k8s.aws/cluster"
#: Set on instance profiles by Karpenter before v1 (`karpenter.sh/managed-by`).
KARPENTER_MANAGED_BY_TAG = "karpenter.sh/managed-by"
EC2NODECLASS_TAG = "karpenter.k8s.aws/ec2nodeclass"
REGION_TAG = "topology.kubernetes.io/region"
#: Karpenter v1 creates instance profiles under `/karpenter/<region>/<cluster>/<nodeclass uid>/`, names
#: `<cluster>_<hash>`.
KARPENTER_PROFILE_PATH = "/karpenter/"
#: Set by EKS itself (cluster security group, managed node group instances); only the leak check reads them.
AWS_EKS_CLUSTER_NAME_TAG = "aws:eks:cluster-name"
EKS_NODEGROUP_CLUSTER_TAG = "eks:cluster-name"

#: AWS Load Balancer Controller: load balancers, target groups and the security groups it creates.
LBC_CLUSTER_TAG = "elbv2.k8s.aws/cluster"

#: EBS CSI driver: every volume it creates; the cluster tags need `--k8s-tag-cluster-id` (the EKS add-on sets it).
EBS_CSI_TAG = "ebs.csi.aws.com/cluster"
LEGACY_CLUSTER_TAG = "KubernetesCluster"
PVC_NAMESPACE_TAG = "kubernetes.io/created-for/pvc/namespace"
PVC_NAME_TAG = "kubernetes.io/created-for/pvc/name"

#: Amazon VPC CNI: the ENIs ipamd attaches to nodes (left `available` when a node goes away before ipamd frees them).
CNI_CLUSTER_TAG = "cluster.k8s.amazonaws.com/name"
CNI_INSTANCE_TAG = "node.k8s.amazonaws.com/instance_id"
CNI_DESCRIPTION_PREFIX = "aws-K8S-"

#: GuardDuty EKS runtime monitoring's agent endpoint, created by GuardDuty in every VPC it monitors.
GUARDDUTY_MANAGED_TAG = "GuardDutyManaged"

__all__ = [
    "DISCOVERY_TAG",
    "DYNAMIC_FSX_TAG",
    "ProfileMatch",
    "cluster_tag",
    "cluster_tag_keys",
    "guardduty_service",
    "is_cluster_tagged",
    "is_cni_interface",
    "is_dynamic_file_system",
    "is_guardduty_endpoint",
    "is_guardduty_group",
    "is_karpenter_instance",
    "is_karpenter_launch_template",
    "is_lbc_resource",
    "is_pvc_volume",
    "match_instance_profile",
    "tag_dict",
]


def tag_dict(tags: Iterable[Mapping[str, str]] | None) -> dict[str, str]:
    """AWS's `[{"Key": k, "Value": v}]` as a dict (EC2, ELB, IAM and FSx all use this shape)."""
    return {tag["Key"]: tag.get("Value", "") for tag in tags or ()}


def cluster_tag(cluster: str) -> str:
    return f"kubernetes.io/cluster/{cluster}"


def _owned(tags: Mapping[str, str], cluster: str) -> bool:
    return tags.get(cluster_tag(cluster)) == "owned"


def is_karpenter_instance(tags: Mapping[str, str], cluster: str) -> bool:
    """An instance Karpenter launched for a NodePool of this cluster."""
    return NODEPOOL_TAG in tags and (
        tags.get(DISCOVERY_TAG) == cluster or _owned(tags, cluster) or tags.get(EKS_CLUSTER_NAME_TAG) == cluster
    )


def is_karpenter_launch_template(tags: Mapping[str, str], cluster: str) -> bool:
    return tags.get(LAUNCH_TEMPLATE_CLUSTER_TAG) == cluster


class ProfileMatch(Enum):
    OTHER = "other"
    OURS = "ours"
    #: This cluster's name, but nothing says which region: IAM is global, and a cluster of the same name in another
    #: region would lose the profile of its running nodes.
    REGION_UNKNOWN = "region-unknown"


def match_instance_profile(path: str, tags: Mapping[str, str], cluster: str, region: str) -> ProfileMatch:
    """Whether Karpenter made this instance profile for this cluster in this region."""
    path_parts = path.strip("/").split("/") if path.startswith(KARPENTER_PROFILE_PATH) else []
    made_by_karpenter = EC2NODECLASS_TAG in tags or bool(path_parts)
    naming_keys = (EKS_CLUSTER_NAME_TAG, LAUNCH_TEMPLATE_CLUSTER_TAG, KARPENTER_MANAGED_BY_TAG)
    names_cluster = _owned(tags, cluster) or any(tags.get(key) == cluster for key in naming_keys)
    if not made_by_karpenter or not names_cluster:
        return ProfileMatch.OTHER
    regions = set()
    if REGION_TAG in tags:
        regions.add(tags[REGION_TAG])
    if len(path_parts) >= 3:  # karpenter/<region>/<cluster>/...
        if path_parts[2] != cluster:
            return ProfileMatch.OTHER
        regions.add(path_parts[1])
    if not regions:
        return ProfileMatch.REGION_UNKNOWN
    return ProfileMatch.OURS if regions == {region} else ProfileMatch.OTHER


def is_lbc_resource(tags: Mapping[str, str], cluster: str) -> bool:
    return tags.get(LBC_CLUSTER_TAG) == cluster


def is_pvc_volume(tags: Mapping[str, str], cluster: str) -> bool:
    """A volume the EBS CSI driver created for a claim in this cluster (both the driver's mark and the cluster's)."""
    return tags.get(EBS_CSI_TAG) == "true" and (_owned(tags, cluster) or tags.get(LEGACY_CLUSTER_TAG) == cluster)


def is_dynamic_file_system(tags: Mapping[str, str], cluster: str) -> bool:
    """A Lustre file system the FSx CSI driver created for a claim of class `fsx-lustre` (tagged via extraTags)."""
    return tags.get(DYNAMIC_FSX_TAG) == cluster


def is_cni_interface(description: str, tags: Mapping[str, str], cluster: str, *, vpc_is_the_stacks: bool) -> bool:
    """A VPC CNI interface of this cluster. Only call with interfaces of the stack's VPC.

    The CNI names its interfaces `aws-K8S-<instance id>` and tags them with the node; only the cluster tag names the
    cluster. In a VPC of the stack's own nothing else runs the CNI, so the description or node tag is enough; in a
    shared VPC (network.existing) only the cluster tag is.
    """
    named = tags.get(CNI_CLUSTER_TAG)
    if named is not None:
        return named == cluster
    return vpc_is_the_stacks and (description.startswith(CNI_DESCRIPTION_PREFIX) or CNI_INSTANCE_TAG in tags)


def guardduty_service(region: str) -> str:
    return f"com.amazonaws.{region}.guardduty-data"


def is_guardduty_endpoint(service_name: str, tags: Mapping[str, str], region: str) -> bool:
    return service_name == guardduty_service(region) and tags.get(GUARDDUTY_MANAGED_TAG) == "true"


def is_guardduty_group(tags: Mapping[str, str]) -> bool:
    return tags.get(GUARDDUTY_MANAGED_TAG) == "true"


def cluster_tag_keys(cluster: str) -> tuple[str, ...]:
    """The tag keys whose value (or, for `kubernetes.io/cluster/<name>`, whose key) can name a cluster."""
    return (
        cluster_tag(cluster),
        DISCOVERY_TAG,
        EKS_CLUSTER_NAME_TAG,
        AWS_EKS_CLUSTER_NAME_TAG,
        EKS_NODEGROUP_CLUSTER_TAG,
        LAUNCH_TEMPLATE_CLUSTER_TAG,
        KARPENTER_MANAGED_BY_TAG,
        LBC_CLUSTER_TAG,
        LEGACY_CLUSTER_TAG,
        CNI_CLUSTER_TAG,
        DYNAMIC_FSX_TAG,
    )


def is_cluster_tagged(tags: Mapping[str, str], cluster: str) -> bool:
    """Anything any controller or EKS tagged for this cluster (the leak check's wide net, after `pulumi destroy`)."""
    owned_key, *named_by_value = cluster_tag_keys(cluster)
    return tags.get(owned_key) == "owned" or any(tags.get(key) == cluster for key in named_by_value)
