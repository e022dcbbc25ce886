"""The security baseline (components/policy/security.py): each rule with a violating and a compliant case."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.policy import model as policy_model
from components.policy.rules import Resource
from tests.policy_support import (
    AWS_CLUSTER,
    BUCKET,
    CLUSTER,
    INGRESS,
    LOGS,
    LT,
    PAB,
    POLICY,
    RELEASE,
    SSE,
    broken,
    res,
    rule,
)

# -------------------------------------------------------------------------------------------------------- S3


def bucket_part(type_: str, **props) -> Resource:
    return res(type_, "data-part", deps=(BUCKET.urn,), **props)


TLS = json.dumps(
    {"Statement": [{"Effect": "Deny", "Action": "s3:*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}
)


def test_bucket_encryption():
    assert broken("s3-bucket-encrypted", [BUCKET]) == ["bucket data has no default encryption"]
    ok = bucket_part(SSE, rules=[{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}])
    assert broken("s3-bucket-encrypted", [BUCKET, ok]) == []


def test_bucket_public_access_block():
    partial = bucket_part(
        PAB, blockPublicAcls=True, blockPublicPolicy=True, ignorePublicAcls=True, restrictPublicBuckets=False
    )
    assert broken("s3-public-access-blocked", [BUCKET, partial]) != []
    full = bucket_part(
        PAB, blockPublicAcls=True, blockPublicPolicy=True, ignorePublicAcls=True, restrictPublicBuckets=True
    )
    assert broken("s3-public-access-blocked", [BUCKET, full]) == []


def test_bucket_tls_only():
    allow_all = bucket_part(POLICY, policy=json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject"}]}))
    assert broken("s3-tls-only", [BUCKET, allow_all]) == ["bucket data has no policy denying non-TLS requests"]
    assert broken("s3-tls-only", [BUCKET, bucket_part(POLICY, policy=TLS)]) == []


# ------------------------------------------------------------------------------------------------- volumes, IMDS


def test_launch_template_volumes_encrypted():
    plain = res(LT, blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"encrypted": "false"}}])
    assert broken("volumes-encrypted", [plain]) == ["block device /dev/xvda of r is not encrypted"]
    assert (
        broken(
            "volumes-encrypted",
            [res(LT, blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}])],
        )
        == []
    )


def test_node_group_without_a_launch_template_is_flagged_as_unverifiable():
    node_group = "aws:eks/nodeGroup:NodeGroup"
    assert broken("volumes-encrypted", [res(node_group, "system", instanceTypes=["m7i.xlarge"])]) == [
        (
            "node group system has no launch template: its disks are encrypted only if the account's EBS encryption by "
            "default is on, which the stack cannot show"
        )
    ]
    assert broken("volumes-encrypted", [res(node_group, "system", launchTemplate={"id": "lt-1", "version": "1"})]) == []


def test_launch_template_without_block_device_mappings_is_flagged():
    assert broken("volumes-encrypted", [res(LT, "lt", metadataOptions={"httpTokens": "required"})]) == [
        "launch template lt sets no blockDeviceMappings, so its root volume may be unencrypted"
    ]


def test_node_class_volumes_encrypted():
    spec: dict[str, Any] = {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": False}}]}
    assert broken("nodeclass-volumes-encrypted", [res(policy_model.NODECLASS, spec=spec)]) != []
    spec["blockDeviceMappings"][0]["ebs"]["encrypted"] = True
    assert broken("nodeclass-volumes-encrypted", [res(policy_model.NODECLASS, spec=spec)]) == []


def test_imdsv2_required_on_templates_and_node_classes():
    assert broken("imdsv2-required", [res(LT, metadataOptions={"httpTokens": "optional"})]) != []
    assert broken("imdsv2-required", [res(policy_model.NODECLASS, spec={})]) != []
    assert broken("imdsv2-required", [res(LT, metadataOptions={"httpTokens": "required"})]) == []
    assert (
        broken("imdsv2-required", [res(policy_model.NODECLASS, spec={"metadataOptions": {"httpTokens": "required"}})])
        == []
    )


# ------------------------------------------------------------------------------------------------------ EKS


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
    open_: dict[str, Any] = {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod", **open_)]) != []
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod", endpointPublicAccess=True)]) != []
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="dev", **open_)]) == []
    limited: dict[str, Any] = {"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod", **limited)]) == []


def test_an_unset_endpoint_public_access_counts_as_public():
    """AWS and pulumi-eks both default endpointPublicAccess to true."""
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod")]) != []
    assert (
        broken("eks-endpoint-not-public-in-prod", [res(AWS_CLUSTER, stack="prod", vpcConfig={"subnetIds": ["s"]})])
        != []
    )
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


# --------------------------------------------------------------------------------------------- network, FSx


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


@pytest.mark.parametrize(
    "type_", ["aws:ec2/securityGroup:SecurityGroup", "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"]
)
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
    assert broken("fsx-in-private-subnet", [public, on_public]) == [
        "file system fs is placed in public subnet public-a"
    ]
    assert broken("fsx-in-private-subnet", [private, on_private]) == []


def test_fsx_in_a_vpc_brought_from_elsewhere_cannot_be_checked_and_the_rule_says_so():
    """With subnet ids from config there is no Subnet in the stack to judge: the rule passes, and says it."""
    byo = res("aws:fsx/lustreFileSystem:LustreFileSystem", "fs", subnetIds=["subnet-0abc"])
    assert broken("fsx-in-private-subnet", [byo]) == []
    assert "only subnets created in the same stack can be checked" in rule("fsx-in-private-subnet").description


# -------------------------------------------------------------------------------------- Helm, images, passwords


@pytest.mark.parametrize(
    ("version", "bad"),
    [(None, True), ("", True), ("^1.14", True), ("1.x", True), ("1.14.1", False), ("v26.7.0", False)],
)
def test_helm_releases_pin_exact_versions(version, bad):
    assert bool(broken("helm-chart-pinned", [res(RELEASE, version=version)])) is bad


@pytest.mark.parametrize(
    ("image", "bad"),
    [
        ("nginx", True),
        ("nginx:latest", True),
        ("localhost:5000/app", True),
        ("registry.k8s.io/kube-scheduler:v1.35.3", False),
        ("app@sha256:abc", False),
    ],
)
def test_container_images_are_pinned(image, bad):
    deployment = res(
        "kubernetes:apps/v1:Deployment", spec={"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}
    )
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
    "chart",
    [
        "kube-prometheus-stack",
        "prometheus-community/kube-prometheus-stack",
        "oci://ghcr.io/prometheus-community/charts/kube-prometheus-stack",
    ],
)
def test_kube_prometheus_stack_is_recognised_by_its_chart_path(chart):
    assert broken("no-default-passwords", [res(RELEASE, chart=chart, values={})]) != []
    assert (
        broken(
            "no-default-passwords",
            [res(RELEASE, chart=chart, values={"grafana": {"adminPassword": "s3cret-generated"}})],
        )
        == []
    )


def test_grafana_admin_password_is_never_the_chart_default():
    default = res(RELEASE, chart="kube-prometheus-stack", values={})
    chart_default = res(RELEASE, chart="kube-prometheus-stack", values={"grafana": {"adminPassword": "prom-operator"}})
    from_secret = res(
        RELEASE, chart="kube-prometheus-stack", values={"grafana": {"admin": {"existingSecret": "grafana-admin"}}}
    )
    assert broken("no-default-passwords", [default]) != []
    assert broken("no-default-passwords", [chart_default]) != []
    assert broken("no-default-passwords", [from_secret]) == []


# ------------------------------------------------------------------------------------------ pod security


def namespace(name: str, labels: dict[str, Any] | None = None) -> Resource:
    metadata = {"name": name, **({"labels": labels} if labels is not None else {})}
    return res(policy_model.NAMESPACE, name, metadata=metadata)


@pytest.mark.parametrize(
    ("resource", "bad"),
    [
        (namespace("team-a"), "sets no pod-security.kubernetes.io/enforce level"),
        (namespace("team-a", {"pod-security.kubernetes.io/enforce": "none"}), "sets no"),
        (
            namespace("team-a", {"pod-security.kubernetes.io/enforce": "privileged"}),
            "only gpu-operator, kube-system, node-exporter may",
        ),
        (
            namespace("monitoring", {"pod-security.kubernetes.io/enforce": "privileged"}),
            "only gpu-operator, kube-system, node-exporter may",
        ),
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
        "eksml.io/team": "team-a",  # a team's pods live here: held to the team namespaces' network checks
    }
