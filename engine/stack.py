"""The real Pulumi CLI, run against the box: a project folder holding the stack's Pulumi files, a local file
backend, a passphrase secrets provider, and the plugins that stand in for what cannot run here.

The project folder is made fresh (`Deployment.prepare`): its `Pulumi.yaml` is the repository's with two additions,
the virtualenv given as an absolute path and `plugins.providers` mapping `aws`, `eks`, `random` to the fake
providers (engine.providers) and `kubernetes` to the provider built from its pinned module; its program is
`engine.program` (the stack's program after the test-only transforms). Every command runs inside the box's network
namespace.

A run no fault strikes writes its state once, at its end (`PULUMI_SKIP_CHECKPOINTS`, Pulumi's own setting). The
file backend otherwise rewrites the whole state after every step: with the dev stack's 11 MB state (Kubeflow's CRDs
are most of it) that was nearly all of the CLI's CPU, and half of a run's, on a 2-core machine. Every run a fault
strikes writes it after each step, as a user's run does (`engine.faults.run_with_fault`): there the state the cut
leaves is what the repair starts from.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.tools.stack_files import read_stack_config, unset_secrets, with_unset_secrets
from engine import nodes
from engine.cluster import Box
from engine.kube import Kube
from engine.providers import write_plugin_dirs

REPO = Path(__file__).resolve().parent.parent


class PulumiFailed(RuntimeError):
    """A Pulumi command exited non-zero: the message carries the command and the end of its output."""


@dataclass
class Step:
    """One CLI command's wall time and outcome, for the run's record."""

    command: str
    seconds: float
    returncode: int


@dataclass
class Deployment:
    box: Box
    bin_dir: Path
    plugin_dirs: Mapping[str, Path]
    folder: Path
    stack: str = "dev"
    aws_endpoint: str | None = None
    #: The Pulumi project deployed: its folder (Pulumi.yaml, Pulumi.<stack>.yaml, __main__.py). The repository's
    #: own project runs `engine.program` (the stack's program after the tier's transforms); another runs its own.
    source: Path = REPO
    #: Where the program's Python package comes from (PYTHONPATH): this repository, or a previous release's tree.
    #: A project whose source is its code runs that tree's `engine.program`.
    code: Path = REPO
    #: Stack config set on top of the project's stack file (`pulumi config set`), e.g. a team stack's platform.
    config: Mapping[str, str] = field(default_factory=dict)
    #: The file backend's folder; another deployment's, for stacks that read each other (a StackReference).
    backend: Path | None = None
    steps: list[Step] = field(default_factory=list)
    passphrase: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    @property
    def project(self) -> Path:
        return self.folder / "project"

    @property
    def state_dir(self) -> Path:
        return self.backend or self.folder / "state"

    def env(self) -> dict[str, str]:
        assert self.box.kubeconfig is not None
        env = {
            "PATH": f"{self.folder / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(self.code),
            "PULUMI_HOME": str(self.folder / "pulumi-home"),
            "PULUMI_BACKEND_URL": f"file://{self.state_dir}",
            "PULUMI_CONFIG_PASSPHRASE": self.passphrase,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_SKIP_CHECKPOINTS": "true",  # the state once, at the end of a run: see above
            # `--event-log`, from which the fault runs and the upgrade read the steps the engine takes.
            "PULUMI_DEBUG_COMMANDS": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            # Only the plugins Pulumi.yaml names, and the language host and dynamic-provider plugin found beside the
            # CLI, never one that happens to be on PATH.
            "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
            "EKSML_ENGINE_KUBECONFIG": str(self.box.kubeconfig),
            "EKSML_ENGINE_CHARTS": str(charts_folder()),
            "EKSML_ENGINE_SCRATCH": str(self.folder / "scratch"),
            # What the fake aws provider created, which another stack in the box reads (engine/providers/aws.py).
            "EKSML_ENGINE_ACCOUNT": str(self.box.folder / "account"),
            # A kubeconfig made from the platform's outputs runs `aws eks get-token`: the stand-in answers it.
            "EKSML_ENGINE_TOKEN": self.box.token or "",
            # The sweeps (dynamic providers) call AWS with boto3: a moto server inside the box, or nothing.
            "AWS_ACCESS_KEY_ID": "engine-tier",
            "AWS_SECRET_ACCESS_KEY": "engine-tier",
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        if self.aws_endpoint:
            env["AWS_ENDPOINT_URL"] = self.aws_endpoint
        return env

    def prepare(self) -> None:
        """The project folder, the backend and the stack with its generated secrets."""
        shutil.rmtree(self.project, ignore_errors=True)
        self.project.mkdir(parents=True)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        project = self._write_program()
        shutil.copyfile(self.source / f"Pulumi.{self.stack}.yaml", self.project / f"Pulumi.{self.stack}.yaml")
        self._write_aws_cli()
        self.pulumi("login", f"file://{self.state_dir}", timeout=120)
        self.pulumi("stack", "init", self.stack, timeout=120)
        for key, value in sorted(self.config.items()):
            self.set_config(key, value)
        # The secrets the stack's config names but its file cannot hold (a client secret, ...): a generated value
        # each, found as the offline preview finds them.
        config, secret_keys = read_stack_config(self.source, project["name"], self.stack)
        for key in unset_secrets(with_unset_secrets(config, secret_keys)[0]):
            self.set_config(key, secrets.token_urlsafe(24), "--secret")

    def _write_program(self) -> dict[str, Any]:
        """The project's Pulumi.yaml and __main__.py, for `source`; returns the project's settings."""
        project: dict[str, Any] = yaml.safe_load((self.source / "Pulumi.yaml").read_text())
        project["runtime"]["options"]["virtualenv"] = str(REPO / ".venv")
        project["plugins"] = {
            "providers": [{"name": name, "path": str(path)} for name, path in sorted(self.plugin_dirs.items())]
        }
        (self.project / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
        if self.source == self.code:
            program = "import engine.program  # noqa: F401  (runs the stack's program)\n"
        else:
            program = f"import runpy\n\nrunpy.run_path({str(self.source / '__main__.py')!r}, run_name='__main__')\n"
        (self.project / "__main__.py").write_text(program)
        return project

    def upgrade_to(self, code: Path) -> None:
        """Move the stack to another tree of the package, as a user does with `git pull`: its program and its stack
        file's settings, keeping the stack's own secrets (and the salt that encrypts them)."""
        self.source = self.code = code
        self._write_program()
        stack_file = self.project / f"Pulumi.{self.stack}.yaml"
        mine = yaml.safe_load(stack_file.read_text())
        theirs = yaml.safe_load((code / f"Pulumi.{self.stack}.yaml").read_text())
        secure = {k: v for k, v in (mine.get("config") or {}).items() if isinstance(v, dict) and "secure" in v}
        theirs["config"] = {**theirs["config"], **secure}
        theirs["encryptionsalt"] = mine["encryptionsalt"]
        stack_file.write_text(yaml.safe_dump(theirs, sort_keys=False))

    def _write_aws_cli(self) -> None:
        """`aws` on the PATH of every command: the stand-in of engine/aws_cli.py, in this interpreter."""
        binaries = self.folder / "bin"
        binaries.mkdir(parents=True, exist_ok=True)
        aws = binaries / "aws"
        aws.write_text(f'#!/bin/sh\nexec {sys.executable} -m engine.aws_cli "$@"\n')
        aws.chmod(0o755)

    def pulumi(
        self, *args: str, timeout: float, check: bool = True, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run `pulumi <args>` in the project, inside the box (with `env` on top of the stack's); record its wall
        time."""
        started = time.monotonic()
        done = self.box.run(
            [str(self.bin_dir / "pulumi"), "--non-interactive", *args],
            env={**self.env(), **(env or {})},
            cwd=self.project,
            timeout=timeout,
        )
        self.steps.append(Step(" ".join(args[:2]), time.monotonic() - started, done.returncode))
        if check and done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-80:])
            raise PulumiFailed(f"pulumi {' '.join(args)} exited {done.returncode}:\n{tail}")
        return done

    def set_config(self, key: str, value: str, *flags: str) -> None:
        """`pulumi config set <flags> -- <key> <value>`: the `--` ends the flags, so a value that starts with a dash
        (a generated secret does, one time in 64) is taken as the value, not read as a flag."""
        self.pulumi("config", "set", *flags, "--", key, value, timeout=120)

    def up(
        self, *extra: str, timeout: float = 3600, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self.pulumi("up", "--yes", "--skip-preview", "--stack", self.stack, *extra, timeout=timeout, env=env)

    def preview_no_changes(self, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        return self.pulumi("preview", "--expect-no-changes", "--diff", "--stack", self.stack, timeout=timeout)

    def refresh(self, *extra: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        return self.pulumi("refresh", "--yes", "--skip-preview", "--stack", self.stack, *extra, timeout=timeout)

    def destroy(self, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
        return self.pulumi("destroy", "--yes", "--skip-preview", "--stack", self.stack, timeout=timeout)

    def state(self) -> dict[str, Any]:
        """The stack's checkpoint (`pulumi stack export`)."""
        done = self.pulumi("stack", "export", "--stack", self.stack, timeout=120)
        return dict(json.loads(done.stdout))

    def resources(self) -> list[dict[str, Any]]:
        return list(self.state().get("deployment", {}).get("resources") or [])

    def outputs(self, *, show_secrets: bool = False) -> dict[str, Any]:
        args: Sequence[str] = ("stack", "output", "--json", "--stack", self.stack)
        if show_secrets:
            args = (*args, "--show-secrets")
        return dict(json.loads(self.pulumi(*args, timeout=120).stdout))


def boxed_stack(box: Box, preview: Path, bin_dir: Path, folder: Path, **deployment: Any) -> tuple[Kube, Deployment]:
    """Start the box as a stack needs it (the control plane with kwok, moto, the stand-ins, and the nodes the offline
    `preview` lists) and the deployment of that stack into it: the fake providers, the Kubernetes provider built
    from its pin, the project in `folder`/pulumi. `deployment` sets the rest (source, code, ...)."""
    kube = box.start()
    endpoint = box.start_moto()
    box.start_standins()
    nodes.create(kube, nodes.from_preview(preview))
    plugins = {**write_plugin_dirs(folder / "plugins", sys.executable), "kubernetes": bin_dir}
    return kube, Deployment(
        box=box, bin_dir=bin_dir, plugin_dirs=plugins, folder=folder / "pulumi", aws_endpoint=endpoint, **deployment
    )


def charts_folder() -> Path:
    """The pinned chart copies: ../shared/reference/charts beside the repository."""
    return REPO.parent / "shared" / "reference" / "charts"
