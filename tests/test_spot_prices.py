"""Spot prices of a range, as `--by-team` reads them: EC2's spot price history averaged over time and zones, against
hand-computed dollars, read page by page.

moto answers DescribeSpotPriceHistory with one fixed price and timestamp whatever the range and keeps no pages, so
the EC2 client here is botocore's Stubber with answers shaped as the EC2 API's (`SpotPriceHistory`, `NextToken`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import boto3
import pytest
from botocore.exceptions import NoCredentialsError
from botocore.stub import Stubber

from components.tools.cost.spot_history import HistoryEntry, average_prices, gpus_of, read_history, spot_prices
from components.tools.cost.teams import (
    CEILING,
    NOT_PRICED,
    ON_DEMAND,
    SPOT,
    UNKNOWN,
    SpotPriceError,
    SpotPricing,
    TeamBill,
    UsageLine,
    read_spot_pricing,
    with_spot_prices,
)

START = datetime(2026, 6, 1, tzinfo=UTC)
END = START + timedelta(days=4)
DAY = timedelta(days=1)


def _entry(instance_type, zone, at, usd):
    return HistoryEntry(instance_type=instance_type, zone=zone, at=at, usd_per_hour=Decimal(usd))


def test_a_price_change_mid_range_weighs_each_price_by_how_long_it_held():
    entries = [
        # us-west-2a: 0.40 in effect when the range opens (recorded before it), 0.60 from day 1: (0.40 + 3 × 0.60) / 4
        _entry("g5.12xlarge", "us-west-2a", START - 3 * DAY, "0.40"),
        _entry("g5.12xlarge", "us-west-2a", START + DAY, "0.60"),
        # us-west-2b: 0.45 throughout
        _entry("g5.12xlarge", "us-west-2b", START - DAY, "0.45"),
        # at or after the end: not in the range
        _entry("g5.12xlarge", "us-west-2b", END, "9.00"),
    ]
    (price,) = average_prices(entries, START, END).values()
    assert price.usd_per_hour == Decimal("0.50")  # (0.55 + 0.45) / 2
    assert price.usd_per_gpu_hour == Decimal("0.125")  # 4 GPUs
    assert price.zones == ("us-west-2a", "us-west-2b")


def test_a_zone_with_a_price_for_part_of_the_range_counts_for_that_part_only():
    entries = [
        _entry("g5.xlarge", "us-west-2a", START, "0.40"),
        _entry("g5.xlarge", "us-west-2c", START + 2 * DAY, "1.00"),  # first offered on day 2
    ]
    (price,) = average_prices(entries, START, END).values()
    assert price.usd_per_hour == Decimal("0.60")  # (0.40 × 4 + 1.00 × 2) / 6 zone-days


def test_a_type_without_a_price_in_the_range_has_none():
    assert average_prices([_entry("g5.xlarge", "us-west-2a", END + DAY, "0.40")], START, END) == {}


def test_the_gpus_of_a_type_come_from_the_pinned_families():
    assert (gpus_of("g5.xlarge"), gpus_of("p4d.24xlarge"), gpus_of("g5.12xlarge")) == (1, 8, 4)
    assert gpus_of("m7i.large") is None
    assert gpus_of("inf2.xlarge") is None  # Neuron devices are not GPUs


def _history(*items):
    return [
        {
            "InstanceType": instance_type,
            "AvailabilityZone": zone,
            "Timestamp": at,
            "SpotPrice": usd,
            "ProductDescription": "Linux/UNIX",
        }
        for instance_type, zone, at, usd in items
    ]


def _request(types, zones=(), page=None):
    request = {
        "InstanceTypes": list(types),
        "ProductDescriptions": ["Linux/UNIX"],
        "StartTime": START,
        "EndTime": END,
    }
    if zones:
        request["Filters"] = [{"Name": "availability-zone", "Values": list(zones)}]
    if page:
        request["NextToken"] = page
    return request


def test_every_page_of_the_history_is_read_for_the_types_and_zones_asked():
    ec2 = boto3.client("ec2", region_name="us-west-2")
    zones = ("us-west-2a", "us-west-2b")
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": _history(
                    ("g5.xlarge", "us-west-2a", START - DAY, "0.4000"),
                    ("g5.xlarge", "us-west-2a", START + 2 * DAY, "0.8000"),
                ),
                "NextToken": "page-2",
            },
            _request(["g5.12xlarge", "g5.xlarge"], zones),
        )
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": _history(
                    ("g5.xlarge", "us-west-2b", START - DAY, "0.5000"),
                    ("g5.12xlarge", "us-west-2b", START - DAY, "2.0000"),
                ),
                "NextToken": "",
            },
            _request(["g5.12xlarge", "g5.xlarge"], zones, page="page-2"),
        )
        prices = spot_prices(ec2, ["g5.xlarge", "g5.12xlarge", "g5.xlarge"], START, END, zones)
        stub.assert_no_pending_responses()
    # g5.xlarge: us-west-2a (2 × 0.40 + 2 × 0.80) / 4 = 0.60, us-west-2b 0.50: 0.55; g5.12xlarge 2.00 / 4 GPUs
    assert {name: (p.usd_per_hour, p.usd_per_gpu_hour) for name, p in prices.items()} == {
        "g5.xlarge": (Decimal("0.55"), Decimal("0.55")),
        "g5.12xlarge": (Decimal("2"), Decimal("0.5")),
    }


def test_without_zones_the_history_is_asked_for_every_zone_of_the_region():
    ec2 = boto3.client("ec2", region_name="us-west-2")
    with Stubber(ec2) as stub:
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []}, _request(["g5.xlarge"]))
        assert read_history(ec2, ["g5.xlarge"], START, END) == []
        stub.assert_no_pending_responses()


def _line(capacity_type, instance_type, hours, usd):
    return UsageLine(
        team="nlp",
        pool="gpu-infer",
        capacity_type=capacity_type,
        instance_type=instance_type,
        gpu_hours=Decimal(hours),
        busy_gpu_hours=Decimal(0),
        usd=None if usd is None else Decimal(usd),
        on_demand_usd=None if usd is None else Decimal(usd),
        price=NOT_PRICED if usd is None else CEILING if capacity_type == "spot" else ON_DEMAND,
    )


def test_spot_lines_are_priced_per_gpu_hour_and_the_others_keep_their_price():
    bill = TeamBill(
        start=START,
        end=END,
        prometheus="http://prometheus",
        covered_hours=Decimal(96),
        lines=(
            _line("spot", "g5.12xlarge", "10", "14.18"),
            _line("on-demand", "g5.12xlarge", "10", "14.18"),
            _line("spot", "g6.xlarge", "2", None),  # no pinned on-demand price, but a spot price
            _line("spot", "g4dn.xlarge", "1", "0.526"),  # no spot history
        ),
    )
    prices = average_prices(
        [
            _entry("g5.12xlarge", "us-west-2a", START, "2.00"),
            _entry("g6.xlarge", "us-west-2a", START, "0.30"),
        ],
        START,
        END,
    )
    priced = with_spot_prices(bill, SpotPricing(region="us-west-2", zones=(), prices=prices))
    assert [(line.usd, line.on_demand_usd, line.price) for line in priced.lines] == [
        (Decimal("5.0000"), Decimal("14.18"), SPOT),  # 10 GPU-hours × 2.00 / 4 GPUs
        (Decimal("14.18"), Decimal("14.18"), ON_DEMAND),
        (Decimal("0.6000"), None, SPOT),
        (Decimal("0.526"), Decimal("0.526"), CEILING),
    ]
    assert priced.team_totals()["nlp"] == (Decimal(23), Decimal("20.306"), Decimal(0), Decimal("28.886"))


def test_access_denied_names_the_iam_action_and_the_way_out():
    ec2 = boto3.client("ec2", region_name="us-west-2")
    bill = TeamBill(START, END, "http://prometheus", Decimal(96), (_line("spot", "g5.xlarge", "1", "1.006"),))
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_spot_price_history", "UnauthorizedOperation", "not authorized", 403)
        with pytest.raises(SpotPriceError) as error:
            read_spot_pricing(lambda: ec2, bill, "us-west-2", ())
    message = str(error.value)
    assert "may not call ec2:DescribeSpotPriceHistory (UnauthorizedOperation)" in message
    assert "--no-spot-prices" in message


def test_missing_credentials_say_how_to_sign_in(no_aws_credentials):
    ec2 = boto3.Session(region_name="us-west-2").client("ec2")
    bill = TeamBill(START, END, "http://prometheus", Decimal(96), (_line("spot", "g5.xlarge", "1", "1.006"),))
    with pytest.raises(SpotPriceError) as error:
        read_spot_pricing(lambda: ec2, bill, "us-west-2", ())
    message = str(error.value)
    assert message.startswith("cannot read EC2's spot price history in us-west-2: Unable to locate credentials")
    assert "ec2:DescribeSpotPriceHistory" in message
    assert "--no-spot-prices" in message
    assert isinstance(error.value.__cause__ or error.value.__context__, NoCredentialsError)


def test_a_spot_line_without_its_instance_type_is_not_asked_for_and_keeps_its_ceiling():
    # A series that lost its instance-type label names no type EC2 knows: asking for "(unknown)" would be refused
    # and read as a credentials problem. The typed line is asked for alone; the other stays at its ceiling.
    ec2 = boto3.client("ec2", region_name="us-west-2")
    bill = TeamBill(
        START,
        END,
        "http://prometheus",
        Decimal(96),
        (_line("spot", "g5.xlarge", "1", "1.006"), _line("spot", UNKNOWN, "1", None)),
    )
    assert bill.spot_types() == ["g5.xlarge"]
    with Stubber(ec2) as stub:
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []}, _request(["g5.xlarge"]))
        pricing = read_spot_pricing(lambda: ec2, bill, "us-west-2", ())
        stub.assert_no_pending_responses()
    assert [line.price for line in with_spot_prices(bill, pricing).lines] == [CEILING, NOT_PRICED]
