"""The GPU bill adds up: each team's GPU-hours plus the unallocated ones are the GPU node-hours the pools ran (the GPUs
of each node × the hours it was in the cluster), in the recording rules, on the dashboard and in
`python -m components.cost --by-team`, on a synthetic cluster with hand-computed figures.

Scraped every 30 s for three hours (t = 0 .. 10800 s), rules run every minute (t = 60 .. 10800: 180 evaluations):

- a1: pool gpu-train, on-demand p4d.24xlarge (8 GPUs), the whole time; vision/one runs on it with 1 GPU all along.
  Pool 8 × 3 = 24 GPU-hours; vision 3; unallocated 21 (the 7 GPUs the 1-GPU pod leaves).
- b1: pool gpu-infer, spot g5.xlarge (1 GPU), in the cluster until t = 5400 s; nlp/serve runs on it until t = 3600 s,
  then the node waits idle 30 minutes before consolidation removes it. Pool 1.5; nlp 1; unallocated 0.5.
- c1: pool gpu-infer, on-demand g5.12xlarge (4 GPUs), the whole time; nlp/big asks its 4 GPUs, is Pending (pulling
  its image) until t = 600 s, then Running: 170 of the 180 minutes. Pool 12; nlp 680/60; unallocated 40/60.
- s1: a system node without GPUs: in no pool total.

Teams 3 + 1 + 680/60 GPU-hours, unallocated 21 + 0.5 + 40/60, pools 37.5. Dollars at the pinned us-west-2 prices
per GPU-hour: p4d.24xlarge $2.74470525, g5.xlarge $1.006 (spot, at the on-demand ceiling), g5.12xlarge $1.418.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest

from components.instances.accelerators import nvidia_gpu_counts
from components.instances.prices import gpu_hour_prices
from components.observability import cost
from components.observability.render import dashboard
from components.tools.cost import __main__ as cli
from components.tools.cost import by_team
from components.tools.cost.team_render import render_text
from components.tools.cost.teams import TeamBill, UsageLine, http_query, team_bill

from .promql_eval import STALE, Evaluator, Store, record
from .test_team_cost import DAY, NOW, _ec2, _FakePrometheus, serving

END = 3 * 3600
SCRAPES = range(0, END + 1, 30)
EVALUATIONS = range(60, END + 1, 60)
TYPES = ("p4d.24xlarge", "g5.xlarge", "g5.12xlarge")

NODES = {
    "a1": ("gpu-train", "on-demand", "p4d.24xlarge", END),
    "b1": ("gpu-infer", "spot", "g5.xlarge", 5400),
    "c1": ("gpu-infer", "on-demand", "g5.12xlarge", END),
    "s1": ("", "", "m7i.large", END),
}
A1 = ("gpu-train", "on-demand", "p4d.24xlarge")
B1 = ("gpu-infer", "spot", "g5.xlarge")
C1 = ("gpu-infer", "on-demand", "g5.12xlarge")


def _points(value: float, until: int = END, after: float | None = None) -> list[tuple[float, float]]:
    points: list[tuple[float, float]] = [(t, float(value)) for t in SCRAPES if t <= until]
    if until < END:
        points += [(t, float(after)) for t in SCRAPES if t > until] if after is not None else [(until + 30, STALE)]
    return points


def _pod(store: Store, namespace: str, pod: str, node: str, gpus: int, running: list[tuple[float, float]]) -> None:
    resource = {"resource": "nvidia_com_gpu", "unit": "integer"}
    labels = {"namespace": namespace, "pod": pod, "container": "main", "node": node, **resource}
    store.add("kube_pod_container_resource_requests", labels, _points(gpus))
    store.add("kube_pod_status_phase", {"namespace": namespace, "pod": pod, "phase": "Running"}, running)


def synthetic() -> Store:
    store = Store()
    for node, (pool, capacity, instance_type, until) in NODES.items():
        found = {"karpenter.sh/nodepool": pool, "karpenter.sh/capacity-type": capacity}
        node_labels = {cost.ksm_label(k): v for k, v in found.items() if v}
        node_labels[cost.ksm_label("node.kubernetes.io/instance-type")] = instance_type
        store.add("kube_node_labels", {"node": node, **node_labels}, _points(1, until))
    _pod(store, "vision", "one", "a1", 1, _points(1))
    _pod(store, "nlp", "serve", "b1", 1, _points(1, 3600, 0))
    # Pulling its image: the pod is bound to c1 and Pending until its containers start.
    _pod(store, "nlp", "big", "c1", 4, _points(0, 600, 1))
    prices = {name: gpu_hour_prices("us-west-2")[name] for name in TYPES}
    rules = cost.cost_rules("gpu-cost", "monitoring", prices, 1, nvidia_gpu_counts())["spec"]["groups"][0]["rules"]
    record(store, rules, EVALUATIONS)
    return store


@pytest.fixture(scope="module")
def recorded() -> Store:
    return synthetic()


def _per_pool(store: Store, series: str) -> dict[tuple[str, str, str], float]:
    found = Evaluator(store).query(f"sum_over_time({series}[{END}s]) / 60", END)
    assert isinstance(found, dict)
    return {
        (dict(key)["nodepool"], dict(key)["capacity_type"], dict(key)["instance_type"]): round(value, 6)
        for key, value in found.items()
    }


def test_the_pools_gpu_node_hours_are_each_nodes_gpus_for_as_long_as_it_was_a_node(recorded):
    # The idle node waiting for consolidation counts until it is gone; the system node counts nowhere.
    assert _per_pool(recorded, cost.POOL_GPUS) == {A1: 24.0, B1: 1.5, C1: 12.0}


def test_unallocated_is_what_no_running_pod_held_one_gpu_of_eight_idle_node_and_image_pull(recorded):
    assert _per_pool(recorded, cost.GPUS_UNALLOCATED) == {A1: 21.0, B1: 0.5, C1: round(40 / 60, 6)}


def test_every_minute_the_teams_and_unallocated_add_up_to_the_pools_gpus_and_dollars(recorded):
    evaluator = Evaluator(recorded)
    for t in EVALUATIONS:
        ran = evaluator.query(f"sum({cost.POOL_GPUS})", t)
        assert evaluator.query(f"sum({cost.GPUS_HELD}) + sum({cost.GPUS_UNALLOCATED})", t) == ran, t
        paid = evaluator.query(f"sum({cost.POOL_COST_RATE})", t)
        parts = evaluator.query(f"sum({cost.GPU_COST_RATE}) + sum({cost.UNALLOCATED_COST_RATE})", t)
        assert isinstance(paid, dict)
        assert isinstance(parts, dict)
        assert {k: round(v, 9) for k, v in parts.items()} == {k: round(v, 9) for k, v in paid.items()}, t


def test_unallocated_dollars_are_the_idle_gpus_at_the_pools_price(recorded):
    assert _per_pool(recorded, cost.UNALLOCATED_COST_RATE) == {
        A1: round(21 * 2.74470525, 6),
        B1: round(0.5 * 1.006, 6),
        C1: round(40 / 60 * 1.418, 6),
    }


def test_without_gpu_counts_the_rules_record_no_pool_series():
    rules = cost.cost_rules("gpu-cost", "monitoring", {})["spec"]["groups"][0]["rules"]
    assert not {rule["record"] for rule in rules} & {cost.POOL_GPUS, cost.GPUS_UNALLOCATED}
    with pytest.raises(ValueError, match=r"instance_gpus: expected at least 1 GPU per instance type, got \['x.1'\]"):
        cost.cost_rules("gpu-cost", "monitoring", {}, 1, {"x.1": 0})


# ------------------------------------------------------------------------------------------------ the dashboard


def _panel(title: str) -> str:
    (panel,) = [p for p in dashboard("gpu-cost")["panels"] if p["title"] == title]
    return panel["targets"][0]["expr"].replace("$__range", f"{END}s")


def test_the_dashboard_shows_teams_unallocated_and_what_the_pools_ran_adding_up(recorded):
    found = Evaluator(recorded).query(
        _panel("GPU-hours in the time range: teams + unallocated = what the pools ran"), END
    )
    assert isinstance(found, dict)
    rows = {(dict(key)["nodepool"], dict(key)["line"]): round(value, 6) for key, value in found.items()}
    assert rows == {
        ("gpu-train", "teams"): 3.0,
        ("gpu-train", "unallocated"): 21.0,
        ("gpu-train", "pools ran"): 24.0,
        ("gpu-infer", "teams"): round(1 + 680 / 60, 6),
        ("gpu-infer", "unallocated"): round(0.5 + 40 / 60, 6),
        ("gpu-infer", "pools ran"): 13.5,
    }


def test_the_dashboard_draws_unallocated_gpu_hours_per_pool_per_day(recorded):
    found = Evaluator(recorded).query(_panel("Unallocated GPU-hours per pool per day"), END)
    assert isinstance(found, dict)
    assert {dict(key)["nodepool"]: round(value, 6) for key, value in found.items()} == {
        "gpu-train": 21.0,
        "gpu-infer": round(0.5 + 40 / 60, 6),
    }


# ------------------------------------------------------------------------------------------------ the command


@pytest.fixture(scope="module")
def prometheus(recorded):
    with serving(type("Handler", (_FakePrometheus,), {"store": recorded})) as url:
        yield url


def test_the_bill_adds_team_and_unallocated_up_to_the_pools_exactly(prometheus):
    bill = team_bill(http_query(prometheus), DAY, DAY + timedelta(seconds=END), prometheus)
    teams = bill.team_totals()
    pools = bill.pool_totals()
    assert {team: total.gpu_hours for team, total in teams.items()} == {
        "nlp": Decimal("12.3333"),
        "vision": Decimal(3),
    }
    assert pools["(pools ran)"].gpu_hours == Decimal("37.5")
    assert pools["(unallocated)"].gpu_hours == Decimal("22.1667")
    assert sum(total.gpu_hours for total in teams.values()) + pools["(unallocated)"].gpu_hours == Decimal("37.5")
    # Dollars too: 24 × 2.74470525 + 1.5 × 1.006 + 12 × 1.418, each line to a ten-thousandth.
    assert pools["(pools ran)"].usd == Decimal("84.3979")
    assert pools["(unallocated)"].usd == Decimal("59.0871")
    assert sum(total.usd for total in teams.values()) + pools["(unallocated)"].usd == Decimal("84.3979")
    assert {(line.pool, line.instance_type): line.gpu_hours for line in bill.unallocated} == {
        ("gpu-train", "p4d.24xlarge"): Decimal(21),
        ("gpu-infer", "g5.xlarge"): Decimal("0.5"),
        ("gpu-infer", "g5.12xlarge"): Decimal("0.6667"),
    }
    assert bill.unpooled() == []


def _command(capsys, monkeypatch, prometheus, *extra):
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    june = ("--from", "2026-06-01", "--to", "2026-07-01")
    status = cli.main(["--by-team", *june, "--prometheus", prometheus, "--no-spot-prices", *extra])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return captured.out


def test_the_printed_bill_shows_the_unallocated_line_and_the_pools_it_adds_up_to(prometheus, capsys, monkeypatch):
    out = _command(capsys, monkeypatch, prometheus)
    rows = [line.split() for line in out.splitlines() if line.startswith("(unallocated) ")]
    assert [row[1:4] for row in rows] == [
        ["gpu-infer", "on-demand", "g5.12xlarge"],
        ["gpu-infer", "spot", "g5.xlarge"],
        ["gpu-train", "on-demand", "p4d.24xlarge"],
    ]
    assert "  (unallocated): 22.2 GPU-hours, $59.09\n" in out
    assert "  = the GPU node-hours the pools ran: 37.5 GPU-hours, $84.40\n" in out
    assert "the other 7 GPUs of an 8-GPU node running a 1-GPU pod" in out


def test_the_json_bill_carries_unallocated_and_the_pools(prometheus, capsys, monkeypatch):
    document = json.loads(_command(capsys, monkeypatch, prometheus, "--json"))
    teams = sum(Decimal(team["gpuHours"]) for team in document["teams"].values())
    assert teams + Decimal(document["unallocated"]["gpuHours"]) == Decimal(document["pools"]["gpuHours"]) == 37.5
    usd = sum(Decimal(team["usd"]) for team in document["teams"].values())
    assert usd + Decimal(document["unallocated"]["usd"]) == Decimal(document["pools"]["usd"])
    assert len(document["unallocatedLines"]) == 3


def test_at_spot_prices_the_unallocated_dollars_still_close_the_bill(prometheus, capsys, monkeypatch):
    # June's g5.xlarge spot price in the stub is $0.50 per GPU-hour: b1's 1.5 GPU-hours are $0.75, nlp/serve's 1
    # is $0.50, and its idle half hour before consolidation is $0.25.
    stub, _ = _ec2(monkeypatch)
    june = ("--from", "2026-06-01", "--to", "2026-07-01")
    status = cli.main(["--by-team", *june, "--prometheus", prometheus, "--region", "us-west-2", "--json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    stub.assert_no_pending_responses()
    document = json.loads(captured.out)
    (spot,) = [line for line in document["unallocatedLines"] if line["capacity_type"] == "spot"]
    assert (spot["gpu_hours"], spot["usd"], spot["price"]) == ("0.5000", "0.2500", "spot")
    usd = sum(Decimal(team["usd"]) for team in document["teams"].values())
    assert usd + Decimal(document["unallocated"]["usd"]) == Decimal(document["pools"]["usd"])
    # 24 × 2.74470525 + 1.5 × 0.50 + 12 × 1.418, each line to a ten-thousandth
    assert Decimal(document["pools"]["usd"]) == Decimal("65.8729") + Decimal("0.75") + Decimal("17.016")


def test_gpus_held_where_no_pool_gpus_were_recorded_are_named_not_silently_left_out():
    held = UsageLine("vision", "gpu-x", "on-demand", "x9.large", Decimal(2), Decimal(1), None, None, "not priced")
    pool = replace(held, team="(pools ran)", pool="gpu-train", instance_type="p4d.24xlarge", gpu_hours=Decimal(8))
    bill = TeamBill(DAY, DAY + timedelta(hours=1), "http://p", Decimal(1), (held,), pools=(pool,))
    assert bill.unpooled() == [held]
    out = render_text(bill)
    assert "No record of the GPUs the pools ran on gpu-x on-demand x9.large" in out
    assert "their unallocated GPU-hours are not known" in out
