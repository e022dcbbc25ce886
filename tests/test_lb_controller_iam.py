"""AWS Load Balancer Controller: its IAM policy grants exactly the pinned release's actions (WAF and Shield only when
turned on), scoped to its own cluster and VPC: evaluated against another cluster's resources, it denies."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.identity.documents import IAM_VERSION
from components.ingress.iam import CLUSTER_TAG, SHIELD_ACTIONS, WAF_ACTIONS, ControllerScope, controller_policy
from tests.iam_evaluator import ALLOW, IMPLICIT_DENY, decide

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "aws-load-balancer-controller"
needs_reference = pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference is not beside the repository")

ACCOUNT = "111122223333"
REGION = "us-west-2"
SCOPE = ControllerScope(
    partition="aws", region=REGION, account_id=ACCOUNT, vpc_id="vpc-0aaa0aaa0aaa0aaa0", cluster_name="alpha"
)
#: Another cluster in the same account and region, with its own VPC.
OTHER = ControllerScope(
    partition="aws", region=REGION, account_id=ACCOUNT, vpc_id="vpc-0bbb0bbb0bbb0bbb0", cluster_name="beta"
)
EVERYTHING = ControllerScope(**{**SCOPE.__dict__, "waf": True, "shield": True})
OWNED = {"StringEquals": {f"aws:ResourceTag/{CLUSTER_TAG}": "alpha"}}
CREATED_OWNED = {"StringEquals": {f"aws:RequestTag/{CLUSTER_TAG}": "alpha"}}


def rendered(scope: ControllerScope = SCOPE) -> dict[str, Any]:
    return controller_policy(scope)


def _as_list(value: str | list[str]) -> list[str]:
    return value if isinstance(value, list) else [value]


def _granted(policy: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for statement in policy["Statement"]:
        assert statement["Effect"] == "Allow"
        for action in _as_list(statement["Action"]):
            yield action, statement


def _statement(policy: dict[str, Any], sid: str) -> dict[str, Any]:
    return next(s for s in policy["Statement"] if s["Sid"] == sid)


def _granting(policy: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for a, s in _granted(policy) if a == action]


def _reference_actions() -> set[str]:
    return {
        line.split("\t")[0].strip()
        for line in (REFERENCE / "controller-actions.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }


def test_policy_is_a_versioned_document_of_allow_statements():
    policy = rendered()
    assert policy["Version"] == IAM_VERSION
    assert policy["Statement"]
    assert all(s["Effect"] == "Allow" for s in policy["Statement"])


@needs_reference
def test_policy_grants_every_action_of_the_pinned_controller_release_with_waf_and_shield_on():
    granted = {action for action, _ in _granted(rendered(EVERYTHING))}
    assert _reference_actions() - granted == set()


@needs_reference
def test_without_waf_and_shield_only_their_actions_are_left_out():
    granted = {action for action, _ in _granted(rendered())}
    assert _reference_actions() - granted == set(WAF_ACTIONS) | set(SHIELD_ACTIONS)
    waf_only = {action for action, _ in _granted(rendered(ControllerScope(**{**SCOPE.__dict__, "waf": True})))}
    assert _reference_actions() - waf_only == set(SHIELD_ACTIONS)


@needs_reference
def test_policy_grants_nothing_beyond_the_pinned_controller_release():
    granted = {action for action, _ in _granted(rendered(EVERYTHING))}
    assert granted == _reference_actions()


def test_no_action_is_granted_by_wildcard():
    assert not [a for a, _ in _granted(rendered()) if "*" in a]


def test_security_groups_are_deleted_only_when_owned_by_the_controller():
    policy = rendered()
    assert _granting(policy, "ec2:DeleteSecurityGroup") == [
        {
            "Sid": "ManageOwnedSecurityGroups",
            "Effect": "Allow",
            "Action": [
                "ec2:AuthorizeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup",
                "ec2:RevokeSecurityGroupIngress",
            ],
            "Resource": f"arn:aws:ec2:{REGION}:{ACCOUNT}:security-group/*",
            "Condition": OWNED,
        }
    ]


def test_load_balancers_are_created_only_with_the_ownership_tag():
    policy = rendered()
    assert _granting(policy, "elasticloadbalancing:CreateLoadBalancer") == [
        {
            "Sid": "CreateOwnedLoadBalancersAndTargetGroups",
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
            "Resource": "*",
            "Condition": CREATED_OWNED,
        }
    ]


def test_security_groups_are_tagged_at_creation_only_by_create_security_group_with_the_ownership_tag():
    assert _statement(rendered(), "TagSecurityGroupsOnCreation") == {
        "Sid": "TagSecurityGroupsOnCreation",
        "Effect": "Allow",
        "Action": ["ec2:CreateTags"],
        "Resource": f"arn:aws:ec2:{REGION}:{ACCOUNT}:security-group/*",
        "Condition": {
            "StringEquals": {"ec2:CreateAction": "CreateSecurityGroup", f"aws:RequestTag/{CLUSTER_TAG}": "alpha"}
        },
    }


def test_load_balancers_and_target_groups_are_tagged_at_creation_only_by_their_create_calls():
    statement = _statement(rendered(), "TagLoadBalancersAndTargetGroupsOnCreation")
    assert statement["Condition"] == {
        "StringEquals": {
            "elasticloadbalancing:CreateAction": ["CreateLoadBalancer", "CreateTargetGroup"],
            f"aws:RequestTag/{CLUSTER_TAG}": "alpha",
        }
    }


@pytest.mark.parametrize(
    "action",
    [
        "ec2:DeleteSecurityGroup",
        "elasticloadbalancing:DeleteLoadBalancer",
        "elasticloadbalancing:DeleteTargetGroup",
        "elasticloadbalancing:ModifyLoadBalancerAttributes",
        "elasticloadbalancing:ModifyTargetGroup",
        "elasticloadbalancing:SetSecurityGroups",
    ],
)
def test_deleting_or_reconfiguring_load_balancers_target_groups_and_security_groups_requires_ownership(action):
    statements = _granting(rendered(), action)
    assert statements
    assert all(s["Condition"] == OWNED for s in statements)


@pytest.mark.parametrize(
    "action", ["ec2:CreateTags", "ec2:DeleteTags", "elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"]
)
def test_tags_of_load_balancers_target_groups_and_security_groups_change_only_under_the_cluster_tag(action):
    owned_kinds = (":security-group/", ":loadbalancer/", ":targetgroup/")
    statements = [
        s
        for s in _granting(rendered(), action)
        if s["Resource"] == "*" or any(kind in r for r in _as_list(s["Resource"]) for kind in owned_kinds)
    ]
    assert statements
    for statement in statements:
        assert statement["Resource"] != "*"
        condition = statement["Condition"]
        # either the request sets this cluster's ownership tag (creation), or the resource has it and the request
        # leaves it be
        if "Null" in condition:
            assert condition == {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "true"}, **OWNED}
        else:
            assert condition["StringEquals"][f"aws:RequestTag/{CLUSTER_TAG}"] == "alpha"
            assert set(condition["StringEquals"]) - {f"aws:RequestTag/{CLUSTER_TAG}"} <= {
                "ec2:CreateAction",
                "elasticloadbalancing:CreateAction",
            }


def test_service_linked_role_may_be_created_only_for_elastic_load_balancing():
    assert _granting(rendered(), "iam:CreateServiceLinkedRole") == [
        {
            "Sid": "CreateElbServiceLinkedRoleOnly",
            "Effect": "Allow",
            "Action": ["iam:CreateServiceLinkedRole"],
            "Resource": "*",
            "Condition": {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
        }
    ]


@pytest.mark.parametrize("partition", ["aws-cn", "aws-us-gov"])
def test_every_arn_is_in_the_requested_partition(partition):
    scope = ControllerScope(**{**EVERYTHING.__dict__, "partition": partition})
    resources = [r for s in controller_policy(scope)["Statement"] for r in _as_list(s["Resource"])]
    arns = [r for r in resources if r != "*"]
    assert arns
    assert not [r for r in resources if r.startswith("arn:aws:")]
    assert all(r.startswith(f"arn:{partition}:") for r in arns)


def test_sids_are_unique_and_valid():
    sids = [s["Sid"] for s in rendered()["Statement"]]
    assert len(sids) == len(set(sids))
    assert all(sid.isalnum() and sid[0].isupper() for sid in sids)


def test_rendering_twice_gives_equal_but_independent_documents():
    first, second = rendered(), rendered()
    assert first == second
    first["Statement"][-1]["Condition"] = {"Bool": {"aws:SecureTransport": "true"}}
    _statement(first, "ManageOwnedSecurityGroups")["Condition"]["StringEquals"].clear()
    assert rendered() == second


# ------------------------------------------------------------------ the policy evaluated against requests


def _arn(scope: ControllerScope, service: str, path: str) -> str:
    return f"arn:aws:{service}:{REGION}:{ACCOUNT}:{path}"


def _cluster_tagged(scope: ControllerScope) -> dict[str, str]:
    return {f"aws:ResourceTag/{CLUSTER_TAG}": scope.cluster_name}


def _requests(of: ControllerScope) -> list[tuple[str, str, list[str], dict[str, str], dict[str, dict[str, str]]]]:
    """What a controller does to the resources of the cluster `of` (each: what, action, resources, request keys,
    each resource's own keys), as the alpha controller would send it."""
    balancer = _arn(of, "elasticloadbalancing", f"loadbalancer/app/k8s-{of.cluster_name}/50dc6c495c0c9188")
    target_group = _arn(of, "elasticloadbalancing", f"targetgroup/k8s-{of.cluster_name}/73e2d6bc24d8a067")
    own_group = _arn(of, "ec2", "security-group/sg-0123456789abcdef0")
    node_group = _arn(of, "ec2", "security-group/sg-0fedcba9876543210")
    new_group = _arn(of, "ec2", "security-group/*")
    in_vpc = {"ec2:Vpc": of.vpc_arn}
    alpha_tag = {f"aws:RequestTag/{CLUSTER_TAG}": SCOPE.cluster_name}
    return [
        (
            "delete its load balancer",
            "elasticloadbalancing:DeleteLoadBalancer",
            [balancer],
            {},
            {balancer: _cluster_tagged(of)},
        ),
        (
            "repoint its load balancer's security groups",
            "elasticloadbalancing:SetSecurityGroups",
            [balancer],
            {},
            {balancer: _cluster_tagged(of)},
        ),
        (
            "delete its target group",
            "elasticloadbalancing:DeleteTargetGroup",
            [target_group],
            {},
            {target_group: _cluster_tagged(of)},
        ),
        ("retag its load balancer", "elasticloadbalancing:AddTags", [balancer], {}, {balancer: _cluster_tagged(of)}),
        (
            "delete its security group",
            "ec2:DeleteSecurityGroup",
            [own_group],
            {},
            {own_group: {**_cluster_tagged(of), **in_vpc}},
        ),
        ("retag its security group", "ec2:CreateTags", [own_group], {}, {own_group: {**_cluster_tagged(of), **in_vpc}}),
        ("open its nodes' security group", "ec2:AuthorizeSecurityGroupIngress", [node_group], {}, {node_group: in_vpc}),
        ("close its nodes' security group", "ec2:RevokeSecurityGroupIngress", [node_group], {}, {node_group: in_vpc}),
        (
            "create a security group in its VPC",
            "ec2:CreateSecurityGroup",
            [_arn(of, "ec2", f"vpc/{of.vpc_id}"), new_group],
            alpha_tag,
            {},
        ),
    ]


@pytest.mark.parametrize("what", [request[0] for request in _requests(SCOPE)])
def test_the_controller_may_do_its_work_on_its_own_clusters_resources(what):
    (request,) = [r for r in _requests(SCOPE) if r[0] == what]
    _, action, resources, context, per_resource = request
    assert decide(rendered(), action, resources, context, per_resource) == ALLOW


@pytest.mark.parametrize("what", [request[0] for request in _requests(OTHER)])
def test_the_controller_is_denied_another_clusters_resources(what):
    (request,) = [r for r in _requests(OTHER) if r[0] == what]
    _, action, resources, context, per_resource = request
    assert decide(rendered(), action, resources, context, per_resource) == IMPLICIT_DENY


@needs_reference
def test_upstreams_policy_allows_what_ours_denies_on_another_cluster():
    """What the narrowing buys: upstream's published policy lets a controller reach every one of these."""
    import json

    upstream = json.loads((REFERENCE / "iam_policy.json").read_text())
    for what, action, resources, context, per_resource in _requests(OTHER):
        assert decide(upstream, action, resources, context, per_resource) == ALLOW, what


def test_waf_and_shield_are_denied_unless_turned_on():
    web_acl = "arn:aws:wafv2:us-west-2:111122223333:regional/webacl/x/0"
    balancer = _arn(SCOPE, "elasticloadbalancing", "loadbalancer/app/k8s-alpha/50dc6c495c0c9188")
    assert decide(rendered(), "wafv2:AssociateWebACL", [web_acl]) == IMPLICIT_DENY
    assert decide(rendered(), "shield:CreateProtection", [balancer]) == IMPLICIT_DENY
    assert decide(rendered(EVERYTHING), "wafv2:AssociateWebACL", [web_acl]) == ALLOW
    assert decide(rendered(EVERYTHING), "shield:CreateProtection", [balancer]) == ALLOW
