"""Cost of a stack from its config: the shipped dev and prod stacks checked against a hand computation, missing prices
reported (never counted as $0), EKS extended support by date, and `--live` prices (Stubber for the Price List API
and the spot price history)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal as D

import boto3
import pytest
from botocore.stub import Stubber

from components.tools.cost import PINNED, estimate, headline
from components.tools.cost import __main__ as cli
from components.tools.cost.live import live_table, on_demand_hourly, product_filters
from components.tools.cost.render import as_json, render_markdown, render_table
from components.tools.preflight.checks_account import nat_zones
from tests.preflight_world import REPO, fake_credentials, platform_config

ON = date(2026, 11, 1)
HOURS = D(730)


def _lines(result):
    return {line.item: (line.low, line.high) for line in result.baseline}


def _pools(result):
    return {
        p.pool: (p.cheapest.instance_type, p.cheapest.monthly, p.dearest.instance_type, p.dearest.monthly)
        for p in result.pools
    }


# ------------------------------------------------------------------------------------- the shipped stacks


def test_dev_costs_what_the_hand_computation_says():
    config = platform_config("dev")
    # The inputs the computation below rests on, as Pulumi.dev.yaml and the defaults set them:
    group = config.cluster.system_node_group
    assert (group.instance_types[0], group.desired_size, group.disk_size_gib) == ("m7i.xlarge", 3, 50)
    assert len(nat_zones(config.network)) == 1
    fsx_config = config.storage.fsx
    assert fsx_config is not None
    assert (fsx_config.deployment_type, fsx_config.storage_capacity_gib) == ("SCRATCH_2", 1200)
    assert [t.value for t in config.cluster.log_types] == ["api", "audit", "authenticator"]
    pool = config.karpenter.node_pools["gpu-inference"]
    assert (pool.limits["nvidia.com/gpu"], pool.capacity_types, pool.gpu_names) == (
        "4",
        ("spot",),
        ("t4", "a10g", "l4"),
    )

    result = estimate(config, PINNED, on=ON)

    control_plane = D("0.10") * 730  # 73.00
    nat = 1 * D("0.045") * 730  # 32.85
    nat_ipv4 = 1 * D("0.005") * 730  # 3.65
    system = 3 * D("0.2016") * 730  # 441.504
    root_volumes = 3 * 50 * D("0.08")  # 12.00
    fsx = 1200 * D("0.140")  # 168.00
    prometheus = 50 * D("0.08")  # 4.00
    logs_low, logs_high = (1 + 2 + D("0.5")) * D("0.50"), (10 + 30 + 5) * D("0.50")  # 1.75, 22.50
    kms = 1 * D("1.00")
    idle_low = control_plane + nat + nat_ipv4 + system + root_volumes + fsx + prometheus + logs_low + kms
    idle_high = idle_low - logs_low + logs_high
    assert (idle_low, idle_high) == (D("737.754"), D("758.504"))
    assert (result.idle_low, result.idle_high) == (idle_low, idle_high)
    assert _lines(result)["system node group (3 × m7i.xlarge, on-demand)"] == (system, system)

    # 4 GPUs filled with each allowed type, $/hour: 1-GPU sizes take 4 instances, the 4-GPU 12xlarge one
    fills = {
        "g4dn.xlarge": 4 * D("0.526"),
        "g4dn.2xlarge": 4 * D("0.752"),
        "g4dn.4xlarge": 4 * D("1.204"),
        "g4dn.8xlarge": 4 * D("2.176"),
        "g4dn.12xlarge": 1 * D("3.912"),
        "g5.xlarge": 4 * D("1.006"),
        "g5.2xlarge": 4 * D("1.212"),
        "g5.4xlarge": 4 * D("1.624"),
        "g5.8xlarge": 4 * D("2.448"),
        "g5.12xlarge": 1 * D("5.672"),
        "g6.xlarge": 4 * D("0.8048"),
        "g6.2xlarge": 4 * D("0.9776"),
        "g6.4xlarge": 4 * D("1.3232"),
        "g6.8xlarge": 4 * D("2.0144"),
        "g6.12xlarge": 1 * D("4.6016"),
    }
    cheapest, dearest = min(fills, key=fills.__getitem__), max(fills, key=fills.__getitem__)
    assert (cheapest, fills[cheapest] * 730, dearest, fills[dearest] * 730) == (
        "g4dn.xlarge",
        D("1535.92"),
        "g5.8xlarge",
        D("7148.16"),
    )
    # cpu-general stops at the first of its limits, 64 vCPUs and 256Gi, memory counted as Karpenter does (the type's
    # memory less 7.5 % for the hypervisor). At best 4 × r6g.2xlarge (8 vCPUs, 64 GiB: 59.2 GiB counted, 4 fit in
    # 256 GiB before the vCPUs run out; $0.4032/h); at worst 16 × m8ine.xlarge (4 vCPUs, 16 GiB: the vCPUs bind at 16,
    # memory would allow 17; $0.4177/h). By vCPUs alone the dearest would be 16 × r8idn.xlarge ($5,477), of which
    # only 8 fit in 256 GiB (32 GiB each, 29.6 counted).
    cpu = ("r6g.2xlarge", 4 * D("0.4032") * 730, "m8ine.xlarge", 16 * D("0.4177") * 730)
    assert _pools(result) == {
        "cpu-general": cpu,
        "gpu-inference": ("g4dn.xlarge", D("1535.92"), "g5.8xlarge", D("7148.16")),
    }
    assert result.ceiling == idle_high + D("7148.16") + cpu[3] == D("12785.4000")
    assert result.missing == ()


def test_prod_costs_what_the_hand_computation_says():
    config = platform_config("prod")
    group = config.cluster.system_node_group
    assert (group.instance_types[0], group.desired_size, group.disk_size_gib) == ("m7i.xlarge", 3, 50)
    assert len(nat_zones(config.network)) == 3
    fsx = config.storage.fsx
    assert fsx is not None
    assert (fsx.deployment_type, fsx.per_unit_storage_throughput, fsx.storage_capacity_gib) == (
        "PERSISTENT_2",
        250,
        4800,
    )
    assert len(config.cluster.log_types) == 5
    assert {name: p.limits.get("nvidia.com/gpu") for name, p in config.karpenter.node_pools.items()} == {
        "cpu-general": None,
        "inference-a10g-spot": "32",
        "inference-t4-spot": "16",
        "inference-a10g-on-demand": "16",
        "training": "32",
    }

    result = estimate(config, PINNED, on=ON)

    idle_low = (
        D("0.10") * 730  # control plane: 73.00
        + 3 * D("0.045") * 730  # NAT gateways: 98.55
        + 3 * D("0.005") * 730  # their public IPv4 addresses: 10.95
        + 3 * D("0.2016") * 730  # system nodes: 441.504
        + 3 * 50 * D("0.08")  # their root volumes: 12.00
        + 4800 * D("0.210")  # FSx PERSISTENT_2 at 250 MB/s/TiB: 1008.00
        + 100 * D("0.08")  # Prometheus (observability.storageGib 100): 8.00
        + (1 + 2 + D("0.5") + 1 + D("0.5")) * D("0.50")  # logs, low: 2.50
        + 2 * D("1.00")  # KMS keys (secrets, buckets)
    )
    idle_high = idle_low - D("2.50") + (10 + 30 + 5 + 10 + 5) * D("0.50")  # logs, high: 30.00
    assert (result.idle_low, result.idle_high) == (idle_low, idle_high) == (D("1656.504"), D("1684.004"))

    expected = {
        # 16 GPUs: 16 × g5.xlarge .. 16 × g5.8xlarge (4 × g5.12xlarge at $22.688/h lies between)
        "inference-a10g-on-demand": ("g5.xlarge", 16 * D("1.006") * 730, "g5.8xlarge", 16 * D("2.448") * 730),
        "inference-a10g-spot": ("g5.xlarge", 32 * D("1.006") * 730, "g5.8xlarge", 32 * D("2.448") * 730),
        "inference-t4-spot": ("g4dn.xlarge", 16 * D("0.526") * 730, "g4dn.8xlarge", 16 * D("2.176") * 730),
        # 32 GPUs: 4 × p4d.24xlarge at the prices after AWS's June 2025 cut .. 32 × p5.4xlarge (1 H100, $6.88/h),
        # which costs what 4 × p5.48xlarge (8 H100, $55.04/h) does
        "training": ("p4d.24xlarge", 4 * D("21.957642") * 730, "p5.4xlarge", 32 * D("6.88") * 730),
        # 1000 vCPUs and 4000Gi: at best 2 × r6a.48xlarge (1536 GiB, 1420.8 counted: memory binds at 2, $10.8864/h),
        # at worst 250 × m8ine.xlarge (the vCPUs bind: 14.8 GiB counted each would allow 270)
        "cpu-general": ("r6a.48xlarge", 2 * D("10.8864") * 730, "m8ine.xlarge", 250 * D("0.4177") * 730),
    }
    assert 32 * D("6.88") == 4 * D("55.04")
    assert _pools(result) == expected
    assert (expected["training"][1], expected["training"][3]) == (D("64116.31464"), D("160716.80"))
    dearest = sum(pool[3] for pool in expected.values())
    assert result.ceiling == idle_high + dearest == D("349824.654")
    assert result.missing == ()


def test_the_preview_line_names_idle_and_ceiling():
    assert (
        headline(estimate(platform_config("dev"), PINNED, on=ON))
        == "about $759/month idle; up to $12,785/month with every pool at its limit"
    )
    assert headline(estimate(platform_config("prod"), PINNED, on=ON)) == (
        "about $1,684/month idle; up to $349,825/month with every pool at its limit"
    )


# ---------------------------------------------------------------------------------------- missing prices


def _without(*instance_types):
    prices = {
        region: {t: p for t, p in table.items() if t not in instance_types}
        for region, table in PINNED.instances.items()
    }
    return replace(PINNED, instances=prices)


def test_an_instance_type_missing_from_the_table_is_reported_and_left_out_not_priced_at_zero():
    result = estimate(platform_config("dev"), _without("g5.8xlarge", "m7i.xlarge"), on=ON)
    assert result.missing == ("us-west-2 m7i.xlarge on-demand", "us-west-2 g5.8xlarge on-demand")
    assert _lines(result)["system node group (3 × m7i.xlarge, on-demand)"] == (None, None)
    # the next dearest fill: 4 × g4dn.8xlarge at $2.176/h
    assert _pools(result)["gpu-inference"][2:] == ("g4dn.8xlarge", 4 * D("2.176") * 730)
    assert result.idle_low == D("737.754") - 3 * D("0.2016") * 730


def test_a_region_missing_from_the_table_has_no_price_at_all():
    config = platform_config("dev", {"aws:region": "eu-west-1", "network": {"cidr": "10.20.0.0/16"}})
    result = estimate(config, PINNED, on=ON)
    assert result.idle_high is None
    assert result.ceiling is None
    assert all(line.low is None for line in result.baseline)
    assert result.missing[0].startswith("region eu-west-1: EKS, NAT, EBS, FSx, log and KMS rates unknown")
    assert "--refresh --region eu-west-1" in result.missing[1]
    assert headline(result).startswith("cost unknown: region eu-west-1")
    # every pool is unknown too, not $0, and not "no type fits": the table has no instance prices there
    assert result.gpu_ceiling is None
    assert all(p.unpriced == ("every type (no instance prices for eu-west-1)",) for p in result.pools)
    assert not [note for note in result.notes if "fits within" in note]
    table = render_table(result)
    assert "all pools at their limits" in table
    assert "$0.00" not in table


# ------------------------------------------------------------------------------------ what else decides it


def test_a_kubernetes_version_past_standard_support_is_billed_at_the_extended_rate():
    config = platform_config(
        "dev",
        {
            "cluster": {"kubernetesVersion": "1.34", "endpoint": {"public": True, "publicCidrs": ["203.0.113.0/24"]}},
            "kubeflow": {"enabled": False},  # it needs 1.35
        },
    )
    assert _lines(estimate(config, PINNED, on=date(2026, 12, 2)))["EKS control plane (1.34, standard support)"] == (
        D("73.00"),
        D("73.00"),
    )
    extended = _lines(estimate(config, PINNED, on=date(2026, 12, 3)))["EKS control plane (1.34, extended support)"]
    assert extended == (D("0.60") * 730, D("0.60") * 730) == (D("438.00"), D("438.00"))


def test_types_with_more_gpus_than_the_limit_are_never_launched_so_never_priced():
    config = platform_config(
        "dev",
        {
            "kubeflow": {"enabled": False},  # its team's GPU quota needs the stack's GPU pools
            "karpenter": {
                "nodeClasses": {"gpu": {"preset": "gpu"}},
                "nodePools": {
                    "g5": {
                        "preset": "gpu-inference-a10g-on-demand",
                        "instanceSizes": ["xlarge", "12xlarge", "48xlarge"],
                        "limits": {"nvidia.com/gpu": "3"},
                    }
                },
            },
        },
    )
    (pool,) = estimate(config, PINNED, on=ON).pools
    assert pool.over_limit == ("g5.12xlarge", "g5.48xlarge")  # 4 and 8 GPUs
    assert pool.cheapest is not None
    assert pool.dearest is not None
    assert (pool.cheapest.instance_type, pool.dearest.instance_type, pool.dearest.instances) == (
        "g5.xlarge",
        "g5.xlarge",
        3,
    )


def test_families_without_device_facts_are_reported_not_dropped_and_added_facts_are_priced():
    gpu_pool = {"preset": "gpu-training", "gpuNames": [], "limits": {"nvidia.com/gpu": "16"}}
    config = platform_config(
        "dev",
        {
            "kubeflow": {"enabled": False},  # its team's GPU quota needs the stack's GPU pools
            "karpenter": {
                "acceleratorFamilies": {"p9": {"gpuName": "x100", "memoryGib": 192, "devices": {"48xlarge": 8}}},
                "nodeClasses": {"gpu-training": {"preset": "gpu-training"}},
                "nodePools": {
                    # p6-b300 is a family EC2 offers, but the facts table does not say how many GPUs it has.
                    "b300": {**gpu_pool, "instanceFamilies": ["p5", "p6-b300"]},
                    "added": {**gpu_pool, "instanceFamilies": ["p9"]},
                },
            },
        },
    )
    result = estimate(config, PINNED, on=ON)
    pools = {pool.pool: pool for pool in result.pools}
    assert pools["b300"].unpriced == ("p6-b300 (no device facts)",)
    b300_dearest = pools["b300"].dearest
    assert b300_dearest is not None
    assert b300_dearest.instance_type.startswith("p5.")  # priced from the family it has facts for
    # The added family is known and fits, but the table has no price for it: reported as such, not as no fit.
    assert pools["added"].unpriced == ("p9.48xlarge",)
    assert "added: no allowed instance type fits within its limit of 16 nvidia.com/gpu" not in result.notes
    assert {
        (
            "b300: devices per instance of p6-b300 (components/instances/accelerated_families.yaml or "
            "karpenter.acceleratorFamilies)"
        ),
        "us-west-2 p9.48xlarge on-demand",
    } <= set(result.missing)


def test_an_existing_vpc_brings_no_nat_gateway_and_a_cpu_pool_no_gpu_ceiling():
    config = platform_config(
        "dev",
        {
            "network": {
                "availabilityZones": ["us-west-2a", "us-west-2b"],
                "existing": {
                    "vpcId": "vpc-0123456789abcdef0",
                    "privateSubnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
                },
            }
        },
    )
    result = estimate(config, PINNED, on=ON)
    assert not [item for item in _lines(result) if "NAT" in item or "S3 gateway" in item]
    assert [p.pool for p in result.pools] == ["cpu-general", "gpu-inference"]


def test_the_estimate_renders_as_a_table_markdown_and_json():
    result = estimate(platform_config("prod"), PINNED, on=ON)
    table = render_table(result)
    assert "Karpenter's generated price table (aws/karpenter-provider-aws v1.14.1) of 2026-07-06" in table
    assert (
        "training: 32 GPUs, on-demand; cheapest 4 × p4d.24xlarge $64,116.31; dearest 32 × p5.4xlarge $160,716.80"
        in table
    )
    assert "| **ceiling** (idle + every pool at its limit) | **$349,824.65** | |" in render_markdown(result)
    document = as_json(result)
    assert document["idle"] == {"low": 1656.5, "high": 1684.0}
    assert document["ceiling"] == 349824.65
    assert document["prices"]["date"] == "2026-07-06"


def test_the_command_line_prints_json_and_exits_2_on_an_invalid_stack(capsys, tmp_path):
    assert cli.main(["--stack", "dev", "--project-dir", str(REPO), "--json", "--on", "2026-11-01"]) == 0
    assert json.loads(capsys.readouterr().out)["ceiling"] == 12785.4
    (tmp_path / "Pulumi.yaml").write_text("name: eks-ml-platform\n")
    assert cli.main(["--stack", "nope", "--project-dir", str(tmp_path)]) == 2


# ------------------------------------------------------------------------------------------------ --live


def _product(instance_type, usd, operation="RunInstances"):
    return json.dumps(
        {
            "product": {
                "attributes": {"instanceType": instance_type, "regionCode": "us-west-2", "operation": operation}
            },
            "terms": {
                "OnDemand": {
                    "SKU.TERM": {"priceDimensions": {"SKU.TERM.DIM": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}}
                }
            },
        }
    )


def test_the_on_demand_price_is_read_from_the_run_instances_product():
    listing = [_product("g5.xlarge", "1.1000000000", "RunInstances:0010"), _product("g5.xlarge", "0.9000000000")]
    assert on_demand_hourly(listing) == D("0.9")
    assert on_demand_hourly([_product("g5.xlarge", "0.0000000000")]) is None


def test_live_prices_replace_the_pinned_instance_prices_and_add_spot(monkeypatch):
    fake_credentials(monkeypatch)
    config = platform_config(
        "dev",
        {
            "kubeflow": {"enabled": False},  # its team's GPU quota needs the stack's GPU pools
            "cluster": {
                "endpoint": {"public": True, "publicCidrs": ["203.0.113.0/24"]},
                "systemNodeGroup": {"instanceTypes": ["m7i.large"], "minSize": 3, "desiredSize": 3},
            },
            "karpenter": {
                "nodeClasses": {"gpu": {"preset": "gpu"}},
                "nodePools": {
                    "g5": {
                        "preset": "gpu-inference",
                        "gpuNames": ["a10g"],
                        "instanceSizes": ["xlarge", "2xlarge"],
                        "limits": {"nvidia.com/gpu": "2"},
                    }
                },
            },
        },
    )
    now = datetime(2026, 11, 1, tzinfo=UTC)
    pricing = boto3.client("pricing", region_name="us-east-1")
    ec2 = boto3.client("ec2", region_name="us-west-2")
    with Stubber(pricing) as prices, Stubber(ec2) as spot:
        for instance_type, usd in (("g5.2xlarge", "1.3000000000"), ("g5.xlarge", None), ("m7i.large", "0.1100000000")):
            prices.add_response(
                "get_products",
                {"PriceList": [_product(instance_type, usd)] if usd else [], "FormatVersion": "aws_v1"},
                {
                    "ServiceCode": "AmazonEC2",
                    "Filters": product_filters(instance_type, "us-west-2"),
                    "FormatVersion": "aws_v1",
                    "MaxResults": 10,
                },
            )
        history = [
            {
                "InstanceType": "g5.xlarge",
                "AvailabilityZone": "us-west-2a",
                "SpotPrice": "0.40",
                "ProductDescription": "Linux/UNIX",
            },
            {
                "InstanceType": "g5.xlarge",
                "AvailabilityZone": "us-west-2b",
                "SpotPrice": "0.45",
                "ProductDescription": "Linux/UNIX",
            },
            {
                "InstanceType": "g5.2xlarge",
                "AvailabilityZone": "us-west-2a",
                "SpotPrice": "0.50",
                "ProductDescription": "Linux/UNIX",
            },
        ]
        spot.add_response(
            "describe_spot_price_history",
            {"SpotPriceHistory": history},
            {
                "InstanceTypes": ["g5.2xlarge", "g5.xlarge"],
                "ProductDescriptions": ["Linux/UNIX"],
                "StartTime": now,
                "Filters": [{"Name": "availability-zone", "Values": ["us-west-2a", "us-west-2b"]}],
            },
        )
        table = live_table(PINNED, config, pricing=pricing, ec2=ec2, now=now)
        prices.assert_no_pending_responses()
        spot.assert_no_pending_responses()

    result = estimate(config, table, on=ON)
    assert result.price_source.startswith("Price List API and spot price history of 2026-11-01")
    assert _lines(result)["system node group (3 × m7i.large, on-demand)"] == (3 * D("0.11") * 730,) * 2
    (pool,) = result.pools
    # g5.xlarge has no live price: reported, and g5.2xlarge alone fills the limit
    assert result.missing == ("us-west-2 g5.xlarge on-demand",)
    assert pool.dearest is not None
    assert pool.spot_cheapest is not None
    assert pool.spot_dearest is not None
    assert (pool.dearest.instance_type, pool.dearest.monthly) == ("g5.2xlarge", 2 * D("1.3") * 730)
    # spot: the highest price over the stack's AZs, a ceiling
    assert (pool.spot_cheapest.instance_type, pool.spot_cheapest.hourly) == ("g5.xlarge", D("0.45"))
    assert (pool.spot_dearest.instance_type, pool.spot_dearest.monthly) == ("g5.2xlarge", 2 * D("0.50") * 730)


def test_live_without_credentials_exits_1(no_aws_credentials, capsys):
    assert cli.main(["--stack", "dev", "--project-dir", str(REPO), "--live"]) == 1
    assert "could not read live prices" in capsys.readouterr().err


def test_a_pool_capped_only_on_neuroncores_is_priced_by_cores():
    config = platform_config(
        "dev",
        {
            "kubeflow": {"enabled": False},
            "kueue": {"enabled": False},  # the team stacks' GPU reserve needs a GPU pool
            "karpenter": {
                "nodeClasses": {"gpu": {"preset": "gpu"}},
                "nodePools": {"neuron": {"preset": "neuron", "limits": {"aws.amazon.com/neuroncore": "32"}}},
            },
        },
    )
    # the preset also caps 16 devices; with the cores alone (as a user may write it) the pool is still priced
    spec = config.karpenter.node_pools["neuron"]
    only_cores = spec.model_copy(update={"limits": {"aws.amazon.com/neuroncore": "32"}})
    config = config.model_copy(
        update={"karpenter": config.karpenter.model_copy(update={"node_pools": {"neuron": only_cores}})}
    )
    (pool,) = estimate(config, PINNED, on=ON).pools
    assert (pool.resource, pool.limit) == ("aws.amazon.com/neuroncore", 32)
    assert pool.cheapest is not None
    assert pool.dearest is not None
    # 2 NeuronCores per Inferentia2 or Trainium device, $/hour for 32 cores: 16 × inf2.xlarge (2) 12.1312;
    # 2 × inf2.24xlarge (12) 12.98126; 1 × inf2.48xlarge (24) 12.98127; 16 × trn1.2xlarge (2) 21.5;
    # 1 × trn1.32xlarge (32) 21.5; 16 × inf2.8xlarge (2) 31.48576
    assert (pool.cheapest.instance_type, pool.cheapest.instances) == ("inf2.xlarge", 16)
    assert pool.cheapest.monthly == 16 * D("0.7582") * 730
    assert (pool.dearest.instance_type, pool.dearest.instances) == ("inf2.8xlarge", 16)
    assert pool.dearest.monthly == 16 * D("1.96786") * 730


CHARTS = REPO.parent / "shared" / "reference" / "charts"


@pytest.mark.subprocess  # the model renders the charts with Helm (cached after the first render)
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
def test_dev_idle_counts_the_platforms_own_pods_and_volumes(dev):
    from components.tools.preview import platform_model

    platform, _ = platform_model(dev, CHARTS)
    result = estimate(platform_config("dev"), PINNED, on=ON, platform=platform)
    # The always-on pods only cpu-general can run (Kubeflow, Istio, the Trainer's controllers), as their rendered
    # requests say, in vCPU: istio-ingressgateway 0.1, istiod 0.5, ml-pipeline 0.25, persistenceagent 0.12, ui 0.01,
    # visualizationserver 0.03, mysql 0.1, pvcviewer 2 × 0.015, seaweedfs 0.032, jobset 2 × 0.5, tensorboard
    # controller 0.015, workflow-controller 0.1, metacontroller 0.1; every container upstream gives no request asks
    # the floor of components/kubeflow/hardening.py (10m): 24 of them on this pool.
    cpu = sum(
        (
            D(x)
            for x in (
                "0.1",
                "0.5",
                "0.25",
                "0.12",
                "0.01",
                "0.03",
                "0.1",
                "0.03",
                "0.032",
                "1.0",
                "0.015",
                "0.1",
                "0.1",
            )
        ),
        D(0),
    )
    cpu += 24 * D("0.01")
    assert cpu == D("2.627")
    (line,) = [item for item in _lines(result) if item.startswith("platform pods on `cpu-general`")]
    # 37 pods: the profile controller and KFAM run two replicas (components/kubeflow/resilience.py)
    assert line.startswith("platform pods on `cpu-general` (37 pods asking 2.627 vCPU, 7.4 GiB;")
    # m6a.xlarge (4 vCPU, 16 GiB, $0.1728/h) holds them beside the DaemonSets of those nodes (istio-cni, the FSx CSI
    # node, NFD's worker); two m6a.large cost the same, and no amd64 type costs less (Kubeflow's images are amd64).
    assert line.endswith("1 × m6a.xlarge, on-demand)")
    nodes = 1 * D("0.1728") * 730  # 126.144
    volumes = (20 + 20) * D("0.08")  # kubeflow/mysql-pv-claim and seaweedfs-pvc, gp3: 3.20
    assert _lines(result)["platform volumes (2, 40 GiB gp3)"] == (volumes, volumes)
    assert (result.idle_low, result.idle_high) == (D("737.754") + nodes + volumes, D("758.504") + nodes + volumes)
    assert result.idle_high == D("887.848")
