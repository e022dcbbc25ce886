"""The engine box's Karpenter stand-in launches a node where real Karpenter would: under a required zone spread, in
the zone that keeps the skew (a gate of two replicas with `minDomains: 2` never lands when every new node is in one
zone, as the first real run of the spread showed)."""

from __future__ import annotations

from typing import Any

from engine.standins import spread_zones

ZONES = ["us-west-2a", "us-west-2b"]


def node(name: str, zone: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}}}


def pod(name: str, on: str | None = None, *, spread: bool = True, app: str = "istiod") -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": on} if on else {}
    if spread:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "minDomains": 2,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    return {"metadata": {"name": name, "namespace": "istio-system", "labels": {"app": app}}, "spec": spec}


def test_the_second_replica_of_a_zone_spread_gets_a_node_in_the_other_zone():
    nodes = [node("a-0", "us-west-2a"), node("a-1", "us-west-2a")]
    placed, pending = pod("istiod-0", "a-0"), pod("istiod-1")
    assert spread_zones(pending, ZONES, [placed, pending], nodes) == ["us-west-2b", "us-west-2a"]


def test_pods_the_selector_does_not_count_do_not_move_the_zone():
    nodes = [node("a-0", "us-west-2a")]
    others = [pod(f"other-{i}", "a-0", app="dex") for i in range(3)]
    assert spread_zones(pod("istiod-0"), ZONES, others, nodes) == ZONES


def test_without_a_required_zone_spread_the_zones_keep_their_order():
    nodes = [node("a-0", "us-west-2a")]
    assert spread_zones(pod("x", spread=False), ZONES, [pod("istiod-0", "a-0")], nodes) == ZONES
