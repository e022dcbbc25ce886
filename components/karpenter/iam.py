"""Pure renderers for Karpenter's AWS side: the v1 controller policy, the interruption queue policy and the
EventBridge rules that feed it.

The controller policy moves in lock-step with the Karpenter version in `components/versions/`: the actions and their
scoping follow the getting-started CloudFormation template of that release (`../shared/reference/karpenter/`). A missing
action shows up late and badly (without `iam:ListInstanceProfiles` the EC2NodeClass finalizer never completes), so
the tests compare this document with the reference list of actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..identity.documents import IAM_VERSION


@dataclass(frozen=True)
class ControllerScope:
    """Everything the controller policy is scoped to."""

    partition: str
    region: str
    account_id: str
    cluster_name: str
    node_role_arn: str
    queue_arn: str


def _ec2(scope: ControllerScope, kind: str, account: str = "*") -> str:
    return f"arn:{scope.partition}:ec2:{scope.region}:{account}:{kind}/*"


def _owned(scope: ControllerScope) -> dict[str, str]:
    """Condition: the resource carries this cluster's ownership tag."""
    return {f"aws:ResourceTag/kubernetes.io/cluster/{scope.cluster_name}": "owned"}


def _request_owned(scope: ControllerScope) -> dict[str, str]:
    """Condition: the request tags what it creates as this cluster's."""
    return {
        f"aws:RequestTag/kubernetes.io/cluster/{scope.cluster_name}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": scope.cluster_name,
    }


#: Conditions: the resource, or the request, names a NodePool (what Karpenter itself launched).
_ANY_NODEPOOL = {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
_REQUEST_NODEPOOL = {"aws:RequestTag/karpenter.sh/nodepool": "*"}


def _instance_profiles(scope: ControllerScope) -> str:
    return f"arn:{scope.partition}:iam::{scope.account_id}:instance-profile/*"


def _cluster_arn(scope: ControllerScope) -> str:
    return f"arn:{scope.partition}:eks:{scope.region}:{scope.account_id}:cluster/{scope.cluster_name}"


def _launched(scope: ControllerScope) -> list[str]:
    """What a launch creates: fleets, instances, volumes, interfaces, launch templates, spot requests."""
    return [
        _ec2(scope, kind)
        for kind in ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")
    ]


def _launch_statements(scope: ControllerScope) -> list[dict[str, Any]]:
    """Launching the nodes of this cluster only."""
    owned, request_owned = _owned(scope), _request_owned(scope)
    return [
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": [
                f"arn:{scope.partition}:ec2:{scope.region}::image/*",
                f"arn:{scope.partition}:ec2:{scope.region}::snapshot/*",
                _ec2(scope, "security-group"),
                _ec2(scope, "subnet"),
                _ec2(scope, "capacity-reservation"),
                _ec2(scope, "placement-group"),
            ],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": _ec2(scope, "launch-template"),
            "Condition": {"StringEquals": owned, "StringLike": _ANY_NODEPOOL},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Resource": _launched(scope),
            "Condition": {"StringEquals": request_owned, "StringLike": _REQUEST_NODEPOOL},
        },
    ]


def _tagging_and_deletion_statements(scope: ControllerScope) -> list[dict[str, Any]]:
    """Tagging what the controller launches, and terminating it: only this cluster's nodes."""
    owned, request_owned = _owned(scope), _request_owned(scope)
    return [
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": _launched(scope),
            "Condition": {
                "StringEquals": {
                    **request_owned,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": _REQUEST_NODEPOOL,
            },
        },
        {
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": _ec2(scope, "instance"),
            "Condition": {
                "StringEquals": owned,
                "StringLike": _ANY_NODEPOOL,
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": scope.cluster_name},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Resource": [_ec2(scope, "instance"), _ec2(scope, "launch-template")],
            "Condition": {"StringEquals": owned, "StringLike": _ANY_NODEPOOL},
        },
    ]


def _instance_profile_statements(scope: ControllerScope) -> list[dict[str, Any]]:
    """Instance profiles for the node role, which alone may be passed to the instances."""
    owned, request_owned, profiles = _owned(scope), _request_owned(scope), _instance_profiles(scope)
    region_tag = {"aws:ResourceTag/topology.kubernetes.io/region": scope.region}
    request_region_tag = {"aws:RequestTag/topology.kubernetes.io/region": scope.region}
    return [
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": scope.node_role_arn,
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Action": ["iam:CreateInstanceProfile"],
            "Resource": profiles,
            "Condition": {
                "StringEquals": {**request_owned, **request_region_tag},
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Action": ["iam:TagInstanceProfile"],
            "Resource": profiles,
            "Condition": {
                "StringEquals": {**owned, **region_tag, **request_owned, **request_region_tag},
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Action": [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            "Resource": profiles,
            "Condition": {
                "StringEquals": {**owned, **region_tag},
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
    ]


def _cluster_and_queue_statements(scope: ControllerScope) -> list[dict[str, Any]]:
    """This cluster's endpoint, and the interruption queue."""
    return [
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Action": "eks:DescribeCluster",
            "Resource": _cluster_arn(scope),
        },
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            "Resource": scope.queue_arn,
        },
    ]


def _discovery_statements(scope: ControllerScope) -> list[dict[str, Any]]:
    """Read-only discovery: instance types, prices, images, subnets, instance profiles and zonal shifts."""
    return [
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Action": [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": scope.region}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Action": "ssm:GetParameter",
            "Resource": f"arn:{scope.partition}:ssm:{scope.region}::parameter/aws/service/*",
        },
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Action": "pricing:GetProducts", "Resource": "*"},
        # Listing cannot be scoped; without it the EC2NodeClass finalizer never completes.
        {
            "Sid": "AllowUnscopedInstanceProfileListAction",
            "Effect": "Allow",
            "Action": "iam:ListInstanceProfiles",
            "Resource": "*",
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Action": "iam:GetInstanceProfile",
            "Resource": _instance_profiles(scope),
        },
        # 1.14's ZonalShiftPolicy: read whether ARC has shifted this cluster away from a zone (used once
        # settings.enableZonalShift is on; read-only and limited to this cluster, so granted with the rest).
        {
            "Sid": "AllowZonalShiftStatusReadOnly",
            "Effect": "Allow",
            "Action": "arc-zonal-shift:GetManagedResource",
            "Resource": "*",
            "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": _cluster_arn(scope)}},
        },
    ]


def controller_policy(scope: ControllerScope) -> dict[str, Any]:
    """The Karpenter v1 controller permissions, each as narrowly scoped as the controller allows."""
    statements = [
        *_launch_statements(scope),
        *_tagging_and_deletion_statements(scope),
        *_instance_profile_statements(scope),
        *_cluster_and_queue_statements(scope),
        *_discovery_statements(scope),
    ]
    return {"Version": IAM_VERSION, "Statement": statements}


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """Only EventBridge (and SQS itself) may send to the interruption queue, and only over TLS."""
    return {
        "Version": IAM_VERSION,
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }


#: The events Karpenter acts on, keyed by the rule name suffix. A typo in a detail-type makes a rule that never
#: fires and nothing notices, so the tests compare these literals with the reference.
INTERRUPTION_EVENTS: dict[str, tuple[str, str]] = {
    "scheduled-change": ("aws.health", "AWS Health Event"),
    "spot-interruption": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "instance-state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "capacity-reservation-interruption": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}


def event_pattern(source: str, detail_type: str) -> dict[str, list[str]]:
    return {"source": [source], "detail-type": [detail_type]}
