"""The platform's policy rules as pure functions: the security baseline and the GPU best practices.

The CrossGuard pack in `policies/` wraps these for `pulumi preview --policy-pack policies`, and the offline preview
runs them over what it recorded, so both enforce the same code. A rule sees resources as the engine describes them
(type, name, URN, properties with the engine's camelCase names, dependencies): inputs for resource rules, and for
stack rules the recorded inputs offline but the outputs under CrossGuard. Under CrossGuard the properties are
pulumi-policy's read-only proxies, so rules test structure with `Mapping` / `Sequence`, never `dict` / `list`.
Values that are not known yet (during a preview) are skipped, never guessed: see `Resource.unknown` and `_known`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Literal, TypeVar

from components.policy.gpu import (
    NODEPOOL,
    capacity_types,
    disruption_set,
    gpu_pool_capped,
    gpu_pool_tainted,
    inference_flexible,
    is_gpu_pool,
    training_pool,
)
from components.policy.iam import ATTACHMENT_TYPES, POLICY_TYPES, ROLE, document, iam_wildcards, irsa_trust, statements

Enforcement = Literal["mandatory", "advisory", "disabled"]

NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
BUCKET = "aws:s3/bucket:Bucket"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
EKS_CLUSTERS = ("eks:index:Cluster", "aws:eks/cluster:Cluster")
WORLD = {"0.0.0.0/0", "::/0"}
#: Ports a security group may open to the world: load balancer listeners.
LISTENER_PORTS = {80, 443}


T = TypeVar("T")
UnknownErrors = tuple[type[Exception], ...]


@dataclass(frozen=True)
class Resource:
    """A resource as a rule sees it.

    Reading a property the engine does not know yet raises one of `unknown`: pulumi-policy's UnknownValueError under
    CrossGuard (the adapters set it); nothing offline, where the mocks know every value.
    """

    urn: str
    type: str
    name: str
    props: Mapping[str, Any]
    dependencies: frozenset[str] = frozenset()
    unknown: UnknownErrors = ()

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


def _known(resource: Resource, read: Callable[[Resource], T], otherwise: T) -> T:
    """`read(resource)`, or `otherwise` when that reads a value not known yet: only what is unknown is skipped.

    `otherwise` is the answer that reports nothing: a value that is set but not known yet (a key ARN, a queue name)
    will be there after the update."""
    try:
        return read(resource)
    except resource.unknown:
        return otherwise


def _truthy(value: Any) -> bool:
    return value is True or value == "true"


def _by_dependency(resources: Sequence[Resource], target: Resource, type_: str) -> list[Resource]:
    return [r for r in resources if r.type == type_ and target.urn in r.dependencies]


def _chart(resource: Resource) -> str:
    """A Helm release's chart by its last path segment: `repo/chart` and `oci://registry/path/chart` name it too."""
    return str(resource.props.get("chart") or "").rsplit("/", 1)[-1]


def _releases(resources: Sequence[Resource]) -> dict[str, Resource]:
    """The stack's Helm releases by chart."""
    return {_known(r, _chart, ""): r for r in resources if r.type == HELM_RELEASE}


# ------------------------------------------------------------------------------------------------ security rules


def _bucket_guard(
    type_: str, ok: Callable[[Resource], bool], what: str
) -> Callable[[Sequence[Resource]], Iterable[tuple[str, str]]]:
    def check(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
        for bucket in (r for r in resources if r.type == BUCKET):
            guards = _by_dependency(resources, bucket, type_)
            if not any(_known(g, ok, True) for g in guards):
                yield bucket.urn, f"bucket {bucket.name} has no {what}"

    return check


def _encrypted(config: Resource) -> bool:
    rules = config.props.get("rules") or []
    return any(
        (r.get("applyServerSideEncryptionByDefault") or {}).get("sseAlgorithm") for r in rules if isinstance(r, Mapping)
    )


def _blocks_public(block: Resource) -> bool:
    keys = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    return all(block.props.get(k) is True for k in keys)


def _tls_only(policy: Resource) -> bool:
    doc = document(policy.props.get("policy"))
    if doc is None:
        return True  # not known yet in a preview
    return any(
        s.get("Effect") == "Deny"
        and ((s.get("Condition") or {}).get("Bool") or {}).get("aws:SecureTransport") in ("false", False)
        for s in statements(doc)
    )


def _node_volumes(resource: Resource) -> Iterable[str]:
    if resource.type == NODE_GROUP:
        if not resource.props.get("launchTemplate"):
            yield (
                f"node group {resource.name} has no launch template: its disks are encrypted only if the account's "
                "EBS encryption by default is on, which the stack cannot show"
            )
        return
    devices = resource.props.get("blockDeviceMappings") or []
    if not devices:
        # Flagged, not assumed: without mappings the root volume is made from the AMI's snapshot (unencrypted for the
        # EKS AMIs) and is encrypted only by the account's EBS default, a setting outside the stack. An EC2NodeClass
        # without mappings is fine: Karpenter's default root volume sets encrypted: true.
        yield f"launch template {resource.name} sets no blockDeviceMappings, so its root volume may be unencrypted"
    for device in devices:
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


def _secrets_encrypted(cluster: Resource) -> bool:
    if cluster.props.get("encryptionConfigKeyArn"):  # pulumi-eks: the key encrypts secrets
        return True
    config = cluster.props.get("encryptionConfig")
    return (
        isinstance(config, Mapping)
        and "secrets" in (config.get("resources") or [])
        and bool((config.get("provider") or {}).get("keyArn"))
    )


def _eks_encryption_and_logs(resource: Resource) -> Iterable[str]:
    if not _known(resource, _secrets_encrypted, True):  # a key ARN not known yet is a key
        yield f"cluster {resource.name} does not encrypt Kubernetes secrets with a KMS key"
    logs = set(resource.props.get("enabledClusterLogTypes") or [])
    if not _REQUIRED_LOGS <= logs:
        yield f"cluster {resource.name} does not send {sorted(_REQUIRED_LOGS - logs)} control-plane logs"


def _eks_public_endpoint(resource: Resource) -> Iterable[str]:
    if "prod" not in resource.stack:
        return
    access = resource.props
    if resource.type == "aws:eks/cluster:Cluster":
        access = resource.props.get("vpcConfig") or {}
    # AWS and pulumi-eks both default endpointPublicAccess to true: unset is public.
    if access.get("endpointPublicAccess") in (False, "false"):
        return
    cidrs = set(access.get("publicAccessCidrs") or WORLD)
    if cidrs & WORLD:
        yield f"cluster {resource.name} of stack {resource.stack} has a public endpoint open to the internet"


VPC_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
#: Security groups with inline `ingress` rules.
SECURITY_GROUPS = ("aws:ec2/securityGroup:SecurityGroup", "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")


def _ingress(resource: Resource) -> Iterable[tuple[Mapping[str, Any], list[Any]]]:
    """Each ingress rule a resource declares, with its source CIDRs (read key by key: the rest may be unknown)."""
    props = resource.props
    if resource.type == VPC_INGRESS:
        yield props, [props.get("cidrIpv4"), props.get("cidrIpv6")]
    elif resource.type == SG_RULE:
        if props.get("type") == "ingress":
            yield props, [*(props.get("cidrBlocks") or []), *(props.get("ipv6CidrBlocks") or [])]
    else:
        for rule in props.get("ingress") or []:
            yield rule, [*(rule.get("cidrBlocks") or []), *(rule.get("ipv6CidrBlocks") or [])]


def _port(value: Any) -> Any:
    """CrossGuard hands numbers over as floats (they travel in a protobuf Struct): 443.0 is port 443."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _world_ingress(resource: Resource) -> Iterable[str]:
    for rule, cidrs in _ingress(resource):
        if not set(filter(None, cidrs)) & WORLD:
            continue
        protocol = str(rule.get("ipProtocol") or rule.get("protocol") or "")
        low, high = _port(rule.get("fromPort")), _port(rule.get("toPort"))
        if protocol in ("-1", "all"):  # AWS ignores the ports of an all-traffic rule
            yield f"{resource.name} opens all traffic (protocol -1) to the internet"
        elif not (low is not None and low == high and low in LISTENER_PORTS):
            yield f"{resource.name} opens ports {low}-{high} to the internet"


def _public_subnet(subnet: Resource) -> bool:
    tags = subnet.props.get("tags") or {}
    return subnet.props.get("mapPublicIpOnLaunch") is True or "kubernetes.io/role/elb" in tags


def _fsx_private(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
    # Only subnets created in this stack can be judged; subnet ids of a VPC brought from elsewhere pass unverified
    # (said in the rule's description and the README).
    for fs in (r for r in resources if r.type == "aws:fsx/lustreFileSystem:LustreFileSystem"):
        subnets = [r for r in resources if r.type == "aws:ec2/subnet:Subnet" and r.urn in fs.dependencies]
        for subnet in subnets:
            if _known(subnet, _public_subnet, False):
                yield fs.urn, f"file system {fs.name} is placed in public subnet {subnet.name}"


_EXACT_VERSION = re.compile(r"v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?")


def _helm_pinned(resource: Resource) -> Iterable[str]:
    version = resource.props.get("version")
    if not isinstance(version, str) or not _EXACT_VERSION.fullmatch(version):
        yield f"Helm release {resource.name} is not pinned to an exact chart version (got {version!r})"


_WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod")


def _unpinned(image: str) -> bool:
    """Whether an image reference falls back to `latest`: no tag (the runtime's default) or the tag latest."""
    last = image.rsplit("/", 1)[-1]
    return "@sha256:" not in image and (last.rpartition(":")[2] if ":" in last else "") in ("", "latest")


def _container_images(resource: Resource) -> Iterable[str]:
    spec = resource.props.get("spec") or {}
    if resource.type.endswith(":Pod"):
        pods = [spec]
    elif resource.type.endswith(":CronJob"):
        pods = [((spec.get("jobTemplate") or {}).get("spec") or {}).get("template", {}).get("spec") or {}]
    else:
        pods = [(spec.get("template") or {}).get("spec") or {}]
    for pod in pods:
        for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
            image = container.get("image")
            if isinstance(image, str) and _unpinned(image):
                yield f"container {container.get('name')} of {resource.name} uses image {image!r} without a pinned tag"


def _mappings(value: Any, path: str, unknown: UnknownErrors) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every mapping inside a value, with its path; values not known yet are skipped."""
    if isinstance(value, Mapping):
        yield path, value
        keys: Iterable[Any] = list(value)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        keys = range(len(value))
    else:
        return
    for key in keys:
        try:
            child = value[key]
        except unknown:
            continue
        yield from _mappings(child, f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]", unknown)


def _values_image(values: Mapping[str, Any]) -> str | None:
    """The unpinned image a mapping of Helm values sets, if any.

    Charts take `repository` + `tag` (gpu-operator: `version`), optionally a `digest` / `sha`, or a whole `image`
    reference. A repository without a tag is left alone: the chart then uses its own default, its appVersion, pinned
    with the chart's version. A whole reference without a tag is the runtime's `latest`."""
    if values.get("digest") or values.get("sha"):
        return None
    tag = values.get("tag", values.get("version"))
    repository, image = values.get("repository"), values.get("image")
    if isinstance(repository, str) and repository:
        return repository if str(tag).lower() == "latest" else None
    if isinstance(image, str) and image:
        return image if (_unpinned(image) if tag is None else str(tag).lower() == "latest") else None
    return None


def _release_images(resource: Resource) -> Iterable[str]:
    for path, values in _mappings(resource.props.get("values") or {}, "values", resource.unknown):
        image = _known(resource, lambda _: _values_image(values), None)
        if image is not None:
            yield f"Helm release {resource.name} sets image {image!r} at {path} without a pinned tag"


def _images(resource: Resource) -> Iterable[str]:
    return _release_images(resource) if resource.type == HELM_RELEASE else _container_images(resource)


def _grafana_password_set(release: Resource) -> bool:
    grafana = (release.props.get("values") or {}).get("grafana") or {}
    if grafana.get("enabled") is False:
        return True
    password = grafana.get("adminPassword")
    return password not in (None, "prom-operator") or bool((grafana.get("admin") or {}).get("existingSecret"))


def _default_passwords(resource: Resource) -> Iterable[str]:
    # A password not known yet (a RandomPassword's result) is set.
    if _chart(resource) == "kube-prometheus-stack" and not _known(resource, _grafana_password_set, True):
        yield f"{resource.name} leaves Grafana's admin password at the chart default"


#: Pod Security Admission: the label that sets a namespace's enforced level, and the namespaces whose platform
#: DaemonSets need host access (GPU Operator, node exporter) and so may run `privileged`.
POD_SECURITY_LABEL = "pod-security.kubernetes.io/enforce"
POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")
PRIVILEGED_NAMESPACES = frozenset({"kube-system", "gpu-operator", "monitoring"})


def _pod_security(resource: Resource) -> Iterable[str]:
    metadata = resource.props.get("metadata") or {}
    name = metadata.get("name", resource.name)
    level = (metadata.get("labels") or {}).get(POD_SECURITY_LABEL)
    if level not in POD_SECURITY_LEVELS:
        # Without a level, a hostNetwork pod reads the node's instance credentials whatever the IMDS hop limit.
        yield f"namespace {name} sets no {POD_SECURITY_LABEL} level ({', '.join(POD_SECURITY_LEVELS)})"
    elif level == "privileged" and name not in PRIVILEGED_NAMESPACES:
        yield f"namespace {name} enforces 'privileged'; only {', '.join(sorted(PRIVILEGED_NAMESPACES))} may"


# ------------------------------------------------------------------------------------------------------ GPU rules


def _allows_spot(pool: Resource) -> bool:
    return "spot" in capacity_types(pool)


def _warns_of_spot_interruption(rule: Resource) -> bool:
    return "EC2 Spot Instance Interruption Warning" in str(rule.props.get("eventPattern"))


def _interruption_queue_set(karpenter: Resource) -> bool:
    return bool(((karpenter.props.get("values") or {}).get("settings") or {}).get("interruptionQueue"))


def _spot_needs_queue(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
    spot_pools = [r for r in resources if r.type == NODEPOOL and _known(r, _allows_spot, False)]
    if not spot_pools:
        return
    has_queue = any(r.type == "aws:sqs/queue:Queue" for r in resources)
    has_rule = any(
        r.type == "aws:cloudwatch/eventRule:EventRule" and _known(r, _warns_of_spot_interruption, True)
        for r in resources
    )
    karpenter = _releases(resources).get("karpenter")
    wired = karpenter is not None and _known(karpenter, _interruption_queue_set, True)
    if not (has_queue and has_rule and wired):
        for pool in spot_pools:
            yield (
                pool.urn,
                f"NodePool {pool.name} allows spot but the stack has no interruption queue wired to Karpenter",
            )


def _dcgm_enabled(operator: Resource) -> bool:
    return ((operator.props.get("values") or {}).get("dcgmExporter") or {}).get("enabled") is not False


def _gpu_needs_operator(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
    gpu_pools = [r for r in resources if r.type == NODEPOOL and _known(r, is_gpu_pool, False)]
    if not gpu_pools:
        return
    releases = _releases(resources)
    operator = releases.get("gpu-operator")
    device_plugin = operator is not None or "nvidia-device-plugin" in releases
    dcgm = (operator is not None and _known(operator, _dcgm_enabled, True)) or "dcgm-exporter" in releases
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
        "Node volumes (launch templates, managed node groups) are encrypted.",
        "Give node groups a launch template whose block device mappings all set ebs.encrypted: true.",
        "mandatory",
        types=(LAUNCH_TEMPLATE, NODE_GROUP),
        check_resource=_node_volumes,
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
        types=(LAUNCH_TEMPLATE, NODECLASS),
        check_resource=_imdsv2,
    ),
    Rule(
        "eks-secrets-encrypted-and-logged",
        "EKS encrypts secrets with KMS and sends api, audit and authenticator logs.",
        "Set encryptionConfigKeyArn (or encryptionConfig with resources [secrets]) and enabledClusterLogTypes.",
        "mandatory",
        types=EKS_CLUSTERS,
        check_resource=_eks_encryption_and_logs,
    ),
    Rule(
        "eks-endpoint-not-public-in-prod",
        "Prod-like stacks expose no EKS endpoint to the whole internet.",
        "Set cluster.endpoint.public: false, or list publicCidrs.",
        "mandatory",
        types=EKS_CLUSTERS,
        check_resource=_eks_public_endpoint,
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
        check_resource=_world_ingress,
    ),
    Rule(
        "fsx-in-private-subnet",
        "FSx file systems live in private subnets (only subnets created in the same stack can be checked).",
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
        "Container images (workloads, Helm values) carry a pinned tag or digest.",
        "Use an exact tag (or @sha256 digest), never latest.",
        "mandatory",
        types=(*(f"kubernetes:{g}:{k}" for g in ("apps/v1", "batch/v1", "core/v1") for k in _WORKLOADS), HELM_RELEASE),
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
        "Training pools are on-demand, consolidate only when empty and have budgets.",
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
        check_resource=_pod_security,
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
