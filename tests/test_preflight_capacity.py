"""Preflight capacity checks: the stack's AZs, what the system node group and each NodePool can launch there
(moto's us-west-2 catalog and offerings), and the EC2 vCPU quotas at the pools' limits (Stubber: moto serves no EC2
quota codes)."""

from __future__ import annotations

import pytest

from components.cluster.config import SystemNodeGroup
from components.karpenter.specs import NodePoolSpec
from components.tools.preflight import reads
from components.tools.preflight.checks_capacity import (
    as_ec2_filters,
    describe_filters,
    pool_demands,
    pool_offering_check,
    system_group_check,
    system_group_demands,
    vcpu_quota_check,
    zones_check,
)
from components.tools.preflight.quotas import VCPU_CLASSES, vcpu_class
from components.tools.preflight.results import Status
from components.tools.preflight.runner import capacity_checks
from components.tools.preflight.selection import InstanceShape, accelerated_shapes, select
from tests import preflight_world
from tests.preflight_world import (
    platform_config,
    with_quotas,
)

# The moto world's fixtures, requested by name below: bound here, not imported, since every parameter of the
# same name would shadow an import.
credentials = preflight_world.credentials
clients = preflight_world.clients
account = preflight_world.account

STANDARD, G_VT, P = (next(c for c in VCPU_CLASSES if c.key == key) for key in ("standard", "g-vt", "p"))


def _pool_result(clients, config, name):
    pool = config.karpenter.node_pools[name]
    selection = select(pool)
    zones = selection.zones(config.network.availability_zones)
    allowed = selection.allowed(reads.instance_shapes(clients.ec2, as_ec2_filters(describe_filters(selection))))
    offered = reads.offerings(clients.ec2, config.network.availability_zones)
    return pool_offering_check(name, zones, allowed, offered, [])


# ------------------------------------------------------------------------------------------------ zones


def test_stack_zones_that_exist_pass_with_their_zone_ids(clients):
    result = zones_check(["us-west-2a", "us-west-2b"], reads.availability_zones(clients.ec2))
    assert result.status is Status.PASS
    assert result.evidence == "stack AZs: us-west-2a (usw2-az2, available), us-west-2b (usw2-az1, available)"


def test_a_zone_the_region_does_not_have_fails_and_lists_the_real_ones(clients):
    result = zones_check(["us-west-2a", "us-west-2z"], reads.availability_zones(clients.ec2))
    assert result.status is Status.FAIL
    assert "us-west-2z does not exist" in result.evidence
    assert "us-west-2a, us-west-2b, us-west-2c, us-west-2d" in result.fix


# --------------------------------------------------------------------------------------- system node group


def _system(clients, types, zones):
    config = platform_config(
        "dev",
        {
            "cluster": {
                "endpoint": {"public": True, "publicCidrs": ["203.0.113.0/24"]},
                "systemNodeGroup": {"instanceTypes": types},
            },
            # dev's controllers with Kueue's do not fit two 2-vCPU nodes, and Kueue is not what is checked here
            "kueue": {"enabled": False},
        },
    )
    return system_group_check(config.cluster.system_node_group, zones, reads.offerings(clients.ec2, zones))


def test_system_node_group_types_offered_in_every_zone_pass(clients):
    assert _system(clients, ["m7i.xlarge", "m6i.xlarge"], ["us-west-2a", "us-west-2b"]).status is Status.PASS


def test_a_system_type_missing_from_one_zone_warns_when_another_type_covers_it(clients):
    # moto's us-west-2 offers p5e.48xlarge in us-west-2c only.
    result = _system(clients, ["m7i.xlarge", "p5e.48xlarge"], ["us-west-2a", "us-west-2c"])
    assert result.status is Status.WARN
    assert "p5e.48xlarge" in result.fix


def test_a_zone_without_any_system_type_fails(clients):
    result = _system(clients, ["p5e.48xlarge"], ["us-west-2a", "us-west-2c"])
    assert result.status is Status.FAIL
    assert "us-west-2a: none" in result.evidence


# -------------------------------------------------------------------------------------------- node pools


@pytest.mark.slow  # moto answers a pool's describe_instance_types with its whole catalogue (seconds)
def test_a_gpu_pool_offered_in_every_zone_passes_with_its_types(clients):
    result = _pool_result(clients, platform_config("dev"), "gpu-inference")
    assert result.status is Status.PASS
    # t4, a10g, l4 at xlarge..12xlarge: g4dn, g5, g6 (five sizes each) and the L4 types of g6f, gr6 and gr6f
    assert result.evidence.startswith("21 instance types allowed (g4dn.xlarge .. gr6f.4xlarge)")


@pytest.mark.slow
def test_a_pool_pinned_to_one_zone_passes_and_says_so(clients):
    result = _pool_result(clients, platform_config("prod"), "training")
    assert result.status is Status.PASS
    assert "us-west-2a 4" in result.evidence
    assert "pinned" in result.evidence


def _neuron(zones, families=("trn1",)):
    return platform_config(
        "dev",
        {
            "network": {"cidr": "10.20.0.0/16", "availabilityZones": zones},
            "karpenter": {
                "nodeClasses": {"gpu": {"preset": "gpu"}},
                "nodePools": {"neuron": {"preset": "neuron", "instanceFamilies": list(families)}},
            },
            "storage": {"buckets": {"datasets": {}}},
            "kubeflow": {"enabled": False},  # its team's GPU quota needs a GPU pool
            "kueue": {"enabled": False},  # and so does the team stacks' GPU reserve
        },
    )


def test_a_pool_offered_in_one_of_its_zones_only_warns(clients):
    # moto's us-west-2 offers trn1 in us-west-2b and us-west-2d only.
    result = _pool_result(clients, _neuron(["us-west-2a", "us-west-2b"]), "neuron")
    assert result.status is Status.WARN
    assert "us-west-2a 0, us-west-2b 2" in result.evidence


def test_a_pool_offered_in_none_of_its_zones_fails(clients):
    result = _pool_result(clients, _neuron(["us-west-2a", "us-west-2c"]), "neuron")
    assert result.status is Status.FAIL
    assert "us-west-2a 0, us-west-2c 0" in result.evidence


@pytest.mark.slow
def test_a_pool_whose_requirements_match_no_instance_type_fails(clients):
    config = platform_config(
        "dev",
        {
            "karpenter": {
                "nodeClasses": {"gpu": {"preset": "gpu"}},
                "nodePools": {
                    "gpu-inference": {"preset": "gpu-inference", "gpuNames": ["a10g"], "instanceSizes": ["metal"]}
                },
            }
        },
    )
    result = _pool_result(clients, config, "gpu-inference")
    assert result.status is Status.FAIL
    assert "no instance type" in result.evidence


def test_pool_filters_narrow_the_catalog_by_family_and_architecture():
    pool = NodePoolSpec.model_validate({"preset": "gpu-inference-t4-spot"})
    assert as_ec2_filters(describe_filters(select(pool))) == [
        {"Name": "processor-info.supported-architecture", "Values": ["x86_64"]},
        {"Name": "instance-type", "Values": ["g4dn.*"]},
    ]


# ------------------------------------------------------------------------------------------ vCPU demands


def _shape(instance_type, vcpus, gpus=0):
    return InstanceShape(instance_type, "amd64", vcpus=vcpus, gpu_name="a100" if gpus else None, gpu_count=gpus)


def test_a_gpu_pool_needs_its_limit_over_gpus_per_instance_times_vcpus_for_its_smallest_and_largest_fill():
    pool = NodePoolSpec.model_validate({"preset": "gpu-training", "limits": {"nvidia.com/gpu": "32"}})  # on-demand only
    shapes = [_shape("p4d.24xlarge", 96, 8), _shape("p5.4xlarge", 16, 1), _shape("p5.48xlarge", 192, 8)]
    (demand,) = pool_demands("training", pool, select(pool), shapes)
    assert demand.quota == P.on_demand
    assert demand.sole
    # 32 ÷ 8 × 96 = 384 (p4d.24xlarge); 32 ÷ 1 × 16 = 512 (p5.4xlarge); 32 ÷ 8 × 192 = 768 (p5.48xlarge)
    assert (demand.smallest, demand.largest) == (384, 768)
    assert (demand.smallest_by, demand.largest_by) == ("4 × p4d.24xlarge", "4 × p5.48xlarge")


def test_instance_types_with_more_gpus_than_the_limit_need_nothing():
    pool = NodePoolSpec.model_validate(
        {"preset": "gpu-inference", "capacityTypes": ["spot"], "limits": {"nvidia.com/gpu": "4"}}
    )
    shapes = [_shape("g5.xlarge", 4, 1), _shape("g5.48xlarge", 192, 8)]
    (demand,) = pool_demands("gpu-inference", pool, select(pool), shapes)
    assert demand.quota == G_VT.spot
    assert (demand.smallest, demand.largest) == (4 * 4, 4 * 4)


def test_a_pool_with_spot_and_on_demand_counts_against_both_quotas_but_can_fall_back():
    pool = NodePoolSpec.model_validate({"preset": "cpu-general", "limits": {"cpu": "64"}})  # spot and on-demand
    demands = pool_demands("cpu-general", pool, select(pool), [_shape("m7i.large", 2)])
    assert {(d.quota, d.smallest, d.sole) for d in demands} == {
        (STANDARD.on_demand, 64, False),
        (STANDARD.spot, 64, False),
    }


def test_the_system_node_group_needs_max_size_times_vcpus_on_demand():
    group = SystemNodeGroup(instance_types=("m7i.xlarge", "m6i.xlarge"), min_size=3, max_size=6, desired_size=3)
    (demand,) = system_group_demands(group, [_shape("m7i.xlarge", 4), _shape("m6i.xlarge", 4)])
    assert (demand.quota, demand.smallest, demand.largest) == (STANDARD.on_demand, 6 * 4, 6 * 4)


def test_instance_families_map_to_their_quota_class():
    def class_key(instance_type: str) -> str:
        found = vcpu_class(instance_type)
        assert found is not None, f"{instance_type} is in no quota class"
        return found.key

    assert [
        class_key(t)
        for t in (
            "m7i.large",
            "im4gn.large",
            "g6e.xlarge",
            "gr6.4xlarge",
            "p5en.48xlarge",
            "trn1n.32xlarge",
            "inf2.xlarge",
            "x2idn.16xlarge",
            "hpc7g.4xlarge",
        )
    ] == ["standard", "standard", "g-vt", "g-vt", "p", "trn", "inf", "x", "hpc"]


# -------------------------------------------------------------------------------------------- vCPU quotas


def _quota_results(clients, config, answers):
    clients, stubber = with_quotas(clients, answers)
    results = {r.name: r for r in capacity_checks(config, clients)}
    stubber.assert_no_pending_responses()
    return results


def _one_gpu_pool(capacity, limit):
    """A stack with a system node group of at most 3 four-vCPU nodes and one g5 pool."""
    return platform_config(
        "dev",
        {
            "cluster": {
                "endpoint": {"public": True, "publicCidrs": ["203.0.113.0/24"]},
                "systemNodeGroup": {
                    "instanceTypes": ["m7i.xlarge", "m6i.xlarge"],
                    "minSize": 2,
                    "maxSize": 3,
                    "desiredSize": 2,
                },
            },
            # dev's controllers with Kueue's do not fit two 2-vCPU nodes, and Kueue is not what is checked here
            "kueue": {"enabled": False},
            "karpenter": {
                "nodeClasses": {"gpu": {"preset": "gpu"}},
                "nodePools": {
                    "g5": {
                        "preset": "gpu-inference-a10g-on-demand",
                        "capacityTypes": [capacity],
                        "limits": {"nvidia.com/gpu": str(limit)},
                    }
                },
            },
        },
    )


def test_a_gpu_quota_below_the_smallest_fill_fails_with_the_increase_command(clients):
    # 8 GPUs of g5 on-demand: 8 × g5.xlarge = 32 vCPUs at the least; the system group needs 3 × 4 = 12
    results = _quota_results(clients, _one_gpu_pool("on-demand", 8), [(STANDARD.on_demand, 64), (G_VT.on_demand, 0)])
    gpu = results["quota/g-vt-on-demand"]
    assert gpu.status is Status.FAIL
    assert "= 0 vCPUs" in gpu.evidence
    assert "nodePools.g5 32-256 (8 × g5.xlarge .. 8 × g5.8xlarge)" in gpu.evidence
    assert "--quota-code L-DB2E81BA --desired-value 256 --region us-west-2" in gpu.fix
    assert results["quota/standard-on-demand"].status is Status.PASS


def test_a_gpu_quota_between_the_smallest_and_largest_fill_warns(clients):
    results = _quota_results(clients, _one_gpu_pool("on-demand", 8), [(STANDARD.on_demand, 64), (G_VT.on_demand, 64)])
    assert results["quota/g-vt-on-demand"].status is Status.WARN


def test_a_gpu_quota_covering_the_largest_fill_passes(clients):
    results = _quota_results(clients, _one_gpu_pool("spot", 8), [(STANDARD.on_demand, 64), (G_VT.spot, 256)])
    assert results["quota/g-vt-spot"].status is Status.PASS


def test_the_system_node_group_fails_a_standard_quota_below_its_max_size(clients):
    results = _quota_results(clients, _one_gpu_pool("spot", 8), [(STANDARD.on_demand, 4), (G_VT.spot, 256)])
    result = results["quota/standard-on-demand"]
    assert result.status is Status.FAIL
    assert "system node group 12 (3 × m6i.xlarge)" in result.evidence


def test_a_quota_without_applied_or_default_value_warns(clients):
    results = _quota_results(clients, _one_gpu_pool("spot", 8), [(STANDARD.on_demand, 64), (G_VT.spot, None)])
    assert results["quota/g-vt-spot"].status is Status.WARN
    assert "not found" in results["quota/g-vt-spot"].evidence


def test_the_default_value_is_read_when_no_quota_was_ever_applied():
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("service-quotas", region_name="us-west-2")
    stubber = Stubber(client)
    params = {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"}
    stubber.add_client_error("get_service_quota", "NoSuchResourceException", expected_params=params)
    stubber.add_response("get_aws_default_service_quota", {"Quota": {"Value": 0.0}}, expected_params=params)
    with stubber:
        assert reads.quota_value(client, P.on_demand) == 0.0


def test_quota_checks_are_pure_over_the_demands():
    pool = NodePoolSpec.model_validate({"preset": "gpu-inference-a10g-spot", "limits": {"nvidia.com/gpu": "32"}})
    demands = pool_demands("inference-a10g-spot", pool, select(pool), [_shape("g5.xlarge", 4, 1)])
    assert G_VT.spot is not None
    assert vcpu_quota_check(G_VT.spot, 127, demands, "us-west-2").status is Status.FAIL  # 32 × 4 = 128
    assert vcpu_quota_check(G_VT.spot, 128, demands, "us-west-2").status is Status.PASS


# --------------------------------------------------------------------------------------------- selection


def _inference(requirements):
    return NodePoolSpec.model_validate({"preset": "gpu-inference-a10g-spot", "requirements": requirements})


def test_a_raw_requirement_narrows_what_the_pool_allows():
    pool = _inference([{"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["g5.8xlarge"]}])
    allowed = [s.instance_type for s in select(pool).allowed(accelerated_shapes())]
    assert allowed == ["g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.12xlarge"]


def test_a_requirement_on_a_label_the_catalog_lacks_is_reported_not_dropped():
    pool = _inference([{"key": "karpenter.k8s.aws/instance-memory", "operator": "Gt", "values": ["65536"]}])
    selection = select(pool)
    allowed = selection.allowed(accelerated_shapes())
    assert len(allowed) == 5  # kept: the memory of an instance is not known here
    assert selection.unevaluated(allowed[0]) == ["karpenter.k8s.aws/instance-memory Gt ['65536']"]
    result = pool_offering_check("a10g", ["us-west-2a"], allowed, {"g5.xlarge": frozenset({"us-west-2a"})}, ["x"])
    assert result.evidence.endswith("not evaluated here: x (the pool is pinned to this AZ)")


def test_cpu_pools_exclude_gpu_and_neuron_instances_as_their_rendered_requirements_do():
    pool = NodePoolSpec.model_validate({"preset": "cpu-general", "instanceCategories": [], "generationAbove": None})
    assert select(pool).allowed(accelerated_shapes()) == []
    fractional = InstanceShape("g6f.xlarge", "amd64", vcpus=4, gpu_name="l4", gpu_count=0)
    assert select(pool).allowed([fractional, _shape("m7i.large", 2)]) == [_shape("m7i.large", 2)]
