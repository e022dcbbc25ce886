"""A test session the engine tier's conftest configures, sent SIGTERM (a CI job's time running out) while a box runs,
stops that box and removes its network namespace before it exits. Without the conftest's handler the session ends
where it stands: etcd and the API server run on, in a namespace nothing removes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.engine, pytest.mark.subprocess]

#: A test whose fixture starts a box (etcd and the API server), says its namespace, and waits to be stopped.
WAITING = """
import os, time
from pathlib import Path

import pytest

from engine.cluster import Box


@pytest.fixture
def box(tmp_path):
    box = Box(Path(os.environ["ENGINE_BIN"]), tmp_path / "box")
    try:
        box.start_api()
        Path(os.environ["SAYS"]).write_text(box.namespace)
        yield box
    finally:
        box.stop()


def test_waits(box):
    time.sleep(600)
"""


def _ip(*args: str) -> str:
    ip = shutil.which("ip")
    assert ip is not None
    return subprocess.run([ip, *args], capture_output=True, text=True, check=True).stdout


def _namespaces() -> set[str]:
    listed = _ip("netns", "list")
    return {line.split()[0] for line in listed.splitlines() if line.strip()}


def test_sigterm_stops_the_box_and_removes_its_namespace(engine_bin: Path, tmp_path: Path) -> None:
    (tmp_path / "test_waiting.py").write_text(WAITING)
    says = tmp_path / "namespace"
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.engine.conftest", "-p", "no:cacheprovider", "."],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "ENGINE_BIN": str(engine_bin), "SAYS": str(says)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not says.exists() and session.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert says.exists(), f"the box did not start: {session.poll()}"
        namespace = says.read_text()
        assert namespace in _namespaces()
        box_processes = _ip("netns", "pids", namespace)
        assert box_processes.split(), "etcd and the API server run in the box"
        session.send_signal(signal.SIGTERM)
        output, _ = session.communicate(timeout=90)
    finally:
        if session.poll() is None:
            session.kill()
    assert "KeyboardInterrupt" in output, output[-2000:]
    assert namespace not in _namespaces(), output[-2000:]
    for pid in box_processes.split():
        assert not Path(f"/proc/{pid}").exists(), f"process {pid} of the box outlived the session"
