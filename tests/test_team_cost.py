"""What each team's GPUs cost: the cost rules, evaluated offline on a synthetic cluster against hand-computed GPU-hours
and dollars, the prices they carry, and `python -m components.tools.cost --by-team` against a fake Prometheus that
answers its queries from the same series.

The synthetic cluster, scraped every 30 s for three hours (t = 0 .. 10800 s), rules run every minute:

- n1: pool gpu-train, on-demand g5.12xlarge (4 GPUs); n2: pool gpu-infer, spot g5.xlarge (1 GPU); n4: pool
  gpu-infer, on-demand g6.xlarge, a type the test prices leave out; n3: a system node without Karpenter labels;
- vision/train-1 on n1 asks 3 + 1 GPUs in two containers and runs until t = 7200 s, then has Succeeded (its
  requests stay in kube-state-metrics); DCGM sees its 4 GPUs 50 % busy while it runs;
- vision/waiting asks 2 GPUs and stays Pending; nlp/serve on n2 holds its GPU the whole time, 20 % busy;
  nlp/cpu on n3 asks only CPU; audio/tts on n4 holds one GPU until t = 3600 s.

By hand: vision 4 GPUs × 2 h = 8 GPU-hours (4 busy) at 5.672 / 4 = $1.418 each = $11.344; nlp 1 × 3 h = 3 GPU-hours
(0.6 busy) at $1.006 (spot, priced on demand) = $3.018; audio 1 GPU-hour, not priced.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import cast

import boto3
import promql_parser
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.stub import Stubber

from components.instances.prices import gpu_hour_prices, on_demand_tables
from components.observability import cost
from components.observability.component import stack_values
from components.observability.config import ObservabilityConfig
from components.observability.render import dashboard
from components.scheduling import SYSTEM_PLACEMENT
from components.tools.commands import stack_config
from components.tools.cost import __main__ as cli
from components.tools.cost import by_team
from components.tools.cost.amp import sigv4_signer, workspace_region
from components.tools.cost.teams import PrometheusError, http_query, team_bill

from .conftest import REPO
from .promql_eval import STALE, Evaluator, Store, record

HOURS = 3
END = HOURS * 3600
SCRAPES = range(0, END + 1, 30)
EVALUATIONS = range(60, END + 1, 60)
#: The day the synthetic series start: the fake Prometheus maps its times onto seconds since then.
DAY = datetime(2026, 6, 1, tzinfo=UTC)

NODES = {
    "n1": {"karpenter.sh/nodepool": "gpu-train", "karpenter.sh/capacity-type": "on-demand", "type": "g5.12xlarge"},
    "n2": {"karpenter.sh/nodepool": "gpu-infer", "karpenter.sh/capacity-type": "spot", "type": "g5.xlarge"},
    "n3": {"type": "m7i.large"},
    "n4": {"karpenter.sh/nodepool": "gpu-infer", "karpenter.sh/capacity-type": "on-demand", "type": "g6.xlarge"},
}


def _prices():
    """The pinned GPU-hour prices of the two types the test prices (g6.xlarge left out on purpose)."""
    pinned = gpu_hour_prices("us-west-2")
    return {name: pinned[name] for name in ("g5.12xlarge", "g5.xlarge")}


def _points(value, until=END, after=None):
    """A scraped series: `value` at each scrape up to `until`, then `after` (None: gone, with a staleness marker)."""
    points = [(t, float(value)) for t in SCRAPES if t <= until]
    if until < END:
        points += [(t, float(after)) for t in SCRAPES if t > until] if after is not None else [(until + 30, STALE)]
    return points


def synthetic(gpu_shares: int = 1) -> Store:
    store = Store()
    for node, found in NODES.items():
        node_labels = {cost.ksm_label(k): v for k, v in found.items() if k != "type"}
        node_labels[cost.ksm_label("node.kubernetes.io/instance-type")] = found["type"]
        store.add("kube_node_labels", {"node": node, **node_labels}, _points(1))
    requests = "kube_pod_container_resource_requests"
    gpu = {"resource": "nvidia_com_gpu", "unit": "integer"}
    store.add(requests, {"namespace": "vision", "pod": "train-1", "container": "a", "node": "n1", **gpu}, _points(3))
    store.add(requests, {"namespace": "vision", "pod": "train-1", "container": "b", "node": "n1", **gpu}, _points(1))
    store.add(
        requests,
        {"namespace": "vision", "pod": "train-1", "container": "a", "node": "n1", "resource": "cpu"},
        _points(4),
    )
    store.add(requests, {"namespace": "vision", "pod": "waiting", "container": "a", **gpu}, _points(2))
    store.add(requests, {"namespace": "nlp", "pod": "serve", "container": "a", "node": "n2", **gpu}, _points(1))
    store.add(
        requests, {"namespace": "nlp", "pod": "cpu", "container": "a", "node": "n3", "resource": "cpu"}, _points(2)
    )
    store.add(requests, {"namespace": "audio", "pod": "tts", "container": "a", "node": "n4", **gpu}, _points(1))
    phase = "kube_pod_status_phase"
    for namespace, pod, running in (("nlp", "serve", END), ("nlp", "cpu", END), ("audio", "tts", 3600)):
        store.add(phase, {"namespace": namespace, "pod": pod, "phase": "Running"}, _points(1, running, 0))
    store.add(phase, {"namespace": "vision", "pod": "train-1", "phase": "Running"}, _points(1, 7200, 0))
    store.add(phase, {"namespace": "vision", "pod": "train-1", "phase": "Succeeded"}, _points(0, 7200, 1))
    store.add(phase, {"namespace": "vision", "pod": "waiting", "phase": "Running"}, _points(0))
    store.add(phase, {"namespace": "vision", "pod": "waiting", "phase": "Pending"}, _points(1))
    util = "DCGM_FI_DEV_GPU_UTIL"
    for index in range(4):
        held = {"node": "n1", "gpu": str(index), "namespace": "vision", "pod": "train-1"}
        store.add(util, held, _points(50, 7200))
        store.add(util, {"node": "n1", "gpu": str(index)}, [(t, 0.0) for t in SCRAPES if t > 7200])
    store.add(util, {"node": "n2", "gpu": "0", "namespace": "nlp", "pod": "serve"}, _points(20))
    store.add(util, {"node": "n4", "gpu": "0", "namespace": "audio", "pod": "tts"}, _points(90, 3600))
    rules = cost.cost_rules("gpu-cost", "monitoring", _prices(), gpu_shares)["spec"]["groups"][0]["rules"]
    record(store, rules, EVALUATIONS)
    return store


@pytest.fixture(scope="module")
def recorded() -> Store:
    return synthetic()


def _per_team(store: Store, series: str) -> dict[str, float]:
    found = Evaluator(store).query(f"sum by (namespace) (sum_over_time({series}[{END}s])) / 60", END)
    assert isinstance(found, dict)
    return {dict(key)["namespace"]: round(value, 6) for key, value in found.items()}


def test_gpu_hours_per_team_count_only_gpus_running_pods_hold(recorded):
    # The pending pod's 2 GPUs, train-1 after it succeeded and the CPU-only pod count nothing.
    assert _per_team(recorded, cost.GPUS_HELD) == {"vision": 8.0, "nlp": 3.0, "audio": 1.0}


def test_busy_gpu_hours_weigh_the_held_gpus_by_dcgm_utilisation(recorded):
    assert _per_team(recorded, cost.GPUS_BUSY) == {"vision": 4.0, "nlp": 0.6, "audio": 0.9}


def test_dollars_per_team_are_gpu_hours_at_the_instance_price_per_gpu(recorded):
    # audio ran on a type without a price: it has no cost series at all, never $0.
    assert _per_team(recorded, cost.GPU_COST_RATE) == {"vision": 11.344, "nlp": 3.018}


def test_each_team_keeps_its_pool_capacity_type_and_instance_type(recorded):
    found = Evaluator(recorded).query(f"sum_over_time({cost.GPUS_HELD}[{END}s]) / 60", END)
    assert isinstance(found, dict)
    assert {frozenset(key): round(value, 6) for key, value in found.items()} == {
        frozenset(
            {
                ("namespace", "vision"),
                ("nodepool", "gpu-train"),
                ("capacity_type", "on-demand"),
                ("instance_type", "g5.12xlarge"),
            }
        ): 8.0,
        frozenset(
            {("namespace", "nlp"), ("nodepool", "gpu-infer"), ("capacity_type", "spot"), ("instance_type", "g5.xlarge")}
        ): 3.0,
        frozenset(
            {
                ("namespace", "audio"),
                ("nodepool", "gpu-infer"),
                ("capacity_type", "on-demand"),
                ("instance_type", "g6.xlarge"),
            }
        ): 1.0,
    }


def test_a_gpu_hour_costs_the_pinned_instance_price_divided_by_its_gpus():
    table = on_demand_tables()["us-west-2"]
    prices = gpu_hour_prices("us-west-2")
    assert prices["g5.12xlarge"] == table["g5.12xlarge"] / 4
    assert prices["p4d.24xlarge"] == table["p4d.24xlarge"] / 8
    assert prices["g5.xlarge"] == table["g5.xlarge"]
    assert not any(name.startswith(("inf", "trn", "m7i")) for name in prices)  # NVIDIA GPUs only
    assert gpu_hour_prices("mars-north-1") == {}


def test_the_rules_carry_one_price_series_per_priced_type_at_its_exact_price():
    prices = gpu_hour_prices("us-west-2")
    rules = cost.cost_rules("gpu-cost", "monitoring", prices)["spec"]["groups"][0]["rules"]
    price_rules = [rule for rule in rules if rule["record"] == cost.GPU_HOUR_PRICE]
    assert {rule["labels"]["instance_type"]: Decimal(rule["expr"][7:-1]) for rule in price_rules} == dict(prices)
    for rule in rules:
        promql_parser.parse(rule["expr"])


def test_with_time_slicing_a_pods_gpu_is_its_share_of_one(recorded):
    shared = synthetic(gpu_shares=4)
    # vision's 4 advertised GPUs are one physical GPU: 2 GPU-hours, at the same price per GPU-hour.
    assert _per_team(shared, cost.GPUS_HELD) == {"vision": 2.0, "nlp": 0.75, "audio": 0.25}
    assert _per_team(shared, cost.GPU_COST_RATE) == {"vision": 2.836, "nlp": 0.7545}
    with pytest.raises(ValueError, match="gpu_shares: expected a whole number of at least 1, got 0"):
        cost.cost_rules("gpu-cost", "monitoring", {}, gpu_shares=0)


def test_the_rules_run_once_a_minute_as_the_gpu_hours_assume():
    group = cost.cost_rules("gpu-cost", "monitoring", {})["spec"]["groups"][0]
    assert group["interval"] == "60s"
    assert cost.EVALUATIONS_PER_HOUR == 60


def test_kube_state_metrics_exposes_the_node_labels_the_rules_join_on():
    values = stack_values(
        ObservabilityConfig(), storage_class="gp3", delete_volumes=False, placement=SYSTEM_PLACEMENT, webhook_url=None
    )
    allowlist = values["kube-state-metrics"]["metricLabelsAllowlist"]
    assert allowlist == ["nodes=[karpenter.sh/nodepool,karpenter.sh/capacity-type,node.kubernetes.io/instance-type]"]
    rule = cost.cost_rules("gpu-cost", "monitoring", {})["spec"]["groups"][0]["rules"][0]
    for key in ("karpenter.sh/nodepool", "karpenter.sh/capacity-type", "node.kubernetes.io/instance-type"):
        assert f'"{cost.ksm_label(key)}"' in rule["expr"]
    assert cost.ksm_label("karpenter.sh/capacity-type") == "label_karpenter_sh_capacity_type"


def _dashboard_query(title: str) -> str:
    (panel,) = [p for p in dashboard("gpu-cost")["panels"] if p["title"] == title]
    return panel["targets"][0]["expr"].replace("$namespace", ".*").replace("$__range", f"{END}s")


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("GPU cost per team per day (USD)", {"vision": 11.344, "nlp": 3.018}),
        ("GPU-hours per team per day", {"vision": 8.0, "nlp": 3.0, "audio": 1.0}),
        ("Busy GPU-hours per team per day", {"vision": 4.0, "nlp": 0.6, "audio": 0.9}),
        ("Cost per team in the time range (USD)", {"vision": 11.344, "nlp": 3.018}),
    ],
)
def test_the_cost_dashboard_shows_each_teams_hand_computed_day(recorded, title, expected):
    # The synthetic hours all fall in one UTC day, so the day's bar is the whole of it.
    found = Evaluator(recorded).query(_dashboard_query(title), END)
    assert isinstance(found, dict)
    assert {dict(key)["namespace"]: round(value, 6) for key, value in found.items()} == expected


def test_the_cost_dashboard_labels_spot_rows_as_the_on_demand_ceiling(recorded):
    # Prometheus has no spot prices: the dashboard says which rows are a ceiling rather than what spot billed.
    found = Evaluator(recorded).query(
        _dashboard_query("Cost per team, pool and capacity type in the time range (USD)"), END
    )
    assert isinstance(found, dict)
    assert {
        (labels["namespace"], labels["capacity_type"], labels["price"]): round(value, 6)
        for labels, value in ((dict(key), value) for key, value in found.items())
    } == {("vision", "on-demand", "on-demand"): 11.344, ("nlp", "spot", "on-demand ceiling"): 3.018}


def test_the_cost_dashboard_draws_one_bar_per_day():
    for panel in dashboard("gpu-cost")["panels"]:
        if panel["title"].endswith("per day") or panel["title"].endswith("per day (USD)"):
            assert panel["interval"] == "1d"
            assert "[1d]" in panel["targets"][0]["expr"]


# ------------------------------------------------------------------------------------------ the command, end to end


class _FakePrometheus(BaseHTTPRequestHandler):
    """Prometheus' `/api/v1/query`, answered by the test's evaluator over the synthetic series (DAY is t = 0)."""

    store: Store

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        params = urllib.parse.parse_qs(url.query)
        if url.path != "/api/v1/query":
            self._send(404, {"status": "error", "error": "not found"})
            return
        try:
            at = float(params["time"][0]) - DAY.timestamp()
            found = Evaluator(self.store).query(params["query"][0], at)
        except (KeyError, ValueError, NotImplementedError) as error:
            self._send(400, {"status": "error", "errorType": "bad_data", "error": str(error)})
            return
        assert isinstance(found, dict)
        result = [{"metric": dict(key), "value": [at, repr(value)]} for key, value in found.items()]
        self._send(200, {"status": "success", "data": {"resultType": "vector", "result": result}})

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A local HTTP server answering with `handler` while the block runs; its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def prometheus(recorded):
    with serving(type("Handler", (_FakePrometheus,), {"store": recorded})) as url:
        yield url


#: "Now", after the month the synthetic hours fall in.
NOW = datetime(2026, 7, 3, tzinfo=UTC)


def test_the_bill_per_team_reads_gpu_hours_and_dollars_from_prometheus(prometheus):
    bill = team_bill(http_query(prometheus), DAY, DAY + timedelta(hours=HOURS), prometheus)
    assert bill.covered_hours == HOURS
    # per team: GPU-hours, USD, GPU-hours not priced, USD at the on-demand list price
    assert bill.team_totals() == {
        "audio": (Decimal(1), Decimal(0), Decimal(1), Decimal(0)),
        "nlp": (Decimal(3), Decimal("3.018"), Decimal(0), Decimal("3.018")),
        "vision": (Decimal(8), Decimal("11.344"), Decimal(0), Decimal("11.344")),
    }
    lines = {line.team: line for line in bill.lines}
    assert lines["audio"].usd is None  # not priced, never $0
    nlp = lines["nlp"]
    assert (nlp.pool, nlp.capacity_type, nlp.instance_type) == ("gpu-infer", "spot", "g5.xlarge")
    assert nlp.price == "on-demand ceiling"  # until the spot price history prices it
    assert lines["vision"].busy_gpu_hours == 4


def _command(capsys, *argv):
    status = cli.main(["--by-team", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_the_command_prints_a_months_bill_per_team_with_what_prometheus_covered(prometheus, capsys, monkeypatch):
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    status, out, err = _command(
        capsys, "--from", "2026-06-01", "--to", "2026-07-01", "--prometheus", prometheus, "--no-spot-prices"
    )
    assert status == 0, err
    assert "vision: 8.0 GPU-hours, $11.34" in out
    assert "nlp: 3.0 GPU-hours, $3.02" in out
    assert "audio: 1.0 GPU-hours, $0.00 (1.0 GPU-hours not priced)" in out
    assert "not priced" in out  # audio's line
    assert "cost samples for 3.0 of the range's 720.0 hours" in out
    # These rules were given no GPU counts: no pool series, and the bill says the unallocated part is unknown.
    assert "the unallocated GPU-hours are not known" in out
    status, out, err = _command(
        capsys, "--from", "2026-06-01", "--to", "2026-07-01", "--prometheus", prometheus, "--json", "--no-spot-prices"
    )
    document = json.loads(out)
    assert document["hours"] == "720"
    assert Decimal(document["coveredHours"]) == HOURS
    assert Decimal(document["teams"]["vision"]["usd"]) == Decimal("11.344")


@pytest.mark.subprocess
def test_python_m_components_cost_is_the_same_command_under_the_name_the_docs_give(prometheus, capsys, monkeypatch):
    argv = ["--by-team", "--from", "2026-06-01", "--to", "2026-07-01", "--prometheus", prometheus, "--no-spot-prices"]
    argv.append("--json")
    monkeypatch.setattr(by_team, "_now", lambda: NOW)  # the process below reads the real clock, past --to too
    assert cli.main(argv) == 0
    expected = capsys.readouterr().out
    run = subprocess.run([sys.executable, "-m", "components.cost", *argv], capture_output=True, text=True, cwd=REPO)
    assert (run.returncode, run.stderr) == (0, "")
    assert json.loads(run.stdout) == json.loads(expected)
    assert Decimal(json.loads(run.stdout)["teams"]["vision"]["gpuHours"]) == 8
    # Its usage names it, not the module it delegates to.
    run = subprocess.run(
        [sys.executable, "-m", "components.cost", "--by-team"], capture_output=True, text=True, cwd=REPO
    )
    assert run.returncode == 2
    assert run.stderr.startswith("usage: python -m components.cost ")
    assert "python -m components.cost: error: --by-team needs --from and --to" in run.stderr


def test_a_range_without_cost_samples_is_an_error_not_a_zero_bill(prometheus, capsys, monkeypatch):
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    status, out, err = _command(
        capsys, "--from", "2026-05-01", "--to", "2026-06-01", "--prometheus", prometheus, "--region", "us-west-2"
    )
    assert (status, out) == (1, "")
    assert "has no GPU cost samples between 2026-05-01 and 2026-06-01" in err


def test_an_unreachable_prometheus_is_named_with_how_to_reach_it(capsys, monkeypatch):
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakePrometheus)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    server.server_close()  # nothing listens there any more
    status, out, err = _command(
        capsys, "--from", "2026-06-01", "--to", "2026-07-01", "--prometheus", url, "--no-spot-prices"
    )
    assert (status, out) == (1, "")
    assert f"cannot reach Prometheus at {url}" in err
    assert "port-forward svc/kube-prometheus-stack-prometheus 9090" in err


def test_a_query_prometheus_refuses_is_reported_with_its_reason(prometheus):
    with pytest.raises(PrometheusError, match="refused the query \\(400\\)"):
        http_query(prometheus)("holt_winters(x[1m], 0.5, 0.5)", NOW.timestamp())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--from", "2026-06-31", "--to", "2026-07-01"], "--from: expected a date as YYYY-MM-DD, got '2026-06-31'"),
        (["--from", "2026-06-01", "--to", "July"], "--to: expected a date as YYYY-MM-DD, got 'July'"),
        (["--from", "2026-06-01"], "--by-team needs --from and --to"),
        (["--from", "2026-06-01", "--to", "2026-06-01"], "--to (2026-06-01) must be after --from (2026-06-01)"),
        (["--from", "2026-07-01", "--to", "2026-08-01"], "--to (2026-08-01) is in the future"),
        (
            ["--from", "2026-06-01", "--to", "2026-07-01", "--prometheus", "localhost:9090"],
            "--prometheus: expected an http:// or https:// URL, got 'localhost:9090'",
        ),
        (
            ["--from", "2026-06-01", "--to", "2026-07-01"],
            "name the stack (--stack NAME) or its region (--region REGION), or pass --no-spot-prices",
        ),
        (
            ["--from", "2026-06-01", "--to", "2026-07-01", "--region", "oregon"],
            "--region: expected an AWS region like 'us-west-2', got 'oregon'",
        ),
        (
            ["--from", "2026-06-01", "--to", "2026-07-01", "--region", "us-west-2", "--stack", "prod"],
            "argument --stack: not allowed with argument --region",
        ),
        (
            ["--from", "2026-06-01", "--to", "2026-07-01", "--region", "us-west-2", "--project-dir", "."],
            "--project-dir names the folder of --stack's Pulumi.yaml: give --stack too",
        ),
        (
            [*("--from", "2026-06-01", "--to", "2026-07-01", "--no-spot-prices"), "--amp-workspace-url", "x.y/ws"],
            "--amp-workspace-url: expected an http:// or https:// URL, got 'x.y/ws'",
        ),
        (
            [
                *("--from", "2026-06-01", "--to", "2026-07-01", "--no-spot-prices"),
                *("--amp-workspace-url", "https://prometheus.example.com/workspaces/ws-1"),
            ],
            "--amp-workspace-url: its host names no region (aps-workspaces.<region>.amazonaws.com): give the region",
        ),
        (
            [
                *("--from", "2026-06-01", "--to", "2026-07-01", "--region", "us-west-2"),
                *("--prometheus", "http://localhost:9090", "--amp-workspace-url", "https://h/workspaces/ws-1"),
            ],
            "argument --amp-workspace-url: not allowed with argument --prometheus",
        ),
    ],
)
def test_bad_arguments_are_refused_naming_the_flag(argv, message, capsys, monkeypatch):
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--by-team", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


# --------------------------------------------------------------------------------- spot GPU-hours at spot prices

JUNE = ("--from", "2026-06-01", "--to", "2026-07-01")


def _spot_answer(ec2, zones=()):
    """June's g5.xlarge history in two pages. us-west-2a: 0.40 when June opens, 0.70 from June 16 (half the month
    each: 0.55); us-west-2b: 0.45 all month. Averaged over the zones: 0.50 per hour, and a g5.xlarge has 1 GPU."""
    stub = Stubber(ec2)
    request = {
        "InstanceTypes": ["g5.xlarge"],
        "ProductDescriptions": ["Linux/UNIX"],
        "StartTime": datetime(2026, 6, 1, tzinfo=UTC),
        "EndTime": datetime(2026, 7, 1, tzinfo=UTC),
    }
    if zones:
        request["Filters"] = [{"Name": "availability-zone", "Values": list(zones)}]

    def entry(zone, at, usd):
        return {"InstanceType": "g5.xlarge", "AvailabilityZone": zone, "Timestamp": at, "SpotPrice": usd}

    stub.add_response(
        "describe_spot_price_history",
        {
            "SpotPriceHistory": [
                entry("us-west-2a", datetime(2026, 5, 20, 7, 12, tzinfo=UTC), "0.400000"),
                entry("us-west-2a", datetime(2026, 6, 16, tzinfo=UTC), "0.700000"),
            ],
            "NextToken": "2",
        },
        request,
    )
    stub.add_response(
        "describe_spot_price_history",
        {"SpotPriceHistory": [entry("us-west-2b", datetime(2026, 5, 28, tzinfo=UTC), "0.450000")], "NextToken": ""},
        {**request, "NextToken": "2"},
    )
    stub.activate()
    return stub


def _ec2(monkeypatch, zones=()):
    """A stubbed EC2 client for the command, and where the command asked for it."""
    ec2 = boto3.client("ec2", region_name="us-west-2")
    stub = _spot_answer(ec2, zones)
    asked = []

    def client(profile, region):
        asked.append((profile, region))
        return ec2

    monkeypatch.setattr(by_team, "_ec2_client", client)
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    return stub, asked


def test_spot_gpu_hours_are_priced_at_the_months_spot_price_beside_the_on_demand_ceiling(
    prometheus, capsys, monkeypatch
):
    stub, asked = _ec2(monkeypatch)
    status, out, err = _command(capsys, *JUNE, "--prometheus", prometheus, "--region", "us-west-2")
    assert status == 0, err
    stub.assert_no_pending_responses()
    assert asked == [(None, "us-west-2")]
    # nlp: 3 spot GPU-hours × $0.50 = $1.50, against $3.018 at the on-demand list price
    assert "nlp: 3.0 GPU-hours, $1.50 (at the on-demand list price: $3.02)" in out
    (nlp,) = [line for line in out.splitlines() if line.startswith("nlp ")]
    assert nlp.split()[-3:] == ["$3.02", "$1.50", "spot"]  # on-demand USD, USD, price
    assert "vision: 8.0 GPU-hours, $11.34\n" in out  # on-demand only: unchanged
    assert "g5.xlarge: $0.5000 per hour, $0.5000 per GPU-hour, over us-west-2a, us-west-2b." in out
    assert "every AZ of us-west-2 with a price" in out


def test_the_json_bill_says_which_price_each_line_used(prometheus, capsys, monkeypatch):
    _ec2(monkeypatch)
    status, out, err = _command(capsys, *JUNE, "--prometheus", prometheus, "--region", "us-west-2", "--json")
    assert status == 0, err
    document = json.loads(out)
    assert document["teams"]["nlp"] == {
        "gpuHours": "3.0000",
        "usd": "1.5000",
        "unpricedGpuHours": "0",
        "onDemandUsd": "3.0180",
    }
    assert {line["team"]: line["price"] for line in document["lines"]} == {
        "audio": "not priced",
        "nlp": "spot",
        "vision": "on-demand",
    }
    assert document["spotPrices"] == {
        "region": "us-west-2",
        "productDescription": "Linux/UNIX",
        "zones": "all",
        "types": {
            "g5.xlarge": {"usdPerHour": "0.5000", "usdPerGpuHour": "0.5000", "zones": ["us-west-2a", "us-west-2b"]}
        },
    }


def test_with_a_stack_the_prices_are_its_regions_and_azs_read_with_its_profile(prometheus, capsys, monkeypatch):
    config = stack_config(REPO, "prod")
    stub, asked = _ec2(monkeypatch, zones=config.network.availability_zones)
    status, out, err = _command(
        capsys, *JUNE, "--prometheus", prometheus, "--stack", "prod", "--project-dir", str(REPO)
    )
    assert status == 0, err
    stub.assert_no_pending_responses()  # the request named prod's AZs
    assert asked == [(config.profile, config.region)]
    assert f"the stack's AZs ({', '.join(config.network.availability_zones)})" in out


def test_no_spot_prices_keeps_the_list_price_and_calls_no_aws_api(prometheus, capsys, monkeypatch):
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    monkeypatch.setattr(by_team, "_ec2_client", lambda *_: pytest.fail("--no-spot-prices called AWS"))
    status, out, err = _command(capsys, *JUNE, "--prometheus", prometheus, "--no-spot-prices")
    assert status == 0, err
    assert "nlp: 3.0 GPU-hours, $3.02\n" in out
    (nlp,) = [line for line in out.splitlines() if line.startswith("nlp ")]
    assert nlp.split()[-4:] == ["$3.02", "$3.02", "on-demand", "ceiling"]
    assert "Spot GPU-hours at the on-demand list price (--no-spot-prices)" in out


def test_no_spot_prices_goes_with_the_stack_the_readme_names_and_calls_no_aws_api(prometheus, capsys, monkeypatch):
    # The README's command names --stack prod; adding --no-spot-prices to it keeps the list price.
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    monkeypatch.setattr(by_team, "_ec2_client", lambda *_: pytest.fail("--no-spot-prices called AWS"))
    status, out, err = _command(
        capsys, *JUNE, "--prometheus", prometheus, "--stack", "prod", "--project-dir", str(REPO), "--no-spot-prices"
    )
    assert status == 0, err
    (nlp,) = [line for line in out.splitlines() if line.startswith("nlp ")]
    assert nlp.split()[-4:] == ["$3.02", "$3.02", "on-demand", "ceiling"]


def test_a_spot_type_without_history_stays_at_the_on_demand_ceiling_and_says_so(prometheus, capsys, monkeypatch):
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    ec2 = boto3.client("ec2", region_name="us-west-2")
    with Stubber(ec2) as stub:
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []})
        monkeypatch.setattr(by_team, "_ec2_client", lambda *_: ec2)
        status, out, err = _command(capsys, *JUNE, "--prometheus", prometheus, "--region", "us-west-2")
    assert status == 0, err
    assert "nlp: 3.0 GPU-hours, $3.02\n" in out
    assert "g5.xlarge: no spot price in the range; priced at the on-demand ceiling." in out


def test_without_credentials_the_command_says_how_to_sign_in_or_skip_spot_prices(
    prometheus, capsys, monkeypatch, no_aws_credentials
):
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    status, out, err = _command(capsys, *JUNE, "--prometheus", prometheus, "--region", "us-west-2")
    assert (status, out) == (1, "")
    assert "error: cannot read EC2's spot price history in us-west-2: Unable to locate credentials" in err
    assert "ec2:DescribeSpotPriceHistory" in err
    assert "--no-spot-prices" in err


def test_access_denied_names_the_permission_the_command_needs(prometheus, capsys, monkeypatch):
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    ec2 = boto3.client("ec2", region_name="us-west-2")
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_spot_price_history", "UnauthorizedOperation", "not authorized", 403)
        monkeypatch.setattr(by_team, "_ec2_client", lambda *_: ec2)
        status, out, err = _command(capsys, *JUNE, "--prometheus", prometheus, "--region", "us-west-2")
    assert (status, out) == (1, "")
    assert "the credentials may not call ec2:DescribeSpotPriceHistory (UnauthorizedOperation)" in err


def test_the_stack_estimate_still_needs_its_stack(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--json"])
    assert exit_.value.code == 2
    assert "--stack" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ in the stack


def test_the_stack_installs_the_cost_rules_priced_for_its_region_and_the_labels_they_join_on(prod):
    rule = prod.one("kubernetes:monitoring.coreos.com/v1:PrometheusRule", "observability-cost-rules")
    assert rule.inputs["metadata"] == {"name": "gpu-cost", "namespace": "monitoring"}
    rules = rule.inputs["spec"]["groups"][0]["rules"]
    priced = {
        r["labels"]["instance_type"]: Decimal(r["expr"][7:-1]) for r in rules if r["record"] == cost.GPU_HOUR_PRICE
    }
    assert priced == dict(gpu_hour_prices("us-west-2"))  # prod runs in us-west-2
    assert {"g5.xlarge", "g4dn.xlarge", "p4d.24xlarge"} <= set(priced)  # types prod's GPU pools launch
    # The GPUs of each type, from which the rules count what the pools ran and the unallocated GPUs.
    gpus = {r["labels"]["instance_type"]: r["expr"] for r in rules if r["record"] == cost.INSTANCE_GPUS}
    assert (gpus["p4d.24xlarge"], gpus["g5.12xlarge"], gpus["g5.xlarge"]) == ("vector(8)", "vector(4)", "vector(1)")
    assert {cost.POOL_GPUS, cost.GPUS_UNALLOCATED} <= {r["record"] for r in rules}
    release = prod.release("kube-prometheus-stack")
    assert release.inputs["values"]["kube-state-metrics"]["metricLabelsAllowlist"] == cost.ksm_label_allowlist()
    assert release.urn in rule.dependencies  # its CRD comes with the release


# ------------------------------------------------------------------------------- Amazon Managed Prometheus (SigV4)

#: The credentials the tests sign with (read from the environment, as boto3 does).
FAKE_KEYS = ("AKIDTEST", "test-signing-key")
WORKSPACE = "/workspaces/ws-test"
_AUTHORIZATION = re.compile(
    rf"AWS4-HMAC-SHA256 Credential={FAKE_KEYS[0]}/(?P<day>[0-9]{{8}})/us-west-2/aps/aws4_request, "
    r"SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<signature>[0-9a-f]{64})"
)


class _FakeAmp(_FakePrometheus):
    """An AMP workspace's query API: refuses (403) a request whose SigV4 signature for `aps` in us-west-2 is not
    the one the test's keys give over the request as received, else answers as the fake Prometheus."""

    signed: list[str]

    def do_GET(self):
        found = _AUTHORIZATION.fullmatch(self.headers.get("Authorization", ""))
        date = self.headers.get("X-Amz-Date", "")
        if not found or not date.startswith(found["day"]) or not self.path.startswith(f"{WORKSPACE}/api/v1/query?"):
            self._send(403, {"message": "missing or malformed signature"})
            return
        assert found["signed"].split(";") == ["host", "x-amz-date"]
        request = AWSRequest(method="GET", url=f"http://{self.headers['Host']}{self.path}")
        request.headers["X-Amz-Date"] = date
        request.context["timestamp"] = date
        signer = SigV4Auth(Credentials(*FAKE_KEYS), "aps", "us-west-2")
        if (
            signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
            != found["signature"]
        ):
            self._send(403, {"message": "signature does not match"})
            return
        self.signed.append(self.path)
        self.path = self.path.removeprefix(WORKSPACE)
        super().do_GET()


@pytest.fixture
def amp(recorded, no_aws_credentials, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEYS[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_KEYS[1])
    # a subclass per test, for its own store and list of signed requests
    handler = cast(type[_FakeAmp], type("Handler", (_FakeAmp,), {"store": recorded, "signed": []}))
    with serving(handler) as url:
        yield f"{url}{WORKSPACE}", handler.signed


def test_amazon_managed_prometheus_is_read_with_sigv4_signed_queries(amp, capsys, monkeypatch):
    url, signed = amp
    stub, _ = _ec2(monkeypatch)
    status, out, err = _command(capsys, *JUNE, "--amp-workspace-url", url, "--region", "us-west-2")
    assert status == 0, err
    stub.assert_no_pending_responses()
    assert f"from {url}" in out
    assert "vision: 8.0 GPU-hours, $11.34" in out
    assert "nlp: 3.0 GPU-hours, $1.50 (at the on-demand list price: $3.02)" in out
    assert len(signed) == 6  # coverage, held, busy, cost, pool GPUs, pool cost: every query signed
    assert all("%20" in path and "+" not in path for path in signed[1:])  # spaces as SigV4 encodes them


def test_an_unsigned_query_to_the_workspace_is_refused_naming_the_permission(amp):
    url, _ = amp
    with pytest.raises(PrometheusError, match=r"refused the query \(403\)"):
        http_query(url)("up", NOW.timestamp())
    signer = sigv4_signer(Credentials(FAKE_KEYS[0], "another-key"), "us-west-2")
    with pytest.raises(
        PrometheusError, match=r"\(403\): signature does not match \(the signing identity needs aps:QueryMetrics\)"
    ):
        http_query(url, signer)("up", NOW.timestamp())


def test_without_credentials_amp_cannot_be_signed_and_the_command_says_so(capsys, monkeypatch, no_aws_credentials):
    monkeypatch.setattr(by_team, "_now", lambda: NOW)
    url = "https://aps-workspaces.eu-central-1.amazonaws.com/workspaces/ws-1"
    status, out, err = _command(capsys, *JUNE, "--amp-workspace-url", url, "--no-spot-prices")
    assert (status, out) == (1, "")
    assert "cannot sign queries to Amazon Managed Prometheus in eu-central-1: no AWS credentials found" in err
    assert "aps:QueryMetrics" in err


@pytest.mark.parametrize(
    ("host", "region"),
    [
        ("aps-workspaces.eu-central-1.amazonaws.com", "eu-central-1"),
        ("vpce-0a1b-c2d3.aps-workspaces.us-west-2.vpce.amazonaws.com", "us-west-2"),
        ("aps-workspaces.cn-north-1.amazonaws.com.cn", "cn-north-1"),
        ("prometheus.example.com", None),
    ],
)
def test_the_signing_region_comes_from_the_workspace_host(host, region):
    assert workspace_region(host) == region
