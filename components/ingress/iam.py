"""Pure renderer for the IAM permission policy of the AWS Load Balancer Controller: the document the controller's
IRSA role carries so it can manage ALBs, NLBs, their target groups, listeners and the security groups in front of
them. It moves in lock-step with the chart pinned as `LOAD_BALANCER_CONTROLLER` in `components/versions/` (chart
aws-load-balancer-controller 3.5.0): the granted actions and their scoping follow that release's published policy
(`../shared/reference/aws-load-balancer-controller/`), and the tests compare the two action sets exactly, so bumping
the chart without revisiting this file fails loudly instead of surfacing later as an AccessDenied in the controller.

Narrower than upstream's where upstream trusts any cluster: ownership is this cluster's tag value, not the mere
presence of the tag (upstream's `Null` test lets one cluster's controller delete another's load balancers), ingress
rules change only on security groups in this cluster's VPC, security groups are created only there, and the WAF and
Shield actions are granted only when the stack turns those add-ons on.
"""

from __future__ import annotations

from copy import deepcopy
from dataclasses import dataclass
from typing import Any

from ..identity.documents import IAM_VERSION

#: The tag the controller stamps on everything it creates; ownership checks in this policy key off its presence.
CLUSTER_TAG = "elbv2.k8s.aws/cluster"

_RESOURCE_TAG = f"aws:ResourceTag/{CLUSTER_TAG}"
_REQUEST_TAG = f"aws:RequestTag/{CLUSTER_TAG}"

#: The WAF actions (Classic regional and v2) the controller calls only with its WAF add-ons on.
WAF_ACTIONS = (
    "waf-regional:AssociateWebACL",
    "waf-regional:DisassociateWebACL",
    "waf-regional:GetWebACL",
    "waf-regional:GetWebACLForResource",
    "wafv2:AssociateWebACL",
    "wafv2:DisassociateWebACL",
    "wafv2:GetWebACL",
    "wafv2:GetWebACLForResource",
)
#: The Shield actions the controller calls only with its Shield add-on on.
SHIELD_ACTIONS = (
    "shield:CreateProtection",
    "shield:DeleteProtection",
    "shield:DescribeProtection",
    "shield:GetSubscriptionState",
)


@dataclass(frozen=True)
class ControllerScope:
    """What the controller's policy is scoped to: its cluster (the value of the ownership tag it stamps), the VPC
    whose security groups it may open, and the add-ons it may use."""

    partition: str
    region: str
    account_id: str
    vpc_id: str
    cluster_name: str
    #: Grant the WAF (Classic regional and v2) actions (`ingress.waf`).
    waf: bool = False
    #: Grant the Shield actions (`ingress.shield`).
    shield: bool = False

    @property
    def vpc_arn(self) -> str:
        return f"arn:{self.partition}:ec2:{self.region}:{self.account_id}:vpc/{self.vpc_id}"


def _allow(sid: str, actions: list[str], resource: str | list[str] = "*", **condition: Any) -> dict[str, Any]:
    statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resource}
    if condition:
        statement["Condition"] = deepcopy(condition)  # the shared condition blocks must stay untouched
    return statement


def _elb(partition: str, path: str) -> str:
    return f"arn:{partition}:elasticloadbalancing:*:*:{path}"


def _owned(scope: ControllerScope) -> dict[str, Any]:
    """Condition: the resource carries this cluster's ownership tag, i.e. this cluster's controller created it."""
    return {"StringEquals": {_RESOURCE_TAG: scope.cluster_name}}


def _created_owned(scope: ControllerScope) -> dict[str, Any]:
    """Condition: the request sets this cluster's ownership tag, so what is created is marked as its own from the
    start."""
    return {"StringEquals": {_REQUEST_TAG: scope.cluster_name}}


def _retag_owned(scope: ControllerScope) -> dict[str, Any]:
    """Condition: tags of an owned resource may change, as long as the request does not touch the ownership tag
    itself."""
    return {"Null": {_REQUEST_TAG: "true"}, **_owned(scope)}


def _security_groups(scope: ControllerScope) -> str:
    return f"arn:{scope.partition}:ec2:{scope.region}:{scope.account_id}:security-group/*"


def _read_statements() -> list[dict[str, Any]]:
    """What reconciliation reads: the VPC, the load balancers, and the certificates and Cognito clients users name."""
    return [
        # why: reconciliation starts from the current state of the VPC and of the load balancers; reads are unscoped.
        _allow(
            "DiscoverNetworkTopology",
            [
                "ec2:DescribeAccountAttributes",
                "ec2:DescribeAddresses",
                "ec2:DescribeAvailabilityZones",
                "ec2:DescribeCoipPools",
                "ec2:DescribeInstances",
                "ec2:DescribeInternetGateways",
                "ec2:DescribeIpamPools",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeRouteTables",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSubnets",
                "ec2:DescribeTags",
                "ec2:DescribeVpcPeeringConnections",
                "ec2:DescribeVpcs",
                "ec2:GetCoipPoolUsage",
                "ec2:GetSecurityGroupsForVpc",
            ],
        ),
        _allow(
            "DiscoverLoadBalancingState",
            [
                "elasticloadbalancing:DescribeCapacityReservation",
                "elasticloadbalancing:DescribeListenerAttributes",
                "elasticloadbalancing:DescribeListenerCertificates",
                "elasticloadbalancing:DescribeListeners",
                "elasticloadbalancing:DescribeLoadBalancerAttributes",
                "elasticloadbalancing:DescribeLoadBalancers",
                "elasticloadbalancing:DescribeRules",
                "elasticloadbalancing:DescribeSSLPolicies",
                "elasticloadbalancing:DescribeTags",
                "elasticloadbalancing:DescribeTargetGroupAttributes",
                "elasticloadbalancing:DescribeTargetGroups",
                "elasticloadbalancing:DescribeTargetHealth",
                "elasticloadbalancing:DescribeTrustStores",
            ],
        ),
        # why: Ingress annotations point at certificates and Cognito clients; those resources are chosen by users, not
        # owned by the controller, so they cannot be narrowed by tag.
        _allow(
            "ResolveCertificatesAndAuthentication",
            [
                "acm:DescribeCertificate",
                "acm:ListCertificates",
                "cognito-idp:DescribeUserPoolClient",
                "iam:GetServerCertificate",
                "iam:ListServerCertificates",
            ],
        ),
    ]


def _security_group_statements(scope: ControllerScope) -> list[dict[str, Any]]:
    """Opening node and pod security groups in this cluster's VPC, and the frontend groups the controller owns."""
    security_groups = _security_groups(scope)
    return [
        # why: the controller opens node and pod security groups it does not own to traffic from its load balancers:
        # any group, but only in this cluster's VPC (upstream: any group in the account).
        _allow(
            "EditIngressRulesInClusterVpc",
            ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
            security_groups,
            ArnEquals={"ec2:Vpc": scope.vpc_arn},
        ),
        # why: it creates its frontend groups in this cluster's VPC only, each carrying this cluster's tag.
        _allow("CreateSecurityGroupsInClusterVpc", ["ec2:CreateSecurityGroup"], scope.vpc_arn),
        _allow("CreateOwnedSecurityGroups", ["ec2:CreateSecurityGroup"], security_groups, **_created_owned(scope)),
        _allow(
            "TagSecurityGroupsOnCreation",
            ["ec2:CreateTags"],
            security_groups,
            StringEquals={"ec2:CreateAction": "CreateSecurityGroup", _REQUEST_TAG: scope.cluster_name},
        ),
        # why: once created, only this cluster's own security groups may be retagged or deleted.
        _allow(
            "RetagOwnedSecurityGroups", ["ec2:CreateTags", "ec2:DeleteTags"], security_groups, **_retag_owned(scope)
        ),
        _allow(
            "ManageOwnedSecurityGroups",
            ["ec2:AuthorizeSecurityGroupIngress", "ec2:DeleteSecurityGroup", "ec2:RevokeSecurityGroupIngress"],
            security_groups,
            **_owned(scope),
        ),
    ]


def _load_balancer_statements(scope: ControllerScope) -> list[dict[str, Any]]:
    """Load balancers and target groups this cluster owns, and registering targets."""
    target_groups = _elb(scope.partition, "targetgroup/*/*")
    balancers_and_groups = [
        _elb(scope.partition, "loadbalancer/app/*/*"),
        _elb(scope.partition, "loadbalancer/net/*/*"),
        target_groups,
    ]
    return [
        # why: load balancers and target groups can only be created already carrying the ownership tag ...
        _allow(
            "CreateOwnedLoadBalancersAndTargetGroups",
            ["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
            **_created_owned(scope),
        ),
        _allow(
            "TagLoadBalancersAndTargetGroupsOnCreation",
            ["elasticloadbalancing:AddTags"],
            balancers_and_groups,
            StringEquals={
                "elasticloadbalancing:CreateAction": ["CreateLoadBalancer", "CreateTargetGroup"],
                _REQUEST_TAG: scope.cluster_name,
            },
        ),
        # why: ... and afterwards only owned ones may be retagged, reconfigured or deleted.
        _allow(
            "RetagOwnedLoadBalancersAndTargetGroups",
            ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            balancers_and_groups,
            **_retag_owned(scope),
        ),
        _allow(
            "ManageOwnedLoadBalancersAndTargetGroups",
            [
                "elasticloadbalancing:DeleteLoadBalancer",
                "elasticloadbalancing:DeleteTargetGroup",
                "elasticloadbalancing:ModifyCapacityReservation",
                "elasticloadbalancing:ModifyIpPools",
                "elasticloadbalancing:ModifyListenerAttributes",
                "elasticloadbalancing:ModifyLoadBalancerAttributes",
                "elasticloadbalancing:ModifyTargetGroup",
                "elasticloadbalancing:ModifyTargetGroupAttributes",
                "elasticloadbalancing:SetIpAddressType",
                "elasticloadbalancing:SetSecurityGroups",
                "elasticloadbalancing:SetSubnets",
            ],
            **_owned(scope),
        ),
        # why: TargetGroupBindings may name target groups created outside the controller, so targets are
        # (de)registered in any target group, but nothing beyond target groups.
        _allow(
            "RegisterTargets",
            ["elasticloadbalancing:DeregisterTargets", "elasticloadbalancing:RegisterTargets"],
            target_groups,
        ),
    ]


def _listener_statements(scope: ControllerScope) -> list[dict[str, Any]]:
    """Listeners and rules of the load balancers the controller reconciles."""
    listeners_and_rules = [
        _elb(scope.partition, f"{kind}/{lb_type}/*/*/*")
        for kind in ("listener", "listener-rule")
        for lb_type in ("app", "net")
    ]
    return [
        # why: upstream does not scope listener and rule changes by ownership (they hang off a load balancer the
        # controller reconciles); their tags may change, but only on listener and rule ARNs.
        _allow(
            "ManageListenersAndRules",
            [
                "elasticloadbalancing:AddListenerCertificates",
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:CreateRule",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:DeleteRule",
                "elasticloadbalancing:ModifyListener",
                "elasticloadbalancing:ModifyRule",
                "elasticloadbalancing:RemoveListenerCertificates",
                "elasticloadbalancing:SetRulePriorities",
                "elasticloadbalancing:SetWebAcl",
            ],
        ),
        _allow(
            "TagListenersAndRules",
            ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            listeners_and_rules,
        ),
    ]


def controller_policy(scope: ControllerScope) -> dict[str, Any]:
    """The AWS Load Balancer Controller permissions, scoped to its cluster and VPC."""
    statements: list[dict[str, Any]] = [
        # why: the first load balancer in an account needs ELB's service-linked role; nothing else may be created.
        _allow(
            "CreateElbServiceLinkedRoleOnly",
            ["iam:CreateServiceLinkedRole"],
            StringEquals={"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"},
        ),
        *_read_statements(),
        *_security_group_statements(scope),
        *_load_balancer_statements(scope),
        *_listener_statements(scope),
    ]
    # why: Ingress annotations name WAF ACLs and ask for Shield; granted only with the add-on on (upstream: always).
    if scope.waf:
        statements.append(_allow("AttachWebAcls", list(WAF_ACTIONS)))
    if scope.shield:
        statements.append(_allow("ManageShieldProtection", list(SHIELD_ACTIONS)))
    return {"Version": IAM_VERSION, "Statement": statements}
