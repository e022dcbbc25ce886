"""Stack config parsing: defaults per environment, and a clear message for every mistake."""

from __future__ import annotations

import json
from ipaddress import IPv4Network

import pytest

from components import versions
from components.config.errors import ConfigError
from components.config.types import Environment, NatGateways, StatefulResources
from components.platform.parse import parse_config

NS = "eks-ml-platform"


def raw(environment: str = "dev", region: str = "us-west-2", **sections) -> dict[str, str]:
    config = {"aws:region": region, f"{NS}:environment": environment, f"{NS}:owner": "ml-platform"}
    cluster = {"endpoint": {"public": True, "publicCidrs": ["203.0.113.0/24"]}} if environment == "dev" else {}
    sections.setdefault("cluster", cluster)
    for key, value in sections.items():
        config[f"{NS}:{key}"] = value if isinstance(value, str) else json.dumps(value)
    return config


def problems(config: dict[str, str]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(config, project=NS, stack="test")
    return {issue.path: issue.message for issue in caught.value.issues}


def test_dev_defaults_are_cheap():
    config = parse_config(raw("dev"), project=NS, stack="dev")
    assert config.environment is Environment.DEV
    assert config.network.availability_zones == ("us-west-2a", "us-west-2b")
    assert config.network.nat_gateways is NatGateways.SINGLE
    assert config.stateful_resources is StatefulResources.DESTROY
    assert config.cluster.endpoint.public is True
    assert config.cluster.endpoint.public_cidrs == (IPv4Network("203.0.113.0/24"),)


def test_prod_defaults_are_safe():
    config = parse_config(raw("prod"), project=NS, stack="prod")
    assert config.network.availability_zones == ("us-west-2a", "us-west-2b", "us-west-2c")
    assert config.network.nat_gateways is NatGateways.PER_AZ
    assert config.stateful_resources is StatefulResources.PROTECT
    assert config.cluster.endpoint.public is False
    assert config.cluster.endpoint.private is True


def test_a_mistyped_environment_is_the_one_problem_reported_not_the_keys_it_would_have_filled_in():
    assert problems(raw("develop")) == {"environment": "Input should be 'dev' or 'prod', got 'develop'"}


def test_a_key_no_environment_fills_in_is_still_required_when_the_environment_is_mistyped():
    config = raw("develop")
    del config[f"{NS}:owner"]
    assert set(problems(config)) == {"environment", "owner"}


def test_explicit_values_override_environment_defaults():
    config = parse_config(
        raw("prod", network={"natGateways": "single"}, statefulResources="retain"), project=NS, stack="prod"
    )
    assert config.network.nat_gateways is NatGateways.SINGLE
    assert config.stateful_resources is StatefulResources.RETAIN
    assert config.network.availability_zones == ("us-west-2a", "us-west-2b", "us-west-2c")


def test_cluster_name_defaults_to_project_and_stack():
    assert parse_config(raw(), project=NS, stack="dev").cluster_name == "eks-ml-platform-dev"


def test_unknown_key_is_an_error_with_a_suggestion():
    found = problems(raw(network={"natGateway": "single"}))
    assert found["network.natGateway"].endswith("did you mean 'natGateways'?")
    assert "expected one of availabilityZones, cidr, existing, natGateways" in found["network.natGateway"]


def test_unknown_top_level_key_is_an_error_with_a_suggestion():
    config = raw()
    config[f"{NS}:clustr"] = "{}"
    assert problems(config)["clustr"].endswith("did you mean 'cluster'?")


@pytest.mark.parametrize(
    ("key", "source"),
    [("project", "project's name"), ("stack", "stack's name"), ("region", "aws:region"), ("profile", "aws:profile")],
)
def test_a_key_the_program_fills_from_elsewhere_is_refused_not_silently_replaced(key, source):
    config = raw()
    config[f"{NS}:{key}"] = "other"
    found = problems(config)
    assert source in found[f"{NS}:{key}"]
    assert found[f"{NS}:{key}"].endswith("remove it")


def test_unknown_nested_key_names_its_full_path():
    found = problems(
        raw(cluster={"endpoint": {"public": True, "publicCidrs": ["10.0.0.0/8"]}, "systemNodeGroup": {"minSise": 2}})
    )
    assert found["cluster.systemNodeGroup.minSise"].endswith("did you mean 'minSize'?")


def test_every_problem_is_reported_at_once():
    found = problems(
        raw(
            network={"cidr": "10.0.0.0/24", "availabilityZones": ["us-east-1a", "us-west-2b"]},
            cluster={"kubernetesVersion": "1.29", "endpoint": {"public": True}, "logRetentionDays": 8},
        )
    )
    assert set(found) == {
        "network.cidr",
        "network.availabilityZones[0]",
        "cluster.kubernetesVersion",
        "cluster.endpoint.publicCidrs",
        "cluster.logRetentionDays",
    }


@pytest.mark.parametrize(
    ("sections", "path", "message"),
    [
        ({"network": {"cidr": "10.0.0.1/16"}}, "network.cidr", "with no host bits set, got '10.0.0.1/16'"),
        ({"network": {"cidr": "10.0.0.0/12"}}, "network.cidr", "expected a prefix length between /16 and /22, got /12"),
        ({"network": {"cidr": "fd00::/48"}}, "network.cidr", "expected an IPv4 CIDR, got the IPv6 network 'fd00::/48'"),
        ({"network": {"cidr": 10}}, "network.cidr", "expected an IPv4 CIDR string like '10.0.0.0/16', got int"),
        (
            {"network": {"availabilityZones": ["us-west-2a", "eu-west-1b"]}},
            "network.availabilityZones[1]",
            "expected an availability zone of us-west-2 like 'us-west-2a', got 'eu-west-1b'",
        ),
        (
            {"network": {"availabilityZones": ["us-west-2a", "us-west-2a"]}},
            "network.availabilityZones",
            "lists an availability zone more than once",
        ),
        (
            {"network": {"availabilityZones": ["us-west-2a"]}},
            "network.availabilityZones",
            "expected at least 2 item(s), got 1",
        ),
        (
            {"network": {"availabilityZones": ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]}},
            "network.availabilityZones",
            "expected at most 3 item(s), got 4",
        ),
        ({"network": {"natGateways": "many"}}, "network.natGateways", "Input should be 'single' or 'perAz'"),
        (
            {"cluster": {"kubernetesVersion": "1.29", "endpoint": {"public": False}}},
            "cluster.kubernetesVersion",
            "expected one of the supported versions '1.34', '1.35', got '1.29'",
        ),
        (
            {"cluster": {"endpoint": {"public": True}}},
            "cluster.endpoint.publicCidrs",
            "must list the CIDRs allowed to reach the public endpoint (it is never opened to all)",
        ),
        (
            {"cluster": {"endpoint": {"public": False}, "systemNodeGroup": {"instanceTypes": ["m7i.large", "banana"]}}},
            "cluster.systemNodeGroup.instanceTypes[1]",
            "expected an EC2 instance type like 'm7i.large', got 'banana'",
        ),
        (
            {"cluster": {"endpoint": {"public": False}, "systemNodeGroup": {"instanceTypes": ["m7g.large"]}}},
            "cluster.systemNodeGroup.instanceTypes[0]",
            "'m7g.large' is an Arm (Graviton) type; the system nodes run the x86_64 AL2023 AMI",
        ),
        (
            {"cluster": {"endpoint": {"public": False, "private": False}}},
            "cluster.endpoint.private",
            "must be true: nodes in private subnets reach the API server through it",
        ),
        (
            {"cluster": {"endpoint": {"public": True, "private": False, "publicCidrs": ["203.0.113.0/24"]}}},
            "cluster.endpoint.private",
            "must be true: nodes in private subnets reach the API server through it",
        ),
        (
            {"cluster": {"endpoint": {"public": True, "publicCidrs": ["203.0.113.0/24", "0.0.0.0/0"]}}},
            "cluster.endpoint.publicCidrs[1]",
            "0.0.0.0/0 opens the API server to the whole internet; list your egress ranges",
        ),
        (
            {"cluster": {"endpoint": {"public": False}}, "gpu": {"scheduler": {"enabled": False, "gpuWeight": 20}}},
            "gpu.scheduler.gpuWeight",
            "is not used while enabled is false; remove it",
        ),
        (
            {"cluster": {"endpoint": {"public": False}}, "gpu": {"admission": {"enabled": False, "action": "warn"}}},
            "gpu.admission.action",
            "is not used while enabled is false; remove it",
        ),
        (
            {"cluster": {"endpoint": {"public": False}}, "observability": {"enabled": False, "retention": "30d"}},
            "observability.retention",
            "is not used while enabled is false; remove it",
        ),
        (
            {
                "cluster": {"endpoint": {"public": False}},
                "network": {
                    "availabilityZones": ["us-west-2a", "us-west-2b"],
                    "existing": {
                        "vpcId": "vpc-0123456789abcdef0",
                        "privateSubnetIds": ["subnet-01234567", "subnet-01234567"],
                    },
                },
            },
            "network.existing.privateSubnetIds",
            "lists a subnet more than once",
        ),
        (
            {"cluster": {"endpoint": {"public": False, "publicCidrs": ["10.0.0.0/8"]}}},
            "cluster.endpoint.publicCidrs",
            "is only used when public is true; remove it",
        ),
        (
            {
                "cluster": {"endpoint": {"public": False}},
                "network": {
                    "availabilityZones": ["us-west-2a", "us-west-2b", "us-west-2c"],
                    "existing": {
                        "vpcId": "vpc-0123456789abcdef0",
                        "privateSubnetIds": ["subnet-01234567", "subnet-89abcdef"],
                    },
                },
            },
            "network.existing.privateSubnetIds",
            "lists 2 subnets for 3 availability zones; give one per AZ, in the order of availabilityZones",
        ),
        (
            {"cluster": {"endpoint": {"public": False}, "logTypes": ["api", "audit", "api"]}},
            "cluster.logTypes",
            "lists a log type more than once",
        ),
        (
            {"cluster": {"endpoint": {"public": "yes"}}},
            "cluster.endpoint.public",
            "Input should be a valid boolean, got 'yes'",
        ),
        (
            {
                "cluster": {"endpoint": {"public": False}, "serviceCidr": "10.20.0.0/16"},
                "network": {"cidr": "10.20.0.0/16"},
            },
            "cluster.serviceCidr",
            "10.20.0.0/16 overlaps the VPC CIDR 10.20.0.0/16",
        ),
        (
            {"cluster": {"endpoint": {"public": False}, "logTypes": ["api", "kubelet"]}},
            "cluster.logTypes[1]",
            "Input should be 'api', 'audit', 'authenticator', 'controllerManager' or 'scheduler'",
        ),
        (
            {"cluster": {"endpoint": {"public": False}, "logRetentionDays": 10}},
            "cluster.logRetentionDays",
            "expected one of the CloudWatch retention periods 1, 3, 5, 7, 14, 30",
        ),
        (
            {"cluster": {"endpoint": {"public": False}, "adminPrincipals": {"admins": "arn:aws:iam::123:role/x"}}},
            "cluster.adminPrincipals.admins",
            "expected an IAM role or user ARN like 'arn:aws:iam::123456789012:role/Admin'",
        ),
        (
            {
                "cluster": {
                    "endpoint": {"public": False},
                    "adminPrincipals": {"Admins": "arn:aws:iam::123456789012:role/x"},
                }
            },
            "cluster.adminPrincipals.Admins",
            "the key 'Admins': expected a lowercase name of letters, digits and '-'",
        ),
        (
            {"cluster": {"endpoint": {"public": False}, "systemNodeGroup": {"minSize": 3, "desiredSize": 2}}},
            "cluster.systemNodeGroup.desiredSize",
            "expected minSize <= desiredSize <= maxSize, got 3 <= 2 <= 3",
        ),
        (
            {"cluster": {"endpoint": {"public": False}, "systemNodeGroup": {"minSize": "2"}}},
            "cluster.systemNodeGroup.minSize",
            "Input should be a valid integer, got '2'",
        ),
        (
            {"cluster": {"endpoint": {"public": False}, "name": "Platform_1"}},
            "cluster.name",
            "expected a lowercase DNS-style name of 2 to 40 characters, got 'Platform_1'",
        ),
        ({"statefulResources": "keep"}, "statefulResources", "Input should be 'protect', 'retain' or 'destroy'"),
    ],
)
def test_mistake_is_reported_with_key_path_and_expectation(sections, path, message):
    found = problems(raw(**sections))
    assert path in found, found
    assert message in found[path]


def test_existing_vpc_rejects_keys_it_does_not_use():
    found = problems(
        raw(
            network={
                "cidr": "10.1.0.0/16",
                "natGateways": "perAz",
                "availabilityZones": ["us-west-2a", "us-west-2b"],
                "existing": {
                    "vpcId": "vpc-0123456789abcdef0",
                    "privateSubnetIds": ["subnet-01234567", "subnet-89abcdef"],
                },
            }
        )
    )
    assert found["network.cidr"] == "is not used when network.existing is set; remove it"
    assert found["network.natGateways"] == "is not used when network.existing is set; remove it"


def test_existing_vpc_requires_its_availability_zones():
    found = problems(
        raw(
            network={
                "existing": {
                    "vpcId": "vpc-0123456789abcdef0",
                    "privateSubnetIds": ["subnet-01234567", "subnet-89abcdef"],
                }
            }
        )
    )
    assert found["network.availabilityZones"] == "is required"


def test_existing_vpc_ids_are_checked():
    found = problems(
        raw(
            network={
                "availabilityZones": ["us-west-2a", "us-west-2b"],
                "existing": {"vpcId": "vpc-1", "privateSubnetIds": ["subnet-01234567", "subnet-01234567x"]},
            }
        )
    )
    assert "expected a VPC id like 'vpc-0123456789abcdef0', got 'vpc-1'" in found["network.existing.vpcId"]
    assert "expected a subnet id" in found["network.existing.privateSubnetIds[1]"]


def test_missing_required_keys_are_named():
    found = problems({f"{NS}:network": "{}"})
    assert found["aws:region"] == "is required (e.g. 'us-west-2')"
    assert found["environment"] == "is required"
    assert found["owner"] == "is required"


def test_unread_provider_and_foreign_keys_are_rejected():
    config = raw()
    config["aws:skipCredentialsValidation"] = "true"
    config["kubernetes:context"] = "kind"
    found = problems(config)
    assert "is not read" in found["aws:skipCredentialsValidation"]
    assert "AWS_* environment variables" in found["aws:skipCredentialsValidation"]
    assert found["kubernetes:context"] == "is not read by this program (its keys are eks-ml-platform:*)"


def test_invalid_region_is_reported():
    assert "expected an AWS region like 'us-west-2'" in problems(raw(region="moon-1"))["aws:region"]


def test_an_empty_region_is_refused_not_turned_into_zones_a_and_b():
    assert problems(raw(region=""))["aws:region"] == "is required (e.g. 'us-west-2'), got an empty value"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("owner", "x" * 257, "expected a tag value of at most 256 characters, got 257"),
        ("costCenter", "a;b", "AWS refuses ';'"),
        ("owner", "Ops <ops@corp.example>", "AWS refuses '<' '>'"),
    ],
)
def test_tag_values_aws_would_refuse_at_create_time_are_refused_first(key, value, message):
    """AWS caps a tag value at 256 characters of letters, digits, spaces and `_ . : / = + - @`; every resource carries
    `owner` and `cost-center`, so a bad one fails the first create of `pulumi up` after others already exist."""
    config = raw()
    config[f"{NS}:{key}"] = value
    assert message in problems(config)[key]


def test_tag_values_aws_takes_are_accepted():
    config = raw()
    config[f"{NS}:owner"] = "Zoë Müller ml-platform@corp.example"
    config[f"{NS}:costCenter"] = "cc/42=ml+gpu:team_a-1.0"
    parsed = parse_config(config, project=NS, stack="test")
    assert parsed.tags["owner"] == "Zoë Müller ml-platform@corp.example"


def test_every_supported_kubernetes_version_has_all_addons_pinned():
    for version in versions.KUBERNETES_VERSIONS:
        assert set(versions.EKS_ADDONS[version]) == {
            "vpc-cni",
            "kube-proxy",
            "coredns",
            "aws-ebs-csi-driver",
            "eks-node-monitoring-agent",
            "eks-pod-identity-agent",
            "metrics-server",
        }
        for pin in versions.EKS_ADDONS[version].values():
            assert pin.version.startswith("v")
            assert "-eksbuild." in pin.version
            assert pin.source
        assert versions.EKS_ADDONS[version]["kube-proxy"].version.startswith(f"v{version}.")
    assert versions.DEFAULT_KUBERNETES_VERSION in versions.KUBERNETES_VERSIONS


@pytest.mark.stack
def test_pulumi_up_stops_with_the_problems_and_no_traceback_before_creating_anything():
    import pulumi

    from components.platform.entry import program
    from components.tools.preview import mocks

    config = raw(network={"cidr": "10.0.0.0/8"})
    with pytest.raises(pulumi.RunError, match=r"network\.cidr: expected a prefix length between /16 and /22") as caught:
        mocks.run(program, project=NS, stack="dev", region="us-west-2", config=config)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_node_pool_must_name_a_configured_node_class():
    found = problems(
        raw(
            karpenter={
                "nodeClasses": {"default": {"preset": "default"}},
                "nodePools": {"gpu": {"preset": "gpu-inference"}},
            }
        )
    )
    assert found["karpenter.nodePools.gpu.nodeClass"] == "names no node class in karpenter.nodeClasses (default)"


def test_node_pool_zones_must_be_stack_zones():
    found = problems(
        raw(karpenter={"nodePools": {"cpu": {"preset": "cpu-general", "zones": ["us-west-2a", "us-west-2d"]}}})
    )
    assert found["karpenter.nodePools.cpu.zones[1]"] == (
        "'us-west-2d' is not one of the stack's availability zones ['us-west-2a', 'us-west-2b']"
    )


def test_node_pool_mistakes_carry_the_pool_name_in_their_path():
    found = problems(raw(karpenter={"nodePools": {"gpu": {"preset": "gpu-inference", "taints": []}}}))
    assert "must carry the nvidia.com/gpu=true:NoSchedule taint" in found["karpenter.nodePools.gpu.taints"]
    found = problems(raw(karpenter={"nodePools": {"gpu": {"preset": "gpu-inference", "limit": {}}}}))
    assert found["karpenter.nodePools.gpu.limit"].endswith("did you mean 'limits'?")


def test_karpenter_defaults_give_a_cpu_pool_and_a_gpu_inference_pool():
    config = parse_config(raw(), project=NS, stack="dev")
    assert set(config.karpenter.node_pools) == {"cpu-general", "gpu-inference"}
    assert set(config.karpenter.node_classes) == {"default", "gpu", "gpu-training"}


def test_gpu_options_that_cannot_work_together_are_refused():
    found = problems(raw(gpu={"mig": {"strategy": "single"}, "timeSlicingReplicas": 4}))
    assert found["gpu.timeSlicingReplicas"] == "cannot be combined with mig; choose one way to share GPUs"


def test_gpu_pools_must_share_one_ami_family():
    found = problems(
        raw(
            karpenter={
                "nodeClasses": {"a": {"preset": "gpu"}, "b": {"preset": "gpu", "amiFamily": "bottlerocket"}},
                "nodePools": {
                    "one": {"preset": "gpu-inference", "nodeClass": "a"},
                    "two": {"preset": "gpu-inference", "nodeClass": "b"},
                },
            }
        )
    )
    assert (
        found["karpenter.nodeClasses"]
        == "NVIDIA pools use node classes of several AMI families ['al2023', 'bottlerocket']; use one"
    )


def test_mig_and_time_slicing_are_refused_on_bottlerocket():
    karpenter = {
        "nodeClasses": {"gpu": {"preset": "gpu", "amiFamily": "bottlerocket"}},
        "nodePools": {"g": {"preset": "gpu-inference"}},
    }
    found = problems(raw(karpenter=karpenter, gpu={"timeSlicingReplicas": 2}))
    assert found["gpu.timeSlicingReplicas"] == "is not available on Bottlerocket, which runs its own device plugin"


def test_gpu_config_without_gpu_pools_is_refused():
    karpenter = {"nodeClasses": {"default": {"preset": "default"}}, "nodePools": {"c": {"preset": "cpu-general"}}}
    found = problems(raw(karpenter=karpenter, gpu={"timeSlicingReplicas": 2}))
    assert found["gpu"] == "is configured but no NodePool launches NVIDIA GPUs; remove it or add a GPU pool"


def test_a_default_cluster_name_that_eks_would_refuse_asks_for_cluster_name():
    with pytest.raises(ConfigError) as caught:
        parse_config(raw("dev"), project="a-very-long-project-name-for-the-ml-platform", stack="dev")
    found = {issue.path: issue.message for issue in caught.value.issues}
    assert found["cluster.name"] == (
        "the default name 'a-very-long-project-name-for-the-ml-platform-dev' (project-stack) is not a lowercase "
        "DNS-style name of 2 to 40 characters; set cluster.name"
    )
