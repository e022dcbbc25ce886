"""The platform's policy rules as pure functions: the security baseline and the GPU best practices.

The CrossGuard pack in `policies/` wraps these for `pulumi preview --policy-pack policies`, and the offline preview
runs them over what it recorded, so both enforce the same code. A rule sees resources as the engine describes them
(type, name, URN, properties with the engine's camelCase names, dependencies): inputs for resource rules, and for
stack rules the recorded inputs offline but the outputs under CrossGuard. Under CrossGuard the properties are
pulumi-policy's read-only proxies, so rules test structure with `Mapping` / `Sequence`, never `dict` / `list`.
Values that are not known yet (during a preview) are skipped, never guessed: see `Resource.unknown` and `_known`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .gpu import (
    NODEPOOL,
    disruption_set,
    gpu_needs_operator,
    gpu_pool_capped,
    gpu_pool_tainted,
    inference_flexible,
    spot_needs_queue,
    training_pool,
)
from .iam import ATTACHMENT_TYPES, POLICY_TYPES, ROLE, iam_wildcards, irsa_trust
from .model import (
    EKS_CLUSTERS,
    HELM_RELEASE,
    LAUNCH_TEMPLATE,
    NAMESPACE,
    NODE_GROUP,
    NODECLASS,
    Enforcement,
    Resource,
    Rule,
    Violation,
)
from .security import (
    POD_SECURITY_LABEL,
    SECURITY_GROUPS,
    SG_RULE,
    VPC_INGRESS,
    WORKLOADS,
    blocks_public,
    bucket_guard,
    default_passwords,
    eks_encryption_and_logs,
    eks_public_endpoint,
    encrypted,
    fsx_private,
    helm_pinned,
    images,
    imdsv2,
    node_class_volumes,
    node_volumes,
    pod_security,
    tls_only,
    world_ingress,
)

# ------------------------------------------------------------------------------------------------------- the rules

RULES: tuple[Rule, ...] = (
    Rule(
        "s3-bucket-encrypted",
        "S3 buckets are encrypted at rest.",
        "Add a BucketServerSideEncryptionConfiguration (SSE-S3 or SSE-KMS).",
        "mandatory",
        check_stack=bucket_guard(
            "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
            encrypted,
            "default encryption",
        ),
    ),
    Rule(
        "s3-public-access-blocked",
        "S3 buckets block all public access.",
        "Add a BucketPublicAccessBlock with all four settings true.",
        "mandatory",
        check_stack=bucket_guard(
            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
            blocks_public,
            "public access block with all four settings on",
        ),
    ),
    Rule(
        "s3-tls-only",
        "S3 buckets refuse requests without TLS.",
        "Add a bucket policy denying s3:* when aws:SecureTransport is false.",
        "mandatory",
        check_stack=bucket_guard("aws:s3/bucketPolicy:BucketPolicy", tls_only, "policy denying non-TLS requests"),
    ),
    Rule(
        "volumes-encrypted",
        "Node volumes (launch templates, managed node groups) are encrypted.",
        "Give node groups a launch template whose block device mappings all set ebs.encrypted: true.",
        "mandatory",
        types=(LAUNCH_TEMPLATE, NODE_GROUP),
        check_resource=node_volumes,
    ),
    Rule(
        "nodeclass-volumes-encrypted",
        "EC2NodeClass volumes are encrypted.",
        "Set ebs.encrypted: true on every blockDeviceMappings entry.",
        "mandatory",
        types=(NODECLASS,),
        check_resource=node_class_volumes,
    ),
    Rule(
        "imdsv2-required",
        "Nodes require IMDSv2.",
        "Set metadataOptions.httpTokens: required.",
        "mandatory",
        types=(LAUNCH_TEMPLATE, NODECLASS),
        check_resource=imdsv2,
    ),
    Rule(
        "eks-secrets-encrypted-and-logged",
        "EKS encrypts secrets with KMS and sends api, audit and authenticator logs.",
        "Set encryptionConfigKeyArn (or encryptionConfig with resources [secrets]) and enabledClusterLogTypes.",
        "mandatory",
        types=EKS_CLUSTERS,
        check_resource=eks_encryption_and_logs,
    ),
    Rule(
        "eks-endpoint-not-public-in-prod",
        "Prod-like stacks expose no EKS endpoint to the whole internet.",
        "Set cluster.endpoint.public: false, or list publicCidrs.",
        "mandatory",
        types=EKS_CLUSTERS,
        check_resource=eks_public_endpoint,
    ),
    Rule(
        "irsa-trust-pinned",
        "IRSA trust policies pin :sub and :aud exactly.",
        "Use StringEquals on <issuer>:sub = system:serviceaccount:<ns>:<sa> and <issuer>:aud = sts.amazonaws.com.",
        "mandatory",
        types=(ROLE,),
        check_resource=irsa_trust,
    ),
    Rule(
        "iam-no-wildcards",
        "IAM policies (inline ones too) grant no '*' actions, no Allow with NotAction, no iam:PassRole on '*', "
        "and AdministratorAccess is never attached.",
        "Name the actions, scope iam:PassRole to the roles that are passed, attach least-privilege policies.",
        "mandatory",
        types=(*POLICY_TYPES, ROLE, *ATTACHMENT_TYPES),
        check_resource=iam_wildcards,
    ),
    Rule(
        "no-world-ingress",
        "No security group is open to the internet except load balancer listener ports (80, 443), never all traffic.",
        "Restrict the source to a security group or a known CIDR.",
        "mandatory",
        types=(VPC_INGRESS, SG_RULE, *SECURITY_GROUPS),
        check_resource=world_ingress,
    ),
    Rule(
        "fsx-in-private-subnet",
        "FSx file systems live in private subnets (only subnets created in the same stack can be checked).",
        "Place the file system in a private subnet.",
        "mandatory",
        check_stack=fsx_private,
    ),
    Rule(
        "helm-chart-pinned",
        "Helm releases pin an exact chart version.",
        "Set version to an exact release (e.g. 1.14.1), in components/versions/.",
        "mandatory",
        types=(HELM_RELEASE,),
        check_resource=helm_pinned,
    ),
    Rule(
        "no-latest-images",
        "Container images (workloads, Helm values) carry a pinned tag or digest.",
        "Use an exact tag (or @sha256 digest), never latest.",
        "mandatory",
        types=(*(f"kubernetes:{g}:{k}" for g in ("apps/v1", "batch/v1", "core/v1") for k in WORKLOADS), HELM_RELEASE),
        check_resource=images,
    ),
    Rule(
        "no-default-passwords",
        "No chart keeps a default admin password.",
        "Generate the password (pulumi-random) and reference it from a Secret.",
        "mandatory",
        types=(HELM_RELEASE,),
        check_resource=default_passwords,
    ),
    Rule(
        "gpu-nodepool-tainted",
        "GPU NodePools carry the nvidia.com/gpu NoSchedule taint.",
        "Add taints: [{key: nvidia.com/gpu, value: 'true', effect: NoSchedule}].",
        "mandatory",
        types=(NODEPOOL,),
        check_resource=gpu_pool_tainted,
        tags=("gpu",),
    ),
    Rule(
        "gpu-nodepool-capped",
        "GPU NodePools set an nvidia.com/gpu limit.",
        "Add limits: {nvidia.com/gpu: <ceiling>}.",
        "mandatory",
        types=(NODEPOOL,),
        check_resource=gpu_pool_capped,
        tags=("gpu", "cost"),
    ),
    Rule(
        "training-pool-protected",
        "Training pools are on-demand, consolidate only when empty, have budgets and never expire their nodes.",
        "Start from the gpu-training preset.",
        "mandatory",
        types=(NODEPOOL,),
        check_resource=training_pool,
        tags=("gpu",),
    ),
    Rule(
        "inference-pool-flexible",
        "Inference pools allow more than one instance type.",
        "Allow several sizes or families (instanceSizes, instanceFamilies).",
        "advisory",
        types=(NODEPOOL,),
        check_resource=inference_flexible,
        tags=("gpu", "cost"),
    ),
    Rule(
        "nodepool-disruption-set",
        "Every NodePool sets consolidation policy, consolidateAfter and budgets.",
        "Set spec.disruption fully.",
        "mandatory",
        types=(NODEPOOL,),
        check_resource=disruption_set,
        tags=("gpu", "cost"),
    ),
    Rule(
        "namespaces-pod-security",
        "Every namespace the stack creates enforces a Pod Security level; only platform namespaces are privileged.",
        f"Label the namespace {POD_SECURITY_LABEL}: baseline (or restricted).",
        "mandatory",
        types=(NAMESPACE,),
        check_resource=pod_security,
    ),
    Rule(
        "spot-needs-interruption-queue",
        "A stack whose pools allow spot has Karpenter's interruption queue.",
        "Use the Karpenter component (it creates the queue and the EventBridge rules).",
        "mandatory",
        check_stack=spot_needs_queue,
        tags=("gpu",),
    ),
    Rule(
        "gpu-pools-need-operator-and-dcgm",
        "A stack with GPU pools runs the GPU Operator (or a device plugin) and the DCGM exporter.",
        "Add the GPU stack component.",
        "mandatory",
        check_stack=gpu_needs_operator,
        tags=("gpu",),
    ),
)


def resolve_enforcement(rule: Rule, overrides: Mapping[str, Any]) -> Enforcement:
    """A rule's enforcement level after pack config, in Pulumi's format: `{"rule": "advisory"}` or
    `{"rule": {"enforcementLevel": "disabled"}}` (`all` applies to every rule)."""
    level: Any = rule.enforcement
    for key in ("all", rule.name):
        value = overrides.get(key)
        if isinstance(value, Mapping):
            value = value.get("enforcementLevel")
        if value is not None:
            level = value
    if level not in ("mandatory", "advisory", "disabled"):
        raise ValueError(f"policy config for {rule.name}: expected mandatory, advisory or disabled, got {level!r}")
    return level


def evaluate(resources: Sequence[Resource], overrides: Mapping[str, Any] | None = None) -> list[Violation]:
    """Every violation of every enabled rule, in rule order."""
    violations = []
    for rule in RULES:
        level = resolve_enforcement(rule, overrides or {})
        if level == "disabled":
            continue
        if rule.check_resource is not None:
            for resource in resources:
                if resource.type in rule.types:
                    violations += [Violation(rule.name, level, resource.urn, m) for m in rule.check_resource(resource)]
        if rule.check_stack is not None:
            violations += [Violation(rule.name, level, urn, m) for urn, m in rule.check_stack(resources)]
    return violations
