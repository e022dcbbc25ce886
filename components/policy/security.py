"""The security baseline's checks (pure): encryption, public access, IMDSv2, endpoint access, world ingress,
pinned charts and images, default passwords, Pod Security levels."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from .iam import document, statements
from .model import (
    BUCKET,
    HELM_RELEASE,
    LISTENER_PORTS,
    NODE_GROUP,
    NODECLASS,
    WORLD,
    Resource,
    UnknownErrors,
    by_dependency,
    chart,
    known,
    truthy,
)


def bucket_guard(
    type_: str, ok: Callable[[Resource], bool], what: str
) -> Callable[[Sequence[Resource]], Iterable[tuple[str, str]]]:
    def check(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
        for bucket in (r for r in resources if r.type == BUCKET):
            guards = by_dependency(resources, bucket, type_)
            if not any(known(g, ok, True) for g in guards):
                yield bucket.urn, f"bucket {bucket.name} has no {what}"

    return check


def encrypted(config: Resource) -> bool:
    rules = config.props.get("rules") or []
    return any(
        (r.get("applyServerSideEncryptionByDefault") or {}).get("sseAlgorithm") for r in rules if isinstance(r, Mapping)
    )


def blocks_public(block: Resource) -> bool:
    keys = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    return all(block.props.get(k) is True for k in keys)


def tls_only(policy: Resource) -> bool:
    doc = document(policy.props.get("policy"))
    if doc is None:
        return True  # not known yet in a preview
    return any(
        s.get("Effect") == "Deny"
        and ((s.get("Condition") or {}).get("Bool") or {}).get("aws:SecureTransport") in ("false", False)
        for s in statements(doc)
    )


def node_volumes(resource: Resource) -> Iterable[str]:
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
        if not truthy((device.get("ebs") or {}).get("encrypted")):
            yield f"block device {device.get('deviceName')} of {resource.name} is not encrypted"


def node_class_volumes(resource: Resource) -> Iterable[str]:
    for device in (resource.props.get("spec") or {}).get("blockDeviceMappings") or []:
        if not truthy((device.get("ebs") or {}).get("encrypted")):
            yield f"block device {device.get('deviceName')} of EC2NodeClass {resource.name} is not encrypted"


def imdsv2(resource: Resource) -> Iterable[str]:
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


def eks_encryption_and_logs(resource: Resource) -> Iterable[str]:
    if not known(resource, _secrets_encrypted, True):  # a key ARN not known yet is a key
        yield f"cluster {resource.name} does not encrypt Kubernetes secrets with a KMS key"
    logs = set(resource.props.get("enabledClusterLogTypes") or [])
    if not logs >= _REQUIRED_LOGS:
        yield f"cluster {resource.name} does not send {sorted(_REQUIRED_LOGS - logs)} control-plane logs"


def eks_public_endpoint(resource: Resource) -> Iterable[str]:
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


def world_ingress(resource: Resource) -> Iterable[str]:
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


def fsx_private(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
    # Only subnets created in this stack can be judged; subnet ids of a VPC brought from elsewhere pass unverified
    # (said in the rule's description and the README).
    for fs in (r for r in resources if r.type == "aws:fsx/lustreFileSystem:LustreFileSystem"):
        subnets = [r for r in resources if r.type == "aws:ec2/subnet:Subnet" and r.urn in fs.dependencies]
        for subnet in subnets:
            if known(subnet, _public_subnet, False):
                yield fs.urn, f"file system {fs.name} is placed in public subnet {subnet.name}"


_EXACT_VERSION = re.compile(r"v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?")


def helm_pinned(resource: Resource) -> Iterable[str]:
    version = resource.props.get("version")
    if not isinstance(version, str) or not _EXACT_VERSION.fullmatch(version):
        yield f"Helm release {resource.name} is not pinned to an exact chart version (got {version!r})"


WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod")


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
        image = known(resource, lambda _: _values_image(values), None)  # noqa: B023 - called at once
        if image is not None:
            yield f"Helm release {resource.name} sets image {image!r} at {path} without a pinned tag"


def images(resource: Resource) -> Iterable[str]:
    return _release_images(resource) if resource.type == HELM_RELEASE else _container_images(resource)


def _grafana_password_set(release: Resource) -> bool:
    grafana = (release.props.get("values") or {}).get("grafana") or {}
    if grafana.get("enabled") is False:
        return True
    password = grafana.get("adminPassword")
    return password not in (None, "prom-operator") or bool((grafana.get("admin") or {}).get("existingSecret"))


def default_passwords(resource: Resource) -> Iterable[str]:
    # A password not known yet (a RandomPassword's result) is set.
    if chart(resource) == "kube-prometheus-stack" and not known(resource, _grafana_password_set, True):
        yield f"{resource.name} leaves Grafana's admin password at the chart default"


#: Pod Security Admission: the label that sets a namespace's enforced level, and the namespaces whose platform
#: DaemonSets need host access (GPU Operator, node exporter) and so may run `privileged`.
POD_SECURITY_LABEL = "pod-security.kubernetes.io/enforce"
POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")
PRIVILEGED_NAMESPACES = frozenset({"kube-system", "gpu-operator", "node-exporter"})


def pod_security(resource: Resource) -> Iterable[str]:
    metadata = resource.props.get("metadata") or {}
    name = metadata.get("name", resource.name)
    level = (metadata.get("labels") or {}).get(POD_SECURITY_LABEL)
    if level not in POD_SECURITY_LEVELS:
        # Without a level, a hostNetwork pod reads the node's instance credentials whatever the IMDS hop limit.
        yield f"namespace {name} sets no {POD_SECURITY_LABEL} level ({', '.join(POD_SECURITY_LEVELS)})"
    elif level == "privileged" and name not in PRIVILEGED_NAMESPACES:
        yield f"namespace {name} enforces 'privileged'; only {', '.join(sorted(PRIVILEGED_NAMESPACES))} may"
