"""EKS Pod Identity (`identity: podIdentity`): each role admits only its cluster's association for its one service
account, every role of the platform is bound by an association, and no service account keeps an IRSA annotation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from components import versions
from components.config.errors import ConfigError
from components.identity.documents import eks_cluster_arn, pod_identity_trust_policy
from components.identity.roles import IRSA_ANNOTATION
from components.platform.parse import parse_config

from .conftest import run_stack, stack_config
from .iam_evaluator import ALLOW, IMPLICIT_DENY, decide
from .test_config import NS, raw
from .test_platform_model import CHARTS

ACCOUNT = "123456789012"
CLUSTER = eks_cluster_arn(partition="aws", region="us-west-2", account_id=ACCOUNT, cluster_name="ml")
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
ADDON = "aws:eks/addon:Addon"
ROLE = "aws:iam/role:Role"


def session(**changes: str) -> dict[str, str]:
    """What EKS Pod Identity's AssumeRole for kube-system/karpenter of cluster `ml` carries (its session tags and
    the calling account), with some values changed."""
    context = {
        "aws:SourceAccount": ACCOUNT,
        "aws:RequestTag/eks-cluster-arn": CLUSTER,
        "aws:RequestTag/eks-cluster-name": "ml",
        "aws:RequestTag/kubernetes-namespace": "kube-system",
        "aws:RequestTag/kubernetes-service-account": "karpenter",
    }
    context.update(changes)
    return context


TRUST = pod_identity_trust_policy(
    account_id=ACCOUNT, cluster_arn=CLUSTER, namespace="kube-system", service_account="karpenter"
)


@pytest.mark.parametrize("action", ["sts:AssumeRole", "sts:TagSession"])
def test_the_trust_policy_admits_its_clusters_association_for_its_service_account(action):
    (statement,) = TRUST["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert decide(TRUST, action, "role", session()) == ALLOW


@pytest.mark.parametrize(
    "other",
    [
        {"aws:RequestTag/eks-cluster-arn": CLUSTER.replace("cluster/ml", "cluster/other")},
        {"aws:RequestTag/eks-cluster-arn": CLUSTER.replace("us-west-2", "eu-west-1")},
        {"aws:RequestTag/kubernetes-namespace": "default"},
        {"aws:RequestTag/kubernetes-service-account": "default"},
        {"aws:SourceAccount": "210987654321"},
    ],
    ids=[
        "another-cluster",
        "same-name-other-region",
        "another-namespace",
        "another-service-account",
        "another-account",
    ],
)
def test_the_trust_policy_refuses_any_other_cluster_service_account_or_account(other):
    assert decide(TRUST, "sts:AssumeRole", "role", session(**other)) == IMPLICIT_DENY


def test_a_session_without_pod_identitys_tags_is_refused():
    """With session tags disabled on an association, nothing names the cluster: such an association gets nothing."""
    untagged = {"aws:SourceAccount": ACCOUNT}
    assert decide(TRUST, "sts:AssumeRole", "role", untagged) == IMPLICIT_DENY


def test_web_identity_is_not_admitted():
    assert decide(TRUST, "sts:AssumeRoleWithWebIdentity", "role", session()) == IMPLICIT_DENY


# ------------------------------------------------------------------------------------------------ config


def test_identity_is_irsa_unless_asked_and_anything_else_is_refused_by_its_key():
    assert parse_config(raw("dev"), project=NS, stack="t").identity.value == "irsa"
    assert parse_config(raw("dev", identity="podIdentity"), project=NS, stack="t").identity.value == "podIdentity"
    with pytest.raises(ConfigError) as caught:
        parse_config(raw("dev", identity="pod-identity"), project=NS, stack="t")
    (issue,) = caught.value.issues
    assert issue.path == "identity"
    assert "irsa" in issue.message
    assert "podIdentity" in issue.message


def test_pod_identity_is_refused_while_kubeflow_makes_roles_it_does_not_cover():
    # dev's Kubeflow has a team (whose Profile names an IRSA role) and the same config with irsa is accepted.
    assert parse_config(stack_config("dev"), project=NS, stack="dev").kubeflow.teams
    with pytest.raises(ConfigError) as caught:
        parse_config(stack_config("dev", {"identity": "podIdentity"}), project=NS, stack="dev")
    assert [issue.path for issue in caught.value.issues] == ["identity"]
    assert "kubeflow.teams" in caught.value.issues[0].message


# ------------------------------------------------------------------------------------------------ the dev stack


def strings(value: Any) -> Iterator[str]:
    """Every key and string value anywhere in a nested structure."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield str(key)
            yield from strings(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from strings(inner)
    elif isinstance(value, str):
        yield value


@pytest.fixture(scope="module")
def pod_identity_dev():
    # dev with Pod Identity; Kubeflow off, since its roles are not covered yet (config refuses them).
    return run_stack("dev", {"identity": "podIdentity", "kubeflow": {"enabled": False}})


@pytest.mark.stack
def test_every_platform_role_trusts_pod_identity_and_is_bound_to_its_exact_service_account(pod_identity_dev):
    inventory = pod_identity_dev
    cluster_arn = f"arn:aws:eks:us-west-2:{ACCOUNT}:cluster/eks-ml-platform-dev"
    bound: dict[str, tuple[str, str]] = {}  # role ARN -> (namespace, service account) some association binds it to
    for association in inventory.of_type(ASSOCIATION):
        assert association.inputs["clusterName"] == "eks-ml-platform-dev"
        bound[association.inputs["roleArn"]] = (association.inputs["namespace"], association.inputs["serviceAccount"])
    for addon in inventory.of_type(ADDON):
        assert "serviceAccountRoleArn" not in addon.inputs, addon.name
        for given in addon.inputs.get("podIdentityAssociations") or []:
            # An add-on's service accounts live in kube-system.
            bound[given["roleArn"]] = ("kube-system", given["serviceAccount"])
    pod_roles = [r for r in inventory.of_type(ROLE) if r.parent and "WorkloadRole" in r.parent]
    assert {r.name for r in pod_roles} == {
        "cluster-vpc-cni-role",
        "cluster-ebs-csi-role",
        "karpenter-controller-role",
        "ingress-controller-role",
    }
    for role in pod_roles:
        arn = next(a for a in bound if a.rsplit("/", 1)[1].startswith(role.name))
        namespace, account = bound[arn]
        trust = json.loads(role.inputs["assumeRolePolicy"])
        context = session(
            **{
                "aws:RequestTag/eks-cluster-arn": cluster_arn,
                "aws:RequestTag/kubernetes-namespace": namespace,
                "aws:RequestTag/kubernetes-service-account": account,
            }
        )
        assert decide(trust, "sts:AssumeRole", "role", context) == ALLOW, role.name
        other = {**context, "aws:RequestTag/kubernetes-service-account": "default"}
        assert decide(trust, "sts:AssumeRole", "role", other) == IMPLICIT_DENY, role.name


@pytest.mark.stack
def test_no_service_account_keeps_an_irsa_annotation_helm_values_included(pod_identity_dev):
    for resource in pod_identity_dev.resources:
        assert IRSA_ANNOTATION not in set(strings(resource.inputs)), resource.name


@pytest.mark.stack
def test_the_agent_is_installed_pinned_and_associations_wait_for_it_and_charts_for_them(pod_identity_dev):
    inventory = pod_identity_dev
    agent = inventory.one(ADDON, "cluster-eks-pod-identity-agent")
    assert agent.inputs["addonVersion"] == versions.eks_addon("1.35", "eks-pod-identity-agent").version
    for association in inventory.of_type(ASSOCIATION):
        assert inventory.depends_on(association, agent), association.name
    # A pod created before its association gets no credentials: the chart waits for it through its values.
    karpenter = inventory.one("kubernetes:helm.sh/v3:Release", "karpenter")
    assert inventory.one(ASSOCIATION, "karpenter-controller-association").urn in karpenter.dependencies


@pytest.mark.stack
def test_the_platform_tells_team_stacks_which_identity_it_runs(pod_identity_dev, dev):
    assert pod_identity_dev.stack_outputs["identity"] == "podIdentity"
    assert dev.stack_outputs["identity"] == "irsa"


@pytest.mark.stack
def test_irsa_stays_the_default_with_no_agent_and_no_association(dev):
    assert dev.of_type(ASSOCIATION) == []
    assert "eks-pod-identity-agent" not in {a.inputs["addonName"] for a in dev.of_type(ADDON)}
    values = dev.one("kubernetes:helm.sh/v3:Release", "karpenter").inputs["values"]
    assert set(values["serviceAccount"]["annotations"]) == {IRSA_ANNOTATION}


@pytest.mark.subprocess
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
def test_the_platform_with_pod_identity_breaks_no_rule_of_the_model(pod_identity_dev):
    """The agent's DaemonSet lands on every node (it tolerates every taint) and nothing else moves."""
    from components.tools.preview import platform_model

    platform, found = platform_model(pod_identity_dev, CHARTS)
    assert [str(p) for p in found] == []
    assert any(w.origin == "eks-addon/eks-pod-identity-agent" for w in platform.workloads)


# ------------------------------------------------------------------------------------------------ team stacks


def test_a_team_with_a_profile_is_refused_on_a_pod_identity_platform_and_accepted_on_irsa():
    from components.team.config import TeamConfig
    from components.team.offer import OFFER_OUTPUTS, parse_offer
    from components.team.plan import plan_team

    from .conftest import REPO

    outputs = json.loads((REPO / "examples" / "team-stack" / "platform-outputs.dev.json").read_text())
    vision = TeamConfig.model_validate({"name": "vision", "quota": {"gpus": 1}, "kubeflow": {"owner": "a@example.org"}})
    irsa = parse_offer({k: v for k, v in outputs.items() if k in OFFER_OUTPUTS}, stack="acme/eks-ml-platform/dev")
    assert irsa.identity == "irsa"
    plan_team(vision, irsa)
    pod_identity = irsa.model_copy(update={"identity": "podIdentity"})
    with pytest.raises(ConfigError) as caught:
        plan_team(vision, pod_identity)
    assert [issue.path for issue in caught.value.issues] == ["team.kubeflow"]
    # Without the Profile, the team's own role follows the platform (TeamIdentity through ClusterHandle.workload_role).
    plan_team(TeamConfig.model_validate({"name": "vision", "quota": {"gpus": 1}}), pod_identity)
