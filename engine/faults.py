"""Faults injected into a real `pulumi up` or `pulumi destroy` in the box, and the runbook's recovery (docs/runbook.md).

A fault fires when the engine starts a step on a chosen resource (its `resourcePreEvent` in the CLI's event log), so
the step is in flight when it strikes: the CLI is killed with SIGKILL (no chance to record anything), or the API
server is killed and started again while the CLI runs on. A fault may wait until its step is the only one in flight
(every step on a resource, not a component, has its `resOutputsEvent` or `resOpFailedEvent` but this one), so that
what it leaves pending is that step alone; the fake AWS provider's slow create (`SLOW_CREATE_ENV`) keeps an AWS
create in flight that long.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from components.tools.recover import TAKE_OVER_SETTINGS, UPSERT
from engine.cluster import netns_exec
from engine.providers.account import Account
from engine.stack import REPO, Deployment

RUNBOOK = REPO / "docs" / "runbook.md"


@dataclass(frozen=True)
class Fault:
    """Strike `delay` seconds after the engine starts `op` ("create", "delete", ...) on a resource whose URN ends
    with `::<name>` and whose type is `type_`."""

    type_: str
    name: str
    op: str
    delay: float = 2.0
    #: "kill": SIGKILL the CLI. "api-down": kill the API server for `down_for` seconds, then start it again.
    action: str = "kill"
    down_for: float = 20.0
    #: Strike only once the step has been the only one in flight for `delay` seconds.
    alone: bool = False


@dataclass
class Struck:
    """What happened: the step the fault hit, and the CLI's exit code (None when it was killed)."""

    urn: str
    returncode: int | None
    output: str


#: The engine events that end a step (pulumi's apitype.EngineEvent: resOutputsEvent, resOpFailedEvent).
_STEP_ENDS = ("resOutputsEvent", "resOpFailedEvent")


class FaultMissed(AssertionError):
    """The command ended before the step the fault waits for started."""


def _steps(events: Path, fault: Fault) -> tuple[str | None, set[str]]:
    """The URN of the step the fault waits for, once it started, and the URNs of the resources (not components) whose
    steps are in flight."""
    if not events.exists():
        return None, set()
    chosen: str | None = None
    in_flight: set[str] = set()
    for line in events.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line still being written
        if "resourcePreEvent" in event:
            meta = event["resourcePreEvent"]["metadata"]
            if (meta.get("new") or meta.get("old") or {}).get("custom"):
                # A component's step ends only when it registers its outputs, after all of its children's.
                in_flight.add(meta["urn"])
            if chosen is None and (meta.get("type"), meta.get("op")) == (fault.type_, fault.op):
                chosen = meta["urn"] if meta["urn"].endswith(f"::{fault.name}") else None
        for end in _STEP_ENDS:
            if end in event:
                in_flight.discard(event[end]["metadata"]["urn"])
    return chosen, in_flight


def _await_step(cli: subprocess.Popen[bytes], events: Path, fault: Fault, deadline: float) -> str:
    """Wait for the fault's step to start (and, for a fault that strikes it alone, to be the only step in flight for
    `delay` seconds); its URN."""
    alone_since: float | None = None
    while True:
        urn, in_flight = _steps(events, fault)
        if urn is not None and not fault.alone:
            time.sleep(fault.delay)
            return urn
        if urn is not None and in_flight == {urn}:
            alone_since = alone_since or time.monotonic()
            if time.monotonic() - alone_since >= fault.delay:
                return urn
        else:
            alone_since = None
        if cli.poll() is not None:
            raise FaultMissed(f"the command ended ({cli.returncode}) before {fault} could strike")
        if time.monotonic() > deadline:
            cli.kill()
            raise FaultMissed(f"{fault} could not strike within the time allowed (in flight: {sorted(in_flight)})")
        time.sleep(0.1)


def aws_leftovers(deployment: Deployment) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(type, id) of what the fake AWS account holds that the state does not, and of what the state holds that the
    account does not: both empty when every AWS resource exists once, and only as the state knows it."""
    held = {(type_, resource_id) for type_, resource_id, _ in Account(deployment.box.folder / "account").items()}
    resources = deployment.state()["deployment"].get("resources") or []
    known = {(r["type"], r["id"]) for r in resources if r["type"].startswith("aws:") and r.get("id")}
    return sorted(held - known), sorted(known - held)


def run_with_fault(
    deployment: Deployment, command: str, fault: Fault, timeout: float = 3600, env: Mapping[str, str] | None = None
) -> Struck:
    """Run `pulumi <command>` ("up" or "destroy") in the box and strike when the fault's step starts; `env` is set
    for the command and the plugins it starts (`SLOW_CREATE_ENV`, ...)."""
    folder = deployment.folder / "faults"
    folder.mkdir(parents=True, exist_ok=True)
    events, log = folder / f"{command}-{fault.name}.events", folder / f"{command}-{fault.name}.log"
    events.unlink(missing_ok=True)
    argv = [str(deployment.bin_dir / "pulumi"), "--non-interactive", command, "--yes", "--skip-preview"]
    argv += ["--stack", deployment.stack, "--event-log", str(events)]
    # The state after every step, as a user's run writes it: what the cut leaves is what the repair starts from.
    environment = {**os.environ, **deployment.env(), **(env or {}), "PULUMI_SKIP_CHECKPOINTS": "false"}
    with log.open("w") as out:
        cli = subprocess.Popen(
            [*netns_exec(deployment.box.namespace), *argv],
            env=environment,
            cwd=deployment.project,
            stdout=out,
            stderr=out,
        )
        deadline = time.monotonic() + timeout
        urn = _await_step(cli, events, fault, deadline)
        if fault.action == "kill":
            os.kill(cli.pid, signal.SIGKILL)  # `ip netns exec` execs the CLI: this is its pid
            cli.wait()
            return Struck(urn, None, log.read_text(errors="replace"))
        deployment.box.stop_apiserver()
        time.sleep(fault.down_for)
        deployment.box.start_apiserver()
        code = cli.wait(timeout=max(deadline - time.monotonic(), 1))
    return Struck(urn, code, log.read_text(errors="replace"))


class RunbookStopped(AssertionError):
    """A runbook command exited non-zero: `result` holds what it said."""

    def __init__(self, command: str, result: subprocess.CompletedProcess[str]) -> None:
        super().__init__(f"runbook step `{command}` exited {result.returncode}:\n{result.stdout}{result.stderr}")
        self.result = result


def runbook_block(marker: str = "repair") -> list[str]:
    """The commands of the ```sh block after `<!-- <marker> -->` in docs/runbook.md, in order."""
    block = re.search(rf"<!-- {marker} -->\s*```sh\n(.*?)```", RUNBOOK.read_text(), re.S)
    if block is None:
        raise AssertionError(f"{RUNBOOK} has no ```sh block after <!-- {marker} -->")
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def runbook_commands() -> list[str]:
    """The repair commands of docs/runbook.md: the block after its `<!-- repair -->` marker."""
    return runbook_block("repair")


def aws_commands(type_: str) -> tuple[str, str]:
    """The runbook's (look it up, delete it) commands for a resource of this type: its row of the table after
    `<!-- aws-leftovers -->`."""
    table = RUNBOOK.read_text().split("<!-- aws-leftovers -->", 1)[-1].strip().split("\n\n", 1)[0]
    for row in table.splitlines():
        cells = [cell.strip().strip("`") for cell in row.strip().strip("|").split("|")]
        if cells[0] == type_:
            return cells[1], cells[2]
    raise AssertionError(f"{RUNBOOK} names no commands for a leftover {type_}")


def named_creates(said: str) -> dict[str, dict[str, object]]:
    """The creates the recovery tool stopped on, as it names them: URN -> the inputs it says to look them up by."""
    found = re.findall(r"^  (urn:pulumi:\S+)\n    look it up by (\{.*\})$", said, re.M)
    return {urn: json.loads(inputs) for urn, inputs in found}


def rerun_env(repaired: list[subprocess.CompletedProcess[str]]) -> dict[str, str]:
    """What the runbook's step 3 sets for the repeated run: the upsert setting, where the recovery tool asks for it."""
    said = "".join(r.stdout for r in repaired)
    if UPSERT not in said:
        return {}
    return dict(setting.split("=", 1) for setting in TAKE_OVER_SETTINGS)


def rerun_up(deployment: Deployment, env: dict[str, str]) -> None:
    """The runbook's step 3 after a cut `up`: `up` again with `env` (the take-over settings, where the recovery tool
    asked for them: `rerun_env`), and then once more without them (the Kubernetes provider records the settings it
    ran with)."""
    deployment.up(env=env)
    if env:
        deployment.up()


def runbook_env(deployment: Deployment) -> dict[str, str]:
    """A user's shell in the project (`python` is this interpreter, KUBECONFIG the box's admin kubeconfig, `aws` the
    box's stand-in), inside the box."""
    env = {**deployment.env(), "KUBECONFIG": str(deployment.box.kubeconfig)}
    # The package under its library name, from the tree the stack runs (not whichever the virtualenv installed).
    names = deployment.folder / "package-names"
    names.mkdir(exist_ok=True)
    if not (names / "eks_ml_platform").exists():
        (names / "eks_ml_platform").symlink_to(deployment.code / "components")
    env["PYTHONPATH"] = f"{names}{os.pathsep}{deployment.code}"
    env["PATH"] = f"{deployment.bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


def run_as_written(
    deployment: Deployment, commands: list[str], values: Mapping[str, str] | None = None, timeout: float = 1800
) -> list[subprocess.CompletedProcess[str]]:
    """Run the runbook's commands as a user would in their project, each `<placeholder>` given its value (`<stack>`
    the stack); raise RunbookStopped on the first that fails."""
    env = runbook_env(deployment)
    done = []
    for command in commands:
        for key, value in {"stack": deployment.stack, **(values or {})}.items():
            command = command.replace(f"<{key}>", value)
        result = deployment.box.run(["sh", "-c", command], env=env, cwd=deployment.project, timeout=timeout)
        done.append(result)
        if result.returncode != 0:
            raise RunbookStopped(command, result)
    return done


def repair(deployment: Deployment, timeout: float = 1800) -> list[subprocess.CompletedProcess[str]]:
    """Run the runbook's repair commands (its `<!-- repair -->` block) in the project, inside the box."""
    return run_as_written(deployment, runbook_commands(), timeout=timeout)
