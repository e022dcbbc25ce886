"""What every repaired run on the engine tier must show: the stack converged."""

from __future__ import annotations

from engine.kube import Kube
from engine.stack import Deployment
from tests.engine.conftest import Timings

RELEASE = "kubernetes:helm.sh/v3:Release"


def converged(kube: Kube, deployment: Deployment, timings: Timings, what: str, *, step: str) -> None:
    """No pending operation, each Helm release of the state installed once and deployed, and no change to make.
    `step` names the module's step in its timings (`lifecycle`, `spread`)."""
    state = deployment.state()["deployment"]
    assert state.get("pending_operations") in (None, [])
    in_state = sorted(
        (r["inputs"]["namespace"], r["inputs"]["name"]) for r in state["resources"] if r["type"] == RELEASE
    )
    records = kube.items("secrets", selector="owner=helm")
    deployed = sorted(
        (s["metadata"]["namespace"], s["metadata"]["labels"]["name"])
        for s in records
        if s["metadata"]["labels"].get("status") == "deployed"
    )
    assert deployed == in_state
    pending = [
        s["metadata"]["name"] for s in records if s["metadata"]["labels"].get("status", "").startswith("pending")
    ]
    assert pending == []
    with timings.timed(f"{step}: preview after {what}"):
        deployment.preview_no_changes()
