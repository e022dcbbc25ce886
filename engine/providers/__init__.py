"""Fake provider plugins for the engine tier: the real Pulumi engine deploys the dev stack into a local Kubernetes
API server, and the providers that cannot run here (`aws`, `eks`, `random`) are these Python plugins, which answer
over gRPC exactly as the offline preview's mocks answer the program (components/tools/preview/answers.py).

Each is started by the engine as `pulumi-resource-<name> <engine-address> [flags]`; `write_plugin_dirs` writes those
executables, each running `python -m engine.providers.<name>`, in the form Pulumi.yaml's
`plugins: providers: [{name: aws, path: <dir>}]` takes.
"""

from __future__ import annotations

import shlex
import stat
from pathlib import Path

#: The fakes, each the module `engine.providers.<name>`.
PLUGINS = ("aws", "eks", "random")
REPO = Path(__file__).resolve().parents[2]


def write_plugin_dirs(dest: Path, python: str) -> dict[str, Path]:
    """Write, for each fake, a directory `dest/<name>` holding an executable `pulumi-resource-<name>` that runs the
    fake with `python` (imports resolved from the repository root, whatever the engine's working directory), and
    return name -> directory."""
    dirs: dict[str, Path] = {}
    for name in PLUGINS:
        directory = dest / name
        directory.mkdir(parents=True, exist_ok=True)
        script = directory / f"pulumi-resource-{name}"
        script.write_text(
            "#!/bin/sh\n"
            f"PYTHONPATH={shlex.quote(str(REPO))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
            "export PYTHONPATH\n"
            f'exec {shlex.quote(python)} -m engine.providers.{name} "$@"\n'
        )
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        dirs[name] = directory
    return dirs
