"""The previous release of the package, deployed first so that the current one upgrades real state.

`PREVIOUS` names the release by its tag and the commit the tag points at: the commit is what is checked out (a
clone of main holds it whether or not it fetched tags). Move both when a release is cut.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from engine.stack import REPO


@dataclass(frozen=True)
class Release:
    tag: str
    commit: str


#: CHANGELOG.md's `[0.4.0] - 2026-11-29`; `git rev-parse v0.4.0^{commit}`.
PREVIOUS = Release("v0.4.0", "b6fac9670041d8f38f4bcc17d4f8aecc6442660e")


class ReleaseMissing(RuntimeError):
    """The clone does not hold the previous release's commit (a shallow clone): the message says how to get it."""


def git(*args: str) -> subprocess.CompletedProcess[bytes]:
    """`git <args>` in this repository (its output as bytes; never raises on a git error)."""
    binary = shutil.which("git")
    if binary is None:
        raise ReleaseMissing("the upgrade from the previous release checks it out with `git`, which is not on PATH")
    return subprocess.run([binary, "-C", str(REPO), *args], capture_output=True, check=False)


def checkout(release: Release, folder: Path) -> Path:
    """The release's tree (its files at the commit, no git history) in `folder`."""
    archive = git("archive", "--format=tar", release.commit)
    if archive.returncode != 0:
        raise ReleaseMissing(
            f"this clone lacks {release.tag} ({release.commit}): "
            f"`git fetch --unshallow` or `git fetch origin tag {release.tag}`\n{archive.stderr.decode()[-400:]}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tree:
        tree.extractall(folder, filter="data")
    return folder
