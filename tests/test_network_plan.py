"""Subnet planning: a table of known layouts and properties over all allowed VPC sizes."""

from __future__ import annotations

from ipaddress import IPv4Network

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.network.plan import MAX_AZS, MAX_VPC_PREFIX, MIN_VPC_PREFIX, plan_subnets

ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")


@pytest.mark.parametrize(
    ("cidr", "zones", "expected"),
    [
        (
            "10.20.0.0/16",
            ZONES[:2],
            [("10.20.0.0/18", "10.20.192.0/22"), ("10.20.64.0/18", "10.20.196.0/22")],
        ),
        (
            "10.30.0.0/16",
            ZONES,
            [
                ("10.30.0.0/18", "10.30.192.0/22"),
                ("10.30.64.0/18", "10.30.196.0/22"),
                ("10.30.128.0/18", "10.30.200.0/22"),
            ],
        ),
        ("192.168.0.0/22", ZONES[:2], [("192.168.0.0/24", "192.168.3.0/28"), ("192.168.1.0/24", "192.168.3.16/28")]),
    ],
)
def test_known_layouts(cidr, zones, expected):
    plan = plan_subnets(IPv4Network(cidr), zones)
    assert [(str(p.private), str(p.public)) for p in plan] == expected
    assert [p.availability_zone for p in plan] == list(zones)


vpcs = st.builds(
    lambda address, prefix: IPv4Network((address, prefix), strict=False),
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=MIN_VPC_PREFIX, max_value=MAX_VPC_PREFIX),
)
zone_counts = st.integers(min_value=1, max_value=MAX_AZS)


@given(vpcs, zone_counts)
def test_subnets_lie_inside_the_vpc_and_never_overlap(vpc, count):
    plan = plan_subnets(vpc, ZONES[:count])
    subnets = [s for pair in plan for s in (pair.private, pair.public)]
    assert all(s.subnet_of(vpc) for s in subnets)
    for i, a in enumerate(subnets):
        for b in subnets[i + 1 :]:
            assert not a.overlaps(b)


@given(vpcs, zone_counts)
def test_private_subnets_get_most_of_the_space_and_public_ones_are_usable(vpc, count):
    for pair in plan_subnets(vpc, ZONES[:count]):
        assert pair.private.num_addresses == vpc.num_addresses // 4
        assert pair.public.prefixlen <= 28  # the smallest subnet AWS allows


@given(vpcs)
def test_adding_a_zone_never_moves_the_existing_ones(vpc):
    two = plan_subnets(vpc, ZONES[:2])
    three = plan_subnets(vpc, ZONES)
    assert three[:2] == two


@pytest.mark.parametrize("prefix", [MIN_VPC_PREFIX - 1, MAX_VPC_PREFIX + 1])
def test_out_of_range_vpc_is_refused(prefix):
    with pytest.raises(ValueError, match="outside"):
        plan_subnets(IPv4Network(("10.0.0.0", prefix)), ZONES[:2])


def test_too_many_zones_are_refused():
    with pytest.raises(ValueError, match="1 to 3"):
        plan_subnets(IPv4Network("10.0.0.0/16"), (*ZONES, "us-west-2d"))
