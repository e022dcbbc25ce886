"""The rules as a pack (components/policy/rules.py): every rule documented and tested, the stacks pass, seeded
violations are reported by the offline run, enforcement follows pack config, and the CrossGuard adapters see what the
SDK hands them (read-only proxies, unknown values)."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2
from pulumi_policy import PolicyResource, ResourceValidationArgs, StackValidationArgs, StackValidationPolicy
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from components.policy import model as policy_model
from components.policy.rules import RULES, Rule, evaluate, resolve_enforcement
from components.scheduling import WORKLOAD_LABEL
from components.tools import preview
from components.tools.cluster_model import Platform
from components.tools.preview import main, policy_resources
from components.tools.preview.inventory import Inventory, Recorded
from policies.pack import policies
from tests.conftest import REPO
from tests.policy_support import (
    AWS_CLUSTER,
    BUCKET,
    CLUSTER,
    EVERYTHING,
    INGRESS,
    LOGS,
    LT,
    NODEPOOL,
    PAB,
    POLICY,
    RELEASE,
    ROLE,
    SSE,
    broken,
    pool,
    pool_choosing,
    req,
    res,
    rule,
    template_spec,
    trust,
)


def test_the_policy_page_lists_every_rule_with_its_level_and_description():
    page = (REPO / "docs" / "policy-pack.md").read_text()
    assert [r.name for r in RULES if f"| `{r.name}` | {r.enforcement} | {r.description} |" not in page] == []


def test_every_rule_has_a_test_in_the_module_of_its_kind():
    """Each rule's cases live in the test module mirroring the policy module that implements it (security, iam, gpu):
    this module names every rule in its seeds, so it cannot be where a rule's own cases are looked for."""

    def tests_of(checked: Rule) -> str:
        kind = (checked.check_resource or checked.check_stack).__module__.rsplit(".", 1)[-1]
        return (REPO / "tests" / f"test_policy_{kind}.py").read_text()

    assert [r.name for r in RULES if f'"{r.name}"' not in tests_of(r)] == []


# ------------------------------------------------------------------------------------- stacks and enforcement


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_stacks_pass_every_mandatory_rule(stack, request):
    violations = evaluate(policy_resources(request.getfixturevalue(stack)))
    assert [v for v in violations if v.enforcement == "mandatory"] == []


Match = Callable[[Recorded], bool]


def of_type(type_: str, name_ends: str = "") -> Match:
    return lambda r: r.type == type_ and r.name.endswith(name_ends)


def changed(inventory: Inventory, match: Match, change: Callable[[dict[str, Any]], Any] | None) -> Inventory:
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
    return Inventory(resources, inventory.stack_outputs)


L4_ONLY = [{"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["l4"]}]
PUBLIC_ENDPOINT = {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}

#: One violation of each rule: which resource of the prod stack to change, and how (None: remove it).
SEEDS: dict[str, tuple[Match, Callable[[dict[str, Any]], Any] | None]] = {
    "s3-bucket-encrypted": (of_type(SSE), lambda p: p.update(rules=[{}])),
    "s3-public-access-blocked": (of_type(PAB), lambda p: p.update(blockPublicPolicy=False)),
    "s3-tls-only": (of_type(POLICY), lambda p: p.update(policy=json.dumps({"Statement": []}))),
    "volumes-encrypted": (of_type(LT), lambda p: p["blockDeviceMappings"][0]["ebs"].update(encrypted="false")),
    "nodeclass-volumes-encrypted": (
        of_type(policy_model.NODECLASS),
        lambda p: p["spec"]["blockDeviceMappings"][0]["ebs"].update(encrypted=False),
    ),
    "imdsv2-required": (of_type(LT), lambda p: p["metadataOptions"].update(httpTokens="optional")),
    "eks-secrets-encrypted-and-logged": (of_type(CLUSTER), lambda p: p.pop("encryptionConfigKeyArn")),
    "eks-endpoint-not-public-in-prod": (of_type(CLUSTER), lambda p: p.update(PUBLIC_ENDPOINT)),
    "irsa-trust-pinned": (of_type(ROLE), lambda p: p.update(assumeRolePolicy=trust({"StringLike": {"x:sub": "*"}}))),
    "iam-no-wildcards": (of_type("aws:iam/rolePolicy:RolePolicy"), lambda p: p.update(policy=EVERYTHING)),
    "no-world-ingress": (of_type(INGRESS), lambda p: p.update(cidrIpv4="0.0.0.0/0", ipProtocol="-1")),
    "fsx-in-private-subnet": (of_type("aws:ec2/subnet:Subnet"), lambda p: p.update(mapPublicIpOnLaunch=True)),
    "helm-chart-pinned": (of_type(RELEASE), lambda p: p.update(version=">=1.0")),
    "no-latest-images": (
        of_type("kubernetes:apps/v1:Deployment"),
        lambda p: p["spec"]["template"]["spec"]["containers"][0].update(image="kube-scheduler"),
    ),
    "no-default-passwords": (of_type(RELEASE), lambda p: p.update(chart="kube-prometheus-stack", values={})),
    "gpu-nodepool-tainted": (of_type(NODEPOOL), lambda p: template_spec(p).update(taints=[], requirements=L4_ONLY)),
    "gpu-nodepool-capped": (
        of_type(NODEPOOL),
        lambda p: (p["spec"].update(limits={"cpu": "8"}), template_spec(p).update(requirements=L4_ONLY)),
    ),
    "training-pool-protected": (
        of_type(NODEPOOL),
        lambda p: p["spec"]["template"]["metadata"]["labels"].update({WORKLOAD_LABEL: "training"}),
    ),
    "inference-pool-flexible": (
        of_type(NODEPOOL, "inference-a10g-spot"),
        lambda p: template_spec(p)["requirements"].append(req("node.kubernetes.io/instance-type", "In", "g5.xlarge")),
    ),
    "nodepool-disruption-set": (of_type(NODEPOOL), lambda p: p["spec"].pop("disruption")),
    "namespaces-pod-security": (of_type(policy_model.NAMESPACE), lambda p: p["metadata"].pop("labels", None)),
    "spot-needs-interruption-queue": (of_type("aws:sqs/queue:Queue"), None),
    "gpu-pools-need-operator-and-dcgm": (lambda r: r.type == RELEASE and r.inputs.get("chart") == "gpu-operator", None),
}


def offline_run(inventory: Inventory, out, monkeypatch, capsys, *options: str) -> tuple[int, str]:
    """The offline preview's own main (its violations table and exit status) over a recorded stack."""
    monkeypatch.setattr(preview, "run_preview", lambda project_dir, stack, **_: inventory)
    # The policy table and its exit status alone: the model of the running platform has tests of its own.
    monkeypatch.setattr(preview, "platform_model", lambda recorded, charts: (Platform(), []))
    status = main(["--stack", "prod", "--out", str(out), "--project-dir", str(REPO), *options])
    return status, capsys.readouterr().out


@pytest.mark.stack
@pytest.mark.parametrize("name", [r.name for r in RULES])
def test_seeding_a_violation_into_the_prod_stack_is_reported_by_the_offline_run(
    name, prod, tmp_path, monkeypatch, capsys
):
    status, printed = offline_run(changed(prod, *SEEDS[name]), tmp_path, monkeypatch, capsys)
    level = rule(name).enforcement
    assert f"  {level:<10} {name:<34} " in printed
    assert status == (1 if level == "mandatory" else 0)


@pytest.mark.stack
def test_the_offline_run_of_the_unseeded_prod_stack_passes(prod, tmp_path, monkeypatch, capsys):
    status, printed = offline_run(prod, tmp_path, monkeypatch, capsys)
    (policies,) = [line for line in printed.splitlines() if line.startswith("Policies:")]
    assert (status, policies.endswith("no violations")) == (0, True)


def test_enforcement_levels_follow_pack_config():
    gpu_rule = rule("gpu-nodepool-capped")
    assert resolve_enforcement(gpu_rule, {}) == "mandatory"
    assert resolve_enforcement(gpu_rule, {"gpu-nodepool-capped": "advisory"}) == "advisory"
    assert resolve_enforcement(gpu_rule, {"gpu-nodepool-capped": {"enforcementLevel": "disabled"}}) == "disabled"
    assert resolve_enforcement(gpu_rule, {"all": "advisory"}) == "advisory"
    with pytest.raises(ValueError, match="expected mandatory, advisory or disabled, got 'loud'"):
        resolve_enforcement(gpu_rule, {"gpu-nodepool-capped": "loud"})
    assert "gpu-nodepool-capped" in {v.rule for v in evaluate([pool(limit=False)])}
    assert "gpu-nodepool-capped" not in {
        v.rule for v in evaluate([pool(limit=False)], {"gpu-nodepool-capped": "disabled"})
    }


@pytest.mark.stack
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


def crossguard(inventory: Inventory) -> tuple[list[tuple[str, str, str | None]], list[tuple[str, str]]]:
    """Every policy of the pack run over a stack as the SDK runs it: what is reported, (policy, message, urn), and
    what the SDK would skip as "can't run policy during preview" because an UnknownValueError escaped, (policy, urn)."""
    resources = policy_resources(inventory)
    # No resource options (None where the SDK passes them): the pack reads none, and one that starts to fails here.
    stack = {
        r.urn: PolicyResource(r.type, engine_props(r.props), r.urn, r.name, None, None, None, [], {})  # type: ignore[arg-type]
        for r in resources
    }
    for r in resources:
        stack[r.urn].dependencies.extend(stack[urn] for urn in sorted(r.dependencies) if urn in stack)
    reported, skipped = [], []
    for policy in policies():

        def report(message, urn=None, name=policy.name):
            reported.append((name, message, urn))

        if isinstance(policy, StackValidationPolicy):
            runs = [("stack", partial(policy.validate, StackValidationArgs(list(stack.values())), report))]
        else:
            runs = [
                (
                    r.urn,
                    partial(
                        policy.validate,
                        ResourceValidationArgs(r.type, engine_props(r.props), r.urn, r.name, None, None),  # type: ignore[arg-type]
                        report,
                    ),
                )
                for r in resources
            ]
        for urn, run in runs:
            try:
                run()
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
    stack = changed(
        stack,
        of_type(RELEASE, "karpenter"),
        lambda p: (
            p["values"]["settings"].update(interruptionQueue=UNKNOWN_STRING_VALUE),
            p["values"]["controller"].update(
                image={"repository": "public.ecr.aws/karpenter/controller", "tag": "latest"}
            ),
        ),
    )
    stack = changed(
        stack,
        of_type(CLUSTER),
        lambda p: p.update(encryptionConfigKeyArn=UNKNOWN_STRING_VALUE, enabledClusterLogTypes=["api"]),
    )
    stack = changed(
        stack,
        of_type(INGRESS),
        lambda p: p.update(securityGroupId=UNKNOWN_STRING_VALUE, cidrIpv4="0.0.0.0/0", fromPort=22, toPort=22),
    )
    reported, skipped = crossguard(stack)
    # Only the trust policy that cannot be read is left out ("can't run policy during preview", for that role alone).
    assert skipped == [("irsa-trust-pinned", role.urn)]
    karpenter, ingress = (
        next(r for r in prod.of_type(RELEASE) if r.name.endswith("karpenter")),
        prod.of_type(INGRESS)[0],
    )
    assert sorted(reported) == [
        (
            "eks-secrets-encrypted-and-logged",
            "cluster cluster-eks does not send ['audit', 'authenticator'] control-plane logs",
            None,
        ),
        (
            "no-latest-images",
            (
                f"Helm release {karpenter.name} sets image 'public.ecr.aws/karpenter/controller' at "
                "values.controller.image without a pinned tag"
            ),
            None,
        ),
        ("no-world-ingress", f"{ingress.name} opens ports 22-22 to the internet", None),
        ("s3-bucket-encrypted", f"bucket {unencrypted.name} has no default encryption", unencrypted.urn),
    ]


@pytest.mark.parametrize(
    ("name", "resource"),
    [
        (
            "no-world-ingress",
            res(
                "aws:ec2/securityGroup:SecurityGroup",
                ingress=[{"protocol": "tcp", "cidrBlocks": ["0.0.0.0/0"], "fromPort": 22, "toPort": 22}],
            ),
        ),
        ("iam-no-wildcards", res(ROLE, "app", inlinePolicies=[{"name": "all", "policy": EVERYTHING}])),
        (
            "iam-no-wildcards",
            res(
                "aws:iam/policy:Policy",
                policy={"Statement": [{"Effect": "Allow", "Action": ["IAM:*"], "Resource": ["*"]}]},
            ),
        ),
        ("no-latest-images", res(RELEASE, "app", values={"sidecars": [{"image": "busybox"}]})),
        ("gpu-nodepool-tainted", pool_choosing(req("node.kubernetes.io/instance-type", "In", "g5.xlarge"))),
        (
            "eks-secrets-encrypted-and-logged",
            res(
                AWS_CLUSTER,
                encryptionConfig={"provider": {"keyArn": "k"}, "resources": ["configmaps"]},
                enabledClusterLogTypes=LOGS,
            ),
        ),
        (
            "volumes-encrypted",
            res(LT, "lt", blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"encrypted": "false"}}]),
        ),
    ],
)
def test_rules_read_the_sdk_proxies_as_they_read_plain_values(name, resource):
    proxied = dataclasses.replace(resource, props=engine_props(resource.props), unknown=(UnknownValueError,))
    assert broken(name, [proxied]) == broken(name, [resource]) != []
