"""The three loops the project holds to targets, measured in one run: the offline preview against the SDK floor, the
offline tier of `make test`, and `make test-fast`.

    python benchmarks/loops.py [--only preview test test-fast] [--stack dev] [--pairs 3]

- `preview`: the offline preview of a stack (warm render cache: one preview runs first to fill it), each in a fresh
  interpreter, against the SDK floor (`benchmarks/sdk_floor.py`: the same resources, read from that preview's own
  `resources.json`, registered with the SDK's typed classes under Pulumi's mocks, in a fresh interpreter). The two
  run in turn, preview then floor, `--pairs` times; the figure is the median of the pairs' wall-time ratios (a
  shared machine's drift cancels within a pair), with the CPU-time ratio beside it. Target: at most 2.0.
- `test`: `pytest -n 2 --dist loadscope -m "not engine"` (the offline tier `make test` runs first), wall seconds.
  Target: at most 480 (8 minutes).
- `test-fast`: `pytest -n 2 -m "not slow"` (`make test-fast`), wall seconds. Target: at most 60.

Every command runs with this interpreter from the repository's root. It prints one table row per figure with its
target and verdict, ready to paste into docs/benchmark.md, and exits 1 when a figure misses its target or a timed
suite fails (its verdict is then FAILED, whatever its time: a suite that stops early is quicker, not faster).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PREVIEW_RATIO_TARGET = 2.0
TEST_SECONDS_TARGET = 480.0
TEST_FAST_SECONDS_TARGET = 60.0
LOOPS = ("preview", "test", "test-fast")
SUMMARY = re.compile(r"\b\d+ (passed|failed|errors?)\b.* in [\d.]+s")


@dataclass(frozen=True)
class Run:
    """One finished command: wall seconds and CPU seconds (user + system of the process and what it waited for)."""

    wall: float
    cpu: float
    status: int


@dataclass(frozen=True)
class Figure:
    """One measured loop, as a row of the table."""

    loop: str
    value: float
    unit: str
    target: float
    detail: str
    complete: bool = True  # False: the run failed (a test failed or errored), so its time is no figure

    @property
    def met(self) -> bool:
        return self.complete and self.value <= self.target

    @property
    def verdict(self) -> str:
        if not self.complete:
            return "FAILED"
        return "met" if self.met else "MISSED"

    def row(self) -> str:
        shown = f"{self.value:.2f}{self.unit}" if self.unit == "x" else f"{self.value:.0f} {self.unit}"
        target = f"<= {self.target:g}{self.unit}" if self.unit == "x" else f"<= {self.target:g} {self.unit}"
        return f"| {self.loop} | {shown} | {target} | {self.verdict} | {self.detail} |"


def timed(command: list[str], *, log: Path) -> Run:
    """Run a command from the repository's root, its output to `log`; raise SystemExit naming it when it fails."""
    before = os.times()
    started = time.perf_counter()
    with log.open("w") as out:
        status = subprocess.run(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    wall = time.perf_counter() - started
    after = os.times()
    if status not in (0, 1):  # 1: the preview's policy verdict or a failed test, still a complete run
        raise SystemExit(f"`{' '.join(command)}` exited {status}; its output is in {log}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return Run(wall, cpu, status)


def preview_against_floor(stack: str, pairs: int, scratch: Path) -> Figure:
    """The median ratio of the preview's wall time to the SDK floor's over `pairs` paired runs."""
    out = scratch / f"preview-{stack}"
    preview = [sys.executable, "-m", "components.preview", "--stack", stack, "--out", str(out)]
    timed(preview, log=scratch / "fill.log")  # fills Kubeflow's render cache: every later run is warm
    floor = [sys.executable, str(REPO / "benchmarks" / "sdk_floor.py"), str(out / "resources.json"), "--stack", stack]
    walls, cpus, floors = [], [], []
    for pair in range(pairs):
        mine = timed(preview, log=scratch / f"preview-{pair}.log")
        base = timed(floor, log=scratch / f"floor-{pair}.log")
        walls.append(mine.wall / base.wall)
        cpus.append(mine.cpu / base.cpu)
        floors.append(base.wall)
    count = (scratch / "floor-0.log").read_text().split()[1]
    detail = (
        f"{stack}, warm; {pairs} pairs; CPU ratio {statistics.median(cpus):.2f}; "
        f"floor {statistics.median(floors):.1f} s wall for {count} resources"
    )
    return Figure(f"preview / SDK floor ({stack})", statistics.median(walls), "x", PREVIEW_RATIO_TARGET, detail)


def outcome(log: str) -> str:
    """pytest's closing count (`2645 passed, 3 warnings in 460.12s`) from a run's output, else its last line."""
    lines = log.strip().splitlines() or [""]
    counts = [line for line in lines if SUMMARY.search(line)]
    return (counts or lines)[-1].strip("= ")


def suite(marker: str, extra: list[str], name: str, target: float, scratch: Path) -> Figure:
    """Wall seconds of one pytest run over two processes, the way the Makefile starts it."""
    command = [sys.executable, "-m", "pytest", "-n", "2", *extra, "-m", marker]  # pyproject.toml adds -q
    run = timed(command, log=scratch / f"{name}.log")
    detail = f"CPU {run.cpu:.0f} s; {outcome((scratch / f'{name}.log').read_text())}"
    if run.status:
        detail += "; a failed suite's time does not count (`--keep DIR` keeps its output)"
    return Figure(name, run.wall, "s", target, detail, complete=run.status == 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=LOOPS, default=list(LOOPS), help="measure only these loops")
    parser.add_argument("--stack", default="dev", help="the stack whose preview is measured (default dev)")
    parser.add_argument("--pairs", type=int, default=3, help="paired preview / floor runs (default 3)")
    parser.add_argument("--keep", type=Path, help="keep every run's output in this folder (default: a scratch one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = args.keep or Path(tmp)
        scratch.mkdir(parents=True, exist_ok=True)
        figures = []
        if "preview" in args.only:
            figures.append(preview_against_floor(args.stack, args.pairs, scratch))
        if "test" in args.only:
            tier = "make test (offline tier)"
            figures.append(suite("not engine", ["--dist", "loadscope"], tier, TEST_SECONDS_TARGET, scratch))
        if "test-fast" in args.only:
            figures.append(suite("not slow", [], "make test-fast", TEST_FAST_SECONDS_TARGET, scratch))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"Measured {when}: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}")
    print("| loop | measured | target | verdict | detail |")
    print("| --- | --- | --- | --- | --- |")
    for figure in figures:
        print(figure.row())
    return 0 if all(figure.met for figure in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
