"""After an interrupted `pulumi up` or `pulumi destroy` (the CLI killed, the machine lost, a CI job cancelled):
find the operations the stack's state still marks as pending, settle the ones the next run cannot settle itself, and
hand the state back to `pulumi refresh` (docs/runbook.md walks through it).

    python -m eks_ml_platform.tools.recover --stack dev             # say what it would do
    python -m eks_ml_platform.tools.recover --stack dev --apply     # do it, then refresh

Run it in the project folder, with `pulumi` on PATH and KUBECONFIG (or `--kubeconfig`) reaching the cluster, after
`pulumi cancel` and once no process of the interrupted run is left. What it decides, per pending operation:

- **a Helm release being installed**: the next `up` installs it again, and Helm refuses a name in use whether the cut
  install finished or not; the release is uninstalled (it serves nothing yet: it was never recorded);
- **a Helm release being upgraded or rolled back, left `pending-*`**: `helm upgrade` (the next `up`) refuses such a
  release; it is rolled back to its newest revision that was deployed, which the next `up` upgrades again;
- **a Kubernetes object being created**: it may exist, owned by the cut run; the next `up` must take it over, which
  the Kubernetes provider does when `TAKE_OVER_SETTINGS` are set for that run (the tool says so);
- **anything else being created** (an AWS resource): it may exist with an ID the state never learned. The tool names
  it and stops: look it up (by the name or tags in its inputs, printed), delete it, or keep it and adopt it after
  the repair with `pulumi import`; then run the tool again with `--clear-unknown`.

Pending updates and deletes need no decision: `pulumi refresh` reads the resource and clears the operation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
#: What the Kubernetes provider needs, for one run, to take over an object a cut run made. It refuses to create an
#: object that exists unless told to take it over (4.29 and later: pulumi-kubernetes CHANGELOG 4.29.0,
#: `upsertExistingObjects`). And each run of the provider applies under a field manager of its own, so the object's
#: fields belong to the cut run's and applying them again conflicts unless forced (`PULUMI_K8S_ENABLE_PATCH_FORCE`,
#: pulumi-kubernetes 3.23.1; without it the engine tier's provider failed with `Server-Side Apply field conflict
#: detected`). The cut run was this stack's own, so forcing takes back only what it wrote.
TAKE_OVER_SETTINGS = ("PULUMI_K8S_UPSERT_EXISTING_OBJECTS=true", "PULUMI_K8S_ENABLE_PATCH_FORCE=true")
UPSERT = " ".join(TAKE_OVER_SETTINGS)
TAKE_OVER = f"may exist: run the next `pulumi up` with {UPSERT}, which takes it over"
#: A create the tool cannot judge: the user decides (see `unknown`).
UNKNOWN = "unknown"
#: Helm's history statuses of a revision that was running as deployed.
WAS_DEPLOYED = ("deployed", "superseded")

#: The inputs a create the tool cannot judge is looked up by: its name, its tags, and what EKS names an add-on and an
#: access entry by besides their cluster (DescribeAddon takes `addonName`, DescribeAccessEntry `principalArn`).
LOOKUP_KEYS = ("name", "bucket", "clusterName", "addonName", "principalArn", "tags")

#: Runs a command and returns (exit code, stdout); a stand-in in the tests.
Runner = Callable[[Sequence[str]], tuple[int, str]]


class RecoverError(RuntimeError):
    """The state cannot be handed back to `pulumi refresh` without the user's decision; the message says which."""


@dataclass(frozen=True)
class Action:
    """What the tool does (or would do) about one pending operation."""

    urn: str
    operation: str
    what: str
    #: The command that settles it before the refresh, if any.
    command: tuple[str, ...] = ()


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def _release(operation: dict[str, Any]) -> tuple[str, str]:
    inputs = operation["resource"].get("inputs") or {}
    return str(inputs.get("namespace") or "default"), str(inputs.get("name") or _name(operation["resource"]["urn"]))


def plan(pending: Sequence[dict[str, Any]], helm_status: Callable[[str, str], str | None]) -> list[Action]:
    """The action for each pending operation of a stack's checkpoint (`deployment.pending_operations`)."""
    actions = []
    for operation in pending:
        resource, kind = operation["resource"], operation["type"]
        urn, type_ = resource["urn"], resource["type"]
        if type_ == HELM_RELEASE:
            namespace, name = _release(operation)
            status = helm_status(namespace, name)
            if kind == "creating" and status is not None:
                actions.append(
                    Action(
                        urn,
                        kind,
                        f"release {namespace}/{name} ({status}) is uninstalled",
                        ("uninstall", namespace, name),
                    )
                )
            elif status is not None and status.startswith("pending-"):
                actions.append(
                    Action(
                        urn,
                        kind,
                        f"release {namespace}/{name} ({status}) is rolled back",
                        ("rollback", namespace, name),
                    )
                )
            else:
                actions.append(
                    Action(urn, kind, f"release {namespace}/{name}: {status or 'not installed'}, nothing to do")
                )
        elif kind != "creating":
            actions.append(Action(urn, kind, "nothing to do: refresh reads it and clears the operation"))
        elif type_.startswith("kubernetes:"):
            actions.append(Action(urn, kind, TAKE_OVER))
        else:
            actions.append(Action(urn, kind, UNKNOWN))
    return actions


def unknown(actions: Sequence[Action], pending: Sequence[dict[str, Any]]) -> str:
    """What to tell the user about creates the tool cannot judge, or '' when there are none."""
    inputs = {op["resource"]["urn"]: op["resource"].get("inputs") or {} for op in pending}
    lines = []
    for action in actions:
        if action.what == UNKNOWN:
            found = {k: inputs[action.urn][k] for k in LOOKUP_KEYS if k in inputs[action.urn]}
            lines.append(f"  {action.urn}\n    look it up by {json.dumps(found, sort_keys=True) or 'its type'}")
    if not lines:
        return ""
    return (
        "These were being created when the run stopped and may exist with an ID the state never learned:\n"
        + "\n".join(lines)
        + "\nDelete each that exists, or keep it and adopt it once the state is repaired (`pulumi import <type> <name> "
        "<id>`, or the `import` resource option); then run again with --clear-unknown."
    )


class Recovery:
    """The stack's commands, through `run` (pulumi on PATH, helm with the kubeconfig)."""

    def __init__(self, stack: str, helm: str, kubeconfig: str | None, run: Runner) -> None:
        self.stack, self.helm, self.kubeconfig, self._run = stack, helm, kubeconfig, run

    def pending(self) -> list[dict[str, Any]]:
        code, out = self._run(["pulumi", "stack", "export", "--stack", self.stack])
        if code != 0:
            raise RecoverError(f"pulumi stack export --stack {self.stack} failed:\n{out}")
        return list(json.loads(out).get("deployment", {}).get("pending_operations") or [])

    def _helm(self, *args: str) -> tuple[int, str]:
        kube = ["--kubeconfig", self.kubeconfig] if self.kubeconfig else []
        return self._run([self.helm, *args, *kube])

    def helm_status(self, namespace: str, name: str) -> str | None:
        """The release's status, None when Helm has no such release; raises when Helm cannot tell (no cluster)."""
        code, out = self._helm("status", name, "--namespace", namespace, "--output", "json")
        if code == 0:
            return str(json.loads(out)["info"]["status"])
        if "not found" in out:
            return None
        raise RecoverError(f"helm status {name} --namespace {namespace} failed:\n{out}")

    def deployed_revision(self, namespace: str, name: str) -> str:
        """The newest revision of the release that ran as deployed (`helm rollback` alone goes one back, which may be a
        failed one)."""
        code, out = self._helm("history", name, "--namespace", namespace, "--output", "json")
        if code != 0:
            raise RecoverError(f"helm history {name} --namespace {namespace} failed:\n{out}")
        revisions = [r["revision"] for r in json.loads(out) if r.get("status") in WAS_DEPLOYED]
        if not revisions:
            raise RecoverError(f"release {namespace}/{name} never ran as deployed: uninstall it, then run again")
        return str(max(revisions))

    def settle(self, action: Action) -> None:
        verb, namespace, name = action.command
        if verb == "uninstall":
            args = ["uninstall", name, "--wait"]
        else:
            args = ["rollback", name, self.deployed_revision(namespace, name), "--wait"]
        code, out = self._helm(*args, "--namespace", namespace)
        if code != 0:
            raise RecoverError(f"helm {' '.join(args)} --namespace {namespace} failed:\n{out}")

    def refresh(self, clear_creates: bool) -> None:
        args = ["pulumi", "refresh", "--yes", "--skip-preview", "--stack", self.stack]
        code, out = self._run([*args, "--clear-pending-creates"] if clear_creates else args)
        if code != 0:
            raise RecoverError(f"pulumi refresh failed:\n{out[-4000:]}")


def recover(
    recovery: Recovery, *, apply: bool, clear_unknown: bool, say: Callable[[str], None] = print
) -> list[Action]:
    pending = recovery.pending()
    actions = plan(pending, recovery.helm_status)
    if not actions:
        say(f"stack {recovery.stack}: no pending operation")
    for action in actions:
        say(f"{action.operation:9} {action.urn}\n          {action.what}")
    if (message := unknown(actions, pending)) and not clear_unknown:
        raise RecoverError(message)
    if apply:
        for action in actions:
            if action.command:
                recovery.settle(action)
        recovery.refresh(clear_creates=any(a.operation == "creating" for a in actions))
        upsert = f"{UPSERT} " if any(a.what == TAKE_OVER for a in actions) else ""
        # The provider records the settings it ran with: one more `up` without them puts its inputs back.
        after = ", then `pulumi up` once more without them" if upsert else ""
        say(f"refreshed: run `{upsert}pulumi up` (or `pulumi destroy`) again{after}")
    return actions


def _run(argv: Sequence[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise RecoverError(f"`{argv[0]}` is not on PATH: the repair runs it (docs/runbook.md)") from None
    return done.returncode, done.stdout + (done.stderr if done.returncode else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eks_ml_platform.tools.recover", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--stack", required=True)
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--apply", action="store_true", help="settle what it names, then pulumi refresh")
    parser.add_argument("--clear-unknown", action="store_true", help="drop creates you have imported or deleted")
    args = parser.parse_args(argv)
    from .charts.binary import HelmUnavailable, helm_binary

    try:
        recovery = Recovery(args.stack, str(helm_binary()), args.kubeconfig, _run)
        recover(recovery, apply=args.apply, clear_unknown=args.clear_unknown)
    except (RecoverError, HelmUnavailable) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
