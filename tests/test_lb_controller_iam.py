"""AWS Load Balancer Controller: its IAM policy grants exactly the pinned release's actions, scoped like upstream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.identity.documents import IAM_VERSION
from components.ingress.iam import CLUSTER_TAG, controller_policy

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "aws-load-balancer-controller"
needs_reference = pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference is not beside the repository")

OWNED = {"Null": {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}
CREATED_OWNED = {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "false"}}


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
    policy = controller_policy("aws")
    assert policy["Version"] == IAM_VERSION
    assert policy["Statement"]
    assert all(s["Effect"] == "Allow" for s in policy["Statement"])


@needs_reference
def test_policy_grants_every_action_of_the_pinned_controller_release():
    granted = {action for action, _ in _granted(controller_policy("aws"))}
    assert _reference_actions() - granted == set()


@needs_reference
def test_policy_grants_nothing_beyond_the_pinned_controller_release():
    granted = {action for action, _ in _granted(controller_policy("aws"))}
    assert granted == _reference_actions()


def test_no_action_is_granted_by_wildcard():
    assert not [a for a, _ in _granted(controller_policy("aws")) if "*" in a]


def test_security_groups_are_deleted_only_when_owned_by_the_controller():
    policy = controller_policy("aws")
    assert _granting(policy, "ec2:DeleteSecurityGroup") == [
        {
            "Sid": "ManageOwnedSecurityGroups",
            "Effect": "Allow",
            "Action": [
                "ec2:AuthorizeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup",
                "ec2:RevokeSecurityGroupIngress",
            ],
            "Resource": "*",
            "Condition": OWNED,
        }
    ]


def test_load_balancers_are_created_only_with_the_ownership_tag():
    policy = controller_policy("aws")
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
    assert _statement(controller_policy("aws"), "TagSecurityGroupsOnCreation") == {
        "Sid": "TagSecurityGroupsOnCreation",
        "Effect": "Allow",
        "Action": ["ec2:CreateTags"],
        "Resource": "arn:aws:ec2:*:*:security-group/*",
        "Condition": {"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}, **CREATED_OWNED},
    }


def test_load_balancers_and_target_groups_are_tagged_at_creation_only_by_their_create_calls():
    statement = _statement(controller_policy("aws"), "TagLoadBalancersAndTargetGroupsOnCreation")
    assert statement["Condition"] == {
        "StringEquals": {"elasticloadbalancing:CreateAction": ["CreateLoadBalancer", "CreateTargetGroup"]},
        **CREATED_OWNED,
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
    statements = _granting(controller_policy("aws"), action)
    assert statements
    assert all(s["Condition"] == OWNED for s in statements)


@pytest.mark.parametrize(
    "action", ["ec2:CreateTags", "ec2:DeleteTags", "elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"]
)
def test_tags_of_load_balancers_target_groups_and_security_groups_change_only_under_the_cluster_tag(action):
    owned_kinds = (":security-group/", ":loadbalancer/", ":targetgroup/")
    statements = [
        s
        for s in _granting(controller_policy("aws"), action)
        if s["Resource"] == "*" or any(kind in r for r in _as_list(s["Resource"]) for kind in owned_kinds)
    ]
    assert statements
    for statement in statements:
        assert statement["Resource"] != "*"
        null = statement["Condition"]["Null"]
        # either the request sets the ownership tag (creation), or the resource has it and the request leaves it be
        assert null in (
            {f"aws:RequestTag/{CLUSTER_TAG}": "false"},
            {
                f"aws:RequestTag/{CLUSTER_TAG}": "true",
                f"aws:ResourceTag/{CLUSTER_TAG}": "false",
            },
        )
        if null == {f"aws:RequestTag/{CLUSTER_TAG}": "false"}:
            assert set(statement["Condition"]["StringEquals"]) <= {
                "ec2:CreateAction",
                "elasticloadbalancing:CreateAction",
            }


def test_service_linked_role_may_be_created_only_for_elastic_load_balancing():
    assert _granting(controller_policy("aws"), "iam:CreateServiceLinkedRole") == [
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
    resources = [r for s in controller_policy(partition)["Statement"] for r in _as_list(s["Resource"])]
    arns = [r for r in resources if r != "*"]
    assert arns
    assert not [r for r in resources if r.startswith("arn:aws:")]
    assert all(r.startswith(f"arn:{partition}:") for r in arns)


def test_sids_are_unique_and_valid():
    sids = [s["Sid"] for s in controller_policy("aws")["Statement"]]
    assert len(sids) == len(set(sids))
    assert all(sid.isalnum() and sid[0].isupper() for sid in sids)


def test_rendering_twice_gives_equal_but_independent_documents():
    first, second = controller_policy("aws"), controller_policy("aws")
    assert first == second
    first["Statement"][-1]["Condition"] = {"Bool": {"aws:SecureTransport": "true"}}
    _statement(first, "ManageOwnedSecurityGroups")["Condition"]["Null"].clear()
    assert controller_policy("aws") == second
