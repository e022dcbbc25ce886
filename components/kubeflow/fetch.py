"""The pinned Kubeflow tree: downloaded once per user, checked file by file before every render.

`python -m components.kubeflow fetch [--cache DIR]` downloads GitHub's archive of each pinned commit, keeps only the
files the renders read (those listed in `tree_digests`), and checks each against its sha256. `tree()` is what
everything else calls: the tree a caller names (the tests name the reference copy), else the per-user cache, always
verified, never used half-fetched or edited.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from . import tree_digests
from .pins import KUBEFLOW, SOURCES, SourcePin

FETCH_COMMAND = "python -m components.kubeflow fetch"

#: `download(url, destination)` writes the archive at `url` to the file `destination`.
Download = Callable[[str, Path], None]


class TreeError(RuntimeError):
    """The Kubeflow tree is missing, incomplete or altered."""


def default_cache_dir() -> Path:
    """The per-user cache root: `$XDG_CACHE_HOME/eks-ml-platform`, else `~/.cache/eks-ml-platform`.

    Read only by the command line and by `tree(None)`; components are handed a path."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eks-ml-platform"


def cached_tree_path(cache: Path | None = None) -> Path:
    """Where the fetched tree of this Kubeflow pin lives under a cache root (one folder per pinned source inside)."""
    return (cache or default_cache_dir()) / f"kubeflow-{KUBEFLOW.version}"


def files_of(source: SourcePin, files: Mapping[str, str] | None = None) -> dict[str, str]:
    """The tree paths (and digests) that come from one pinned source."""
    files = tree_digests.FILES if files is None else files
    prefix = source.folder + "/"
    return {path: digest for path, digest in files.items() if path.startswith(prefix)}


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def problems(root: Path, files: Mapping[str, str] | None = None) -> list[str]:
    """Every listed file that is missing from `root` or differs from its digest (empty: the tree is intact)."""
    files = tree_digests.FILES if files is None else files
    found = []
    for relative, expected in sorted(files.items()):
        path = root / relative
        if not path.is_file():
            found.append(f"{relative}: missing")
        elif sha256_file(path) != expected:
            found.append(f"{relative}: sha256 differs from the pinned digest")
    return found


def tree(
    path: str | os.PathLike[str] | None = None, *, cache: Path | None = None, files: Mapping[str, str] | None = None
) -> Path:
    """The verified Kubeflow tree: `path` when given (a reference copy), else the fetched one under `cache`.

    Raises TreeError naming the fetch command when the tree is missing or any file differs from its digest."""
    files = tree_digests.FILES if files is None else files
    root = Path(path) if path is not None else cached_tree_path(cache)
    where = f"the Kubeflow {KUBEFLOW.version} tree at {root}"
    if not root.is_dir() or not any((root / relative).is_file() for relative in files):
        raise TreeError(f"{where} has not been downloaded: run `{FETCH_COMMAND}` first")
    found = problems(root, files)
    if found:
        shown = "\n".join(f"  - {line}" for line in found[:10])
        more = f"\n  ... and {len(found) - 10} more" if len(found) > 10 else ""
        raise TreeError(
            f"{where} is incomplete or altered ({len(found)} file(s)):\n{shown}{more}\n"
            f"run `{FETCH_COMMAND}` to download it again"
        )
    return root


def download_https(url: str, destination: Path) -> None:
    with urllib.request.urlopen(url, timeout=120) as response, destination.open("wb") as out:  # noqa: S310 (https only)
        shutil.copyfileobj(response, out, length=1 << 20)


def extract(archive: Path, source: SourcePin, into: Path, files: Mapping[str, str] | None = None) -> None:
    """Write the wanted files of one source's archive below `into` (at their tree paths), checking each digest.

    Only regular files whose exact names are listed are written, so nothing in the archive can place a file
    anywhere else (no absolute paths, `..` or links are followed)."""
    files = tree_digests.FILES if files is None else files
    wanted = {
        f"{source.archive_root}/{path.removeprefix(source.folder + '/')}": path for path in files_of(source, files)
    }
    written: set[str] = set()
    bad: list[str] = []
    with tarfile.open(archive, mode="r|gz") as tar:
        for member in tar:
            relative = wanted.get(member.name)
            if relative is None:
                continue
            if not member.isfile():
                bad.append(f"{relative}: not a regular file in the archive")
                continue
            handle = tar.extractfile(member)
            assert handle is not None  # a regular file always has content
            content = handle.read()
            if hashlib.sha256(content).hexdigest() != files[relative]:
                bad.append(f"{relative}: sha256 differs from the pinned digest")
                continue
            target = into / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            written.add(relative)
    bad.extend(f"{relative}: not in the archive" for relative in sorted(set(wanted.values()) - written))
    if bad:
        shown = "\n".join(f"  - {line}" for line in sorted(bad))
        raise TreeError(f"the archive of {source.repository}@{source.commit[:12]} does not match the pins:\n{shown}")


def fetch(
    cache: Path | None = None,
    *,
    download: Download | None = None,
    sources: Iterable[SourcePin] = SOURCES,
    files: Mapping[str, str] | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> Path:
    """Download and verify every pinned source not already intact in the cache; returns the tree root.

    Each source is extracted to a staging folder and moved into place only once every file checked out, so an
    interrupted or failed fetch never leaves a half-written source where `tree()` would look."""
    files = tree_digests.FILES if files is None else files
    root = cached_tree_path(cache)
    made = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    try:
        _fetch_sources(root, sources, files, download, log)
    except BaseException:  # a failed first fetch leaves no empty tree folder that would read as an altered tree
        if made and not any(root.iterdir()):
            root.rmdir()
        raise
    return tree(root, files=files)


def _fetch_sources(
    root: Path,
    sources: Iterable[SourcePin],
    files: Mapping[str, str],
    download: Download | None,
    log: Callable[[str], None],
) -> None:
    for source in sources:
        own = files_of(source, files)
        if not problems(root, own):
            log(f"{source.repository}@{source.ref}: already fetched")
            continue
        log(f"{source.repository}@{source.ref}: downloading {source.archive_url}")
        with tempfile.TemporaryDirectory(dir=root, prefix=".fetch-") as work:
            archive = Path(work) / "archive.tar.gz"
            try:
                (download or download_https)(source.archive_url, archive)
            except OSError as error:  # urllib's URLError and HTTPError are OSErrors
                raise TreeError(f"could not download {source.archive_url}: {error}") from None
            staging = Path(work) / "tree"
            extract(archive, source, staging, files)
            target = root / source.folder
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            (staging / source.folder).replace(target)
        log(f"{source.repository}@{source.ref}: {len(own)} files verified")


def install_from(directory: Path, cache: Path | None = None, files: Mapping[str, str] | None = None) -> Path:
    """Install a local copy of the pinned tree (a mirror on a machine without GitHub) into the cache, once every
    file checks out against the pins; returns the tree root."""
    files = tree_digests.FILES if files is None else files
    bad = problems(directory, files)
    if bad:
        shown = "\n".join(f"  - {line}" for line in sorted(bad)[:20])
        raise TreeError(f"{directory} is not the pinned Kubeflow tree:\n{shown}")
    root = cached_tree_path(cache)
    for relative in files:
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(directory / relative, target)
    return tree(root, files=files)


def digests_json(files_sha256: str) -> str:
    """The text of `tree_digests.json` from a sha256sum listing of the reference tree (its own metadata files and
    anything outside the pinned sources' folders are left out)."""
    folders = tuple(source.folder + "/" for source in SOURCES)
    entries = {}
    for line in files_sha256.splitlines():
        if not line.strip():
            continue
        digest, path = line.split(maxsplit=1)
        path = path.lstrip("*")
        if path.startswith(folders):
            entries[path] = digest
    document = {
        "about": f"sha256 of every file of the Kubeflow {KUBEFLOW.version} tree the renders read, by path in the "
        "tree. Metadata, not upstream content.",
        "source": "FILES.sha256 of the reference tree of the pinned sources (components/kubeflow/pins.py). Regenerate "
        "when a pin moves: python -m components.kubeflow digests FILES.sha256 > components/kubeflow/tree_digests.json",
        "files": dict(sorted(entries.items())),
    }
    return json.dumps(document, indent=2) + "\n"
