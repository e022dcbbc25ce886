"""A `pulumi up` of the dev stack killed while AWS makes a resource, and repaired the way docs/runbook.md tells a
user: the recovery tool stops and names it, the user finds it in the account with the aws CLI, deletes it, clears
the pending create, and runs `up` again.

The resource is the EKS control plane's log group (`/aws/eks/<cluster>/cluster`): a name the stack gives itself, and
among the first things `up` creates (it depends on nothing). The fake AWS provider takes its time over that one
create (`SLOW_CREATE_ENV`), so the CLI is killed while it is in flight, once every other step has ended; the
provider had asked AWS already, so the log group exists and the state does not know it.

Between the tool's stop and the delete, the steps show why the delete is in the runbook: with the pending create
cleared and the leftover kept, the next `up` fails on the name. The steps run in file order on one deployment.
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


def test_the_runbooks_aws_path_converges(run: Run, timings: Timings) -> None:
    """Look it up, delete it, clear the pending create (a no-op now), `up` again: the stack converges, and the account
    holds each AWS resource of the state once and nothing else."""
    (inputs,) = run.named.values()
    look_up, delete = aws_commands(LOG_GROUP)
    values = {key: value for key, value in inputs.items() if isinstance(value, str)}
    (found,) = run_as_written(run.deployment, [look_up], values)
    assert NAME in found.stdout
    run_as_written(run.deployment, [delete], values)
    assert _log_groups(run) == []
    with timings.timed("aws fault: runbook's AWS path"):
        run_as_written(run.deployment, runbook_block("repair-aws"))
    with timings.timed("aws fault: up again"):
        run.deployment.up()
    assert aws_leftovers(run.deployment) == ([], [])
    assert _log_groups(run) == [NAME]
    converged(run.kube, run.deployment, timings, "the AWS fault")
