"""How long rendering Kubeflow takes: the default set cold (empty render cache) and warm (cache filled), and the
platform changes and staging on top. For the preview's time budget (dev preview with Kubeflow: 8 s cold, 5 s warm
on a 2-core machine)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from . import entries, fetch, plan, render
from .credentials import Admin


def measure(
    tree: Path | None = None, selection: Sequence[entries.Entry] = entries.DEFAULT, *, build: bool = True
) -> dict[str, float]:
    """Seconds for: verifying the tree, a cold render, a warm render, and (with `build`, which needs the default
    set) `plan.build` on the warm objects; plus the number of objects. Uses a throwaway render cache, so the
    user's own is neither read nor filled."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    root = fetch.tree(tree)
    timings["verify_s"] = time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="kubeflow-bench-") as scratch:
        cache = Path(scratch)
        start = time.perf_counter()
        render.render(root, selection, cache_dir=cache)
        timings["cold_s"] = time.perf_counter() - start
        start = time.perf_counter()
        rendered = render.render(root, selection, cache_dir=cache)
        timings["warm_s"] = time.perf_counter() - start
    timings["objects"] = float(sum(len(objects) for objects in rendered.values()))
    if build:
        start = time.perf_counter()
        plan.build(rendered, plan.Settings(admin=Admin("admin@example.org"), storage_class="gp3"))
        timings["plan_s"] = time.perf_counter() - start
    return timings
