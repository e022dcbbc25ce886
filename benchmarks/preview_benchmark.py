"""Time the offline preview of the dev and prod stacks: wall seconds and peak memory, as a table.

    python benchmarks/preview_benchmark.py [--runs 3] [--stacks dev prod]

Each run is a fresh interpreter (`python -m components.preview`), so import time counts as it does for a user.
Target: the dev stack in under 5 seconds on a 2-core machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_SECONDS = {"dev": 5.0}


#: Runs the preview as `python -m components.preview` would, then reports the process's own peak memory.
_CHILD = """
import resource, runpy, sys
sys.argv = ["components.preview"] + sys.argv[1:]
try:
    runpy.run_module("components.preview", run_name="__main__")
except SystemExit as exit_:
    if exit_.code:
        raise
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def measure(stack: str, out: Path) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MiB) of one preview run in a fresh interpreter."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, "--stack", stack, "--out", str(out)],
        cwd=REPO, check=True, capture_output=True, text=True,
    )
    seconds = time.perf_counter() - started
    peak_kib = int(result.stderr.strip().splitlines()[-1])
    return seconds, peak_kib / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stacks", nargs="+", default=["dev", "prod"])
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for stack in args.stacks:
            times, peaks = [], []
            for run in range(args.runs):
                seconds, peak = measure(stack, Path(tmp) / f"{stack}-{run}")
                times.append(seconds)
                peaks.append(peak)
            rows.append((stack, statistics.median(times), min(times), max(peaks)))

    print(f"{'stack':<8}{'median s':>10}{'best s':>10}{'peak MiB':>10}{'target s':>10}  verdict")
    failed = False
    for stack, median, best, peak in rows:
        target = TARGET_SECONDS.get(stack)
        verdict = "-" if target is None else ("ok" if median < target else "SLOW")
        failed |= verdict == "SLOW"
        print(f"{stack:<8}{median:>10.2f}{best:>10.2f}{peak:>10.0f}{'-' if target is None else f'{target:.1f}':>10}  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
