"""EC2NodeClass specs: the whole v1 surface, each field rendered and each refusal with its message, and rendered
classes valid against the pinned CRD (schema and CEL rules)."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from components import versions
from components.karpenter import efa
from components.karpenter.render import render_nodeclass
from components.karpenter.specs import NODE_CLASS_PRESETS
from tests.karpenter_support import CONTEXT, C, class_problems, crd_findings, node_class


def spec_of(**fields):
    return render_nodeclass("c", node_class(**fields), CONTEXT)["spec"]


def node_config(rendered_user_data: str) -> dict[str, Any]:
    part = rendered_user_data.split("Content-Type: application/node.eks.aws\n\n", 1)[1].split("\n--//--", 1)[0]
    return yaml.safe_load(part)


# ------------------------------------------------------------------------------------------- volumes and AMI


def test_node_class_refuses_volumes_ec2_would_refuse_at_launch():
    assert class_problems(preset="default", rootVolumeGib=20, rootVolumeIops=12000) == {
        f"{C}.rootVolumeIops": (
            "12000 IOPS needs rootVolumeGib of at least 24 (gp3 allows 500 IOPS per GiB); rootVolumeGib is 20"
        ),
    }
    assert class_problems(preset="default", rootVolumeIops=4000, rootVolumeThroughputMibps=1001) == {
        f"{C}.rootVolumeThroughputMibps": (
            "1001 MiB/s needs rootVolumeIops of at least 4004 (gp3 allows 0.25 MiB/s per IOPS); rootVolumeIops is 4000"
        ),
    }
    assert class_problems(preset="gpu", rootVolumeIops=90000, rootVolumeGib=60000, rootVolumeThroughputMibps=2001) == {
        f"{C}.rootVolumeIops": "Input should be less than or equal to 80000, got 90000",
        f"{C}.rootVolumeGib": "Input should be less than or equal to 59000, got 60000",
        f"{C}.rootVolumeThroughputMibps": "Input should be less than or equal to 2000, got 2001",
    }


def test_node_class_accepts_the_largest_gp3_volume_and_the_baseline_on_a_small_one():
    assert (
        spec_of(rootVolumeGib=160, rootVolumeIops=80000, rootVolumeThroughputMibps=2000)["blockDeviceMappings"][0][
            "ebs"
        ]["iops"]
        == 80000
    )
    assert node_class(rootVolumeGib=20, rootVolumeIops=3000, rootVolumeThroughputMibps=750)


def test_node_class_rejects_unknown_presets():
    assert class_problems(preset="huge") == {
        f"{C}.preset": "expected one of the presets default, gpu, gpu-training, got 'huge'"
    }


@given(
    st.sampled_from(sorted(NODE_CLASS_PRESETS)), st.sampled_from(["al2023", "bottlerocket"]), st.sampled_from([1, 2])
)
def test_every_node_class_requires_imdsv2_and_encrypts_a_pinned_ami_root_volume(preset, family, hops):
    rendered = spec_of(preset=preset, amiFamily=family, imdsHopLimit=hops)
    assert rendered["metadataOptions"]["httpTokens"] == "required"
    assert rendered["metadataOptions"]["httpPutResponseHopLimit"] == hops
    assert all(d["ebs"]["encrypted"] is True for d in rendered["blockDeviceMappings"])
    pin = versions.AL2023_AMI if family == "al2023" else versions.BOTTLEROCKET_AMI
    assert rendered["amiSelectorTerms"] == [{"alias": f"{family}@{pin.version}"}]
    assert rendered["associatePublicIPAddress"] is False


def test_the_latest_ami_alias_is_opt_in():
    assert spec_of(amiRelease="latest")["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert spec_of(amiFamily="bottlerocket", amiRelease="latest")["amiSelectorTerms"] == [
        {"alias": "bottlerocket@latest"}
    ]


def test_bottlerocket_puts_the_configured_size_on_its_data_volume():
    devices = {d["deviceName"]: d for d in spec_of(preset="gpu", amiFamily="bottlerocket")["blockDeviceMappings"]}
    assert devices["/dev/xvdb"]["rootVolume"] is True
    assert devices["/dev/xvdb"]["ebs"]["volumeSize"] == "200Gi"
    assert "rootVolume" not in devices["/dev/xvda"]


def test_instance_store_raid0_is_rendered():
    assert spec_of(preset="gpu-training", instanceStorePolicy="RAID0")["instanceStorePolicy"] == "RAID0"
    assert "instanceStorePolicy" not in spec_of()
    assert class_problems(instanceStorePolicy="RAID1") == {
        f"{C}.instanceStorePolicy": "Input should be 'RAID0', got 'RAID1'"
    }


# --------------------------------------------------------------------------------------- network and tagging


def test_by_default_subnets_and_security_groups_are_found_by_the_discovery_tag():
    rendered = spec_of(preset="default")
    assert rendered["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "ml"}}]
    assert rendered["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "ml"}}]
    assert rendered["role"] == "ml-node"


def test_subnet_terms_replace_the_discovery_tag_and_security_groups_add_to_the_cluster_group():
    rendered = spec_of(
        subnetSelectorTerms=[
            {"tags": {"kubernetes.io/role/cni": "1", "Name": "*pods*"}},
            {"id": "subnet-0a1b2c3d4e5f60718"},
        ],
        securityGroupSelectorTerms=[{"id": "sg-0123456789abcdef0"}, {"name": "efa-all-traffic"}],
    )
    assert rendered["subnetSelectorTerms"] == [
        {"tags": {"kubernetes.io/role/cni": "1", "Name": "*pods*"}},
        {"id": "subnet-0a1b2c3d4e5f60718"},
    ]
    assert rendered["securityGroupSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "ml"}},  # nodes always need the cluster security group
        {"id": "sg-0123456789abcdef0"},
        {"name": "efa-all-traffic"},
    ]


@pytest.mark.parametrize(
    ("fields", "found"),
    [
        (
            {"subnetSelectorTerms": [{"id": "subnet-0a1b2c3d", "tags": {"a": "b"}}]},
            {f"{C}.subnetSelectorTerms[0]": "set exactly one of id or tags"},
        ),
        (
            {"subnetSelectorTerms": [{"id": "subnet_1"}]},
            {f"{C}.subnetSelectorTerms[0].id": "expected a subnet id like 'subnet-0123456789abcdef0', got 'subnet_1'"},
        ),
        (
            {"securityGroupSelectorTerms": [{}]},
            {f"{C}.securityGroupSelectorTerms[0]": "set exactly one of id, name or tags"},
        ),
        (
            {"subnetSelectorTerms": [{"tags": {"Name": ""}}]},
            {
                f"{C}.subnetSelectorTerms[0].tags.Name": (
                    "empty tag keys and values select nothing (use '*' for any value)"
                )
            },
        ),
    ],
)
def test_selector_terms_the_crd_would_refuse_are_refused(fields, found):
    assert class_problems(**fields) == found


def test_class_tags_merge_with_the_standard_tags_which_win():
    assert spec_of(tags={"team": "vision", "project-code": "x1"})["tags"] == {
        "team": "ml",
        "owner": "ml-platform",
        "project-code": "x1",
    }


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (
            "owner",
            "is one of the stack's standard tags, which every instance carries already (set owner or costCenter)",
        ),
        ("kubernetes.io/cluster/ml", "is reserved for EKS, Karpenter or AWS"),
        ("karpenter.sh/nodepool", "is reserved for EKS, Karpenter or AWS"),
        ("aws:createdBy", "is reserved for EKS, Karpenter or AWS"),
    ],
)
def test_class_tags_that_collide_are_refused(key, message):
    assert class_problems(tags={key: "x"}) == {f"{C}.tags.{key}": message}


def test_detailed_monitoring_is_rendered_and_public_addresses_are_refused():
    assert spec_of(detailedMonitoring=True)["detailedMonitoring"] is True
    assert class_problems(associatePublicIPAddress=True) == {
        f"{C}.associatePublicIPAddress": (
            "nodes get no public addresses: they run in private subnets and reach out through NAT"
        )
    }


def test_capacity_reservations_are_selected_by_id_or_by_tags():
    rendered = spec_of(
        capacityReservationSelectorTerms=[
            {"id": "cr-0123456789abcdef0"},
            {"tags": {"purpose": "training"}, "ownerID": "123456789012"},
        ]
    )
    assert rendered["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"},
        {"tags": {"purpose": "training"}, "ownerID": "123456789012"},
    ]
    assert class_problems(
        capacityReservationSelectorTerms=[{"id": "cr-0123456789abcdef0", "instanceMatchCriteria": "open"}]
    ) == {
        f"{C}.capacityReservationSelectorTerms[0].id": (
            "selects one reservation by itself; leave out tags, ownerID and instanceMatchCriteria"
        )
    }


def test_efa_layouts_give_one_efa_only_interface_per_network_card():
    rendered = spec_of(preset="gpu-training", efaLayout="p5.48xlarge")["networkInterfaces"]
    assert rendered[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    assert [i for i in rendered if i["interfaceType"] == "efa-only"] == [
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
        *({"networkCardIndex": card, "deviceIndex": 0, "interfaceType": "efa-only"} for card in range(1, 32)),
    ]
    assert node_class(efaLayout="p6-b200.48xlarge").efa_interfaces == 8
    assert node_class(efaLayout="p4d.24xlarge").efa_interfaces == efa.NETWORK_CARDS["p4d.24xlarge"] == 4


def test_a_placement_group_is_selected_by_name_or_id():
    assert spec_of(placementGroupSelector={"name": "ml-training"})["placementGroupSelector"] == {"name": "ml-training"}
    assert class_problems(placementGroupSelector={"name": "a", "id": "pg-0123456789abcdef0"}) == {
        f"{C}.placementGroupSelector": "set exactly one of name or id"
    }


@pytest.mark.parametrize(
    ("fields", "found"),
    [
        (
            {"efaLayout": "p9.48xlarge"},
            {
                f"{C}.efaLayout": (
                    f"no known EFA layout for 'p9.48xlarge'; expected one of {', '.join(efa.NETWORK_CARDS)} (or list "
                    "networkInterfaces)"
                )
            },
        ),
        (
            {"networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa-only"}]},
            {
                f"{C}.networkInterfaces": (
                    "needs a primary interface: networkCardIndex 0, deviceIndex 0, interfaceType interface (EFA-only "
                    "cannot be primary)"
                )
            },
        ),
        (
            {
                "networkInterfaces": [
                    {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                    {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
                    {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"},
                ]
            },
            {f"{C}.networkInterfaces": "network card 1 has 2 EFA-only interfaces; at most one per card"},
        ),
    ],
)
def test_interface_layouts_the_crd_or_ec2_would_refuse_are_refused(fields, found):
    assert class_problems(**fields) == found


# ---------------------------------------------------------------------------------------- kubelet, user data


def test_kubelet_settings_are_rendered_with_the_crd_spelling():
    kubelet = {
        "maxPods": 110,
        "podsPerCore": 10,
        "systemReserved": {"cpu": "100m", "memory": "512Mi"},
        "kubeReserved": {"cpu": "200m"},
        "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
        "evictionSoft": {"memory.available": "10%"},
        "evictionSoftGracePeriod": {"memory.available": "1m30s"},
        "evictionMaxPodGracePeriod": 60,
        "imageGCHighThresholdPercent": 85,
        "imageGCLowThresholdPercent": 70,
        "clusterDNS": ["172.20.0.10"],
        "cpuCFSQuota": True,
    }
    assert spec_of(kubelet=kubelet)["kubelet"] == kubelet


@pytest.mark.parametrize(
    ("kubelet", "path", "message"),
    [
        (
            {"imageGCHighThresholdPercent": 70, "imageGCLowThresholdPercent": 80},
            "imageGCHighThresholdPercent",
            "must be above imageGCLowThresholdPercent (80); got 70",
        ),
        (
            {"evictionSoft": {"memory.available": "10%"}},
            "evictionSoftGracePeriod",
            "needs a grace period for the soft threshold memory.available",
        ),
        (
            {"evictionHard": {"memory.available": "lots"}},
            "evictionHard.memory.available",
            "expected a percentage like '10%' or a quantity like '500Mi', got 'lots'",
        ),
        ({"clusterDNS": ["10.0.0.300"]}, "clusterDNS[0]", "expected an IP address, got '10.0.0.300'"),
        (
            {"systemReserved": {"gpu": "1"}},
            "systemReserved.gpu",
            "the key 'gpu': Input should be 'cpu', 'memory', 'ephemeral-storage' or 'pid'",
        ),
    ],
)
def test_kubelet_settings_the_crd_or_the_kubelet_would_refuse_are_refused(kubelet, path, message):
    assert class_problems(kubelet=kubelet) == {f"{C}.kubelet.{path}": message}


def test_al2023_user_data_is_a_nodeconfig_part_nodeadm_merges():
    rendered = spec_of(
        userData={
            "maxConcurrentDownloads": 10,
            "parallelImagePull": True,
            "nodeConfig": {"instance": {"environment": {"A": "b"}}},
        }
    )
    text = rendered["userData"]
    assert text.startswith('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n')
    config = node_config(text)
    assert (config["apiVersion"], config["kind"]) == ("node.eks.aws/v1alpha1", "NodeConfig")
    # nodeadm ignores gates it does not know: the name is one of nodeadm's own (awslabs/amazon-eks-ami
    # nodeadm/internal/api, featureVerifiers: InstanceIdNodeName, FastImagePull).
    assert config["spec"]["featureGates"] == {"FastImagePull": True}
    assert tomllib.loads(config["spec"]["containerd"]["config"]) == {
        "plugins": {"io.containerd.cri.v1.images": {"max_concurrent_downloads": 10}}
    }
    assert config["spec"]["instance"] == {"environment": {"A": "b"}}


def test_bottlerocket_user_data_is_toml_settings():
    rendered = spec_of(
        amiFamily="bottlerocket",
        userData={"maxConcurrentDownloads": 8, "settings": {"kernel": {"sysctl": {"vm.max_map_count": "262144"}}}},
    )
    assert tomllib.loads(rendered["userData"]) == {
        "settings": {
            "container-runtime": {"max-concurrent-downloads": 8},
            "kernel": {"sysctl": {"vm.max_map_count": "262144"}},
        }
    }


@pytest.mark.parametrize(
    ("fields", "path", "message"),
    [
        (
            {"userData": {"nodeConfig": {"cluster": {"name": "x"}}}},
            "userData.nodeConfig.cluster",
            "Karpenter sets it from the cluster",
        ),
        (
            {"userData": {"nodeConfig": {"kubelet": {"config": {"maxPods": 8}}}}},
            "userData.nodeConfig.kubelet",
            "set the class's kubelet instead: Karpenter merges it into the NodeConfig and counts with it",
        ),
        (
            {"userData": {"nodeConfig": {"instance": {"localStorage": {"strategy": "RAID0"}}}}},
            "userData.nodeConfig.instance.localStorage",
            "set instanceStorePolicy: RAID0 instead, which Karpenter also counts as the node's ephemeral storage",
        ),
        (
            {"userData": {"settings": {"a": 1}}},
            "userData.settings",
            "are Bottlerocket's TOML settings; AL2023 takes userData.nodeConfig",
        ),
        (
            {"amiFamily": "bottlerocket", "userData": {"parallelImagePull": True}},
            "userData.parallelImagePull",
            "is nodeadm's (AL2023); on Bottlerocket set the SOCI snapshotter under userData.settings",
        ),
        (
            {"amiFamily": "bottlerocket", "userData": {"settings": {"kubernetes": {"max-pods": 50}}}},
            "userData.settings.kubernetes.max-pods",
            "set it in the class's kubelet, which Karpenter also counts with",
        ),
        (
            {"amiFamily": "bottlerocket", "userData": {"settings": {"kubernetes": {"cluster-name": "x"}}}},
            "userData.settings.kubernetes.cluster-name",
            "Karpenter sets it from the cluster and the NodePool",
        ),
        (
            {"amiFamily": "bottlerocket", "userData": {"settings": {"motd": None}}},
            "userData.settings.motd",
            "expected a string, number, boolean or a list of them, got None",
        ),
    ],
)
def test_user_data_that_karpenter_owns_or_the_ami_family_cannot_read_is_refused(fields, path, message):
    assert class_problems(**fields) == {f"{C}.{path}": message}


@pytest.mark.refcheck
def test_a_class_with_every_field_set_passes_the_ec2nodeclass_crd():
    classes = [
        render_nodeclass(
            "full",
            node_class(
                preset="gpu-training",
                instanceStorePolicy="RAID0",
                efaLayout="p5.48xlarge",
                detailedMonitoring=True,
                capacityReservationSelectorTerms=[{"id": "cr-0123456789abcdef0"}, {"tags": {"purpose": "training"}}],
                subnetSelectorTerms=[{"tags": {"kubernetes.io/role/cni": "1"}}],
                securityGroupSelectorTerms=[{"name": "efa"}],
                kubelet={
                    "maxPods": 110,
                    "evictionSoft": {"memory.available": "10%"},
                    "evictionSoftGracePeriod": {"memory.available": "2m"},
                    "imageGCHighThresholdPercent": 85,
                    "imageGCLowThresholdPercent": 70,
                },
                userData={"maxConcurrentDownloads": 10, "parallelImagePull": True},
                tags={"team": "vision"},
                placementGroupSelector={"id": "pg-0123456789abcdef0"},
            ),
            CONTEXT,
        ),
        render_nodeclass(
            "rocket",
            node_class(
                amiFamily="bottlerocket",
                amiRelease="latest",
                userData={"settings": {"kernel": {"lockdown": "integrity"}}},
            ),
            CONTEXT,
        ),
    ]
    assert crd_findings(classes) == []
