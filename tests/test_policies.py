"""Policy rules: each with a violating and a compliant case, the stacks pass, seeded violations are reported by the
offline run, and the CrossGuard adapters see what the SDK hands them (read-only proxies, unknown values)."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any, Callable, Mapping

import pytest
from google.protobuf import json_format, struct_pb2
from pulumi_policy import PolicyResource, ResourceValidationArgs, StackValidationArgs, StackValidationPolicy
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from components import preview
from components.policy import gpu as policy_gpu
from components.policy import model as policy_model
from components.policy.rules import RULES, Resource, evaluate, resolve_enforcement
from components.preview import main, mocks, policy_resources
from components.scheduling import WORKLOAD_LABEL
from policies.pack import policies
from tests.conftest import REPO

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


# -------------------------------------------------------------------------------------------------------- S3

BUCKET = res("aws:s3/bucket:Bucket", "data")


def bucket_part(type_: str, **props) -> Resource:
    return res(type_, "data-part", deps=(BUCKET.urn,), **props)


SSE = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
PAB = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
POLICY = "aws:s3/bucketPolicy:BucketPolicy"
TLS = json.dumps({"Statement": [{"Effect": "Deny", "Action": "s3:*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]})


def test_bucket_encryption():
    assert broken("s3-bucket-encrypted", [BUCKET]) == ["bucket data has no default encryption"]
    ok = bucket_part(SSE, rules=[{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}])
    assert broken("s3-bucket-encrypted", [BUCKET, ok]) == []


def test_bucket_public_access_block():
    partial = bucket_part(PAB, blockPublicAcls=True, blockPublicPolicy=True, ignorePublicAcls=True, restrictPublicBuckets=False)
    assert broken("s3-public-access-blocked", [BUCKET, partial]) != []
    full = bucket_part(PAB, blockPublicAcls=True, blockPublicPolicy=True, ignorePublicAcls=True, restrictPublicBuckets=True)
    assert broken("s3-public-access-blocked", [BUCKET, full]) == []


def test_bucket_tls_only():
    allow_all = bucket_part(POLICY, policy=json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject"}]}))
    assert broken("s3-tls-only", [BUCKET, allow_all]) == ["bucket data has no policy denying non-TLS requests"]
    assert broken("s3-tls-only", [BUCKET, bucket_part(POLICY, policy=TLS)]) == []


# ------------------------------------------------------------------------------------------------- volumes, IMDS

LT = "aws:ec2/launchTemplate:LaunchTemplate"


def test_launch_template_volumes_encrypted():
    plain = res(LT, blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"encrypted": "false"}}])
    assert broken("volumes-encrypted", [plain]) == ["block device /dev/xvda of r is not encrypted"]
    assert broken("volumes-encrypted", [res(LT, blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}])]) == []


def test_node_group_without_a_launch_template_is_flagged_as_unverifiable():
    node_group = "aws:eks/nodeGroup:NodeGroup"
    assert broken("volumes-encrypted", [res(node_group, "system", instanceTypes=["m7i.xlarge"])]) == [
        "node group system has no launch template: its disks are encrypted only if the account's EBS encryption by "
        "default is on, which the stack cannot show"
    ]
    assert broken("volumes-encrypted", [res(node_group, "system", launchTemplate={"id": "lt-1", "version": "1"})]) == []


def test_launch_template_without_block_device_mappings_is_flagged():
    assert broken("volumes-encrypted", [res(LT, "lt", metadataOptions={"httpTokens": "required"})]) == [
        "launch template lt sets no blockDeviceMappings, so its root volume may be unencrypted"
    ]


def test_node_class_volumes_encrypted():
    spec = {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": False}}]}
    assert broken("nodeclass-volumes-encrypted", [res(policy_model.NODECLASS, spec=spec)]) != []
    spec["blockDeviceMappings"][0]["ebs"]["encrypted"] = True
    assert broken("nodeclass-volumes-encrypted", [res(policy_model.NODECLASS, spec=spec)]) == []


def test_imdsv2_required_on_templates_and_node_classes():
    assert broken("imdsv2-required", [res(LT, metadataOptions={"httpTokens": "optional"})]) != []
    assert broken("imdsv2-required", [res(policy_model.NODECLASS, spec={})]) != []
    assert broken("imdsv2-required", [res(LT, metadataOptions={"httpTokens": "required"})]) == []
    assert broken("imdsv2-required", [res(policy_model.NODECLASS, spec={"metadataOptions": {"httpTokens": "required"}})]) == []


# ------------------------------------------------------------------------------------------------------ EKS

CLUSTER = "eks:index:Cluster"


AWS_CLUSTER = "aws:eks/cluster:Cluster"
LOGS = ["api", "audit", "authenticator"]


def test_eks_secrets_encryption_and_logs():
    assert len(broken("eks-secrets-encrypted-and-logged", [res(CLUSTER, enabledClusterLogTypes=["api"])])) == 2
    good = res(CLUSTER, encryptionConfigKeyArn="arn:aws:kms:...", enabledClusterLogTypes=LOGS)
    assert broken("eks-secrets-encrypted-and-logged", [good]) == []


@pytest.mark.parametrize(
    ("encryption", "bad"),
    [
        ({"provider": {"keyArn": "arn:aws:kms:us-west-2:1:key/k"}, "resources": ["secrets"]}, False),
        ({"provider": {"keyArn": "arn:aws:kms:us-west-2:1:key/k"}, "resources": []}, True),
        ({"provider": {"keyArn": "arn:aws:kms:us-west-2:1:key/k"}}, True),
        ({"resources": ["secrets"]}, True),
        (None, True),
    ],
)
def test_aws_eks_cluster_encryption_config_must_cover_secrets(encryption, bad):
    props = {"enabledClusterLogTypes": LOGS} | ({"encryptionConfig": encryption} if encryption else {})
    assert bool(broken("eks-secrets-encrypted-and-logged", [res(AWS_CLUSTER, **props)])) is bad


def test_public_endpoint_open_to_the_world_is_refused_in_prod_only():
    open_ = {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod", **open_)]) != []
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod", endpointPublicAccess=True)]) != []
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="dev", **open_)]) == []
    limited = {"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod", **limited)]) == []


def test_an_unset_endpoint_public_access_counts_as_public():
    """AWS and pulumi-eks both default endpointPublicAccess to true."""
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod")]) != []
    assert broken("eks-endpoint-not-public-in-prod", [res(AWS_CLUSTER, stack="prod", vpcConfig={"subnetIds": ["s"]})]) != []
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod", endpointPublicAccess=False)]) == []


@pytest.mark.parametrize(
    ("vpc_config", "bad"),
    [
        ({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}, True),
        ({"endpointPublicAccess": True}, True),
        ({"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}, False),
        ({"endpointPublicAccess": False, "endpointPrivateAccess": True}, False),
    ],
)
def test_aws_eks_cluster_vpc_config_endpoint_in_prod(vpc_config, bad):
    cluster = res(AWS_CLUSTER, stack="prod", vpcConfig=vpc_config)
    assert bool(broken("eks-endpoint-not-public-in-prod", [cluster])) is bad


# ------------------------------------------------------------------------------------------------------ IAM

ROLE = "aws:iam/role:Role"


def trust(condition) -> str:
    return json.dumps({"Statement": [{"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity", "Condition": condition}]})


def test_irsa_trust_must_pin_sub_and_aud_without_wildcards():
    issuer = "oidc.eks.us-west-2.amazonaws.com/id/X"
    only_aud = trust({"StringEquals": {f"{issuer}:aud": "sts.amazonaws.com"}})
    wildcard = trust({"StringLike": {f"{issuer}:sub": "system:serviceaccount:*:*"}, "StringEquals": {f"{issuer}:aud": "sts.amazonaws.com"}})
    pinned = trust({"StringEquals": {f"{issuer}:sub": "system:serviceaccount:a:b", f"{issuer}:aud": "sts.amazonaws.com"}})
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


EVERYTHING = json.dumps({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
READ_BUCKET = json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}]})


@pytest.mark.parametrize("type_", ["aws:iam/userPolicy:UserPolicy", "aws:iam/groupPolicy:GroupPolicy"])
def test_user_and_group_policies_are_checked(type_):
    assert broken("iam-no-wildcards", [res(type_, "p", policy=EVERYTHING)]) == ["p allows ['*'] (every action)"]
    assert broken("iam-no-wildcards", [res(type_, "p", policy=READ_BUCKET)]) == []


def test_inline_role_policies_are_checked():
    role = res(ROLE, "app", inlinePolicies=[{"name": "read", "policy": READ_BUCKET}, {"name": "all", "policy": EVERYTHING}])
    assert broken("iam-no-wildcards", [role]) == ["app (inline policy all) allows ['*'] (every action)"]
    assert broken("iam-no-wildcards", [res(ROLE, "app", inlinePolicies=[{"name": "read", "policy": READ_BUCKET}])]) == []


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


# --------------------------------------------------------------------------------------------- network, FSx

INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


@pytest.mark.parametrize(
    ("props", "bad"),
    [
        ({"cidrIpv4": "0.0.0.0/0", "fromPort": 22, "toPort": 22}, True),
        ({"cidrIpv6": "::/0", "fromPort": 0, "toPort": 65535}, True),
        ({"cidrIpv4": "0.0.0.0/0", "fromPort": 443, "toPort": 443}, False),
        ({"cidrIpv4": "10.0.0.0/8", "fromPort": 22, "toPort": 22}, False),
        ({"referencedSecurityGroupId": "sg-1", "fromPort": 988, "toPort": 988}, False),
    ],
)
def test_no_security_group_open_to_the_world_but_listeners(props, bad):
    assert bool(broken("no-world-ingress", [res(INGRESS, **props)])) is bad


@pytest.mark.parametrize(
    "props",
    [
        {"ipProtocol": "-1", "cidrIpv4": "0.0.0.0/0", "fromPort": 443, "toPort": 443},
        {"ipProtocol": "-1", "cidrIpv6": "::/0"},
    ],
)
def test_all_traffic_from_the_world_is_refused_whatever_the_ports(props):
    assert broken("no-world-ingress", [res(INGRESS, **props)]) == ["r opens all traffic (protocol -1) to the internet"]


@pytest.mark.parametrize("type_", ["aws:ec2/securityGroup:SecurityGroup", "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"])
def test_inline_security_group_rules_are_checked_too(type_):
    group = res(type_, ingress=[{"protocol": "tcp", "cidrBlocks": ["0.0.0.0/0"], "fromPort": 6443, "toPort": 6443}])
    assert broken("no-world-ingress", [group]) == ["r opens ports 6443-6443 to the internet"]
    everything = res(type_, ingress=[{"protocol": "-1", "cidrBlocks": ["0.0.0.0/0"], "fromPort": 0, "toPort": 0}])
    assert broken("no-world-ingress", [everything]) == ["r opens all traffic (protocol -1) to the internet"]
    listener = {"protocol": "tcp", "ipv6CidrBlocks": ["::/0"], "fromPort": 443, "toPort": 443}
    from_vpc = {"protocol": "tcp", "cidrBlocks": ["10.0.0.0/16"], "fromPort": 22, "toPort": 22}
    assert broken("no-world-ingress", [res(type_, ingress=[listener, from_vpc])]) == []
    assert broken("no-world-ingress", [res(type_)]) == []


SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"


@pytest.mark.parametrize(
    ("props", "bad"),
    [
        ({"type": "ingress", "protocol": "tcp", "cidrBlocks": ["0.0.0.0/0"], "fromPort": 22, "toPort": 22}, True),
        ({"type": "ingress", "protocol": "tcp", "ipv6CidrBlocks": ["::/0"], "fromPort": 0, "toPort": 65535}, True),
        ({"type": "ingress", "protocol": "-1", "cidrBlocks": ["0.0.0.0/0"], "fromPort": 443, "toPort": 443}, True),
        ({"type": "ingress", "protocol": "tcp", "cidrBlocks": ["0.0.0.0/0"], "fromPort": 443, "toPort": 443}, False),
        ({"type": "ingress", "protocol": "tcp", "sourceSecurityGroupId": "sg-1", "fromPort": 22, "toPort": 22}, False),
        ({"type": "egress", "protocol": "-1", "cidrBlocks": ["0.0.0.0/0"], "fromPort": 0, "toPort": 0}, False),
    ],
)
def test_security_group_rule_resources_open_nothing_but_listeners_to_the_world(props, bad):
    assert bool(broken("no-world-ingress", [res(SG_RULE, **props)])) is bad


def test_fsx_must_sit_in_a_private_subnet():
    public = res("aws:ec2/subnet:Subnet", "public-a", tags={"kubernetes.io/role/elb": "1"})
    private = res("aws:ec2/subnet:Subnet", "private-a", tags={"kubernetes.io/role/internal-elb": "1"})
    on_public = res("aws:fsx/lustreFileSystem:LustreFileSystem", "fs", deps=(public.urn,))
    on_private = res("aws:fsx/lustreFileSystem:LustreFileSystem", "fs", deps=(private.urn,))
    assert broken("fsx-in-private-subnet", [public, on_public]) == ["file system fs is placed in public subnet public-a"]
    assert broken("fsx-in-private-subnet", [private, on_private]) == []


def test_fsx_in_a_vpc_brought_from_elsewhere_cannot_be_checked_and_the_rule_says_so():
    """With subnet ids from config there is no Subnet in the stack to judge: the rule passes, and says it."""
    byo = res("aws:fsx/lustreFileSystem:LustreFileSystem", "fs", subnetIds=["subnet-0abc"])
    assert broken("fsx-in-private-subnet", [byo]) == []
    assert "only subnets created in the same stack can be checked" in rule("fsx-in-private-subnet").description


# -------------------------------------------------------------------------------------- Helm, images, passwords

RELEASE = policy_model.HELM_RELEASE


@pytest.mark.parametrize(("version", "bad"), [(None, True), ("", True), ("^1.14", True), ("1.x", True), ("1.14.1", False), ("v26.7.0", False)])
def test_helm_releases_pin_exact_versions(version, bad):
    assert bool(broken("helm-chart-pinned", [res(RELEASE, version=version)])) is bad


@pytest.mark.parametrize(
    ("image", "bad"),
    [("nginx", True), ("nginx:latest", True), ("localhost:5000/app", True), ("registry.k8s.io/kube-scheduler:v1.35.3", False), ("app@sha256:abc", False)],
)
def test_container_images_are_pinned(image, bad):
    deployment = res("kubernetes:apps/v1:Deployment", spec={"template": {"spec": {"containers": [{"name": "c", "image": image}]}}})
    assert bool(broken("no-latest-images", [deployment])) is bad


@pytest.mark.parametrize(
    ("values", "bad"),
    [
        ({"image": {"repository": "ghcr.io/acme/app", "tag": "latest"}}, True),
        ({"sidecars": [{"image": "busybox"}]}, True),
        ({"proxy": {"image": "docker.io/envoyproxy/envoy:latest"}}, True),
        ({"driver": {"repository": "nvcr.io/nvidia", "image": "driver", "version": "latest"}}, True),
        ({"image": {"repository": "ghcr.io/acme/app", "tag": "1.2.3"}}, False),
        ({"image": {"repository": "ghcr.io/acme/app", "tag": "latest", "digest": "sha256:abc"}}, False),
        ({"image": {"repository": "ghcr.io/acme/app"}}, False),  # the chart's own tag: its appVersion
        ({"driver": {"repository": "nvcr.io/nvidia", "image": "driver", "version": "570.86.15"}}, False),
        ({"proxy": {"image": "docker.io/envoyproxy/envoy:v1.33.0"}}, False),
        ({"app": {"image": "busybox", "tag": "1.36"}}, False),
        ({"image": ""}, False),
    ],
)
def test_images_set_in_helm_values_are_pinned(values, bad):
    release = res(RELEASE, "app", chart="app", version="1.0.0", values=values)
    assert bool(broken("no-latest-images", [release])) is bad


def test_a_helm_value_image_violation_names_where_it_is_set():
    release = res(RELEASE, "app", values={"sidecars": [{"name": "log", "image": "busybox"}]})
    assert broken("no-latest-images", [release]) == [
        "Helm release app sets image 'busybox' at values.sidecars[0] without a pinned tag"
    ]


@pytest.mark.parametrize(
    "chart", ["kube-prometheus-stack", "prometheus-community/kube-prometheus-stack", "oci://ghcr.io/prometheus-community/charts/kube-prometheus-stack"]
)
def test_kube_prometheus_stack_is_recognised_by_its_chart_path(chart):
    assert broken("no-default-passwords", [res(RELEASE, chart=chart, values={})]) != []
    assert broken("no-default-passwords", [res(RELEASE, chart=chart, values={"grafana": {"adminPassword": "s3cret-generated"}})]) == []


def test_grafana_admin_password_is_never_the_chart_default():
    default = res(RELEASE, chart="kube-prometheus-stack", values={})
    chart_default = res(RELEASE, chart="kube-prometheus-stack", values={"grafana": {"adminPassword": "prom-operator"}})
    from_secret = res(RELEASE, chart="kube-prometheus-stack", values={"grafana": {"admin": {"existingSecret": "grafana-admin"}}})
    assert broken("no-default-passwords", [default]) != [] and broken("no-default-passwords", [chart_default]) != []
    assert broken("no-default-passwords", [from_secret]) == []


# ----------------------------------------------------------------------------------------------------- GPU

NODEPOOL = policy_gpu.NODEPOOL


def pool(name="p", *, capacity=("spot", "on-demand"), gpu=True, taint=True, limit=True, workload=None, disruption=None, types=None):
    requirements = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(capacity)}]
    if gpu:
        requirements.append({"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["a10g"]})
    if types is not None:
        requirements.append({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)})
    template = {"metadata": {"labels": {WORKLOAD_LABEL: workload} if workload else {}}, "spec": {"requirements": requirements}}
    if taint:
        template["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    spec = {
        "template": template,
        "limits": {"nvidia.com/gpu": "8"} if limit else {"cpu": "100"},
        "disruption": disruption if disruption is not None else {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m", "budgets": [{"nodes": "1"}]},
    }
    return res(NODEPOOL, name, spec=spec)


def pool_choosing(*requirements: dict[str, Any]) -> Resource:
    """A pool with no GPU limit and no taint that chooses its instances by these requirements only."""
    template = {"metadata": {"labels": {}}, "spec": {"requirements": list(requirements)}}
    return res(NODEPOOL, "p", spec={"template": template, "limits": {"cpu": "100"}})


def req(key: str, operator: str = "In", *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    ("requirement", "gpu"),
    [
        (req("node.kubernetes.io/instance-type", "In", "g5.2xlarge", "g5.4xlarge"), True),
        (req("node.kubernetes.io/instance-type", "In", "p5.48xlarge"), True),
        (req("karpenter.k8s.aws/instance-category", "In", "g"), True),
        (req("karpenter.k8s.aws/instance-category", "In", "p"), True),
        (req("karpenter.k8s.aws/instance-gpu-manufacturer", "In", "nvidia"), True),
        (req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0"), True),
        (req("karpenter.k8s.aws/instance-gpu-count", "In", "1", "4"), True),
        (req("karpenter.k8s.aws/instance-gpu-name", "Exists"), True),
        (req("node.kubernetes.io/instance-type", "In", "m7i.xlarge", "c7i.2xlarge"), False),
        (req("karpenter.k8s.aws/instance-category", "In", "c", "m", "r"), False),
        (req("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist"), False),
        (req("karpenter.k8s.aws/instance-category", "NotIn", "g", "p"), False),
    ],
)
def test_gpu_pools_are_recognised_however_they_choose_gpus(requirement, gpu):
    chosen = pool_choosing(requirement)
    assert policy_gpu.is_gpu_pool(chosen) is gpu
    assert broken("gpu-nodepool-tainted", [chosen]) == (["GPU NodePool p has no nvidia.com/gpu:NoSchedule taint"] if gpu else [])


def test_gpu_pools_are_tainted():
    assert broken("gpu-nodepool-tainted", [pool(taint=False)]) == ["GPU NodePool p has no nvidia.com/gpu:NoSchedule taint"]
    assert broken("gpu-nodepool-tainted", [pool()]) == []
    assert broken("gpu-nodepool-tainted", [pool(gpu=False, taint=False, limit=False)]) == []


def test_gpu_pools_are_capped():
    assert broken("gpu-nodepool-capped", [pool(gpu=True, limit=False)]) == ["GPU NodePool p has no nvidia.com/gpu limit"]
    assert broken("gpu-nodepool-capped", [pool()]) == []


def test_training_pools_are_on_demand_consolidate_only_when_empty_and_have_budgets():
    bad = pool(workload="training", disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"})
    assert len(broken("training-pool-protected", [bad])) == 3
    assert broken("training-pool-protected", [pool(workload="training", capacity=("on-demand",))]) == []


@pytest.mark.parametrize(
    ("capacity", "bad"),
    [(None, False), (("NotIn", "spot"), False), (("In", "on-demand", "reserved"), False), (("NotIn", "on-demand"), True), (("Exists",), True)],
)
def test_training_pools_may_use_any_capacity_but_spot(capacity, bad):
    """No capacity-type requirement means on-demand (Karpenter's default); reserved capacity is not interrupted."""
    training = pool(workload="training")
    template_spec(training.props)["requirements"] = [req("karpenter.sh/capacity-type", *capacity)] if capacity else []
    assert bool(broken("training-pool-protected", [training])) is bad


def test_inference_pools_allow_more_than_one_instance_type():
    assert broken("inference-pool-flexible", [pool(workload="inference", types=["g5.xlarge"])]) != []
    assert broken("inference-pool-flexible", [pool(workload="inference", types=["g5.xlarge", "g5.2xlarge"])]) == []
    assert broken("inference-pool-flexible", [pool(workload="inference")]) == []


def test_every_pool_sets_its_disruption():
    assert broken("nodepool-disruption-set", [pool(disruption={"consolidationPolicy": "WhenEmpty"})]) == [
        "NodePool p does not set disruption ['consolidateAfter', 'budgets']"
    ]
    assert broken("nodepool-disruption-set", [pool()]) == []


def karpenter_with_queue(chart: str = "oci://public.ecr.aws/karpenter/karpenter") -> list[Resource]:
    return [
        res("aws:sqs/queue:Queue", "q"),
        res("aws:cloudwatch/eventRule:EventRule", "spot", eventPattern=json.dumps({"detail-type": ["EC2 Spot Instance Interruption Warning"]})),
        res(RELEASE, "autoscaler", name="autoscaler", chart=chart, values={"settings": {"interruptionQueue": "q"}}),
    ]


def test_spot_pools_need_the_interruption_queue():
    assert broken("spot-needs-interruption-queue", [pool()]) == ["NodePool p allows spot but the stack has no interruption queue wired to Karpenter"]
    assert broken("spot-needs-interruption-queue", [pool(), *karpenter_with_queue()]) == []
    assert broken("spot-needs-interruption-queue", [pool(capacity=("on-demand",))]) == []


def test_karpenter_is_recognised_by_its_chart_not_its_release_name():
    assert broken("spot-needs-interruption-queue", [pool(), *karpenter_with_queue("karpenter")]) == []
    assert broken("spot-needs-interruption-queue", [pool(), *karpenter_with_queue("karpenter-crd")]) != []


def test_a_pool_without_a_capacity_type_requirement_is_on_demand():
    """Karpenter launches on-demand capacity when a NodePool does not ask for a capacity type."""
    unspecified = pool_choosing(req("karpenter.k8s.aws/instance-category", "In", "c", "m"))
    assert broken("spot-needs-interruption-queue", [unspecified]) == []
    no_spot = pool_choosing(req("karpenter.sh/capacity-type", "NotIn", "spot"))
    assert broken("spot-needs-interruption-queue", [no_spot]) == []
    assert broken("spot-needs-interruption-queue", [pool_choosing(req("karpenter.sh/capacity-type", "NotIn", "on-demand"))]) != []


def test_gpu_pools_need_the_operator_and_dcgm():
    operator = Resource(urn="urn:op", type=RELEASE, name="gpu-operator", props={"chart": "gpu-operator", "values": {}})
    no_dcgm = Resource(urn="urn:op", type=RELEASE, name="gpu-operator", props={"chart": "gpu-operator", "values": {"dcgmExporter": {"enabled": False}}})
    assert len(broken("gpu-pools-need-operator-and-dcgm", [pool()])) == 2
    assert broken("gpu-pools-need-operator-and-dcgm", [pool(), no_dcgm]) == ["GPU NodePool p but no DCGM exporter: GPU use would be invisible"]
    assert broken("gpu-pools-need-operator-and-dcgm", [pool(), operator]) == []


def test_the_readme_lists_every_rule_with_its_level_and_description():
    readme = (REPO / "README.md").read_text()
    assert [r.name for r in RULES if f"| `{r.name}` | {r.enforcement} | {r.description} |" not in readme] == []


def test_every_rule_has_a_test_here():
    source = open(__file__).read()
    assert [r.name for r in RULES if f'"{r.name}"' not in source] == []


# ------------------------------------------------------------------------------------------ pod security


def namespace(name: str, labels: dict | None = None) -> Resource:
    metadata = {"name": name, **({"labels": labels} if labels is not None else {})}
    return res(policy_model.NAMESPACE, name, metadata=metadata)


@pytest.mark.parametrize(
    ("resource", "bad"),
    [
        (namespace("team-a"), "sets no pod-security.kubernetes.io/enforce level"),
        (namespace("team-a", {"pod-security.kubernetes.io/enforce": "none"}), "sets no"),
        (namespace("team-a", {"pod-security.kubernetes.io/enforce": "privileged"}), "only gpu-operator, kube-system, monitoring may"),
        (namespace("team-a", {"pod-security.kubernetes.io/enforce": "baseline"}), None),
        (namespace("gpu-operator", {"pod-security.kubernetes.io/enforce": "privileged"}), None),
    ],
)
def test_every_namespace_enforces_a_pod_security_level(resource, bad):
    found = broken("namespaces-pod-security", [resource])
    assert (found == []) if bad is None else (len(found) == 1 and bad in found[0])


def test_team_namespaces_enforce_baseline_and_warn_of_restricted(prod):
    team = next(r for r in prod.of_type(policy_model.NAMESPACE) if r.inputs["metadata"]["name"] == "team-a")
    assert team.inputs["metadata"]["labels"] == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/audit": "restricted",
    }


# ------------------------------------------------------------------------------------- stacks and enforcement


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_stacks_pass_every_mandatory_rule(stack, request):
    violations = evaluate(policy_resources(request.getfixturevalue(stack)))
    assert [v for v in violations if v.enforcement == "mandatory"] == []


Match = Callable[[mocks.Recorded], bool]


def of_type(type_: str, name_ends: str = "") -> Match:
    return lambda r: r.type == type_ and r.name.endswith(name_ends)


def changed(inventory: mocks.Inventory, match: Match, change: Callable[[dict[str, Any]], Any] | None) -> mocks.Inventory:
    """The stack with the first resource that matches changed (its inputs deep-copied first), or removed (no change)."""
    resources, done = [], False
    for r in inventory.resources:
        if match(r) and not done:
            done = True
            if change is None:
                continue
            inputs = copy.deepcopy(r.inputs)
            change(inputs)
            r = dataclasses.replace(r, inputs=inputs)
        resources.append(r)
    assert done, "nothing matched"
    return mocks.Inventory(resources, inventory.stack_outputs)


def template_spec(props: dict[str, Any]) -> dict[str, Any]:
    """A NodePool's node template spec (requirements, taints)."""
    return props["spec"]["template"]["spec"]


L4_ONLY = [{"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["l4"]}]
PUBLIC_ENDPOINT = {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}

#: One violation of each rule: which resource of the prod stack to change, and how (None: remove it).
SEEDS: dict[str, tuple[Match, Callable[[dict[str, Any]], Any] | None]] = {
    "s3-bucket-encrypted": (of_type(SSE), lambda p: p.update(rules=[{}])),
    "s3-public-access-blocked": (of_type(PAB), lambda p: p.update(blockPublicPolicy=False)),
    "s3-tls-only": (of_type(POLICY), lambda p: p.update(policy=json.dumps({"Statement": []}))),
    "volumes-encrypted": (of_type(LT), lambda p: p["blockDeviceMappings"][0]["ebs"].update(encrypted="false")),
    "nodeclass-volumes-encrypted": (of_type(policy_model.NODECLASS), lambda p: p["spec"]["blockDeviceMappings"][0]["ebs"].update(encrypted=False)),
    "imdsv2-required": (of_type(LT), lambda p: p["metadataOptions"].update(httpTokens="optional")),
    "eks-secrets-encrypted-and-logged": (of_type(CLUSTER), lambda p: p.pop("encryptionConfigKeyArn")),
    "eks-endpoint-not-public-in-prod": (of_type(CLUSTER), lambda p: p.update(PUBLIC_ENDPOINT)),
    "irsa-trust-pinned": (of_type(ROLE), lambda p: p.update(assumeRolePolicy=trust({"StringLike": {"x:sub": "*"}}))),
    "iam-no-wildcards": (of_type("aws:iam/rolePolicy:RolePolicy"), lambda p: p.update(policy=EVERYTHING)),
    "no-world-ingress": (of_type(INGRESS), lambda p: p.update(cidrIpv4="0.0.0.0/0", ipProtocol="-1")),
    "fsx-in-private-subnet": (of_type("aws:ec2/subnet:Subnet"), lambda p: p.update(mapPublicIpOnLaunch=True)),
    "helm-chart-pinned": (of_type(RELEASE), lambda p: p.update(version=">=1.0")),
    "no-latest-images": (of_type("kubernetes:apps/v1:Deployment"), lambda p: p["spec"]["template"]["spec"]["containers"][0].update(image="kube-scheduler")),
    "no-default-passwords": (of_type(RELEASE), lambda p: p.update(chart="kube-prometheus-stack", values={})),
    "gpu-nodepool-tainted": (of_type(NODEPOOL), lambda p: template_spec(p).update(taints=[], requirements=L4_ONLY)),
    "gpu-nodepool-capped": (of_type(NODEPOOL), lambda p: (p["spec"].update(limits={"cpu": "8"}), template_spec(p).update(requirements=L4_ONLY))),
    "training-pool-protected": (of_type(NODEPOOL), lambda p: p["spec"]["template"]["metadata"]["labels"].update({WORKLOAD_LABEL: "training"})),
    "inference-pool-flexible": (of_type(NODEPOOL, "inference-a10g-spot"), lambda p: template_spec(p)["requirements"].append(req("node.kubernetes.io/instance-type", "In", "g5.xlarge"))),
    "nodepool-disruption-set": (of_type(NODEPOOL), lambda p: p["spec"].pop("disruption")),
    "namespaces-pod-security": (of_type(policy_model.NAMESPACE), lambda p: p["metadata"].pop("labels", None)),
    "spot-needs-interruption-queue": (of_type("aws:sqs/queue:Queue"), None),
    "gpu-pools-need-operator-and-dcgm": (lambda r: r.type == RELEASE and r.inputs.get("chart") == "gpu-operator", None),
}


def offline_run(inventory: mocks.Inventory, out, monkeypatch, capsys, *options: str) -> tuple[int, str]:
    """The offline preview's own main (its violations table and exit status) over a recorded stack."""
    monkeypatch.setattr(preview, "run_preview", lambda project_dir, stack, **_: inventory)
    status = main(["--stack", "prod", "--out", str(out), "--project-dir", str(REPO), *options])
    return status, capsys.readouterr().out


@pytest.mark.parametrize("name", [r.name for r in RULES])
def test_seeding_a_violation_into_the_prod_stack_is_reported_by_the_offline_run(name, prod, tmp_path, monkeypatch, capsys):
    status, printed = offline_run(changed(prod, *SEEDS[name]), tmp_path, monkeypatch, capsys)
    level = rule(name).enforcement
    assert f"  {level:<10} {name:<34} " in printed
    assert status == (1 if level == "mandatory" else 0)


def test_the_offline_run_of_the_unseeded_prod_stack_passes(prod, tmp_path, monkeypatch, capsys):
    status, printed = offline_run(prod, tmp_path, monkeypatch, capsys)
    assert (status, printed.rstrip().endswith("no violations")) == (0, True)


def test_enforcement_levels_follow_pack_config():
    gpu_rule = rule("gpu-nodepool-capped")
    assert resolve_enforcement(gpu_rule, {}) == "mandatory"
    assert resolve_enforcement(gpu_rule, {"gpu-nodepool-capped": "advisory"}) == "advisory"
    assert resolve_enforcement(gpu_rule, {"gpu-nodepool-capped": {"enforcementLevel": "disabled"}}) == "disabled"
    assert resolve_enforcement(gpu_rule, {"all": "advisory"}) == "advisory"
    with pytest.raises(ValueError, match="expected mandatory, advisory or disabled, got 'loud'"):
        resolve_enforcement(gpu_rule, {"gpu-nodepool-capped": "loud"})
    assert "gpu-nodepool-capped" in {v.rule for v in evaluate([pool(limit=False)])}
    assert "gpu-nodepool-capped" not in {v.rule for v in evaluate([pool(limit=False)], {"gpu-nodepool-capped": "disabled"})}


def test_a_mandatory_violation_fails_the_offline_preview_and_advisory_does_not(prod, tmp_path, monkeypatch, capsys):
    public = changed(prod, of_type(CLUSTER), lambda p: p.update(PUBLIC_ENDPOINT))
    status, printed = offline_run(public, tmp_path / "out", monkeypatch, capsys)
    assert status == 1
    assert "mandatory  eks-endpoint-not-public-in-prod" in printed
    assert (tmp_path / "out" / "resources.json").exists()
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"eks-endpoint-not-public-in-prod": "advisory"}))
    status, printed = offline_run(public, tmp_path / "out", monkeypatch, capsys, "--policy-config", str(config))
    assert status == 0
    assert "advisory   eks-endpoint-not-public-in-prod" in printed


# ------------------------------------------------------------------------------------------ the CrossGuard pack


def engine_props(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """Properties as pulumi-policy hands them to a policy: through the engine's protobuf Struct, deserialized and
    wrapped by `unknown_checking_proxy`, as the SDK's Analyze and AnalyzeStack do."""
    struct = struct_pb2.Struct()
    struct.update(props)
    return unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))


def crossguard(inventory: mocks.Inventory) -> tuple[list[tuple[str, str, str | None]], list[tuple[str, str]]]:
    """Every policy of the pack run over a stack as the SDK runs it: what is reported, (policy, message, urn), and
    what the SDK would skip as "can't run policy during preview" because an UnknownValueError escaped, (policy, urn)."""
    resources = policy_resources(inventory)
    stack = {r.urn: PolicyResource(r.type, engine_props(r.props), r.urn, r.name, None, None, None, [], {}) for r in resources}
    for r in resources:
        stack[r.urn].dependencies.extend(stack[urn] for urn in sorted(r.dependencies) if urn in stack)
    reported, skipped = [], []
    for policy in policies():
        def report(message, urn=None, name=policy.name):
            reported.append((name, message, urn))

        if isinstance(policy, StackValidationPolicy):
            runs = [("stack", StackValidationArgs(list(stack.values())))]
        else:
            runs = [(r.urn, ResourceValidationArgs(r.type, engine_props(r.props), r.urn, r.name, None, None)) for r in resources]
        for urn, args in runs:
            try:
                policy.validate(args, report)
            except UnknownValueError:
                skipped.append((policy.name, urn))
    return reported, skipped


def test_crossguard_adapters_cover_every_rule():
    assert {p.name for p in policies()} == {r.name for r in RULES}


def test_crossguard_finds_no_false_violations_in_the_prod_stack(prod):
    """The SDK's read-only proxies are mappings and sequences, not dicts and lists: the rules must read them alike."""
    assert crossguard(prod) == ([], [])


def test_crossguard_reports_what_the_rules_find(prod):
    reported, _ = crossguard(changed(prod, of_type(NODEPOOL, "training"), lambda p: template_spec(p).update(taints=[])))
    assert [(name, message) for name, message, _ in reported] == [
        ("gpu-nodepool-tainted", "GPU NodePool karpenter-pool-training has no nvidia.com/gpu:NoSchedule taint")
    ]


def test_crossguard_skips_only_what_is_unknown_during_a_preview(prod):
    """One unknown value (the SDK's sentinel) skips the check that needs it, not the whole policy."""
    role = prod.of_type(ROLE)[0]
    unknown_sse, removed_sse = prod.of_type(SSE)
    unencrypted = next(b for b in prod.of_type(BUCKET.type) if b.urn in removed_sse.dependencies)
    stack = changed(prod, lambda r: r.urn == role.urn, lambda p: p.update(assumeRolePolicy=UNKNOWN_STRING_VALUE))
    stack = changed(stack, lambda r: r.urn == unknown_sse.urn, lambda p: p.update(rules=UNKNOWN_ARRAY_VALUE))
    stack = changed(stack, lambda r: r.urn == removed_sse.urn, None)
    stack = changed(stack, of_type(RELEASE, "karpenter"), lambda p: (
        p["values"]["settings"].update(interruptionQueue=UNKNOWN_STRING_VALUE),
        p["values"]["controller"].update(image={"repository": "public.ecr.aws/karpenter/controller", "tag": "latest"}),
    ))
    stack = changed(stack, of_type(CLUSTER), lambda p: p.update(encryptionConfigKeyArn=UNKNOWN_STRING_VALUE, enabledClusterLogTypes=["api"]))
    stack = changed(stack, of_type(INGRESS), lambda p: p.update(securityGroupId=UNKNOWN_STRING_VALUE, cidrIpv4="0.0.0.0/0", fromPort=22, toPort=22))
    reported, skipped = crossguard(stack)
    # Only the trust policy that cannot be read is left out ("can't run policy during preview", for that role alone).
    assert skipped == [("irsa-trust-pinned", role.urn)]
    karpenter, ingress = next(r for r in prod.of_type(RELEASE) if r.name.endswith("karpenter")), prod.of_type(INGRESS)[0]
    assert sorted(reported) == [
        ("eks-secrets-encrypted-and-logged", "cluster cluster-eks does not send ['audit', 'authenticator'] control-plane logs", None),
        ("no-latest-images", f"Helm release {karpenter.name} sets image 'public.ecr.aws/karpenter/controller' at values.controller.image without a pinned tag", None),
        ("no-world-ingress", f"{ingress.name} opens ports 22-22 to the internet", None),
        ("s3-bucket-encrypted", f"bucket {unencrypted.name} has no default encryption", unencrypted.urn),
    ]


@pytest.mark.parametrize(
    ("name", "resource"),
    [
        ("no-world-ingress", res("aws:ec2/securityGroup:SecurityGroup", ingress=[{"protocol": "tcp", "cidrBlocks": ["0.0.0.0/0"], "fromPort": 22, "toPort": 22}])),
        ("iam-no-wildcards", res(ROLE, "app", inlinePolicies=[{"name": "all", "policy": EVERYTHING}])),
        ("iam-no-wildcards", res("aws:iam/policy:Policy", policy={"Statement": [{"Effect": "Allow", "Action": ["IAM:*"], "Resource": ["*"]}]})),
        ("no-latest-images", res(RELEASE, "app", values={"sidecars": [{"image": "busybox"}]})),
        ("gpu-nodepool-tainted", pool_choosing(req("node.kubernetes.io/instance-type", "In", "g5.xlarge"))),
        ("eks-secrets-encrypted-and-logged", res(AWS_CLUSTER, encryptionConfig={"provider": {"keyArn": "k"}, "resources": ["configmaps"]}, enabledClusterLogTypes=LOGS)),
        ("volumes-encrypted", res(LT, "lt", blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"encrypted": "false"}}])),
    ],
)
def test_rules_read_the_sdk_proxies_as_they_read_plain_values(name, resource):
    proxied = dataclasses.replace(resource, props=engine_props(resource.props), unknown=(UnknownValueError,))
    assert broken(name, [proxied]) == broken(name, [resource]) != []
