"""The pinned EC2 prices: generated from Karpenter's dated table (figures compared with the source file's), every type
a preset can launch priced, `--refresh` from the Price List API (a stub client), and the CPU types sized by name
against EC2's own description of them (moto's catalog)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal as D
from pathlib import Path

import boto3
from botocore.stub import Stubber
from moto import mock_aws

from components.karpenter.presets import NODE_POOL_PRESETS
from components.tools.cost import PINNED
from components.tools.cost.cpu_types import cpu_catalog, cpu_type
from components.tools.cost.live import PRODUCT_FILTERS
from components.tools.cost.prices import __main__ as prices_cli
from components.tools.cost.prices import instance_tables
from components.tools.cost.prices.generate import from_karpenter, from_price_list
from components.tools.cost.prices.karpenter import parse
from components.tools.preflight.selection import accelerated_shapes, select, shape_from_ec2
from tests.preflight_world import fake_credentials, platform_config

SOURCE = Path(__file__).parent / "data" / "karpenter_pricing_v1.14.1_excerpt.go"
#: Families moto's catalog (EC2's, as moto 5.2.5 ships it) offers in us-west-2 and us-east-1 that Karpenter's table
#: of 2026-07-06 does not price yet: cpu-general may launch them, and the estimate leaves them out. A refresh
#: (`--refresh`) prices them; then this set must shrink, and the test says so.
NEWER_THAN_THE_TABLE = frozenset({"r9g", "r9gd"})


def test_the_pinned_p_g_inf_and_trn_prices_are_the_sources_figures():
    source = parse(SOURCE.read_text())
    assert source.generated_at.isoformat() == "2026-07-06T14:20:29+00:00"
    figures = source.regions["us-east-1"]
    assert len(figures) > 60
    for region in ("us-east-1", "us-west-2"):
        for instance_type, price in figures.items():
            assert PINNED.instance_hour(region, instance_type) == price, (region, instance_type)
    # the June 2025 cut, and types newer than the old table
    assert (figures["p5.48xlarge"], figures["p4d.24xlarge"]) == (D("55.04"), D("21.957642"))
    assert {"p5.4xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "gr6.4xlarge"} <= set(figures)


def test_the_generator_writes_the_shipped_table_from_the_source(tmp_path):
    out = tmp_path / "instance_prices.json"
    assert prices_cli.main(["--karpenter", str(SOURCE), "--ref", "v1.14.1", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["date"] == "2026-07-06"
    assert document["sourceDetail"]["ref"] == "v1.14.1"
    assert document["sameAs"]["us-west-2"]["region"] == "us-east-1"
    assert instance_tables(document)["us-west-2"]["p5.48xlarge"] == D("55.04")
    assert prices_cli.main(["--karpenter", str(tmp_path / "missing.go"), "--ref", "v1.14.1", "--out", str(out)]) == 1


def _preset_pools():
    pools = {name: {"preset": name} for name in NODE_POOL_PRESETS}
    overrides = {
        "kubeflow": {"enabled": False},
        "karpenter": {
            "nodeClasses": {name: {"preset": name} for name in ("default", "gpu", "gpu-training")},
            "nodePools": pools,
        },
    }
    return platform_config("prod", overrides).karpenter.node_pools


def test_every_type_a_preset_can_launch_has_a_price(monkeypatch):
    fake_credentials(monkeypatch)
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-west-2")
        shapes = [
            shape_from_ec2(info)
            for page in ec2.get_paginator("describe_instance_types").paginate()
            for info in page["InstanceTypes"]
        ]
    catalog = {s.instance_type: s for s in [*shapes, *accelerated_shapes()]}
    unpriced = {}
    for name, pool in _preset_pools().items():
        allowed = select(pool).allowed(catalog.values())
        assert allowed, name
        for region in ("us-west-2", "us-east-1"):
            missing = {s.family for s in allowed if PINNED.instance_hour(region, s.instance_type) is None}
            if missing:
                unpriced[(name, region)] = missing
    assert unpriced == {
        ("cpu-general", "us-west-2"): NEWER_THAN_THE_TABLE,
        ("cpu-general", "us-east-1"): NEWER_THAN_THE_TABLE,
    }


def test_cpu_types_are_sized_as_ec2_describes_them(monkeypatch):
    fake_credentials(monkeypatch)
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        infos = [i for page in ec2.get_paginator("describe_instance_types").paginate() for i in page["InstanceTypes"]]
    sized = 0
    for info in infos:
        found = cpu_type(info["InstanceType"])
        if found is None:
            continue
        sized += 1
        shape = shape_from_ec2(info)
        assert (found.vcpus, found.shape.architecture) == (shape.vcpus, shape.architecture), info["InstanceType"]
        assert found.memory_gib * 1024 == info["MemoryInfo"]["SizeInMiB"], info["InstanceType"]
    assert sized > 500
    assert cpu_type("c5n.large") is None  # older generations do not follow the naming rules
    assert [t.shape.instance_type for t in cpu_catalog(["m7g.xlarge", "m7i.metal-24xl", "g5.xlarge"])] == ["m7g.xlarge"]


def _product(instance_type, usd):
    return json.dumps(
        {
            "product": {"attributes": {"instanceType": instance_type, "operation": "RunInstances"}},
            "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}}}},
        }
    )


def test_refresh_reads_every_page_of_every_region_from_the_price_list_api(monkeypatch):
    fake_credentials(monkeypatch)
    pricing = boto3.client("pricing", region_name="us-east-1")
    with Stubber(pricing) as stub:
        for region, pages in (
            ("eu-west-1", [[_product("m7i.large", "0.1050000000")], [_product("p5.48xlarge", "60.0000000000")]]),
            ("us-east-1", [[_product("m7i.large", "0.1008000000")]]),
        ):
            filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}] + [
                {"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in PRODUCT_FILTERS.items()
            ]
            for number, page in enumerate(pages):
                answer = {"PriceList": page, "FormatVersion": "aws_v1"}
                if number < len(pages) - 1:
                    answer["NextToken"] = f"page-{number + 1}"
                params = {"ServiceCode": "AmazonEC2", "Filters": filters, "FormatVersion": "aws_v1"}
                if number:
                    params["NextToken"] = f"page-{number}"
                stub.add_response("get_products", answer, params)
        document = from_price_list(pricing, ["us-east-1", "eu-west-1"], date(2026, 11, 1))
        stub.assert_no_pending_responses()
    assert document["date"] == "2026-11-01"
    assert document["regions"] == {
        "eu-west-1": {"m7i.large": "0.1050000000", "p5.48xlarge": "60.0000000000"},
        "us-east-1": {"m7i.large": "0.1008000000"},
    }
    assert instance_tables(document)["eu-west-1"]["p5.48xlarge"] == D(60)
    assert from_karpenter(parse(SOURCE.read_text()), "v1.14.1")["regions"]["us-east-1"]["p5.4xlarge"] == "6.88"


def test_refresh_without_credentials_exits_1(no_aws_credentials, capsys, tmp_path):
    assert prices_cli.main(["--refresh", "--out", str(tmp_path / "out.json")]) == 1
    assert "could not read the Price List API" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()
