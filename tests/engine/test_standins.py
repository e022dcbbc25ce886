"""The engine box's Karpenter stand-in launches a node where real Karpenter would: under a required zone spread, in
the zone that keeps the skew (a gate of two replicas with `minDomains: 2` never lands when every new node is in one
zone, as the first real run of the spread showed); one node per pool a round, never past the pool's limits; and a
deleted NodePool's nodes gone with it, the box's first nodes kept."""

from __future__ import annotations

import copy
from typing import Any

from engine.standins import Karpenter, spread_zones

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


# -- launching and terminating nodes, against an API server that keeps what it is sent ------------------------------

POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "cpu-general"},
    "spec": {
        "limits": {"cpu": "24"},
        "template": {
            "metadata": {"labels": {"eksml.io/node-pool": "cpu-general"}},
            "spec": {
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c"]},
                ]
            },
        },
    },
}


class FakeApi:
    """Lists what it holds, and keeps the nodes it is sent (their capacity patched in) or told to delete."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        first = node("system-0", "us-west-2a")
        first["metadata"]["labels"]["topology.kubernetes.io/region"] = "us-west-2"
        self.held: dict[str, list[dict[str, Any]]] = {
            "/apis/karpenter.sh/v1/nodepools": [POOL],
            "/api/v1/nodes": [first],
            "/api/v1/pods": pods,
        }

    def items(self, path: str) -> list[dict[str, Any]]:
        return copy.deepcopy(self.held.get(path, []))

    def post(self, path: str, body: Any) -> None:
        self.held[path].append(copy.deepcopy(body))

    def patch(self, path: str, body: Any, kind: str = "") -> None:
        name = path.split("/")[4]
        next(n for n in self.held["/api/v1/nodes"] if n["metadata"]["name"] == name).update(copy.deepcopy(body))

    def delete(self, path: str) -> None:
        name = path.rsplit("/", 1)[1]
        self.held["/api/v1/nodes"] = [n for n in self.held["/api/v1/nodes"] if n["metadata"]["name"] != name]

    def pool_nodes(self) -> list[dict[str, Any]]:
        return [n for n in self.held["/api/v1/nodes"] if "karpenter.sh/nodepool" in n["metadata"]["labels"]]


def pending(name: str, cpu: str) -> dict[str, Any]:
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}
    return {
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
        "spec": {"containers": [container]},
        "status": {"conditions": [unschedulable]},
    }


def test_the_karpenter_stand_in_launches_one_node_per_pool_a_round_and_never_past_the_pools_limits():
    api = FakeApi([pending(f"p-{i}", "6") for i in range(6)])
    karpenter = Karpenter(api)  # type: ignore[arg-type]
    said = [list(karpenter()) for _ in range(8)]
    assert [len([m for m in r if m.startswith("node ")]) for r in said[:2]] == [1, 1]
    assert all(n["metadata"]["labels"]["karpenter.sh/nodepool"] == "cpu-general" for n in api.pool_nodes())
    cpus = sum(int(n["status"]["capacity"]["cpu"]) for n in api.pool_nodes())
    assert 0 < cpus <= 24
    assert any("NodePool cpu-general is at its limits" in m for r in said for m in r)


def test_the_karpenter_stand_in_terminates_a_deleted_pools_nodes_and_only_those():
    api = FakeApi([pending("p-0", "2")])
    karpenter = Karpenter(api)  # type: ignore[arg-type]
    list(karpenter())
    assert len(api.pool_nodes()) == 1
    api.held["/apis/karpenter.sh/v1/nodepools"] = []
    said = list(karpenter())
    assert api.pool_nodes() == []
    assert [n["metadata"]["name"] for n in api.held["/api/v1/nodes"]] == ["system-0"]
    assert said == ["node pool-cpu-general-0 terminated (NodePool cpu-general deleted)"]
