"""The platform's policy rules as pure functions: the security baseline and the GPU best practices.

The CrossGuard pack in `policies/` wraps these for `pulumi preview --policy-pack policies`, and the offline preview
runs them over what it recorded, so both enforce the same code. A rule sees resources as the engine describes them
(type, name, URN, input properties with the engine's camelCase names, dependencies); values that are not known yet
(outputs during a preview) are skipped, never guessed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from . import gpu_facts
from .scheduling import GPU_RESOURCE, GPU_TAINT, WORKLOAD_LABEL

Enforcement = Literal["mandatory", "advisory", "disabled"]

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
BUCKET = "aws:s3/bucket:Bucket"
WORLD = {"0.0.0.0/0", "::/0"}
#: Ports a security group may open to the world: load balancer listeners.
LISTENER_PORTS = {80, 443}


@dataclass(frozen=True)
class Resource:
    """A resource as a rule sees it."""

    urn: str
    type: str
    name: str
    props: Mapping[str, Any]
    dependencies: frozenset[str] = frozenset()

    @property
    def stack(self) -> str:
        return self.urn.split("::")[0].removeprefix("urn:pulumi:")


@dataclass(frozen=True)
class Violation:
    rule: str
    enforcement: Enforcement
    urn: str
    message: str


@dataclass(frozen=True)
class Rule:
    """One policy. A resource rule checks each resource of `types`; a stack rule checks them all together."""

    name: str
    description: str
    remediation: str
    enforcement: Enforcement
    types: tuple[str, ...] = ()
    check_resource: Callable[[Resource], Iterable[str]] | None = None
    check_stack: Callable[[Sequence[Resource]], Iterable[tuple[str, str]]] | None = None
    tags: tuple[str, ...] = field(default=("security",))


# ------------------------------------------------------------------------------------------------------ helpers


def _doc(value: Any) -> dict[str, Any] | None:
    """A policy document given as JSON text or a dict; None when unknown."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return value if isinstance(value, dict) else None


def _listify(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _truthy(value: Any) -> bool:
    return value is True or value == "true"


def _by_dependency(resources: Sequence[Resource], target: Resource, type_: str) -> list[Resource]:
    return [r for r in resources if r.type == type_ and target.urn in r.dependencies]


def _pool_spec(resource: Resource) -> dict[str, Any]:
    return resource.props.get("spec") or {}


def _requirements(resource: Resource) -> dict[str, list[str]]:
    template = (_pool_spec(resource).get("template") or {}).get("spec") or {}
    return {r.get("key"): list(r.get("values") or []) for r in template.get("requirements") or []}


def _taints(resource: Resource) -> list[dict[str, Any]]:
    return ((_pool_spec(resource).get("template") or {}).get("spec") or {}).get("taints") or []


def _labels(resource: Resource) -> dict[str, str]:
    return ((_pool_spec(resource).get("template") or {}).get("metadata") or {}).get("labels") or {}


def is_gpu_pool(resource: Resource) -> bool:
    requirements = _requirements(resource)
    families = set(requirements.get("karpenter.k8s.aws/instance-family", []))
    return (
        "karpenter.k8s.aws/instance-gpu-name" in requirements
        or "karpenter.k8s.aws/instance-gpu-count" in requirements
        or bool(families & gpu_facts.NVIDIA_FAMILIES)
        or GPU_RESOURCE in (_pool_spec(resource).get("limits") or {})
    )


def _workload(resource: Resource) -> str | None:
    return _labels(resource).get(WORKLOAD_LABEL)


def _statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in _listify(document.get("Statement") or []) if isinstance(s, dict)]


# ------------------------------------------------------------------------------------------------ security rules


def _bucket_guard(
    type_: str, ok: Callable[[Resource], bool], what: str
) -> Callable[[Sequence[Resource]], Iterable[tuple[str, str]]]:
    def check(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
        for bucket in (r for r in resources if r.type == BUCKET):
            guards = _by_dependency(resources, bucket, type_)
            if not any(ok(g) for g in guards):
                yield bucket.urn, f"bucket {bucket.name} has no {what}"

    return check


def _encrypted(config: Resource) -> bool:
    rules = config.props.get("rules") or []
    return any(
        (r.get("applyServerSideEncryptionByDefault") or {}).get("sseAlgorithm") for r in rules if isinstance(r, dict)
    )


def _blocks_public(block: Resource) -> bool:
    keys = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    return all(block.props.get(k) is True for k in keys)


def _tls_only(policy: Resource) -> bool:
    document = _doc(policy.props.get("policy"))
    if document is None:
        return True  # not known yet in a preview
    return any(
        s.get("Effect") == "Deny"
        and (s.get("Condition") or {}).get("Bool", {}).get("aws:SecureTransport") in ("false", False)
        for s in _statements(document)
    )


def _launch_template_volumes(resource: Resource) -> Iterable[str]:
    for device in resource.props.get("blockDeviceMappings") or []:
        if not _truthy((device.get("ebs") or {}).get("encrypted")):
            yield f"block device {device.get('deviceName')} of {resource.name} is not encrypted"


def _node_class_volumes(resource: Resource) -> Iterable[str]:
    for device in (resource.props.get("spec") or {}).get("blockDeviceMappings") or []:
        if not _truthy((device.get("ebs") or {}).get("encrypted")):
            yield f"block device {device.get('deviceName')} of EC2NodeClass {resource.name} is not encrypted"


def _imdsv2(resource: Resource) -> Iterable[str]:
    options = resource.props.get("metadataOptions")
    if resource.type == NODECLASS:
        options = (resource.props.get("spec") or {}).get("metadataOptions")
    if not options or options.get("httpTokens") != "required":
        yield f"{resource.name} does not require IMDSv2 (metadataOptions.httpTokens: required)"


_REQUIRED_LOGS = {"api", "audit", "authenticator"}


def _eks_encryption_and_logs(resource: Resource) -> Iterable[str]:
    props = resource.props
    encrypted = props.get("encryptionConfigKeyArn") or props.get("encryptionConfig")
    if not encrypted:
        yield f"cluster {resource.name} does not encrypt Kubernetes secrets with a KMS key"
    logs = set(props.get("enabledClusterLogTypes") or [])
    if not _REQUIRED_LOGS <= logs:
        yield f"cluster {resource.name} does not send {sorted(_REQUIRED_LOGS - logs)} control-plane logs"


def _eks_public_endpoint(resource: Resource) -> Iterable[str]:
    if "prod" not in resource.stack:
        return
    props = resource.props
    access = props.get("vpcConfig") or props
    if access.get("endpointPublicAccess") is not True:
        return
    cidrs = set(access.get("publicAccessCidrs") or ["0.0.0.0/0"])
    if cidrs & WORLD:
        yield f"cluster {resource.name} of stack {resource.stack} has a public endpoint open to the internet"


def _irsa_trust(resource: Resource) -> Iterable[str]:
    document = _doc(resource.props.get("assumeRolePolicy"))
    if document is None:
        return
    for statement in _statements(document):
        if "sts:AssumeRoleWithWebIdentity" not in _listify(statement.get("Action")):
            continue
        condition = statement.get("Condition") or {}
        equals = condition.get("StringEquals") or {}
        subjects = [v for k, v in equals.items() if k.endswith(":sub")]
        audiences = [v for k, v in equals.items() if k.endswith(":aud")]
        if not subjects or not audiences:
            yield f"role {resource.name} trusts web identities without pinning both :sub and :aud (StringEquals)"
        if any("*" in str(v) for v in subjects + audiences) or "StringLike" in condition:
            yield f"role {resource.name} trusts web identities with a wildcard"


def _iam_wildcards(resource: Resource) -> Iterable[str]:
    document = _doc(resource.props.get("policy"))
    if document is None:
        return
    for statement in _statements(document):
        if statement.get("Effect") != "Allow":
            continue
        actions = [str(a) for a in _listify(statement.get("Action"))]
        resources = [str(r) for r in _listify(statement.get("Resource"))]
        if "*" in actions or any(a.endswith(":*") and a.split(":")[0] == "iam" for a in actions):
            yield f"{resource.name} allows {actions} (every action)"
        if "iam:PassRole" in actions and "*" in resources:
            yield f"{resource.name} allows iam:PassRole on every role"


def _world_ingress(resource: Resource) -> Iterable[str]:
    rules: list[dict[str, Any]] = []
    if resource.type == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
        rules = [dict(resource.props, cidrBlocks=[resource.props.get("cidrIpv4"), resource.props.get("cidrIpv6")])]
    elif resource.type == "aws:ec2/securityGroupRule:SecurityGroupRule" and resource.props.get("type") == "ingress":
        rules = [
            dict(
                resource.props,
                cidrBlocks=list(resource.props.get("cidrBlocks") or [])
                + list(resource.props.get("ipv6CidrBlocks") or []),
            )
        ]
    elif resource.type == "aws:ec2/securityGroup:SecurityGroup":
        rules = [
            dict(r, cidrBlocks=list(r.get("cidrBlocks") or []) + list(r.get("ipv6CidrBlocks") or []))
            for r in resource.props.get("ingress") or []
        ]
    for rule in rules:
        if not set(filter(None, rule["cidrBlocks"])) & WORLD:
            continue
        low, high = rule.get("fromPort"), rule.get("toPort")
        if low is not None and low == high and low in LISTENER_PORTS:
            continue
        yield f"{resource.name} opens ports {low}-{high} to the internet"


def _fsx_private(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
    for fs in (r for r in resources if r.type == "aws:fsx/lustreFileSystem:LustreFileSystem"):
        subnets = [r for r in resources if r.type == "aws:ec2/subnet:Subnet" and r.urn in fs.dependencies]
        for subnet in subnets:
            tags = subnet.props.get("tags") or {}
            if subnet.props.get("mapPublicIpOnLaunch") is True or "kubernetes.io/role/elb" in tags:
                yield fs.urn, f"file system {fs.name} is placed in public subnet {subnet.name}"


_EXACT_VERSION = re.compile(r"v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?")


def _helm_pinned(resource: Resource) -> Iterable[str]:
    version = resource.props.get("version")
    if not isinstance(version, str) or not _EXACT_VERSION.fullmatch(version):
        yield f"Helm release {resource.name} is not pinned to an exact chart version (got {version!r})"


_WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod")


def _images(resource: Resource) -> Iterable[str]:
    spec = resource.props.get("spec") or {}
    if resource.type.endswith(":Pod"):
        pods = [spec]
    elif resource.type.endswith(":CronJob"):
        pods = [((spec.get("jobTemplate") or {}).get("spec") or {}).get("template", {}).get("spec") or {}]
    else:
        pods = [(spec.get("template") or {}).get("spec") or {}]
    for pod in pods:
        for container in list(pod.get("containers") or []) + list(pod.get("initContainers") or []):
            image = container.get("image")
            if not isinstance(image, str):
                continue
            name, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "")
            if "@sha256:" not in image and tag in ("", "latest"):
                yield f"container {container.get('name')} of {resource.name} uses image {image!r} without a pinned tag"


def _default_passwords(resource: Resource) -> Iterable[str]:
    values = resource.props.get("values") or {}
    if resource.props.get("chart") != "kube-prometheus-stack":
        return
    grafana = values.get("grafana") or {}
    if grafana.get("enabled") is False:
        return
    if grafana.get("adminPassword") in (None, "prom-operator") and not (grafana.get("admin") or {}).get(
        "existingSecret"
    ):
        yield f"{resource.name} leaves Grafana's admin password at the chart default"


# ------------------------------------------------------------------------------------------------------ GPU rules


def _gpu_pool_tainted(resource: Resource) -> Iterable[str]:
    if is_gpu_pool(resource) and not any(
        t.get("key") == GPU_TAINT.key and t.get("effect") == GPU_TAINT.effect for t in _taints(resource)
    ):
        yield f"GPU NodePool {resource.name} has no {GPU_TAINT.key}:{GPU_TAINT.effect} taint"


def _gpu_pool_capped(resource: Resource) -> Iterable[str]:
    if is_gpu_pool(resource) and GPU_RESOURCE not in (_pool_spec(resource).get("limits") or {}):
        yield f"GPU NodePool {resource.name} has no {GPU_RESOURCE} limit"


def _training_pool(resource: Resource) -> Iterable[str]:
    if _workload(resource) != "training":
        return
    capacity = set(_requirements(resource).get("karpenter.sh/capacity-type", ["spot", "on-demand"]))
    if capacity != {"on-demand"}:
        yield f"training NodePool {resource.name} allows {sorted(capacity)} capacity; use on-demand only"
    disruption = _pool_spec(resource).get("disruption") or {}
    if disruption.get("consolidationPolicy") != "WhenEmpty":
        yield f"training NodePool {resource.name} may be consolidated while busy; use consolidationPolicy WhenEmpty"
    if not disruption.get("budgets"):
        yield f"training NodePool {resource.name} has no disruption budgets"


def _inference_flexible(resource: Resource) -> Iterable[str]:
    if _workload(resource) != "inference":
        return
    types = _requirements(resource).get("node.kubernetes.io/instance-type")
    if types is not None and len(types) < 2:
        yield f"inference NodePool {resource.name} allows a single instance type; spot capacity for it runs out"


def _disruption_set(resource: Resource) -> Iterable[str]:
    disruption = _pool_spec(resource).get("disruption") or {}
    missing = [k for k in ("consolidationPolicy", "consolidateAfter", "budgets") if not disruption.get(k)]
    if missing:
        yield f"NodePool {resource.name} does not set disruption {missing}"


def _spot_needs_queue(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
    spot_pools = [
        r
        for r in resources
        if r.type == NODEPOOL and "spot" in _requirements(r).get("karpenter.sh/capacity-type", ["spot"])
    ]
    if not spot_pools:
        return
    has_queue = any(r.type == "aws:sqs/queue:Queue" for r in resources)
    has_rule = any(
        r.type == "aws:cloudwatch/eventRule:EventRule"
        and "EC2 Spot Instance Interruption Warning" in str(r.props.get("eventPattern"))
        for r in resources
    )
    karpenter = [r for r in resources if r.type == HELM_RELEASE and r.props.get("name") == "karpenter"]
    wired = any(((r.props.get("values") or {}).get("settings") or {}).get("interruptionQueue") for r in karpenter)
    if not (has_queue and has_rule and wired):
        for pool in spot_pools:
            yield (
                pool.urn,
                f"NodePool {pool.name} allows spot but the stack has no interruption queue wired to Karpenter",
            )


def _gpu_needs_operator(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
    gpu_pools = [r for r in resources if r.type == NODEPOOL and is_gpu_pool(r)]
    if not gpu_pools:
        return
    releases = {str(r.props.get("chart")).rsplit("/", 1)[-1]: r for r in resources if r.type == HELM_RELEASE}
    operator = releases.get("gpu-operator")
    device_plugin = operator is not None or "nvidia-device-plugin" in releases
    values = (operator.props.get("values") or {}) if operator else {}
    dcgm = (
        operator is not None and (values.get("dcgmExporter") or {}).get("enabled") is not False
    ) or "dcgm-exporter" in releases
    for pool in gpu_pools:
        if not device_plugin:
            yield pool.urn, f"GPU NodePool {pool.name} but no GPU Operator or device plugin in the stack"
        if not dcgm:
            yield pool.urn, f"GPU NodePool {pool.name} but no DCGM exporter: GPU use would be invisible"


# ------------------------------------------------------------------------------------------------------- the rules

RULES: tuple[Rule, ...] = (
    Rule(
        "s3-bucket-encrypted",
        "S3 buckets are encrypted at rest.",
        "Add a BucketServerSideEncryptionConfiguration (SSE-S3 or SSE-KMS).",
        "mandatory",
        check_stack=_bucket_guard(
            "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
            _encrypted,
            "default encryption",
        ),
    ),
    Rule(
        "s3-public-access-blocked",
        "S3 buckets block all public access.",
        "Add a BucketPublicAccessBlock with all four settings true.",
        "mandatory",
        check_stack=_bucket_guard(
            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
            _blocks_public,
            "public access block with all four settings on",
        ),
    ),
    Rule(
        "s3-tls-only",
        "S3 buckets refuse requests without TLS.",
        "Add a bucket policy denying s3:* when aws:SecureTransport is false.",
        "mandatory",
        check_stack=_bucket_guard("aws:s3/bucketPolicy:BucketPolicy", _tls_only, "policy denying non-TLS requests"),
    ),
    Rule(
        "volumes-encrypted",
        "Node volumes (launch templates, EC2NodeClasses) are encrypted.",
        "Set ebs.encrypted: true on every block device mapping.",
        "mandatory",
        types=("aws:ec2/launchTemplate:LaunchTemplate",),
        check_resource=_launch_template_volumes,
    ),
    Rule(
        "nodeclass-volumes-encrypted",
        "EC2NodeClass volumes are encrypted.",
        "Set ebs.encrypted: true on every blockDeviceMappings entry.",
        "mandatory",
        types=(NODECLASS,),
        check_resource=_node_class_volumes,
    ),
    Rule(
        "imdsv2-required",
        "Nodes require IMDSv2.",
        "Set metadataOptions.httpTokens: required.",
        "mandatory",
        types=("aws:ec2/launchTemplate:LaunchTemplate", NODECLASS),
        check_resource=_imdsv2,
    ),
    Rule(
        "eks-secrets-encrypted-and-logged",
        "EKS encrypts secrets with KMS and sends api, audit and authenticator logs.",
        "Set encryptionConfigKeyArn and enabledClusterLogTypes.",
        "mandatory",
        types=("eks:index:Cluster", "aws:eks/cluster:Cluster"),
        check_resource=_eks_encryption_and_logs,
    ),
    Rule(
        "eks-endpoint-not-public-in-prod",
        "Prod-like stacks expose no EKS endpoint to the whole internet.",
        "Set cluster.endpoint.public: false, or list publicCidrs.",
        "mandatory",
        types=("eks:index:Cluster", "aws:eks/cluster:Cluster"),
        check_resource=_eks_public_endpoint,
    ),
    Rule(
        "irsa-trust-pinned",
        "IRSA trust policies pin :sub and :aud exactly.",
        "Use StringEquals on <issuer>:sub = system:serviceaccount:<ns>:<sa> and <issuer>:aud = sts.amazonaws.com.",
        "mandatory",
        types=("aws:iam/role:Role",),
        check_resource=_irsa_trust,
    ),
    Rule(
        "iam-no-wildcards",
        "IAM policies grant no '*' actions and no iam:PassRole on '*'.",
        "Name the actions and scope iam:PassRole to the roles that are passed.",
        "mandatory",
        types=("aws:iam/policy:Policy", "aws:iam/rolePolicy:RolePolicy"),
        check_resource=_iam_wildcards,
    ),
    Rule(
        "no-world-ingress",
        "No security group is open to the internet except load balancer listener ports (80, 443).",
        "Restrict the source to a security group or a known CIDR.",
        "mandatory",
        types=(
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
            "aws:ec2/securityGroupRule:SecurityGroupRule",
            "aws:ec2/securityGroup:SecurityGroup",
        ),
        check_resource=_world_ingress,
    ),
    Rule(
        "fsx-in-private-subnet",
        "FSx file systems live in private subnets.",
        "Place the file system in a private subnet.",
        "mandatory",
        check_stack=_fsx_private,
    ),
    Rule(
        "helm-chart-pinned",
        "Helm releases pin an exact chart version.",
        "Set version to an exact release (e.g. 1.14.1), in components/versions.py.",
        "mandatory",
        types=(HELM_RELEASE,),
        check_resource=_helm_pinned,
    ),
    Rule(
        "no-latest-images",
        "Container images carry a pinned tag or digest.",
        "Use an exact tag (or @sha256 digest), never latest.",
        "mandatory",
        types=tuple(f"kubernetes:{g}:{k}" for g in ("apps/v1", "batch/v1", "core/v1") for k in _WORKLOADS),
        check_resource=_images,
    ),
    Rule(
        "no-default-passwords",
        "No chart keeps a default admin password.",
        "Generate the password (pulumi-random) and reference it from a Secret.",
        "mandatory",
        types=(HELM_RELEASE,),
        check_resource=_default_passwords,
    ),
    Rule(
        "gpu-nodepool-tainted",
        "GPU NodePools carry the nvidia.com/gpu NoSchedule taint.",
        "Add taints: [{key: nvidia.com/gpu, value: 'true', effect: NoSchedule}].",
        "mandatory",
        types=(NODEPOOL,),
        check_resource=_gpu_pool_tainted,
        tags=("gpu",),
    ),
    Rule(
        "gpu-nodepool-capped",
        "GPU NodePools set an nvidia.com/gpu limit.",
        "Add limits: {nvidia.com/gpu: <ceiling>}.",
        "mandatory",
        types=(NODEPOOL,),
        check_resource=_gpu_pool_capped,
        tags=("gpu", "cost"),
    ),
    Rule(
        "training-pool-protected",
        "Training pools are on-demand, consolidate only when empty and have budgets.",
        "Start from the gpu-training preset.",
        "mandatory",
        types=(NODEPOOL,),
        check_resource=_training_pool,
        tags=("gpu",),
    ),
    Rule(
        "inference-pool-flexible",
        "Inference pools allow more than one instance type.",
        "Allow several sizes or families (instanceSizes, instanceFamilies).",
        "advisory",
        types=(NODEPOOL,),
        check_resource=_inference_flexible,
        tags=("gpu", "cost"),
    ),
    Rule(
        "nodepool-disruption-set",
        "Every NodePool sets consolidation policy, consolidateAfter and budgets.",
        "Set spec.disruption fully.",
        "mandatory",
        types=(NODEPOOL,),
        check_resource=_disruption_set,
        tags=("gpu", "cost"),
    ),
    Rule(
        "spot-needs-interruption-queue",
        "A stack whose pools allow spot has Karpenter's interruption queue.",
        "Use the Karpenter component (it creates the queue and the EventBridge rules).",
        "mandatory",
        check_stack=_spot_needs_queue,
        tags=("gpu",),
    ),
    Rule(
        "gpu-pools-need-operator-and-dcgm",
        "A stack with GPU pools runs the GPU Operator (or a device plugin) and the DCGM exporter.",
        "Add the GPU stack component.",
        "mandatory",
        check_stack=_gpu_needs_operator,
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
