"""The load balancer controller: identity, placement, the tags on what it creates, and destroy order."""

from __future__ import annotations

import json

import pytest

from components import versions
from components.config.errors import ConfigError
from components.ingress.iam import SHIELD_ACTIONS, WAF_ACTIONS
from components.platform.parse import parse_config
from tests.conftest import PROJECT, run_stack, stack_config


def _controller(inventory):
    return inventory.release("aws-load-balancer-controller")


def test_controller_role_trusts_exactly_the_charts_service_account(dev):
    release = _controller(dev)
    role = dev.one("aws:iam/role:Role", "ingress-controller-role")
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    subject = next(v for k, v in statement["Condition"]["StringEquals"].items() if k.endswith(":sub"))
    values = release.inputs["values"]
    assert subject == f"system:serviceaccount:{release.inputs['namespace']}:{values['serviceAccount']['name']}"
    assert values["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"] == role.outputs["arn"]


def test_controller_is_told_its_cluster_region_and_vpc(dev):
    values = _controller(dev).inputs["values"]
    assert values["clusterName"] == "eks-ml-platform-dev"
    assert values["region"] == "us-west-2"
    assert values["vpcId"] == dev.one("aws:ec2/vpc:Vpc").id


def test_load_balancers_carry_the_standard_tags(dev):
    assert _controller(dev).inputs["values"]["defaultTags"] == {
        "project": "eks-ml-platform",
        "stack": "dev",
        "managed-by": "pulumi",
        "owner": "ml-platform",
        "cost-center": "ml-research",
    }


def test_controller_runs_pinned_on_system_nodes_and_goes_before_them(dev):
    release = _controller(dev)
    assert release.inputs["version"] == versions.LOAD_BALANCER_CONTROLLER.version
    assert release.inputs["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    assert release.inputs["values"]["nodeSelector"] == {"eksml.io/node-role": "system"}
    assert dev.depends_on(release, dev.one("aws:eks/nodeGroup:NodeGroup"))
    assert dev.depends_on(release, dev.one("aws:iam/rolePolicy:RolePolicy", "ingress-controller-controller"))


@pytest.mark.stack
def test_controller_can_be_left_out():
    inventory = run_stack("dev", {"ingress": {"loadBalancerController": False}})
    assert not inventory.of_type("eksml:ingress:Ingress")


def _granted(inventory) -> set[str]:
    policy = json.loads(
        inventory.one("aws:iam/rolePolicy:RolePolicy", "ingress-controller-controller").inputs["policy"]
    )
    return {action for statement in policy["Statement"] for action in statement["Action"]}


def test_waf_and_shield_are_off_in_the_chart_and_the_policy_by_default(dev):
    values = _controller(dev).inputs["values"]
    assert (values["enableWaf"], values["enableWafv2"], values["enableShield"]) == (False, False, False)
    assert _granted(dev) & (set(WAF_ACTIONS) | set(SHIELD_ACTIONS)) == set()


def test_the_policy_is_scoped_to_the_stacks_cluster_and_vpc(dev):
    policy = json.loads(dev.one("aws:iam/rolePolicy:RolePolicy", "ingress-controller-controller").inputs["policy"])
    vpc = dev.one("aws:ec2/vpc:Vpc").id
    (edit,) = [s for s in policy["Statement"] if s["Sid"] == "EditIngressRulesInClusterVpc"]
    assert edit["Condition"]["ArnEquals"]["ec2:Vpc"].endswith(f":vpc/{vpc}")
    (owned,) = [s for s in policy["Statement"] if s["Sid"] == "ManageOwnedLoadBalancersAndTargetGroups"]
    assert owned["Condition"] == {"StringEquals": {"aws:ResourceTag/elbv2.k8s.aws/cluster": "eks-ml-platform-dev"}}


@pytest.mark.stack
def test_turning_waf_and_shield_on_sets_the_chart_and_grants_their_actions():
    inventory = run_stack("dev", {"ingress": {"waf": True, "shield": True}})
    values = _controller(inventory).inputs["values"]
    assert (values["enableWaf"], values["enableWafv2"], values["enableShield"]) == (True, True, True)
    assert _granted(inventory) >= set(WAF_ACTIONS) | set(SHIELD_ACTIONS)


@pytest.mark.parametrize("key", ["waf", "shield"])
def test_waf_or_shield_without_the_controller_is_refused_with_its_key_path(key):
    config = stack_config("dev", {"ingress": {"loadBalancerController": False, key: True}})
    with pytest.raises(ConfigError) as caught:
        parse_config(config, project=PROJECT, stack="dev")
    found = {issue.path: issue.message for issue in caught.value.issues}
    assert "is only used by the load balancer controller" in found[f"ingress.{key}"], found
