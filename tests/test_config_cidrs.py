"""Keys that admit address ranges (the API endpoint's, the Kubeflow load balancer's) refuse the whole internet,
whether in one range or spread over several, and name the key at fault."""

from __future__ import annotations

import json
from ipaddress import ip_network

import pytest

from components.config.cidrs import whole_families, whole_internet_problems
from components.config.errors import ConfigError
from components.platform.parse import parse_config

NS = "eks-ml-platform"
CERTIFICATE = "arn:aws:acm:us-west-2:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-0123456789ab"
HALVES = ["0.0.0.0/1", "128.0.0.0/1"]


def _problems(**sections: object) -> dict[str, str]:
    raw = {"aws:region": "us-west-2", f"{NS}:environment": "dev", f"{NS}:owner": "ml-platform"}
    sections.setdefault("cluster", {"endpoint": {"public": True, "publicCidrs": ["198.18.0.0/24"]}})
    raw.update({f"{NS}:{key}": json.dumps(value) for key, value in sections.items()})
    try:
        parse_config(raw, project=NS, stack="test")
    except ConfigError as error:
        return {issue.path: issue.message for issue in error.issues}
    return {}


def _kubeflow(**access: object) -> dict[str, object]:
    return {
        "enabled": True,
        "adminEmail": "platform@corp.internal",
        "access": {"mode": "alb", "certificateArn": CERTIFICATE, **access},
    }


# ------------------------------------------------------------------------------------------------ the helper


@pytest.mark.parametrize(
    ("cidrs", "covered"),
    [
        (["0.0.0.0/0"], ["0.0.0.0/0"]),
        (HALVES, ["0.0.0.0/0"]),
        (["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/2"], ["0.0.0.0/0"]),
        (["::/1", "8000::/1"], ["::/0"]),
        (["0.0.0.0/1", "8000::/1", "::/1", "128.0.0.0/1"], ["0.0.0.0/0", "::/0"]),
        (["0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/3"], []),  # one /3 short of everything
        (["0.0.0.0/1", "::/1"], []),  # half of each family is not a whole family
        ([], []),
    ],
)
def test_ranges_that_together_cover_a_whole_family_are_found(cidrs, covered):
    assert [str(c) for c in whole_families([ip_network(c) for c in cidrs])] == covered


def test_a_whole_range_alone_is_named_by_its_index_and_a_split_one_by_the_key():
    alone = whole_internet_problems("k", [ip_network("10.0.0.0/8"), ip_network("::/0")], "it", "fix")
    assert alone == [("k[1]", "::/0 opens it to the whole internet; fix")]
    split = whole_internet_problems("k", [ip_network(c) for c in HALVES], "it", "fix")
    assert split == [
        ("k", "0.0.0.0/1, 128.0.0.0/1 together cover 0.0.0.0/0, which opens it to the whole internet; fix")
    ]


# ------------------------------------------------------------------------------------------------ the API endpoint


def test_the_public_endpoint_refuses_ranges_that_together_cover_every_address():
    found = _problems(cluster={"endpoint": {"public": True, "publicCidrs": HALVES}})
    assert found == {
        "cluster.endpoint.publicCidrs": "0.0.0.0/1, 128.0.0.0/1 together cover 0.0.0.0/0, which opens the API "
        "server to the whole internet; list your egress ranges"
    }


def test_the_private_endpoint_refuses_ranges_that_together_cover_every_address():
    quarters = ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/2"]
    found = _problems(cluster={"endpoint": {"public": False, "privateCidrs": quarters}})
    assert found == {
        "cluster.endpoint.privateCidrs": f"{', '.join(quarters)} together cover 0.0.0.0/0, which opens the private "
        "endpoint to the whole internet; list your VPN or runner ranges"
    }


def test_the_endpoint_takes_ranges_that_leave_some_addresses_out():
    assert _problems(cluster={"endpoint": {"public": True, "publicCidrs": ["0.0.0.0/1", "128.0.0.0/2"]}}) == {}


# ------------------------------------------------------------------------------------------------ the Kubeflow ALB


@pytest.mark.parametrize(
    ("cidrs", "path", "message"),
    [
        (
            ["198.18.0.0/24", "0.0.0.0/0"],
            "kubeflow.access.allowedCidrs[1]",
            "0.0.0.0/0 opens the Kubeflow load balancer to the whole internet; list the ranges that may connect",
        ),
        (
            HALVES,
            "kubeflow.access.allowedCidrs",
            (
                "0.0.0.0/1, 128.0.0.0/1 together cover 0.0.0.0/0, which opens the Kubeflow load balancer to the "
                "whole internet; list the ranges that may connect"
            ),
        ),
        (["not-a-cidr"], "kubeflow.access.allowedCidrs[0]", "expected an IPv4 or IPv6 CIDR like '203.0.113.0/24'"),
        (["10.0.0.1/8"], "kubeflow.access.allowedCidrs[0]", "with no host bits set, got '10.0.0.1/8'"),
        ([10], "kubeflow.access.allowedCidrs[0]", "expected a CIDR string like '203.0.113.0/24', got int"),
        (
            ["2001:db8::/32"],
            "kubeflow.access.allowedCidrs[0]",
            "2001:db8::/32 is an IPv6 range: the load balancer is IPv4-only",
        ),
        (["198.18.0.0/24", "198.18.0.0/24"], "kubeflow.access.allowedCidrs", "lists a range more than once"),
    ],
)
def test_the_kubeflow_load_balancer_refuses_what_it_could_not_or_should_not_admit(cidrs, path, message):
    found = _problems(kubeflow=_kubeflow(scheme="internal", allowedCidrs=cidrs))
    assert path in found, found
    assert message in found[path]


def test_an_internet_facing_load_balancer_must_list_who_may_connect():
    """With no ranges the load balancer controller admits 0.0.0.0/0: the whole internet, as the endpoint refuses."""
    found = _problems(kubeflow=_kubeflow(scheme="internet-facing"))
    assert list(found) == ["kubeflow.access.allowedCidrs"]
    assert "the load balancer controller then admits 0.0.0.0/0" in found["kubeflow.access.allowedCidrs"]


def test_the_kubeflow_load_balancer_admits_the_ranges_listed():
    assert _problems(kubeflow=_kubeflow(scheme="internet-facing", allowedCidrs=["198.18.0.0/24", "198.19.0.7"])) == {}
    assert _problems(kubeflow=_kubeflow(scheme="internal")) == {}  # inside the VPC: the controller's default
