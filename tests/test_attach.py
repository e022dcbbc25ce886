"""Attaching to a platform another stack created: a ClusterHandle from the platform stack's outputs, or read from AWS,
and the outputs contract those readers rely on."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from components.cluster.attach import HANDLE_OUTPUTS, AttachError, kubeconfig
from components.cluster.handle import ClusterHandle
from components.config.errors import ConfigError
from components.team.config import TeamConfig
from components.team.offer import OFFER_OUTPUTS, PlatformOffer, parse_offer
from components.team.plan import plan_team
from components.tools.preview import mocks
from components.tools.preview.answers import UnexpectedCall
from components.tools.preview.inventory import Inventory

from .conftest import REPO, run_stack

TEAM_STACK = REPO / "examples" / "team-stack"
PLATFORM_STACK = "acme/eks-ml-platform/prod"


def recorded(stack: str = "prod") -> dict[str, Any]:
    return json.loads((TEAM_STACK / f"platform-outputs.{stack}.json").read_text())


def attach(program_handle, **account) -> Inventory:
    """Run a program that makes a handle and exports what it holds, plus an IRSA role made from it."""

    def program() -> None:
        handle = program_handle()
        pulumi.export("name", handle.name)
        pulumi.export("region", handle.region)
        pulumi.export("version", handle.kubernetes_version)
        pulumi.export("zones", list(handle.availability_zones))
        pulumi.export("partition", handle.partition)
        pulumi.export("account", handle.account_id)
        pulumi.export("issuer", handle.oidc_issuer)
        pulumi.export("securityGroup", handle.cluster_security_group_id)
        pulumi.export("systemNodeGroup", handle.system_node_group.node_group_name)
        pulumi.export("coredns", handle.coredns.addon_name)
        handle.workload_role("reader", namespace="vision", service_account="vision-jobs")

    return mocks.run(program, project="team", stack="prod", region="us-west-2", config={}, **account)


def trust(inventory: Inventory) -> dict[str, Any]:
    return json.loads(inventory.one("aws:iam/role:Role").inputs["assumeRolePolicy"])


@pytest.mark.stack
def test_a_handle_from_the_platform_stack_names_the_platforms_cluster_oidc_and_system_nodes():
    outputs = recorded()
    inventory = attach(
        lambda: ClusterHandle.from_stack_reference(PLATFORM_STACK), stack_references={PLATFORM_STACK: outputs}
    )
    held = inventory.stack_outputs
    assert held["name"] == outputs["clusterName"]
    assert held["region"] == outputs["region"]
    assert held["version"] == outputs["kubernetesVersion"]
    assert held["zones"] == outputs["availabilityZones"]
    assert (held["partition"], held["account"]) == ("aws", "123456789012")  # the OIDC provider's, where IRSA roles live
    assert held["issuer"] == outputs["oidcIssuer"]
    assert held["securityGroup"] == outputs["clusterSecurityGroupId"]
    assert held["systemNodeGroup"] == outputs["systemNodeGroup"]
    assert held["coredns"] == "coredns"
    statement = trust(inventory)["Statement"][0]
    assert statement["Principal"] == {"Federated": outputs["oidcProviderArn"]}
    assert statement["Condition"]["StringEquals"] == {
        f"{outputs['oidcIssuer']}:sub": "system:serviceaccount:vision:vision-jobs",
        f"{outputs['oidcIssuer']}:aud": "sts.amazonaws.com",
    }


@pytest.mark.stack
def test_the_platforms_resources_are_read_never_managed_by_the_attaching_stack():
    inventory = attach(
        lambda: ClusterHandle.from_stack_reference(PLATFORM_STACK), stack_references={PLATFORM_STACK: recorded()}
    )
    created = {r.type for r in inventory.resources}
    assert not created & {
        "aws:eks/nodeGroup:NodeGroup",
        "aws:eks/addon:Addon",
        "aws:eks/cluster:Cluster",
        "eks:index:Cluster",
    }


@pytest.mark.stack
def test_a_platform_without_an_output_the_handle_needs_is_named():
    outputs = {k: v for k, v in recorded().items() if k not in ("oidcIssuer", "clusterEndpoint")}
    with pytest.raises(AttachError, match="has no output clusterEndpoint, oidcIssuer"):
        attach(lambda: ClusterHandle.from_stack_reference(PLATFORM_STACK), stack_references={PLATFORM_STACK: outputs})


@pytest.mark.stack
def test_a_platform_of_the_release_before_identity_was_exported_is_read_as_irsa():
    # A platform not yet re-deployed on this release exports no `identity`; it ran IRSA, so its team stacks keep an
    # IRSA role instead of stopping.
    outputs = {k: v for k, v in recorded().items() if k != "identity"}
    inventory = attach(
        lambda: ClusterHandle.from_stack_reference(PLATFORM_STACK), stack_references={PLATFORM_STACK: outputs}
    )
    assert trust(inventory)["Statement"][0]["Principal"] == {"Federated": outputs["oidcProviderArn"]}
    assert not [r for r in inventory.resources if r.type == "aws:eks/podIdentityAssociation:PodIdentityAssociation"]


@pytest.mark.stack
def test_a_stack_reference_the_mocks_have_no_outputs_for_fails_loudly():
    with pytest.raises(UnexpectedCall, match="no recorded outputs for the stack reference 'acme/other/prod'"):
        attach(
            lambda: ClusterHandle.from_stack_reference("acme/other/prod"), stack_references={PLATFORM_STACK: recorded()}
        )


@pytest.mark.stack
def test_a_handle_read_from_an_existing_cluster_matches_what_the_platform_stack_exports_for_it():
    """Both ways of attaching see the same cluster: the mocks describe an existing cluster with the stand-ins a
    created one of that name gets."""
    outputs = recorded()
    inventory = attach(
        lambda: ClusterHandle.from_existing(cluster_name=outputs["clusterName"], region="us-west-2"),
        existing_clusters={outputs["clusterName"]: {}},
    )
    held = inventory.stack_outputs
    assert held["issuer"] == outputs["oidcIssuer"]
    assert held["securityGroup"] == outputs["clusterSecurityGroupId"]
    assert held["zones"] == ["us-west-2a", "us-west-2b", "us-west-2c"]
    assert held["systemNodeGroup"] == "system"
    assert trust(inventory)["Statement"][0]["Principal"] == {"Federated": outputs["oidcProviderArn"]}


@pytest.mark.stack
def test_reading_a_cluster_that_does_not_exist_fails_loudly():
    with pytest.raises(UnexpectedCall, match="aws:eks/getCluster:getCluster"):
        attach(lambda: ClusterHandle.from_existing(cluster_name="nope", region="us-west-2"))


def test_the_attaching_kubeconfig_carries_no_credentials_and_acts_as_the_given_profile():
    config = json.loads(
        kubeconfig(
            cluster_name="ml", endpoint="https://x", certificate_authority="Q0E=", region="eu-west-1", profile="team"
        )
    )
    (user,) = config["users"]
    assert user["user"]["exec"]["args"] == [
        "eks",
        "get-token",
        "--cluster-name",
        "ml",
        "--region",
        "eu-west-1",
        "--output",
        "json",
    ]
    assert user["user"]["exec"]["env"] == [{"name": "AWS_PROFILE", "value": "team"}]
    assert set(user["user"]) == {"exec"}  # no token, no key: the exec plugin asks AWS each time


# ------------------------------------------------------------------------------------------- the contract


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_platform_exports_every_output_a_handle_is_made_of(stack, request):
    outputs = request.getfixturevalue(stack).stack_outputs
    assert set(HANDLE_OUTPUTS) <= set(outputs)


def test_the_platform_exports_every_output_a_team_stack_reads(prod):
    """Every field of the offer is exported by prod (which runs every part), and a required one by every stack."""
    assert set(OFFER_OUTPUTS) <= set(prod.stack_outputs)
    required = {f.alias for f in PlatformOffer.model_fields.values() if f.is_required()}
    assert required
    assert required <= set(prod.stack_outputs)


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_recorded_platform_outputs_are_what_the_preview_exports_now(stack, request):
    """The team stack's offline previews run against these files: they must not drift from the platform. Regenerate
    with `python examples/team-stack/record_platform_outputs.py --stack prod >
    examples/team-stack/platform-outputs.prod.json`
    (and the same for dev)."""
    contract = {*HANDLE_OUTPUTS, *OFFER_OUTPUTS}
    exported = json.loads(json.dumps(request.getfixturevalue(stack).stack_outputs))
    assert recorded(stack) == {name: value for name, value in exported.items() if name in contract}


@pytest.mark.stack
def test_a_platform_says_whether_it_runs_kubeflow_and_a_profile_needs_it(prod):
    assert prod.stack_outputs["kubeflowEnabled"] is True
    without = run_stack("dev", {"kubeflow": {"enabled": False}}).stack_outputs
    assert without["kubeflowEnabled"] is False
    offer = parse_offer({name: without[name] for name in OFFER_OUTPUTS if name in without}, stack=PLATFORM_STACK)
    vision = TeamConfig.model_validate(
        {"name": "vision", "quota": {"gpus": 1}, "kubeflow": {"owner": "lead@example.org"}}
    )
    with pytest.raises(ConfigError) as caught:
        plan_team(vision, offer)
    assert [issue.path for issue in caught.value.issues] == ["team.kubeflow"]


def test_the_team_stack_page_lists_every_output_of_the_contract():
    page = (REPO / "docs" / "team-stacks.md").read_text()
    section = page.split("\n## The platform's outputs: a contract\n", 1)[1].split("\n## ", 1)[0]
    missing = sorted(name for name in {*HANDLE_OUTPUTS, *OFFER_OUTPUTS} if f"`{name}`" not in section)
    assert missing == []


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_record_script_writes_the_file_the_team_stack_previews_against(stack):
    import runpy

    namespace = runpy.run_path(str(TEAM_STACK / "record_platform_outputs.py"), run_name="record")
    assert namespace["recorded_outputs"](stack) == (TEAM_STACK / f"platform-outputs.{stack}.json").read_text()
