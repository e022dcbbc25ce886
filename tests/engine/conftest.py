"""The engine tier's fixtures: the tools built from their pinned modules, and the dev stack deployed by the real
Pulumi CLI into the cluster in a box (engine/), inside a network namespace with only loopback up.

The tools come from the user's cache (`make engine-tools` builds them; the tests build what is missing): this
module reads the cache's location when it is imported, before the session's fresh cache replaces it, so a session
never rebuilds the tools.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import REPO

if TYPE_CHECKING:
    from components.tools.preview.answers import PlatformMocks

#: The user's cache, as it is before the session's own replaces XDG_CACHE_HOME.
_USER_CACHE = os.environ.get("XDG_CACHE_HOME")


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM (a CI job's time running out, `kill`) ends the session as Ctrl-C does, so the fixtures' teardown
    stops each box and removes its network namespace; by default the signal ends the process where it stands."""
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadscope` (`make test-engine`) runs the longest modules first, each handed out when a process has
    nothing left to run (tests/engine/scheduling.py)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from .scheduling import LongestModuleFirst

    return LongestModuleFirst(config, log)


def engine_unavailable() -> str | None:
    """Why the engine tier cannot run on this machine, or None."""
    if sys.platform != "linux":
        return "the engine tier runs on Linux (network namespaces)"
    if os.geteuid() != 0:
        return "the engine tier makes network namespaces, which needs root"
    for tool in ("go", "ip"):
        if shutil.which(tool) is None:
            return f"the engine tier needs `{tool}` on PATH"
    if not (REPO.parent / "shared" / "reference" / "charts").is_dir():
        return "the engine tier installs the pinned charts from ../shared/reference/charts"
    return None


@pytest.fixture(scope="session")
def engine_bin() -> Path:
    """The folder holding every tool of the tier, built into the user's cache if missing."""
    if (why := engine_unavailable()) is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the engine tier: {why}")
        pytest.skip(why)
    from engine.tools.build import bin_dir

    env_before = os.environ.get("XDG_CACHE_HOME")
    try:
        if _USER_CACHE is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = _USER_CACHE
        return bin_dir()
    finally:
        if env_before is not None:
            os.environ["XDG_CACHE_HOME"] = env_before


@pytest.fixture(scope="module")
def dev_preview(tmp_path_factory: pytest.TempPathFactory, kubeflow_tree: None) -> Path:
    """The offline preview of dev, as `make preview` writes it: the nodes and the model are read from it."""
    out = tmp_path_factory.mktemp("engine-preview") / "dev"
    done = subprocess.run(
        [sys.executable, "-m", "components.preview", "--stack", "dev", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


class Timings:
    """Wall times of the tier's steps, printed at the end of the module and written beside the run."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []

    def timed(self, what: str) -> _Timer:
        return _Timer(self, what)


class _Timer:
    def __init__(self, timings: Timings, what: str) -> None:
        self.timings, self.what = timings, what

    def __enter__(self) -> None:
        self.started = time.monotonic()

    def __exit__(self, *_: object) -> None:
        self.timings.steps.append((self.what, time.monotonic() - self.started))


@pytest.fixture
def mocks() -> PlatformMocks:
    """The offline preview's mocks in the dev stack's region: what the fake provider plugins must answer alike."""
    from components.tools.preview.answers import PlatformMocks

    from .fake_plugins import REGION

    return PlatformMocks(REGION)


@pytest.fixture(scope="module")
def timings(request: pytest.FixtureRequest) -> Iterator[Timings]:
    """Each module's step times, in build/engine/timings-<module>.txt (one file per module: none overwrites
    another's)."""
    record = Timings()
    yield record
    lines = [f"{what:60} {seconds:7.1f} s" for what, seconds in record.steps]
    out = REPO / "build" / "engine"
    out.mkdir(parents=True, exist_ok=True)
    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    (out / f"timings-{module}.txt").write_text("\n".join(lines) + "\n")
    print("\nengine tier wall times:\n" + "\n".join(lines))
