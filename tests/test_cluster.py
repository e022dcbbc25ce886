"""The cluster component: security-relevant inputs, pinned add-ons, the system node group, and destroy order."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components import versions
from tests.conftest import run_stack

CLUSTER = "eks:index:Cluster"
ADDON = "aws:eks/addon:Addon"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def test_secrets_are_envelope_encrypted_with_a_rotating_key(dev):
    key = dev.one("aws:kms/key:Key", "cluster-secrets")
    cluster = dev.one(CLUSTER)
    assert key.inputs["enableKeyRotation"] is True
    assert cluster.inputs["encryptionConfigKeyArn"] == key.outputs["arn"]
    assert key.urn in cluster.dependencies


def test_control_plane_logs_go_to_a_log_group_the_stack_owns(dev, prod):
    cluster = dev.one(CLUSTER)
    group = dev.one("aws:cloudwatch/logGroup:LogGroup", "cluster-control-plane")
    assert cluster.inputs["enabledClusterLogTypes"] == ["api", "audit", "authenticator"]
    assert group.inputs["name"] == "/aws/eks/eks-ml-platform-dev/cluster"
    assert group.inputs["retentionInDays"] == 90
    assert group.urn in cluster.dependencies  # created first, so EKS never makes an unmanaged one
    assert prod.one(CLUSTER).inputs["enabledClusterLogTypes"] == [
        "api",
        "audit",
        "authenticator",
        "controllerManager",
        "scheduler",
    ]
    assert prod.one("aws:cloudwatch/logGroup:LogGroup", "cluster-control-plane").inputs["retentionInDays"] == 365


def test_dev_endpoint_is_public_only_to_the_configured_cidrs(dev):
    cluster = dev.one(CLUSTER)
    assert cluster.inputs["endpointPublicAccess"] is True
    assert cluster.inputs["endpointPrivateAccess"] is True
    assert cluster.inputs["publicAccessCidrs"] == ["203.0.113.0/24"]


def test_prod_endpoint_is_private(prod):
    cluster = prod.one(CLUSTER)
    assert cluster.inputs["endpointPublicAccess"] is False
    assert cluster.inputs["endpointPrivateAccess"] is True
    assert "publicAccessCidrs" not in cluster.inputs


def test_admin_principals_get_cluster_admin_access_entries_under_api_authentication(dev):
    cluster = dev.one(CLUSTER)
    assert cluster.inputs["authenticationMode"] == "API"
    assert cluster.inputs["accessEntries"] == {
        "platform-admins": {
            "principalArn": "arn:aws:iam::123456789012:role/PlatformAdmin",
            "accessPolicies": {
                "cluster-admin": {
                    "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
                    "accessScope": {"type": "cluster"},
                }
            },
        }
    }


def test_cluster_has_an_oidc_provider_and_no_unmanaged_defaults(dev):
    inputs = dev.one(CLUSTER).inputs
    assert inputs["createOidcProvider"] is True
    assert inputs["skipDefaultNodeGroup"] is True
    assert inputs["bootstrapSelfManagedAddons"] is False
    assert inputs["corednsAddonOptions"]["enabled"] is False
    assert inputs["kubeProxyAddonOptions"]["enabled"] is False
    assert inputs["useDefaultVpcCni"] is True
    assert inputs["version"] == versions.DEFAULT_KUBERNETES_VERSION
    assert inputs["kubernetesServiceIpAddressRange"] == "172.20.0.0/16"


def test_managed_addons_are_pinned_from_the_versions_module(dev):
    addons = {a.inputs["addonName"]: a for a in dev.of_type(ADDON)}
    assert set(addons) == {
        "vpc-cni",
        "kube-proxy",
        "coredns",
        "aws-ebs-csi-driver",
        "eks-node-monitoring-agent",
        "metrics-server",
    }
    for name, addon in addons.items():
        assert addon.inputs["addonVersion"] == versions.eks_addon(versions.DEFAULT_KUBERNETES_VERSION, name).version
        assert addon.inputs["clusterName"] == "eks-ml-platform-dev"


@pytest.mark.stack
def test_addons_follow_the_configured_kubernetes_version():
    # Kubeflow needs 1.35 (config refuses it on 1.34)
    inventory = run_stack(
        "dev", {"cluster": {"kubernetesVersion": "1.34", "endpoint": {"public": False}}, "kubeflow": {"enabled": False}}
    )
    kube_proxy = next(a for a in inventory.of_type(ADDON) if a.inputs["addonName"] == "kube-proxy")
    assert kube_proxy.inputs["addonVersion"] == versions.eks_addon("1.34", "kube-proxy").version
    assert inventory.one(CLUSTER).inputs["version"] == "1.34"


def test_addons_with_aws_access_use_their_irsa_roles(dev):
    addons = {a.inputs["addonName"]: a for a in dev.of_type(ADDON)}
    roles = {r.name: r for r in dev.of_type("aws:iam/role:Role")}
    assert addons["vpc-cni"].inputs["serviceAccountRoleArn"] == roles["cluster-vpc-cni-role"].outputs["arn"]
    assert addons["aws-ebs-csi-driver"].inputs["serviceAccountRoleArn"] == roles["cluster-ebs-csi-role"].outputs["arn"]
    assert "serviceAccountRoleArn" not in addons["coredns"].inputs


def test_system_node_group_is_on_demand_tainted_and_labelled_for_controllers(dev):
    group = dev.one(NODE_GROUP)
    assert group.inputs["capacityType"] == "ON_DEMAND"
    assert group.inputs["taints"] == [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}]
    assert group.inputs["labels"] == {"eksml.io/node-role": "system"}
    assert group.inputs["scalingConfig"] == {"minSize": 3, "maxSize": 4, "desiredSize": 3}
    private = sorted(s.id for s in dev.of_type("aws:ec2/subnet:Subnet") if "-private-" in s.name)
    assert sorted(group.inputs["subnetIds"]) == private  # spread over every AZ, never in public subnets


def test_system_nodes_require_imdsv2_and_encrypt_their_root_volume(dev):
    template = dev.one("aws:ec2/launchTemplate:LaunchTemplate")
    assert template.inputs["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
    }
    (device,) = template.inputs["blockDeviceMappings"]
    assert device["ebs"]["encrypted"] == "true"
    assert device["ebs"]["volumeType"] == "gp3"
    assert device["ebs"]["volumeSize"] == 50
    tagged = {spec["resourceType"]: spec["tags"] for spec in template.inputs["tagSpecifications"]}
    assert tagged["instance"]["project"] == "eks-ml-platform"
    assert tagged["volume"]["stack"] == "dev"


def test_nodes_join_only_after_networking_addons_and_node_policies(dev, monkeypatch):
    """The add-ons go with the cluster on destroy, so the node group waits for them on create only: no edge, which
    would add their levels to every destroy (components.cluster.create_order)."""
    from components.cluster import system_nodes
    from tests.conftest import run_stack

    group = dev.one(NODE_GROUP)
    addons = {a.inputs["addonName"]: a for a in dev.of_type(ADDON)}
    for attachment in dev.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment"):
        if attachment.name.startswith("cluster-system-node-"):
            assert dev.depends_on(group, attachment)
    assert not dev.depends_on(group, addons["vpc-cni"])
    assert addons["vpc-cni"].deleted_with == addons["kube-proxy"].deleted_with == dev.one("eks:index:Cluster").urn
    waits = []

    def created_after(value, *resources):
        waits.append(sorted(r._name for r in resources))
        return real(value, *resources)

    real = system_nodes.created_after
    monkeypatch.setattr(system_nodes, "created_after", created_after)
    ran = run_stack("dev")
    assert ["cluster-kube-proxy", "cluster-vpc-cni"] in waits
    assert ran.one(NODE_GROUP).inputs["clusterName"] == group.inputs["clusterName"]


def test_deployment_addons_wait_for_the_system_nodes_and_are_destroyed_before_them(dev):
    group = dev.one(NODE_GROUP)
    addons = {a.inputs["addonName"]: a for a in dev.of_type(ADDON)}
    assert dev.depends_on(addons["coredns"], group)
    assert dev.depends_on(addons["aws-ebs-csi-driver"], group)
    assert dev.depends_on(addons["metrics-server"], group)
    assert not dev.depends_on(addons["vpc-cni"], group)


def test_metrics_server_serves_resource_metrics_from_two_pods_on_the_system_nodes(dev, prod):
    """HPAs on CPU (KServe's default, istiod's, the gateway's) read metrics.k8s.io, which only metrics-server serves:
    the add-on is installed on every stack, its pods where the controllers run and two of them."""
    for stack in (dev, prod):
        addon = next(a for a in stack.of_type(ADDON) if a.inputs["addonName"] == "metrics-server")
        configuration = json.loads(addon.inputs["configurationValues"])
        assert configuration["replicas"] == 2
        assert configuration["nodeSelector"] == {"eksml.io/node-role": "system"}
        assert configuration["tolerations"] == [
            {"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"}
        ]


def test_everything_in_the_cluster_waits_for_the_cluster(dev):
    cluster = dev.one(CLUSTER)
    assert dev.depends_on(dev.one(NODE_GROUP), cluster)
    for addon in dev.of_type(ADDON):
        assert dev.depends_on(addon, cluster)
    provider = dev.one("pulumi:providers:kubernetes")
    assert cluster.urn in provider.dependencies


def test_prod_protects_stateful_resources_that_dev_destroys(dev, prod):
    for kind, suffix in (("aws:kms/key:Key", "secrets"), ("aws:cloudwatch/logGroup:LogGroup", "control-plane")):
        assert prod.one(kind, f"cluster-{suffix}").protect is True
        assert dev.one(kind, f"cluster-{suffix}").protect is False
        assert dev.one(kind, f"cluster-{suffix}").retain_on_delete is False
    assert prod.one("aws:kms/key:Key", "cluster-secrets").inputs["deletionWindowInDays"] == 30
    assert dev.one("aws:kms/key:Key", "cluster-secrets").inputs["deletionWindowInDays"] == 7
    unprotected = {r.type for r in prod.resources if not r.protect}
    assert "aws:ec2/vpc:Vpc" in unprotected


def test_a_replacing_change_cannot_delete_the_prod_cluster(dev, prod):
    """Pulumi refuses to replace a protected resource, and EKS refuses to delete a cluster with deletion protection."""
    assert prod.one(CLUSTER).protect is True
    assert prod.one(CLUSTER).inputs["deletionProtection"] is True
    assert prod.one("aws:eks/cluster:Cluster").inputs["deletionProtection"] is True
    assert dev.one(CLUSTER).protect is False
    assert dev.one(CLUSTER).inputs["deletionProtection"] is False


@pytest.mark.stack
def test_the_system_node_group_follows_the_cluster_version_on_a_pinned_ami_release(dev):
    group = dev.one(NODE_GROUP).inputs
    assert group["version"] == "1.35"
    assert group["releaseVersion"] == "1.35.3-20260801"
    assert group["releaseVersion"].endswith(versions.AL2023_AMI.version.removeprefix("v"))  # one AMI release for all
    older = (
        run_stack("dev", {"cluster": {**_dev_cluster(), "kubernetesVersion": "1.34"}, "kubeflow": {"enabled": False}})
        .one(NODE_GROUP)
        .inputs
    )
    assert (older["version"], older["releaseVersion"]) == ("1.34", "1.34.6-20260801")


def _dev_cluster() -> dict[str, Any]:
    from tests.conftest import PROJECT, stack_config

    return json.loads(stack_config("dev")[f"{PROJECT}:cluster"])


@pytest.mark.stack
def test_the_private_endpoint_admits_https_only_from_the_configured_ranges_and_groups(prod):
    assert not [r for r in prod.resources if r.name.startswith("cluster-api-from")]  # nothing configured, none open
    endpoint = {"public": False, "privateCidrs": ["10.99.0.0/16"], "privateSecurityGroups": ["sg-0123456789abcdef0"]}
    inventory = run_stack("prod", {"cluster": {**json.loads(_prod_cluster()), "endpoint": endpoint}})
    rules = {r.name: r.inputs for r in inventory.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")}
    cluster_sg = inventory.one(CLUSTER).outputs["clusterSecurityGroupId"]
    assert rules["cluster-api-from-10-99-0-0-16"] == {
        "securityGroupId": cluster_sg,
        "ipProtocol": "tcp",
        "fromPort": 443,
        "toPort": 443,
        "cidrIpv4": "10.99.0.0/16",
        "description": "Kubernetes API (private endpoint)",
    }
    assert rules["cluster-api-from-sg-0123456789abcdef0"]["referencedSecurityGroupId"] == "sg-0123456789abcdef0"
    assert rules["cluster-api-from-sg-0123456789abcdef0"]["fromPort"] == 443


def _prod_cluster() -> str:
    from tests.conftest import PROJECT, stack_config

    return stack_config("prod")[f"{PROJECT}:cluster"]


def test_network_policies_are_enforced_by_the_vpc_cni_agent(dev):
    cni = next(r for r in dev.of_type(ADDON) if r.inputs["addonName"] == "vpc-cni")
    assert json.loads(cni.inputs["configurationValues"]) == {"enableNetworkPolicy": "true"}


@pytest.mark.stack
def test_retain_keeps_stateful_resources_in_aws_on_destroy(stack_once):
    inventory = stack_once("dev", {"statefulResources": "retain"})
    for kind, suffix in (("aws:kms/key:Key", "secrets"), ("aws:cloudwatch/logGroup:LogGroup", "control-plane")):
        assert inventory.one(kind, f"cluster-{suffix}").retain_on_delete is True
        assert inventory.one(kind, f"cluster-{suffix}").protect is False


def test_every_aws_object_carries_the_standard_tags_through_the_provider(dev):
    provider = dev.one("pulumi:providers:aws")
    assert provider.inputs["region"] == "us-west-2"
    assert json.loads(provider.inputs["defaultTags"]) == {
        "tags": {
            "project": "eks-ml-platform",
            "stack": "dev",
            "managed-by": "pulumi",
            "owner": "ml-platform",
            "cost-center": "ml-research",
        }
    }
    for resource in dev.resources:
        if resource.type.startswith("aws:") and resource.parent is None:
            raise AssertionError(f"{resource.name} is not inside a component")


def test_what_lives_in_the_cluster_depends_on_the_eks_cluster_itself_so_it_is_deleted_first(dev):
    """A dependency on pulumi-eks's component alone would leave these unordered against the aws.eks.Cluster inside
    it, and EKS refuses to delete a cluster that still has node groups."""
    inner = dev.one("aws:eks/cluster:Cluster")
    assert inner.parent == dev.one(CLUSTER).urn
    direct = [dev.one(NODE_GROUP), dev.one("aws:eks/accessEntry:AccessEntry"), *dev.of_type(ADDON)]
    for resource in direct:
        assert inner.urn in resource.dependencies, resource.name


@pytest.mark.stack
def test_kubernetes_and_helm_authenticate_with_the_same_aws_profile_as_the_aws_provider(dev):
    inventory = run_stack("dev", {"aws:profile": "ml-admin"})
    assert inventory.one("pulumi:providers:aws").inputs["profile"] == "ml-admin"
    assert inventory.one(CLUSTER).inputs["providerCredentialOpts"] == {"profileName": "ml-admin"}
    assert "providerCredentialOpts" not in dev.one(CLUSTER).inputs  # ambient credentials without a profile
    # The Kubernetes provider (which Helm releases use too) runs `aws eks get-token` under the same profile.
    user = json.loads(inventory.one("pulumi:providers:kubernetes").inputs["kubeconfig"])["users"][0]["user"]
    assert user["exec"]["env"] == [{"name": "AWS_PROFILE", "value": "ml-admin"}]
    ambient = json.loads(dev.one("pulumi:providers:kubernetes").inputs["kubeconfig"])["users"][0]["user"]
    assert "env" not in ambient["exec"]


ADMIN = "arn:aws:iam::123456789012:role/PlatformAdmin"
CI = "arn:aws:iam::123456789012:role/ci-deployer"
ADMINS = {"platform-admins": ADMIN, "ci": CI}


def with_admins(stack: str = "dev") -> dict[str, Any]:
    from tests.conftest import PROJECT, stack_config

    cluster = json.loads(stack_config(stack)[f"{PROJECT}:cluster"])
    return {"cluster": {**cluster, "adminPrincipals": ADMINS}}


@pytest.mark.stack
def test_the_creator_listed_in_admin_principals_gets_no_second_access_entry_and_is_recorded_on_the_cluster():
    """EKS admits the creator itself; a second entry for it would fail with ResourceInUseException."""
    inventory = run_stack("dev", with_admins(), caller_arn="arn:aws:sts::123456789012:assumed-role/PlatformAdmin/alice")
    cluster = inventory.one(CLUSTER)
    assert sorted(cluster.inputs["accessEntries"]) == ["ci"]
    assert cluster.inputs["clusterTags"] == {"eksml.io/created-by": ADMIN}


@pytest.mark.stack
def test_a_later_update_by_another_listed_identity_keeps_its_own_entry_and_still_skips_the_creator():
    inventory = run_stack(
        "dev",
        with_admins(),
        caller_arn="arn:aws:sts::123456789012:assumed-role/ci-deployer/run-42",
        existing_clusters={"eks-ml-platform-dev": {"eksml.io/created-by": ADMIN}},
    )
    cluster = inventory.one(CLUSTER)
    assert sorted(cluster.inputs["accessEntries"]) == ["ci"]  # unchanged: nothing is deleted or added by CI's run
    assert cluster.inputs["clusterTags"] == {"eksml.io/created-by": ADMIN}


@pytest.mark.stack
def test_a_second_entry_for_the_creator_fails_the_offline_preview_as_eks_would(monkeypatch):
    from components.platform import part_args
    from components.tools.preview import mocks

    monkeypatch.setattr(part_args, "cluster_creator", lambda *_: None)  # as if the creator were not known
    with pytest.raises(mocks.RefusedByAws, match="ResourceInUseException"):
        run_stack("dev", with_admins(), caller_arn=ADMIN)
