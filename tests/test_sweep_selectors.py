"""The sweep's selection rules: another cluster's objects are never taken, whatever else they carry; each way a
controller marks this cluster's objects is recognised."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from components.sweep import selectors as sel
from components.sweep.selectors import ProfileMatch
from components.tags import DYNAMIC_FSX_TAG

REGION = "us-west-2"
cluster_names = st.from_regex(r"\A[a-z][a-z0-9-]{0,20}[a-z0-9]\Z")
noise = st.dictionaries(
    st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=30),
    st.text(max_size=20),
    max_size=5,
)


def _naming(cluster: str) -> dict[str, str]:
    """Every tag by which anything could name `cluster`."""
    owned_key, *value_keys = sel.cluster_tag_keys(cluster)
    return {owned_key: "owned", **dict.fromkeys(value_keys, cluster)}


@given(ours=cluster_names, theirs=cluster_names, extra=noise)
def test_nothing_tagged_for_another_cluster_is_ever_taken(ours: str, theirs: str, extra: dict[str, str]):
    assume(ours != theirs)
    extra = {k: v for k, v in extra.items() if k not in sel.cluster_tag_keys(ours)}
    tags = {
        **extra,
        **_naming(theirs),
        sel.NODEPOOL_TAG: "gpu",
        sel.EC2NODECLASS_TAG: "gpu",
        sel.EBS_CSI_TAG: "true",
        sel.REGION_TAG: REGION,
        sel.CNI_INSTANCE_TAG: "i-0123456789abcdef0",
    }

    assert not sel.is_karpenter_instance(tags, ours)
    assert not sel.is_karpenter_launch_template(tags, ours)
    assert not sel.is_lbc_resource(tags, ours)
    assert not sel.is_pvc_volume(tags, ours)
    assert not sel.is_dynamic_file_system(tags, ours)
    assert not sel.is_cluster_tagged(tags, ours)
    assert sel.match_instance_profile(f"/karpenter/{REGION}/{theirs}/uid/", tags, ours, REGION) is ProfileMatch.OTHER
    assert sel.match_instance_profile("/", tags, ours, REGION) is ProfileMatch.OTHER
    # Even in the stack's own VPC, an interface the CNI tagged with another cluster's name stays.
    assert not sel.is_cni_interface("aws-K8S-i-0123456789abcdef0", tags, ours, vpc_is_the_stacks=True)


@given(cluster=cluster_names, extra=noise)
def test_untagged_look_alikes_are_not_taken(cluster: str, extra: dict[str, str]):
    tags = {k: v for k, v in extra.items() if k not in sel.cluster_tag_keys(cluster) and k != sel.CNI_INSTANCE_TAG}

    assert not sel.is_cluster_tagged(tags, cluster)
    assert not sel.is_karpenter_instance({**tags, sel.NODEPOOL_TAG: "gpu"}, cluster)
    assert not sel.is_pvc_volume({**tags, sel.EBS_CSI_TAG: "true"}, cluster)
    assert not sel.is_cni_interface("eth0 of an appliance", tags, cluster, vpc_is_the_stacks=True)


@pytest.mark.parametrize(
    "mark",
    [
        {sel.EKS_CLUSTER_NAME_TAG: "ml-dev"},
        {"kubernetes.io/cluster/ml-dev": "owned"},
        {sel.DISCOVERY_TAG: "ml-dev"},
    ],
)
def test_a_karpenter_node_is_known_by_its_nodepool_and_any_one_cluster_tag(mark: dict[str, str]):
    assert sel.is_karpenter_instance({sel.NODEPOOL_TAG: "gpu", **mark}, "ml-dev")
    assert not sel.is_karpenter_instance(mark, "ml-dev")  # a node of the managed node group
    assert not sel.is_karpenter_instance({sel.NODEPOOL_TAG: "gpu", **mark}, "ml-de")


def test_a_shared_cluster_tag_does_not_make_an_object_the_clusters():
    # `shared` is how a VPC owner lends subnets to a cluster; the subnets stay the owner's.
    assert not sel.is_cluster_tagged({"kubernetes.io/cluster/ml-dev": "shared"}, "ml-dev")
    assert not sel.is_karpenter_instance({sel.NODEPOOL_TAG: "gpu", "kubernetes.io/cluster/ml-dev": "shared"}, "ml-dev")


V1 = {"kubernetes.io/cluster/ml-dev": "owned", sel.EKS_CLUSTER_NAME_TAG: "ml-dev", sel.EC2NODECLASS_TAG: "gpu"}
PRE_V1 = {sel.KARPENTER_MANAGED_BY_TAG: "ml-dev", sel.EC2NODECLASS_TAG: "default"}


@pytest.mark.parametrize(
    ("path", "tags", "expected"),
    [
        (f"/karpenter/{REGION}/ml-dev/uid/", V1, ProfileMatch.OURS),
        ("/", {**V1, sel.REGION_TAG: REGION}, ProfileMatch.OURS),
        ("/", {**PRE_V1, sel.REGION_TAG: REGION}, ProfileMatch.OURS),
        # The same cluster name in another region: IAM is global, the profile is that cluster's.
        ("/karpenter/eu-west-1/ml-dev/uid/", V1, ProfileMatch.OTHER),
        ("/", {**V1, sel.REGION_TAG: "eu-west-1"}, ProfileMatch.OTHER),
        (f"/karpenter/{REGION}/ml-dev/uid/", {**V1, sel.REGION_TAG: "eu-west-1"}, ProfileMatch.OTHER),
        # The path names another cluster whatever the tags say.
        (f"/karpenter/{REGION}/ml-other/uid/", V1, ProfileMatch.OTHER),
        # Not Karpenter's: no node class tag, no /karpenter/ path.
        ("/", {"kubernetes.io/cluster/ml-dev": "owned", sel.REGION_TAG: REGION}, ProfileMatch.OTHER),
        # Karpenter's, for this cluster name, but nothing says which region.
        ("/", V1, ProfileMatch.REGION_UNKNOWN),
    ],
)
def test_instance_profiles_are_matched_by_maker_cluster_and_region(path: str, tags: dict[str, str], expected):
    assert sel.match_instance_profile(path, tags, "ml-dev", REGION) is expected


def test_claim_volumes_need_the_drivers_mark_and_the_clusters():
    assert sel.is_pvc_volume({sel.EBS_CSI_TAG: "true", "kubernetes.io/cluster/ml-dev": "owned"}, "ml-dev")
    assert sel.is_pvc_volume({sel.EBS_CSI_TAG: "true", sel.LEGACY_CLUSTER_TAG: "ml-dev"}, "ml-dev")
    assert not sel.is_pvc_volume({sel.EBS_CSI_TAG: "true"}, "ml-dev")
    assert not sel.is_pvc_volume({"kubernetes.io/cluster/ml-dev": "owned"}, "ml-dev")


def test_claim_file_systems_are_those_the_csi_driver_tagged_with_the_clusters_name():
    assert sel.is_dynamic_file_system({DYNAMIC_FSX_TAG: "ml-dev"}, "ml-dev")
    assert not sel.is_dynamic_file_system({"Name": "storage-fsx"}, "ml-dev")


def test_cni_interfaces_without_the_cluster_tag_are_taken_only_in_the_stacks_own_vpc():
    for description, tags in (("aws-K8S-i-0123456789abcdef0", {}), ("", {sel.CNI_INSTANCE_TAG: "i-0123456789abcdef0"})):
        assert sel.is_cni_interface(description, tags, "ml-dev", vpc_is_the_stacks=True)
        assert not sel.is_cni_interface(description, tags, "ml-dev", vpc_is_the_stacks=False)
    assert sel.is_cni_interface("", {sel.CNI_CLUSTER_TAG: "ml-dev"}, "ml-dev", vpc_is_the_stacks=False)


def test_the_guardduty_endpoint_needs_the_regions_service_and_guarddutys_tag():
    managed = {sel.GUARDDUTY_MANAGED_TAG: "true"}
    assert sel.is_guardduty_endpoint(f"com.amazonaws.{REGION}.guardduty-data", managed, REGION)
    assert not sel.is_guardduty_endpoint("com.amazonaws.eu-west-1.guardduty-data", managed, REGION)
    assert not sel.is_guardduty_endpoint(f"com.amazonaws.{REGION}.guardduty-data", {}, REGION)
    assert not sel.is_guardduty_endpoint(f"com.amazonaws.{REGION}.ecr.api", managed, REGION)
