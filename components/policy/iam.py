"""IAM policy documents and the IAM rules' checks (pure), for `policy.rules`.

A document comes as JSON text (as the AWS provider takes it) or as a mapping. Under CrossGuard every mapping and list
of a resource's properties is a read-only proxy of pulumi-policy, so structure is tested against `Mapping` and
`Sequence`, never `dict` and `list`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from .model import Resource

ROLE = "aws:iam/role:Role"
#: Resources whose `policy` is a permission document.
POLICY_TYPES = (
    "aws:iam/policy:Policy",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/userPolicy:UserPolicy",
    "aws:iam/groupPolicy:GroupPolicy",
)
#: Resources that attach a managed policy by `policyArn`.
ATTACHMENT_TYPES = (
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    "aws:iam/userPolicyAttachment:UserPolicyAttachment",
    "aws:iam/groupPolicyAttachment:GroupPolicyAttachment",
    "aws:iam/policyAttachment:PolicyAttachment",
)
#: AWS's managed policy that allows every action on every resource, in any partition.
ADMINISTRATOR_ACCESS = re.compile(r"arn:[\w-]+:iam::aws:policy/AdministratorAccess")


def as_list(value: Any) -> list[Any]:
    """IAM's "one or a list" fields (Statement, Action, Resource) as a list."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return [value]


def document(value: Any) -> Mapping[str, Any] | None:
    """A policy document given as JSON text or a mapping; None when it is neither (not parseable, or missing)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, Mapping) else None


def statements(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [s for s in as_list(doc.get("Statement") or []) if isinstance(s, Mapping)]


# -------------------------------------------------------------------------------------------------- IRSA trust


def irsa_trust(resource: Resource) -> Iterable[str]:
    doc = document(resource.props.get("assumeRolePolicy"))
    if doc is None:
        return
    for statement in statements(doc):
        if "sts:AssumeRoleWithWebIdentity" not in as_list(statement.get("Action")):
            continue
        condition = statement.get("Condition") or {}
        equals = condition.get("StringEquals") or {}
        subjects = [v for k, v in equals.items() if k.endswith(":sub")]
        audiences = [v for k, v in equals.items() if k.endswith(":aud")]
        if not subjects or not audiences:
            yield f"role {resource.name} trusts web identities without pinning both :sub and :aud (StringEquals)"
        if any("*" in str(v) for v in subjects + audiences) or "StringLike" in condition:
            yield f"role {resource.name} trusts web identities with a wildcard"


# ------------------------------------------------------------------------------------------------- permissions


def _documents(resource: Resource) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """The permission documents a resource carries, each with how a message names it."""
    if resource.type == ROLE:
        for inline in resource.props.get("inlinePolicies") or []:
            doc = document(inline.get("policy")) if isinstance(inline, Mapping) else None
            if doc is not None:
                yield f"{resource.name} (inline policy {inline.get('name')})", doc
    elif resource.type in POLICY_TYPES:
        doc = document(resource.props.get("policy"))
        if doc is not None:
            yield resource.name, doc


def _grants(where: str, statement: Mapping[str, Any]) -> Iterable[str]:
    if statement.get("Effect") != "Allow":
        return
    if "NotAction" in statement:  # allows everything not listed, including what AWS adds later
        yield f"{where} allows every action but {as_list(statement.get('NotAction'))} (Allow with NotAction)"
    # Action names are case-insensitive in IAM: "IAM:*" grants what "iam:*" does.
    actions = [str(a).lower() for a in as_list(statement.get("Action") or [])]
    resources = [str(r) for r in as_list(statement.get("Resource") or [])]
    if "*" in actions or "iam:*" in actions:
        yield f"{where} allows {actions} (every action)"
    elif "*" in resources and any(fnmatchcase("iam:passrole", a) for a in actions):
        yield f"{where} allows iam:PassRole on every role"


def _attached_arns(resource: Resource) -> list[str]:
    if resource.type == ROLE:
        return [str(arn) for arn in resource.props.get("managedPolicyArns") or []]
    if resource.type in ATTACHMENT_TYPES:
        return [str(resource.props.get("policyArn"))]
    return []


def iam_wildcards(resource: Resource) -> Iterable[str]:
    for where, doc in _documents(resource):
        for statement in statements(doc):
            yield from _grants(where, statement)
    for arn in _attached_arns(resource):
        if ADMINISTRATOR_ACCESS.fullmatch(arn):
            yield f"{resource.name} attaches {arn} (every action on every resource)"
