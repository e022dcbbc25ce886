"""Policy rules: each with a violating and a compliant case, the stacks pass, seeded violations are caught, and the
CrossGuard adapters report what the rules find."""

from __future__ import annotations

import copy
import json
import shutil
from types import SimpleNamespace

import pytest
import yaml

from components import policy_rules
from components.policy_pack import policies
from components.policy_rules import RULES, Resource, evaluate, resolve_enforcement
from components.preview import main, policy_resources
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


def test_node_class_volumes_encrypted():
    spec = {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": False}}]}
    assert broken("nodeclass-volumes-encrypted", [res(policy_rules.NODECLASS, spec=spec)]) != []
    spec["blockDeviceMappings"][0]["ebs"]["encrypted"] = True
    assert broken("nodeclass-volumes-encrypted", [res(policy_rules.NODECLASS, spec=spec)]) == []


def test_imdsv2_required_on_templates_and_node_classes():
    assert broken("imdsv2-required", [res(LT, metadataOptions={"httpTokens": "optional"})]) != []
    assert broken("imdsv2-required", [res(policy_rules.NODECLASS, spec={})]) != []
    assert broken("imdsv2-required", [res(LT, metadataOptions={"httpTokens": "required"})]) == []
    assert broken("imdsv2-required", [res(policy_rules.NODECLASS, spec={"metadataOptions": {"httpTokens": "required"}})]) == []


# ------------------------------------------------------------------------------------------------------ EKS

CLUSTER = "eks:index:Cluster"


def test_eks_secrets_encryption_and_logs():
    assert len(broken("eks-secrets-encrypted-and-logged", [res(CLUSTER, enabledClusterLogTypes=["api"])])) == 2
    good = res(CLUSTER, encryptionConfigKeyArn="arn:aws:kms:...", enabledClusterLogTypes=["api", "audit", "authenticator"])
    assert broken("eks-secrets-encrypted-and-logged", [good]) == []


def test_public_endpoint_open_to_the_world_is_refused_in_prod_only():
    open_ = {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod", **open_)]) != []
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod", endpointPublicAccess=True)]) != []
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="dev", **open_)]) == []
    limited = {"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}
    assert broken("eks-endpoint-not-public-in-prod", [res(CLUSTER, stack="prod", **limited)]) == []


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


def test_inline_security_group_rules_are_checked_too():
    group = res("aws:ec2/securityGroup:SecurityGroup", ingress=[{"cidrBlocks": ["0.0.0.0/0"], "fromPort": 6443, "toPort": 6443}])
    assert broken("no-world-ingress", [group]) == ["r opens ports 6443-6443 to the internet"]


def test_fsx_must_sit_in_a_private_subnet():
    public = res("aws:ec2/subnet:Subnet", "public-a", tags={"kubernetes.io/role/elb": "1"})
    private = res("aws:ec2/subnet:Subnet", "private-a", tags={"kubernetes.io/role/internal-elb": "1"})
    on_public = res("aws:fsx/lustreFileSystem:LustreFileSystem", "fs", deps=(public.urn,))
    on_private = res("aws:fsx/lustreFileSystem:LustreFileSystem", "fs", deps=(private.urn,))
    assert broken("fsx-in-private-subnet", [public, on_public]) == ["file system fs is placed in public subnet public-a"]
    assert broken("fsx-in-private-subnet", [private, on_private]) == []


# -------------------------------------------------------------------------------------- Helm, images, passwords

RELEASE = policy_rules.HELM_RELEASE


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


def test_grafana_admin_password_is_never_the_chart_default():
    default = res(RELEASE, chart="kube-prometheus-stack", values={})
    chart_default = res(RELEASE, chart="kube-prometheus-stack", values={"grafana": {"adminPassword": "prom-operator"}})
    from_secret = res(RELEASE, chart="kube-prometheus-stack", values={"grafana": {"admin": {"existingSecret": "grafana-admin"}}})
    assert broken("no-default-passwords", [default]) != [] and broken("no-default-passwords", [chart_default]) != []
    assert broken("no-default-passwords", [from_secret]) == []


# ----------------------------------------------------------------------------------------------------- GPU

NODEPOOL = policy_rules.NODEPOOL


def pool(name="p", *, capacity=("spot", "on-demand"), gpu=True, taint=True, limit=True, workload=None, disruption=None, types=None):
    requirements = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(capacity)}]
    if gpu:
        requirements.append({"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["a10g"]})
    if types is not None:
        requirements.append({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)})
    template = {"metadata": {"labels": {policy_rules.WORKLOAD_LABEL: workload} if workload else {}}, "spec": {"requirements": requirements}}
    if taint:
        template["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    spec = {
        "template": template,
        "limits": {"nvidia.com/gpu": "8"} if limit else {"cpu": "100"},
        "disruption": disruption if disruption is not None else {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m", "budgets": [{"nodes": "1"}]},
    }
    return res(NODEPOOL, name, spec=spec)


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


def test_inference_pools_allow_more_than_one_instance_type():
    assert broken("inference-pool-flexible", [pool(workload="inference", types=["g5.xlarge"])]) != []
    assert broken("inference-pool-flexible", [pool(workload="inference", types=["g5.xlarge", "g5.2xlarge"])]) == []
    assert broken("inference-pool-flexible", [pool(workload="inference")]) == []


def test_every_pool_sets_its_disruption():
    assert broken("nodepool-disruption-set", [pool(disruption={"consolidationPolicy": "WhenEmpty"})]) == [
        "NodePool p does not set disruption ['consolidateAfter', 'budgets']"
    ]
    assert broken("nodepool-disruption-set", [pool()]) == []


def karpenter_with_queue() -> list[Resource]:
    return [
        res("aws:sqs/queue:Queue", "q"),
        res("aws:cloudwatch/eventRule:EventRule", "spot", eventPattern=json.dumps({"detail-type": ["EC2 Spot Instance Interruption Warning"]})),
        res(RELEASE, "karpenter", name="karpenter", values={"settings": {"interruptionQueue": "q"}}),
    ]


def test_spot_pools_need_the_interruption_queue():
    assert broken("spot-needs-interruption-queue", [pool()]) == ["NodePool p allows spot but the stack has no interruption queue wired to Karpenter"]
    assert broken("spot-needs-interruption-queue", [pool(), *karpenter_with_queue()]) == []
    assert broken("spot-needs-interruption-queue", [pool(capacity=("on-demand",))]) == []


def test_gpu_pools_need_the_operator_and_dcgm():
    operator = Resource(urn="urn:op", type=RELEASE, name="gpu-operator", props={"chart": "gpu-operator", "values": {}})
    no_dcgm = Resource(urn="urn:op", type=RELEASE, name="gpu-operator", props={"chart": "gpu-operator", "values": {"dcgmExporter": {"enabled": False}}})
    assert len(broken("gpu-pools-need-operator-and-dcgm", [pool()])) == 2
    assert broken("gpu-pools-need-operator-and-dcgm", [pool(), no_dcgm]) == ["GPU NodePool p but no DCGM exporter: GPU use would be invisible"]
    assert broken("gpu-pools-need-operator-and-dcgm", [pool(), operator]) == []


def test_every_rule_has_a_test_here():
    source = open(__file__).read()
    assert [r.name for r in RULES if f'"{r.name}"' not in source] == []


# ------------------------------------------------------------------------------------- stacks and enforcement


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_stacks_pass_every_mandatory_rule(stack, request):
    violations = evaluate(policy_resources(request.getfixturevalue(stack)))
    assert [v for v in violations if v.enforcement == "mandatory"] == []


def _seed(resources: list[Resource], type_: str, change) -> list[Resource]:
    """The stack with the first resource of a type changed (its properties deep-copied first)."""
    seeded, done = [], False
    for r in resources:
        if r.type == type_ and not done:
            props = copy.deepcopy(dict(r.props))
            change(props)
            r = Resource(urn=r.urn, type=r.type, name=r.name, props=props, dependencies=r.dependencies)
            done = True
        seeded.append(r)
    assert done, type_
    return seeded


def _gpu_pool_type(props):
    return props["spec"]["template"]["spec"]


SEEDS = {
    "s3-bucket-encrypted": (SSE, lambda p: p.update(rules=[{}])),
    "s3-public-access-blocked": (PAB, lambda p: p.update(blockPublicPolicy=False)),
    "s3-tls-only": (POLICY, lambda p: p.update(policy=json.dumps({"Statement": []}))),
    "volumes-encrypted": (LT, lambda p: p["blockDeviceMappings"][0]["ebs"].update(encrypted="false")),
    "nodeclass-volumes-encrypted": (policy_rules.NODECLASS, lambda p: p["spec"]["blockDeviceMappings"][0]["ebs"].update(encrypted=False)),
    "imdsv2-required": (LT, lambda p: p["metadataOptions"].update(httpTokens="optional")),
    "eks-secrets-encrypted-and-logged": (CLUSTER, lambda p: p.pop("encryptionConfigKeyArn")),
    "eks-endpoint-not-public-in-prod": (CLUSTER, lambda p: p.update(endpointPublicAccess=True, publicAccessCidrs=["0.0.0.0/0"])),
    "irsa-trust-pinned": (ROLE, lambda p: p.update(assumeRolePolicy=trust({"StringLike": {"x:sub": "*"}}))),
    "iam-no-wildcards": ("aws:iam/rolePolicy:RolePolicy", lambda p: p.update(policy=json.dumps({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))),
    "no-world-ingress": (INGRESS, lambda p: p.update(cidrIpv4="0.0.0.0/0")),
    "fsx-in-private-subnet": ("aws:ec2/subnet:Subnet", lambda p: p.update(mapPublicIpOnLaunch=True)),
    "helm-chart-pinned": (RELEASE, lambda p: p.update(version=">=1.0")),
    "no-latest-images": ("kubernetes:apps/v1:Deployment", lambda p: p["spec"]["template"]["spec"]["containers"][0].update(image="kube-scheduler")),
    "no-default-passwords": (RELEASE, lambda p: p.update(chart="kube-prometheus-stack", values={})),
    "gpu-nodepool-tainted": (NODEPOOL, lambda p: _gpu_pool_type(p).update(taints=[], requirements=[{"key": "karpenter.k8s.aws/instance-gpu-name", "values": ["l4"]}])),
    "gpu-nodepool-capped": (NODEPOOL, lambda p: (p["spec"].update(limits={"cpu": "8"}), _gpu_pool_type(p).update(requirements=[{"key": "karpenter.k8s.aws/instance-gpu-name", "values": ["l4"]}]))),
    "training-pool-protected": (NODEPOOL, lambda p: p["spec"]["template"]["metadata"]["labels"].update({policy_rules.WORKLOAD_LABEL: "training"})),
    "inference-pool-flexible": (NODEPOOL, lambda p: (p["spec"]["template"]["metadata"]["labels"].update({policy_rules.WORKLOAD_LABEL: "inference"}), _gpu_pool_type(p)["requirements"].append({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}))),
    "nodepool-disruption-set": (NODEPOOL, lambda p: p["spec"].pop("disruption")),
    "spot-needs-interruption-queue": ("aws:sqs/queue:Queue", lambda p: None),
    "gpu-pools-need-operator-and-dcgm": (RELEASE, lambda p: None),
}


@pytest.mark.parametrize("name", [r.name for r in RULES])
def test_seeding_a_violation_into_the_prod_stack_is_reported(name, prod):
    resources = policy_resources(prod)
    if name == "spot-needs-interruption-queue":
        seeded = [r for r in resources if r.type != "aws:sqs/queue:Queue"]
    elif name == "gpu-pools-need-operator-and-dcgm":
        seeded = [r for r in resources if not (r.type == RELEASE and r.props.get("chart") == "gpu-operator")]
    else:
        type_, change = SEEDS[name]
        seeded = _seed(resources, type_, change)
    assert name in {v.rule for v in evaluate(seeded)}


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


def test_a_mandatory_violation_fails_the_offline_preview_and_advisory_does_not(tmp_path, capsys):
    stack_file = yaml.safe_load((REPO / "Pulumi.prod.yaml").read_text())
    stack_file["config"]["eks-ml-platform:cluster"]["endpoint"] = {"public": True, "publicCidrs": ["0.0.0.0/0"]}
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "Pulumi.prod-eu.yaml").write_text(yaml.safe_dump(stack_file))
    out = tmp_path / "out"
    assert main(["--stack", "prod-eu", "--out", str(out), "--project-dir", str(tmp_path)]) == 1
    printed = capsys.readouterr().out
    assert "mandatory  eks-endpoint-not-public-in-prod" in printed
    assert (out / "resources.json").exists()
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"eks-endpoint-not-public-in-prod": "advisory"}))
    assert main(["--stack", "prod-eu", "--out", str(out), "--project-dir", str(tmp_path), "--policy-config", str(config)]) == 0
    assert "advisory   eks-endpoint-not-public-in-prod" in capsys.readouterr().out


def test_crossguard_adapters_report_what_the_rules_find():
    by_name = {p.name: p for p in policies()}
    assert set(by_name) == {r.name for r in RULES}
    reported = []
    args = SimpleNamespace(resource_type=NODEPOOL, props=dict(pool(taint=False).props), urn="urn:x", name="p")
    by_name["gpu-nodepool-tainted"].validate(args, lambda message, urn=None: reported.append(message))
    assert reported == ["GPU NodePool p has no nvidia.com/gpu:NoSchedule taint"]
    stack_args = SimpleNamespace(
        resources=[SimpleNamespace(urn=BUCKET.urn, resource_type=BUCKET.type, name="data", props={}, dependencies=[], property_dependencies={})]
    )
    found = []
    validate = by_name["s3-bucket-encrypted"].validate
    validate(stack_args, lambda message, urn=None: found.append((message, urn)))
    assert found == [("bucket data has no default encryption", BUCKET.urn)]
