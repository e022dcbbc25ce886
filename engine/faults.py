"""Faults injected into a real `pulumi up` or `pulumi destroy` in the box, and the runbook's recovery (docs/runbook.md).

A fault fires when the engine starts a step on a chosen resource (its `resourcePreEvent` in the CLI's event log), so
the step is in flight when it strikes: the CLI is killed with SIGKILL (no chance to record anything), or the API
server is killed and started again while the CLI runs on.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from components.tools.recover import UPSERT
from engine.cluster import netns_exec
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


@dataclass
class Struck:
    """What happened: the step the fault hit, and the CLI's exit code (None when it was killed)."""

    urn: str
    returncode: int | None
    output: str


class FaultMissed(AssertionError):
    """The command ended before the step the fault waits for started."""


def _started(events: Path, fault: Fault) -> str | None:
    if not events.exists():
        return None
    for line in events.read_text(errors="replace").splitlines():
        if '"resourcePreEvent"' not in line:
            continue
        try:
            meta = json.loads(line)["resourcePreEvent"]["metadata"]
        except (ValueError, KeyError):
            continue  # a line still being written
        if meta.get("type") == fault.type_ and meta.get("op") == fault.op and meta["urn"].endswith(f"::{fault.name}"):
            return str(meta["urn"])
    return None


def run_with_fault(deployment: Deployment, command: str, fault: Fault, timeout: float = 3600) -> Struck:
    """Run `pulumi <command>` ("up" or "destroy") in the box and strike when the fault's step starts."""
    folder = deployment.folder / "faults"
    folder.mkdir(parents=True, exist_ok=True)
    events, log = folder / f"{command}-{fault.name}.events", folder / f"{command}-{fault.name}.log"
    events.unlink(missing_ok=True)
    argv = [str(deployment.bin_dir / "pulumi"), "--non-interactive", command, "--yes", "--skip-preview"]
    argv += ["--stack", deployment.stack, "--event-log", str(events)]
    env = {**os.environ, **deployment.env()}
    with log.open("w") as out:
        cli = subprocess.Popen(
            [*netns_exec(deployment.box.namespace), *argv], env=env, cwd=deployment.project, stdout=out, stderr=out
        )
        deadline = time.monotonic() + timeout
        while (urn := _started(events, fault)) is None:
            if cli.poll() is not None:
                raise FaultMissed(f"pulumi {command} ended ({cli.returncode}) before {fault} started; see {log}")
            if time.monotonic() > deadline:
                cli.kill()
                raise FaultMissed(f"{fault} did not start within {timeout:.0f} s")
            time.sleep(0.1)
        time.sleep(fault.delay)
        if fault.action == "kill":
            os.kill(cli.pid, signal.SIGKILL)  # `ip netns exec` execs the CLI: this is its pid
            cli.wait()
            return Struck(urn, None, log.read_text(errors="replace"))
        deployment.box.stop_apiserver()
        time.sleep(fault.down_for)
        deployment.box.start_apiserver()
        code = cli.wait(timeout=max(deadline - time.monotonic(), 1))
    return Struck(urn, code, log.read_text(errors="replace"))


def runbook_commands() -> list[str]:
    """The repair commands of docs/runbook.md, in order: the shell block after its `<!-- repair -->` marker."""
    text = RUNBOOK.read_text()
    block = re.search(r"<!-- repair -->\s*```sh\n(.*?)```", text, re.S)
    if block is None:
        raise AssertionError(f"{RUNBOOK} has no ```sh block after <!-- repair -->")
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def rerun_env(repaired: list[subprocess.CompletedProcess[str]]) -> dict[str, str]:
    """What the runbook's step 3 sets for the repeated run: the upsert setting, where the recovery tool asks for it."""
    said = "".join(r.stdout for r in repaired)
    name, value = UPSERT.split("=", 1)
    return {name: value} if UPSERT in said else {}


def repair(deployment: Deployment, timeout: float = 1800) -> list[subprocess.CompletedProcess[str]]:
    """Run the runbook's repair commands in the project, inside the box, as a user would in theirs (`python` is this
    interpreter, KUBECONFIG the box's admin kubeconfig, `<stack>` the stack); raise on the first that fails."""
    env = {**deployment.env(), "KUBECONFIG": str(deployment.box.kubeconfig)}
    # The package under its library name, from the tree the stack runs (not whichever the virtualenv installed).
    names = deployment.folder / "package-names"
    names.mkdir(exist_ok=True)
    if not (names / "eks_ml_platform").exists():
        (names / "eks_ml_platform").symlink_to(deployment.code / "components")
    env["PYTHONPATH"] = f"{names}{os.pathsep}{deployment.code}"
    env["PATH"] = f"{deployment.bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    done = []
    for command in runbook_commands():
        command = command.replace("<stack>", deployment.stack)
        result = deployment.box.run(["sh", "-c", command], env=env, cwd=deployment.project, timeout=timeout)
        done.append(result)
        if result.returncode != 0:
            raise AssertionError(
                f"runbook step `{command}` exited {result.returncode}:\n{result.stdout}{result.stderr}"
            )
    return done
