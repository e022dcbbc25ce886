"""The test helper that evaluates IAM policies (tests/iam_evaluator.py) decides as AWS documents it."""

from __future__ import annotations

import pytest

from tests.iam_evaluator import ALLOW, EXPLICIT_DENY, IMPLICIT_DENY, decide

GROUPS = "arn:aws:ec2:us-west-2:111122223333:security-group/*"
GROUP = "arn:aws:ec2:us-west-2:111122223333:security-group/sg-1"
TAG = "aws:ResourceTag/team"


def allow(**statement):
    return {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **statement}]}


def test_an_explicit_deny_wins_over_an_allow_and_nothing_granted_is_denied():
    policy = allow(Action="ec2:*", Resource="*")
    policy["Statement"].append({"Effect": "Deny", "Action": "ec2:DeleteSecurityGroup", "Resource": GROUPS})
    assert decide(policy, "ec2:DeleteSecurityGroup", GROUP) == EXPLICIT_DENY
    assert decide(policy, "EC2:describeVpcs", "*") == ALLOW  # actions are case-insensitive
    assert decide(policy, "s3:GetObject", "*") == IMPLICIT_DENY


def test_condition_keys_are_and_ed_and_listed_values_or_ed():
    policy = allow(
        Action="ec2:CreateTags",
        Resource=GROUPS,
        Condition={"StringEquals": {TAG: ["a", "b"], "ec2:CreateAction": "CreateSecurityGroup"}},
    )
    both = {TAG: "b", "ec2:CreateAction": "CreateSecurityGroup"}
    assert decide(policy, "ec2:CreateTags", GROUP, both) == ALLOW
    assert decide(policy, "ec2:CreateTags", GROUP, {**both, TAG: "c"}) == IMPLICIT_DENY
    assert decide(policy, "ec2:CreateTags", GROUP, {TAG: "a"}) == IMPLICIT_DENY  # a missing key fails


def test_null_tests_whether_a_key_is_present():
    absent = allow(Action="ec2:CreateTags", Resource="*", Condition={"Null": {TAG: "true"}})
    present = allow(Action="ec2:CreateTags", Resource="*", Condition={"Null": {TAG: "false"}})
    assert decide(absent, "ec2:CreateTags", GROUP, {}) == ALLOW
    assert decide(absent, "ec2:CreateTags", GROUP, {TAG: "x"}) == IMPLICIT_DENY
    assert decide(present, "ec2:CreateTags", GROUP, {TAG: "x"}) == ALLOW
    assert decide(present, "ec2:CreateTags", GROUP, {}) == IMPLICIT_DENY


def test_arn_conditions_match_segment_by_segment():
    vpc = "arn:aws:ec2:us-west-2:111122223333:vpc/vpc-1"
    policy = allow(
        Action="ec2:AuthorizeSecurityGroupIngress", Resource=GROUPS, Condition={"ArnEquals": {"ec2:Vpc": vpc}}
    )
    assert decide(policy, "ec2:AuthorizeSecurityGroupIngress", GROUP, {"ec2:Vpc": vpc}) == ALLOW
    other = "arn:aws:ec2:us-west-2:111122223333:vpc/vpc-2"
    assert decide(policy, "ec2:AuthorizeSecurityGroupIngress", GROUP, {"ec2:Vpc": other}) == IMPLICIT_DENY
    like = allow(Action="ec2:*", Resource="*", Condition={"ArnLike": {"ec2:Vpc": "arn:aws:ec2:*:*:vpc/*"}})
    assert decide(like, "ec2:CreateTags", GROUP, {"ec2:Vpc": vpc}) == ALLOW
    assert decide(like, "ec2:CreateTags", GROUP, {"ec2:Vpc": "arn:aws:ec2:us-west-2:vpc/vpc-1"}) == IMPLICIT_DENY


def test_a_request_on_several_resources_needs_each_allowed():
    vpc = "arn:aws:ec2:us-west-2:111122223333:vpc/vpc-1"
    policy = allow(Action="ec2:CreateSecurityGroup", Resource=GROUPS)
    assert decide(policy, "ec2:CreateSecurityGroup", [vpc, GROUP]) == IMPLICIT_DENY
    policy["Statement"].append({"Effect": "Allow", "Action": "ec2:CreateSecurityGroup", "Resource": vpc})
    assert decide(policy, "ec2:CreateSecurityGroup", [vpc, GROUP]) == ALLOW


def test_an_operator_it_does_not_know_is_an_error_not_a_match():
    policy = allow(Action="ec2:*", Resource="*", Condition={"DateLessThan": {"aws:CurrentTime": "2030-01-01"}})
    with pytest.raises(ValueError, match="DateLessThan"):
        decide(policy, "ec2:CreateTags", GROUP, {"aws:CurrentTime": "2026-01-01"})
