"""A first `pulumi up` of the dev stack cut again and again, at a spread of points one part after another, each
time repaired the way docs/runbook.md tells a user, until it converges.

First, the CLI is killed while AWS makes a resource: the EKS control plane's log group (`/aws/eks/<cluster>/cluster`),
a name the stack gives itself, and among the first things `up` creates (it depends on nothing). The fake AWS provider
takes its time over that one create (`SLOW_CREATE_ENV`), so the CLI is killed while it is in flight, once every
other step has ended; the provider had asked AWS already, so the log group exists and the state does not know it.
The recovery tool stops and names it; with the pending create cleared and the leftover kept, the next `up` fails on
the name (why the runbook deletes it); the runbook's AWS path (look it up, delete it, clear the pending create)
follows.

Then each `up` is killed while it makes a step of the next part (`SPREAD`): Karpenter's release, the FSx CSI
driver's, the load balancer controller's, cert-manager's, Kueue's and a Kubeflow Deployment; each is repaired by the
runbook's block and the next `up` goes on from there. (KServe's release, kube-prometheus-stack's and the GPU
Operator's uninstall are struck in test_lifecycle.py.) The last `up` converges. The steps run in file order on one
deployment.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from components.tools.charts.binary import helm_binary
from engine.cluster import Box
from engine.faults import (
    Fault,
    RunbookStopped,
    aws_commands,
    aws_leftovers,
    named_creates,
    repair,
    rerun_env,
    rerun_up,
    run_as_written,
    run_with_fault,
    runbook_block,
)
from engine.kube import Kube
from engine.providers.account import Account
from engine.providers.aws import SLOW_CREATE_ENV
from engine.stack import Deployment, boxed_stack
from tests.engine.conftest import Timings
from tests.engine.convergence import converged

pytestmark = [pytest.mark.engine, pytest.mark.subprocess]

LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
#: One step of each part a first `up` goes on to make, in about the order it makes them: each is struck 2 s after
#: the engine starts it.
SPREAD = (
    Fault(RELEASE, "karpenter", "create"),  # node-level: Karpenter's controller
    Fault(RELEASE, "ingress", "create"),  # the load balancer controller
    Fault(RELEASE, "storage-fsx-csi", "create"),  # storage: the FSx CSI driver
    Fault(RELEASE, "cert-manager", "create"),  # a platform add-on
    Fault(RELEASE, "kueue", "create"),  # the GPU queues
    Fault("kubernetes:apps/v1:Deployment", "kubeflow-deployment-kubeflow-dashboard", "create"),  # Kubeflow
)
#: The control plane's log group (components/cluster), and its physical name in dev.
LOGICAL = "cluster-control-plane"
NAME = "/aws/eks/eks-ml-platform-dev/cluster"


@dataclass
class Run:
    box: Box
    kube: Kube
    deployment: Deployment
    #: What the recovery tool named: URN -> the inputs it says to look the resource up by.
    named: dict[str, dict[str, object]] = field(default_factory=dict)
    #: What the runbook's step 3 sets for the next run (the upsert setting, when the tool asks for it).
    env: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def run(
    engine_bin: Path, dev_preview: Path, tmp_path_factory: pytest.TempPathFactory, timings: Timings
) -> Iterator[Run]:
    folder = tmp_path_factory.mktemp("aws-fault")
    helm_binary()  # the repair tool's Helm, into the cache before the box (no network inside)
    box = Box(engine_bin, folder / "box")
    try:
        with timings.timed("aws fault: start the box"):
            kube, deployment = boxed_stack(box, dev_preview, engine_bin, folder)
        deployment.prepare()
        yield Run(box, kube, deployment)
    finally:
        box.stop()


def _log_groups(run: Run) -> list[str]:
    """The account's log groups of the cluster (FSx's goes to a group of its own, `/aws/fsx/...`)."""
    groups = [state["name"] for _, state in Account(run.box.folder / "account").of_type(LOG_GROUP)]
    return [name for name in groups if name.startswith("/aws/eks/")]


def test_the_cli_killed_while_aws_makes_the_log_group_leaves_it_made_and_the_tool_names_it(
    run: Run, timings: Timings
) -> None:
    slow = {SLOW_CREATE_ENV: f"{LOG_GROUP}::{LOGICAL}=1800"}
    with timings.timed("aws fault: up killed while the log group is created"):
        struck = run_with_fault(
            run.deployment, "up", Fault(LOG_GROUP, LOGICAL, "create", delay=5, alone=True), timeout=1200, env=slow
        )
    assert struck.returncode is None
    assert _log_groups(run) == [NAME]  # made in the account, though the CLI never heard back
    strays = run.box.strays()
    assert any("-m engine.providers.aws" in p for p in strays), strays  # the fake aws plugin, still creating it
    run.box.stop_strays()  # the runbook's first step
    with pytest.raises(RunbookStopped) as stopped:
        repair(run.deployment)
    run.named = named_creates(stopped.value.result.stderr)
    assert [(urn.rsplit("::", 1)[-1], inputs.get("name")) for urn, inputs in run.named.items()] == [(LOGICAL, NAME)]


def test_with_the_leftover_kept_the_next_up_fails_on_its_name(run: Run, timings: Timings) -> None:
    """Skipping the delete: the pending create cleared, `up` makes the log group again, and AWS refuses the name."""
    run_as_written(run.deployment, runbook_block("repair-aws"))
    with timings.timed("aws fault: up with the leftover kept"):
        failed = run.deployment.pulumi(
            "up", "--yes", "--skip-preview", "--stack", run.deployment.stack, timeout=3600, check=False
        )
    assert failed.returncode != 0
    assert f"creating CloudWatch Logs Log Group ({NAME})" in failed.stdout + failed.stderr
    assert "ResourceAlreadyExistsException: The specified log group already exists" in failed.stdout + failed.stderr
    assert _log_groups(run) == [NAME]


def test_the_runbooks_aws_path_clears_the_leftover(run: Run, timings: Timings) -> None:
    """Look it up and delete it, and clear the pending create (a no-op now): nothing of the cut create is left."""
    (inputs,) = run.named.values()
    look_up, delete = aws_commands(LOG_GROUP)
    values = {key: value for key, value in inputs.items() if isinstance(value, str)}
    (found,) = run_as_written(run.deployment, [look_up], values)
    assert NAME in found.stdout
    run_as_written(run.deployment, [delete], values)
    assert _log_groups(run) == []
    with timings.timed("aws fault: runbook's AWS path"):
        run_as_written(run.deployment, runbook_block("repair-aws"))
    assert run.deployment.state()["deployment"].get("pending_operations") in (None, [])


def test_each_part_s_step_cut_in_turn_is_repaired_and_the_next_up_goes_on(run: Run, timings: Timings) -> None:
    """Each `up` killed while the next part's step is in flight, and repaired by the runbook's block. A step the
    previous runs made already (they run many steps at once) is passed over; most must be struck."""
    struck: list[str] = []
    env: dict[str, str] = {}
    for fault in SPREAD:
        made = {r["urn"].rsplit("::", 1)[-1] for r in run.deployment.resources() if r["type"] == fault.type_}
        if fault.name in made:
            continue
        with timings.timed(f"spread: up killed in {fault.name}"):
            cut = run_with_fault(run.deployment, "up", fault, timeout=1800, env=env)
        assert cut.returncode is None, cut.output[-2000:]
        struck.append(fault.name)
        run.box.stop_strays()
        with timings.timed(f"spread: repair after {fault.name}"):
            env = rerun_env(repair(run.deployment))
    assert len(struck) >= len(SPREAD) - 2, f"struck {struck} of {[f.name for f in SPREAD]}"
    run.env = env


def test_the_last_up_converges(run: Run, timings: Timings) -> None:
    """The stack converges: no pending operation, each Helm release once and deployed, the account holding each AWS
    resource of the state once and nothing else, and nothing left to change."""
    with timings.timed("spread: the last up, as the runbook's step 3"):
        rerun_up(run.deployment, run.env)
    assert aws_leftovers(run.deployment) == ([], [])
    assert _log_groups(run) == [NAME]
    converged(run.kube, run.deployment, timings, "the faults of a first up", step="spread")
