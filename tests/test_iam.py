"""The IRSA helper: the trust policy admits one service account of one cluster, and nothing else."""

from __future__ import annotations

import json

import pytest

from components.identity.documents import irsa_trust_policy

ISSUER = "oidc.eks.us-west-2.amazonaws.com/id/ABC123"
PROVIDER = f"arn:aws:iam::123456789012:oidc-provider/{ISSUER}"


def test_trust_policy_pins_subject_and_audience_exactly():
    assert irsa_trust_policy(
        oidc_provider_arn=PROVIDER, oidc_issuer=ISSUER, namespace="karpenter", service_account="karpenter"
    ) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": PROVIDER},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{ISSUER}:sub": "system:serviceaccount:karpenter:karpenter",
                        f"{ISSUER}:aud": "sts.amazonaws.com",
                    }
                },
            }
        ],
    }


def test_issuer_url_scheme_is_dropped_from_condition_keys():
    policy = irsa_trust_policy(
        oidc_provider_arn=PROVIDER, oidc_issuer=f"https://{ISSUER}", namespace="ns", service_account="sa"
    )
    keys = set(policy["Statement"][0]["Condition"]["StringEquals"])
    assert keys == {f"{ISSUER}:sub", f"{ISSUER}:aud"}


def _trust(inventory, role_name):
    return json.loads(inventory.one("aws:iam/role:Role", role_name).inputs["assumeRolePolicy"])


def test_addon_roles_trust_exactly_the_service_accounts_the_addons_run_as(dev):
    cluster = dev.one("eks:index:Cluster")
    issuer = cluster.outputs["oidcIssuer"]
    expected = {
        "cluster-vpc-cni-role": "system:serviceaccount:kube-system:aws-node",
        "cluster-ebs-csi-role": "system:serviceaccount:kube-system:ebs-csi-controller-sa",
    }
    for role, subject in expected.items():
        (statement,) = _trust(dev, role)["Statement"]
        assert statement["Principal"] == {"Federated": cluster.outputs["oidcProviderArn"]}
        assert statement["Condition"] == {
            "StringEquals": {f"{issuer}:sub": subject, f"{issuer}:aud": "sts.amazonaws.com"}
        }


def test_irsa_roles_wait_for_the_clusters_oidc_provider(dev):
    cluster = dev.one("eks:index:Cluster")
    for role in ("cluster-vpc-cni-role", "cluster-ebs-csi-role"):
        assert cluster.urn in dev.one("aws:iam/role:Role", role).dependencies


def test_addon_roles_carry_only_their_aws_managed_policy(dev):
    attachments = {
        a.name: a.inputs["policyArn"]
        for a in dev.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if a.parent and "WorkloadRole" in a.parent
    }
    assert attachments == {
        "cluster-vpc-cni-aws-managed": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "cluster-ebs-csi-aws-managed": "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy",
    }


def test_system_nodes_trust_only_ec2_and_do_not_carry_the_cni_policy(dev):
    (statement,) = _trust(dev, "cluster-system-node")["Statement"]
    assert statement == {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}}
    node_policies = sorted(
        a.inputs["policyArn"].rsplit("/", 1)[1]
        for a in dev.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if a.name.startswith("cluster-system-node-")
    )
    assert node_policies == ["AmazonEC2ContainerRegistryPullOnly", "AmazonEKSWorkerNodePolicy"]


@pytest.mark.stack
def test_whatever_is_given_an_irsa_roles_arn_waits_for_its_policies_with_no_depends_on():
    """The ARN resolves only once the policies are attached, so a chart given it never starts a pod whose first AWS
    call is denied."""
    import pulumi_aws as aws

    from components.identity.roles import WorkloadRole, WorkloadRoleArgs
    from components.tools.preview import mocks

    def program():
        role = WorkloadRole(
            "r",
            WorkloadRoleArgs(
                oidc_provider_arn="arn:aws:iam::123456789012:oidc-provider/x",
                oidc_issuer="https://x",
                namespace="ns",
                service_account="sa",
                inline_policies={"p": "{}"},
                managed_policy_arns={"m": "arn:aws:iam::aws:policy/ReadOnlyAccess"},
            ),
        )
        aws.ssm.Parameter("consumer", type="String", value=role.arn)

    inventory = mocks.run(program, project="p", stack="s", region="us-west-2", config={})
    consumer = inventory.one("aws:ssm/parameter:Parameter")
    assert inventory.one("aws:iam/rolePolicy:RolePolicy").urn in consumer.dependencies
    assert inventory.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment").urn in consumer.dependencies
