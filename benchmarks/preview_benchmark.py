"""Time the offline preview of the dev and prod stacks (both with Kubeflow): wall seconds and peak memory, as a table.

    python benchmarks/preview_benchmark.py [--runs 3] [--stacks dev prod]

Each run is a fresh interpreter (`python -m components.preview`), so import time counts as it does for a user.
Each stack is timed twice: `warm`, with Kubeflow's render cache filled (every preview after the first), and `cold`,
with an empty render cache beside the same fetched tree (the first preview after a fetch or a change to Kubeflow's
selection). Targets on a 2-core machine: dev under 5 s warm and under 8 s cold (`SLOW` and exit 1 when missed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_SECONDS = {("dev", "warm"): 5.0, ("dev", "cold"): 8.0}


def cold_cache(scratch: Path) -> dict[str, str]:
    """An environment whose package cache holds the user's fetched Kubeflow tree and no rendered objects."""
    sys.path.insert(0, str(REPO))
    from components.kubeflow.fetch import cached_tree_path, default_cache_dir

    tree = cached_tree_path(default_cache_dir())
    if not tree.is_dir():
        raise SystemExit(f"no fetched Kubeflow tree at {tree}: run `make kubeflow-fetch` first")
    cache = scratch / "eks-ml-platform"
    cache.mkdir(parents=True)
    (cache / tree.name).symlink_to(tree, target_is_directory=True)
    return {**os.environ, "XDG_CACHE_HOME": str(scratch)}


def measure(stack: str, out: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MiB) of one `python -m components.preview` run, as a user starts it."""
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "components.preview", "--stack", stack, "--out", str(out)],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        _, status, usage = os.wait4(process.pid, 0)  # the child's own rusage, not the sum over all children
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            log.seek(0)
            raise SystemExit(
                f"preview of {stack} failed ({process.returncode}):\n{log.read().decode(errors='replace')}"
            )
    return seconds, usage.ru_maxrss / 1024  # KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stacks", nargs="+", default=["dev", "prod"])
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        measure(args.stacks[0], Path(tmp) / "fill")  # fills the user's render cache for the warm runs
        for stack in args.stacks:
            for mode in ("warm", "cold"):
                times, peaks = [], []
                for run in range(args.runs):
                    env = cold_cache(Path(tmp) / f"cache-{stack}-{run}") if mode == "cold" else None
                    seconds, peak = measure(stack, Path(tmp) / f"{stack}-{mode}-{run}", env)
                    times.append(seconds)
                    peaks.append(peak)
                rows.append((stack, mode, statistics.median(times), min(times), max(peaks)))

    print(f"{'stack':<8}{'cache':<6}{'median s':>10}{'best s':>10}{'peak MiB':>10}{'target s':>10}  verdict")
    failed = False
    for stack, mode, median, best, peak in rows:
        target = TARGET_SECONDS.get((stack, mode))
        verdict = "-" if target is None else ("ok" if median < target else "SLOW")
        failed |= verdict == "SLOW"
        shown = "-" if target is None else f"{target:.1f}"
        print(f"{stack:<8}{mode:<6}{median:>10.2f}{best:>10.2f}{peak:>10.0f}{shown:>10}  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
