"""The dev stack's life on the real engine: the previous release deployed, upgraded in place by this one, parts turned
off and on again, and destroyed, with a fault struck in the middle of three of those runs and repaired the way
docs/runbook.md tells a user.

The faults: the CLI killed with SIGKILL while KServe's Helm release is being installed; the API server killed and
started again while kube-prometheus-stack's release is being installed; the CLI killed while the GPU Operator's
release is being uninstalled by `pulumi destroy`. After each, the runbook's repair commands run as written, the run
is repeated, and the stack converges: no pending operation, one Helm release per release in the state, and a
preview that finds nothing to change.

The steps run in file order on one deployment (module fixtures), as a user runs them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from components.tools.charts.binary import helm_binary
from engine.cluster import Box
from engine.faults import Fault, repair, rerun_env, rerun_up, run_with_fault
from engine.kube import Kube
from engine.stack import REPO, Deployment, boxed_stack
from engine.upgrade import PREVIOUS, checkout
from tests.engine.conftest import Timings
from tests.engine.convergence import converged

pytestmark = [pytest.mark.engine, pytest.mark.subprocess]

RELEASE = "kubernetes:helm.sh/v3:Release"
#: Step kinds that replace a resource: an upgrade must show none.
REPLACING = {"replace", "create-replacement", "delete-replaced", "discard-replaced"}
#: Resources an upgrade from PREVIOUS may delete, with the CHANGELOG entry that says why: none.
UPGRADE_DELETES: dict[str, str] = {}


class Life:
    def __init__(self, box: Box, kube: Kube, deployment: Deployment) -> None:
        self.box, self.kube, self.deployment = box, kube, deployment


@pytest.fixture(scope="module")
def life(
    engine_bin: Path, dev_preview: Path, tmp_path_factory: pytest.TempPathFactory, timings: Timings
) -> Iterator[Life]:
    folder = tmp_path_factory.mktemp("lifecycle")
    helm_binary()  # the repair tool's Helm, into the cache before the box (no network inside)
    previous = checkout(PREVIOUS, folder / "previous")
    box = Box(engine_bin, folder / "box")
    try:
        with timings.timed("lifecycle: start the box"):
            kube, deployment = boxed_stack(box, dev_preview, engine_bin, folder, source=previous, code=previous)
        deployment.prepare()
        with timings.timed(f"lifecycle: pulumi up of {PREVIOUS.tag}"):
            deployment.up()
        yield Life(box, kube, deployment)
    finally:
        box.stop()


def _steps(events: Path) -> list[tuple[str, str, str]]:
    """(op, type, urn) of every step the engine started, from a run's event log."""
    found = []
    for line in events.read_text().splitlines():
        event = json.loads(line)
        if "resourcePreEvent" in event:
            meta = event["resourcePreEvent"]["metadata"]
            found.append((meta["op"], meta["type"], meta["urn"]))
    return found


def test_the_current_release_upgrades_the_previous_in_place(life: Life, timings: Timings) -> None:
    """`git pull` and `pulumi up`: nothing replaced, nothing deleted, every resource keeps its ID (renamed ones
    through their aliases), and the upgraded stack previews clean."""
    before = {(r["type"], r.get("id")) for r in life.deployment.resources() if r.get("id")}
    life.deployment.upgrade_to(REPO)
    events = life.deployment.folder / "upgrade.events"
    with timings.timed(f"lifecycle: pulumi up from {PREVIOUS.tag} to this tree"):
        life.deployment.up("--event-log", str(events))
    steps = _steps(events)
    assert [s for s in steps if s[0] in REPLACING] == []
    deleted = [urn for op, _, urn in steps if op == "delete"]
    assert sorted(set(deleted) - set(UPGRADE_DELETES)) == []
    after = {(r["type"], r.get("id")) for r in life.deployment.resources() if r.get("id")}
    kept = {(t, i) for t, i in before if not t.startswith("pulumi:providers:")}
    assert sorted(kept - after) == []
    with timings.timed("lifecycle: preview after the upgrade"):
        life.deployment.preview_no_changes()


def test_every_crd_a_pinned_chart_ships_is_served_at_the_chart_s_versions(life: Life) -> None:
    """Helm installs a chart's `crds/` once and never upgrades them: after the upgrade, each such CRD in the cluster
    serves exactly the versions the pinned chart declares."""
    charts = {
        r["inputs"]["name"]: Path(r["inputs"]["chart"])
        for r in life.deployment.resources()
        if r["type"] == RELEASE and not r["inputs"].get("skipCrds")
    }
    declared: dict[str, set[str]] = {}
    for chart in charts.values():
        for path in _crd_files(chart):
            # Every scalar a string: some CRD schemas hold a bare `=`, which the safe loader refuses.
            for doc in yaml.load_all(path.read_text(), Loader=yaml.BaseLoader):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    versions = doc["spec"]["versions"]
                    declared[doc["metadata"]["name"]] = {v["name"] for v in versions if v.get("served") == "true"}
    assert declared  # the GPU Operator's and kube-prometheus-stack's among them
    served = {c["metadata"]["name"]: c for c in life.kube.items("customresourcedefinitions")}
    wrong = {
        name: (versions, {v["name"] for v in served[name]["spec"]["versions"] if v.get("served")})
        for name, versions in declared.items()
        if name not in served or {v["name"] for v in served[name]["spec"]["versions"] if v.get("served")} != versions
    }
    assert wrong == {}


def _crd_files(chart: Path) -> list[Path]:
    """The files of a chart's `crds/` folder and of its subcharts' (Helm's own: untemplated, installed once)."""
    found = sorted(chart.glob("crds/**/*.yaml"))
    for sub in sorted((chart / "charts").glob("*/")):
        found += _crd_files(sub)
    return found


def _set(deployment: Deployment, values: dict[str, str | None]) -> None:
    """`pulumi config set --path` each key (`rm` where the value is None), as a user edits the stack's settings."""
    for key, value in values.items():
        path = f"eks-ml-platform:{key}"
        if value is None:
            deployment.pulumi("config", "rm", "--path", "--", path, timeout=120)
        else:
            deployment.set_config(path, value, "--path")


#: dev's reserve for team stacks, which its stack file sets and which the config refuses while Kueue is off.
TEAM_STACK_GPUS = str(
    yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())["config"]["eks-ml-platform:kueue"]["teamStackGpus"]
)


def test_turning_parts_off_and_kserve_on_converges_after_the_cli_is_killed(life: Life, timings: Timings) -> None:
    """Kueue and observability off, KServe on, in one `up`; the CLI is killed while KServe's release is being
    installed. The killed CLI's plugins run on (they would finish or break what they were doing); the runbook stops
    them, clears the lock, settles what the cut install left and refreshes; the repeated `up` converges."""
    parts = {"kueue.enabled": "false", "kueue.teamStackGpus": None, "observability.enabled": "false"}
    _set(life.deployment, {**parts, "kubeflow.components.kserve": "true"})
    with timings.timed("lifecycle: up killed while KServe installs"):
        struck = run_with_fault(life.deployment, "up", Fault(RELEASE, "kserve", "create", delay=3))
    assert struck.returncode is None
    assert any("pulumi-resource-kubernetes" in p for p in life.deployment.box.strays())
    life.deployment.box.stop_strays()  # the runbook's first step
    with timings.timed("lifecycle: runbook repair after the kill"):
        repaired = repair(life.deployment)
    with timings.timed("lifecycle: up again after the kill"):
        rerun_up(life.deployment, rerun_env(repaired))
    converged(life.kube, life.deployment, timings, "parts off and KServe on", step="lifecycle")
    releases = {r["urn"].rsplit("::", 1)[-1] for r in life.deployment.resources() if r["type"] == RELEASE}
    assert {"kserve", "kserve-crd"} <= releases
    assert not releases & {"kueue", "observability", "observability-metrics-adapter"}


def test_turning_them_back_converges_after_the_api_server_goes_away(life: Life, timings: Timings) -> None:
    """Back as dev ships them; the API server is killed for 20 s while kube-prometheus-stack installs. The run
    finishes or fails on its own; the runbook's repair and a repeated `up` converge either way."""
    parts = {"kueue.enabled": "true", "kueue.teamStackGpus": TEAM_STACK_GPUS, "observability.enabled": "true"}
    _set(life.deployment, {**parts, "kubeflow.components.kserve": "false"})
    with timings.timed("lifecycle: up with the API server down for 20 s"):
        run_with_fault(
            life.deployment, "up", Fault(RELEASE, "observability", "create", delay=5, action="api-down", down_for=20)
        )
    assert life.deployment.box.strays() == []
    with timings.timed("lifecycle: runbook repair after the API server came back"):
        repaired = repair(life.deployment)
    with timings.timed("lifecycle: up again after the API server came back"):
        rerun_up(life.deployment, rerun_env(repaired))
    converged(life.kube, life.deployment, timings, "parts back on", step="lifecycle")


def test_destroy_killed_midway_finishes_after_the_runbook(life: Life, timings: Timings) -> None:
    with timings.timed("lifecycle: destroy killed while the GPU Operator uninstalls"):
        struck = run_with_fault(life.deployment, "destroy", Fault(RELEASE, "gpu-operator", "delete", delay=2))
    assert struck.returncode is None
    life.deployment.box.stop_strays()  # the runbook's first step
    with timings.timed("lifecycle: runbook repair after the killed destroy"):
        repair(life.deployment)
    with timings.timed("lifecycle: destroy again"):
        life.deployment.destroy()
    state = life.deployment.state()["deployment"]
    assert [r["type"] for r in state.get("resources") or [] if r["type"] != "pulumi:pulumi:Stack"] == []
    assert state.get("pending_operations") in (None, [])
