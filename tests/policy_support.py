"""What the policy tests share: resources as the engine describes them, one rule's findings over some of them, and
the resource types and documents the cases are built from."""

from __future__ import annotations

import json
from typing import Any

from components.policy import gpu as policy_gpu
from components.policy import model as policy_model
from components.policy.rules import RULES, Resource
from components.scheduling import WORKLOAD_LABEL

URN = "urn:pulumi:{stack}::eks-ml-platform::{type}::{name}"


def res(type_: str, resource_name: str = "r", stack: str = "dev", deps: tuple[str, ...] = (), **props) -> Resource:
    urn = URN.format(stack=stack, type=type_, name=resource_name)
    return Resource(urn=urn, type=type_, name=resource_name, props=props, dependencies=frozenset(deps))


def rule(name: str):
    return next(r for r in RULES if r.name == name)


def broken(name: str, resources: list[Resource]) -> list[str]:
    """Messages of one rule over some resources."""
    found = rule(name)
    if found.check_stack:
        return [m for _, m in found.check_stack(resources)]
    return [m for r in resources if r.type in found.types for m in found.check_resource(r)]


# ------------------------------------------------------------------------------------------------ resource types

BUCKET = res("aws:s3/bucket:Bucket", "data")
SSE = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
PAB = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
POLICY = "aws:s3/bucketPolicy:BucketPolicy"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
CLUSTER = "eks:index:Cluster"
AWS_CLUSTER = "aws:eks/cluster:Cluster"
LOGS = ["api", "audit", "authenticator"]
ROLE = "aws:iam/role:Role"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
RELEASE = policy_model.HELM_RELEASE
NODEPOOL = policy_gpu.NODEPOOL

# ------------------------------------------------------------------------------------------------------ IAM


def trust(condition) -> str:
    return json.dumps(
        {"Statement": [{"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity", "Condition": condition}]}
    )


EVERYTHING = json.dumps({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})

# ----------------------------------------------------------------------------------------------------- NodePools


def pool(
    name="p",
    *,
    capacity=("spot", "on-demand"),
    gpu=True,
    taint=True,
    limit=True,
    workload=None,
    disruption=None,
    types=None,
    expire_after="Never",
):
    requirements = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(capacity)}]
    if gpu:
        requirements.append({"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["a10g"]})
    if types is not None:
        requirements.append({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)})
    template: dict[str, Any] = {
        "metadata": {"labels": {WORKLOAD_LABEL: workload} if workload else {}},
        "spec": {"requirements": requirements, "expireAfter": expire_after},
    }
    if taint:
        template["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    spec = {
        "template": template,
        "limits": {"nvidia.com/gpu": "8"} if limit else {"cpu": "100"},
        "disruption": disruption
        if disruption is not None
        else {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m", "budgets": [{"nodes": "1"}]},
    }
    return res(NODEPOOL, name, spec=spec)


def pool_choosing(*requirements: dict[str, Any]) -> Resource:
    """A pool with no GPU limit and no taint that chooses its instances by these requirements only."""
    template = {"metadata": {"labels": {}}, "spec": {"requirements": list(requirements)}}
    return res(NODEPOOL, "p", spec={"template": template, "limits": {"cpu": "100"}})


def req(key: str, operator: str = "In", *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def template_spec(props: dict[str, Any]) -> dict[str, Any]:
    """A NodePool's node template spec (requirements, taints)."""
    return props["spec"]["template"]["spec"]
