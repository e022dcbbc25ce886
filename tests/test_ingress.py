"""The load balancer controller: identity, placement, the tags on what it creates, and destroy order."""

from __future__ import annotations

import json

import pytest

from components import versions
from tests.conftest import run_stack

RELEASE = "kubernetes:helm.sh/v3:Release"


def _controller(inventory):
    return next(r for r in inventory.of_type(RELEASE) if r.inputs["name"] == "aws-load-balancer-controller")


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
