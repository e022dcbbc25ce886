"""Work a test run does once, whichever of its processes asks first: the stack previews several modules read.

Under pytest-xdist each worker is a process of its own with its own session fixtures, so a session fixture's work
(a whole stack preview, ten seconds and more) is done again by every worker that needs it. Here the first process
to ask computes the value while holding a lock, and leaves it pickled in a folder the run's processes share; the
others wait for it and load it. The folder is new with each run and removed with pytest's other temporary folders,
so nothing computed survives a change to the code or the stack files."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this run that its workers share: xdist makes each worker's temporary folder inside the run's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """`compute()`, computed by the first process of the run to ask for `name` and loaded by the others. A
    computation that raises leaves nothing behind: the next process to ask computes (and raises) again."""
    folder = run_folder(tmp_path_factory) / "once"
    folder.mkdir(exist_ok=True)
    saved = folder / f"{name}.pickle"
    with (folder / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes; another process waits here meanwhile
        if saved.exists():
            loaded: T = pickle.loads(saved.read_bytes())  # noqa: S301 - written by this run's own processes
            return loaded
        value = compute()
        partial = saved.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(value))
        partial.replace(saved)
        return value


@dataclass(frozen=True)
class Previewed:
    """One run of the offline preview's command (`main`): the folder it wrote, what it printed, its exit status."""

    folder: Path
    printed: str
    status: int


def preview_once(tmp_path_factory: pytest.TempPathFactory, repo: Path, stack: str) -> Previewed:
    """The offline preview of one of the repository's stacks, run once in the run (its folder only to be read)."""

    def preview() -> Previewed:
        from components.tools.preview import main

        out = run_folder(tmp_path_factory) / "previews" / stack
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            status = main(["--stack", stack, "--out", str(out), "--project-dir", str(repo)])
        return Previewed(out, printed.getvalue(), status)

    return once_per_run(tmp_path_factory, f"preview-{stack}", preview)
