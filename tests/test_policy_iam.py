"""The IAM rules (components/policy/iam.py): IRSA trust pinned, no wildcard grants, no administrator access."""

from __future__ import annotations

import json

import pytest

from components.policy.rules import Resource
from tests.policy_support import EVERYTHING, ROLE, broken, res, trust


def test_irsa_trust_must_pin_sub_and_aud_without_wildcards():
    issuer = "oidc.eks.us-west-2.amazonaws.com/id/X"
    only_aud = trust({"StringEquals": {f"{issuer}:aud": "sts.amazonaws.com"}})
    wildcard = trust(
        {
            "StringLike": {f"{issuer}:sub": "system:serviceaccount:*:*"},
            "StringEquals": {f"{issuer}:aud": "sts.amazonaws.com"},
        }
    )
    pinned = trust(
        {"StringEquals": {f"{issuer}:sub": "system:serviceaccount:a:b", f"{issuer}:aud": "sts.amazonaws.com"}}
    )
    assert broken("irsa-trust-pinned", [res(ROLE, assumeRolePolicy=only_aud)]) != []
    assert broken("irsa-trust-pinned", [res(ROLE, assumeRolePolicy=wildcard)]) != []
    assert broken("irsa-trust-pinned", [res(ROLE, assumeRolePolicy=pinned)]) == []


@pytest.mark.parametrize(
    ("statement", "bad"),
    [
        ({"Effect": "Allow", "Action": "*", "Resource": "*"}, True),
        ({"Effect": "Allow", "Action": "iam:*", "Resource": "*"}, True),
        ({"Effect": "Allow", "Action": ["iam:PassRole"], "Resource": "*"}, True),
        ({"Effect": "Allow", "Action": ["iam:PassRole"], "Resource": "arn:aws:iam::1:role/node"}, False),
        ({"Effect": "Allow", "Action": ["ec2:DescribeInstances"], "Resource": "*"}, False),
        ({"Effect": "Deny", "Action": "*", "Resource": "*"}, False),
    ],
)
def test_iam_policies_without_wildcard_grants(statement, bad):
    resource = res("aws:iam/rolePolicy:RolePolicy", policy=json.dumps({"Statement": [statement]}))
    assert bool(broken("iam-no-wildcards", [resource])) is bad


@pytest.mark.parametrize(
    ("statement", "bad"),
    [
        ({"Effect": "Allow", "Action": "IAM:*", "Resource": "*"}, True),
        ({"Effect": "Allow", "Action": "iam:passrole", "Resource": "*"}, True),
        ({"Effect": "Allow", "Action": "iam:Pass*", "Resource": "*"}, True),
        ({"Effect": "Allow", "NotAction": ["iam:*"], "Resource": "*"}, True),
        ({"Effect": "Deny", "NotAction": ["s3:GetObject"], "Resource": "*"}, False),
        ({"Effect": "Allow", "Action": "S3:GetObject", "Resource": "*"}, False),
    ],
)
def test_iam_actions_compare_case_insensitively_and_not_action_is_refused(statement, bad):
    resource = res("aws:iam/policy:Policy", policy=json.dumps({"Statement": [statement]}))
    assert bool(broken("iam-no-wildcards", [resource])) is bad


READ_BUCKET = json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}]})


@pytest.mark.parametrize("type_", ["aws:iam/userPolicy:UserPolicy", "aws:iam/groupPolicy:GroupPolicy"])
def test_user_and_group_policies_are_checked(type_):
    assert broken("iam-no-wildcards", [res(type_, "p", policy=EVERYTHING)]) == ["p allows ['*'] (every action)"]
    assert broken("iam-no-wildcards", [res(type_, "p", policy=READ_BUCKET)]) == []


def test_inline_role_policies_are_checked():
    role = res(
        ROLE, "app", inlinePolicies=[{"name": "read", "policy": READ_BUCKET}, {"name": "all", "policy": EVERYTHING}]
    )
    assert broken("iam-no-wildcards", [role]) == ["app (inline policy all) allows ['*'] (every action)"]
    assert (
        broken("iam-no-wildcards", [res(ROLE, "app", inlinePolicies=[{"name": "read", "policy": READ_BUCKET}])]) == []
    )


@pytest.mark.parametrize(
    ("type_", "props"),
    [
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", {"role": "app", "policyArn": "{arn}"}),
        ("aws:iam/userPolicyAttachment:UserPolicyAttachment", {"user": "u", "policyArn": "{arn}"}),
        ("aws:iam/groupPolicyAttachment:GroupPolicyAttachment", {"group": "g", "policyArn": "{arn}"}),
        ("aws:iam/policyAttachment:PolicyAttachment", {"roles": ["app"], "policyArn": "{arn}"}),
        (ROLE, {"managedPolicyArns": ["{arn}"]}),
    ],
)
def test_administrator_access_is_never_attached(type_, props):
    def attaching(arn: str) -> Resource:
        return res(type_, "a", **json.loads(json.dumps(props).replace("{arn}", arn)))

    assert broken("iam-no-wildcards", [attaching("arn:aws:iam::aws:policy/AdministratorAccess")]) != []
    assert broken("iam-no-wildcards", [attaching("arn:aws-cn:iam::aws:policy/AdministratorAccess")]) != []
    assert broken("iam-no-wildcards", [attaching("arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy")]) == []
