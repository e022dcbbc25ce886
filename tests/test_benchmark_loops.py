"""The loops benchmark (`make benchmark`): a timed suite that fails gives no figure, however quick it was."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "loops.py"


@pytest.fixture(scope="module")
def loops() -> ModuleType:
    spec = importlib.util.spec_from_file_location("benchmark_loops", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_a_suite_within_its_target_is_met(loops: ModuleType) -> None:
    figure = loops.Figure("make test", 450.0, "s", 480.0, "CPU 800 s; 2644 passed")
    assert figure.met
    assert "| met |" in figure.row()


def test_a_suite_over_its_target_is_missed(loops: ModuleType) -> None:
    figure = loops.Figure("make test", 540.0, "s", 480.0, "CPU 1000 s; 2644 passed")
    assert not figure.met
    assert "| MISSED |" in figure.row()


def test_a_failed_suite_is_failed_whatever_its_time(loops: ModuleType) -> None:
    figure = loops.Figure("make test", 450.0, "s", 480.0, "1 error", complete=False)
    assert not figure.met
    assert "| FAILED |" in figure.row()


@pytest.mark.subprocess
def test_a_run_keeps_the_status_of_its_command(loops: ModuleType, tmp_path: Path) -> None:
    failed = loops.timed([sys.executable, "-c", "raise SystemExit(1)"], log=tmp_path / "failed.log")
    passed = loops.timed([sys.executable, "-c", "pass"], log=tmp_path / "passed.log")
    assert (failed.status, passed.status) == (1, 0)


@pytest.mark.subprocess
def test_a_command_that_did_not_finish_its_run_stops_the_benchmark(loops: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="exited 2"):
        loops.timed([sys.executable, "-c", "raise SystemExit(2)"], log=tmp_path / "usage.log")


def test_a_suites_detail_is_pytests_closing_count_not_its_last_line(loops: ModuleType) -> None:
    log = "....\n===== warnings summary =====\nx.py:1: DeprecationWarning\n2645 passed, 3 warnings in 460.12s\n"
    log += "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html\n"
    assert loops.outcome(log) == "2645 passed, 3 warnings in 460.12s"
    assert loops.outcome("= 1 failed, 9 passed in 3.00s =\n") == "1 failed, 9 passed in 3.00s"


@pytest.mark.parametrize(("status", "verdict"), [(0, "met"), (1, "FAILED")])
def test_a_suite_is_judged_by_the_status_of_its_pytest_run(
    loops: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, verdict: str
) -> None:
    def finished(command: list[str], *, log: Path) -> object:
        log.write_text("....\n9 passed in 3.00s\n" if status == 0 else "..F.\n1 failed, 3 passed in 3.00s\n")
        return loops.Run(wall=3.0, cpu=5.0, status=status)

    monkeypatch.setattr(loops, "timed", finished)
    figure = loops.suite("not slow", [], "make test-fast", 60.0, tmp_path)
    assert figure.verdict == verdict
    assert figure.met is (status == 0)
