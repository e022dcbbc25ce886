"""The pinned upstream Helm charts the offline model renders: fetched once per user, checked file by file.

`python -m components.tools.charts fetch [--from DIR] [--cache DIR]` fills the per-user cache
(`~/.cache/eks-ml-platform/charts/<chart>-<version>/`): from a local copy with `--from` (the workplace's
`../shared/reference/charts`), else by `helm pull` from each chart's pinned repository with the pinned Helm. Every file
is checked against `chart_digests.json`, the digests of the copies the model was validated with; a chart is moved
into place only once every file checked out, so a failed or interrupted fetch leaves nothing that looks fetched.
`usable()` is what the model asks before it renders a chart: intact, or why not.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from ...kubeflow.fetch import default_cache_dir as default_cache_root
from ...versions import ChartPin
from ...versions import charts as pinned_charts
from .binary import HelmUnavailable, helm_binary

FETCH_COMMAND = "python -m components.tools.charts fetch"
DIGESTS = "chart_digests.json"

#: `download(pin, into)` unpacks the published chart `pin` below the empty folder `into`; returns the chart's folder.
Download = Callable[[ChartPin, Path], Path]


class ChartError(RuntimeError):
    """A pinned chart could not be fetched, or what was fetched is not the pinned chart."""


@dataclass(frozen=True)
class PinnedChart:
    """One chart the digests cover: its folder name in a charts directory, and every file's sha256."""

    folder: str
    chart: str
    version: str
    files: Mapping[str, str]


def _read_digests() -> Mapping[str, PinnedChart]:
    document = json.loads(resources.files(__package__ or "").joinpath(DIGESTS).read_text(encoding="utf-8"))
    return MappingProxyType(
        {
            folder: PinnedChart(folder, entry["chart"], entry["version"], MappingProxyType(entry["files"]))
            for folder, entry in document["charts"].items()
        }
    )


#: Every chart the digests cover, by folder name.
PINNED: Mapping[str, PinnedChart] = _read_digests()


def covered(chart: str, version: str) -> bool:
    """Whether the digests cover a chart at a version (every pinned chart that has a reference copy does)."""
    return any(p.chart == chart and p.version == version for p in PINNED.values())


def charts_root(cache: Path | None = None) -> Path:
    """Where the fetched charts live under a cache root (default: the per-user cache, as the Kubeflow tree's)."""
    return (cache or default_cache_root()) / "charts"


def default_charts(project_dir: Path) -> Path | None:
    """The charts the tools read when none are named: the fetched ones, else the workplace's reference copies beside
    the project (`../shared/reference/charts`), else none (the model then says what it could not judge)."""
    cached = charts_root()
    if cached.is_dir():
        return cached
    beside = project_dir.resolve().parent / "shared" / "reference" / "charts"
    return beside if beside.is_dir() else None


def folder_names(chart: str, version: str, source_folder: str | None = None) -> list[str]:
    """The folder names a chart at a version may have in a charts directory (with or without the `v`, and under its
    source folder's name where that differs from the chart's)."""
    stems = [chart, *([source_folder] if source_folder else [])]
    bare = version.removeprefix("v")
    return [
        name for stem in stems for name in dict.fromkeys((f"{stem}-{version}", f"{stem}-v{bare}", f"{stem}-{bare}"))
    ]


def problems(folder: Path, files: Mapping[str, str]) -> list[str]:
    """Each listed file missing from `folder` or differing from its digest (empty: the chart is intact)."""
    found = []
    for relative, expected in sorted(files.items()):
        path = folder / relative
        if not path.is_file():
            found.append(f"{relative}: missing")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != expected:
            found.append(f"{relative}: sha256 differs from the pinned digest")
    return found


def usable(directory: Path) -> str | None:
    """None when a chart folder holds exactly what its pinned digests say (or is not one the digests cover: a
    folder a caller made on purpose); else why not, for the model's "not judged" line."""
    pinned = PINNED.get(directory.name)
    if pinned is None:
        return None
    found = problems(directory, pinned.files)
    if not found:
        return None
    return f"{directory} is altered or incomplete ({len(found)} file(s), e.g. {found[0]}): run `{FETCH_COMMAND}` again"


def status(root: Path) -> dict[str, str]:
    """Every pinned chart under `root` by folder: "fetched", "not downloaded", or what differs."""
    found = {}
    for folder, pinned in sorted(PINNED.items()):
        if not (root / folder).is_dir():
            found[folder] = "not downloaded"
        else:
            bad = problems(root / folder, pinned.files)
            found[folder] = f"altered: {len(bad)} file(s) differ, e.g. {bad[0]}" if bad else "fetched"
    return found


def _pin_of(pinned: PinnedChart) -> ChartPin:
    (pin,) = (pin for pin in pinned_charts() if pin.name == pinned.chart and pin.version == pinned.version)
    return pin


def helm_pull(pin: ChartPin, into: Path) -> Path:
    """`helm pull` the published chart with the pinned Helm, unpacked below `into`."""
    try:
        helm = helm_binary()
    except HelmUnavailable as error:
        raise ChartError(str(error)) from None
    if pin.repo.startswith("oci://"):
        command = [str(helm), "pull", f"{pin.repo}/{pin.name}", "--version", pin.version]
    else:
        command = [str(helm), "pull", pin.name, "--repo", pin.repo, "--version", pin.version]
    result = subprocess.run(
        [*command, "--untar", "--untardir", str(into)], capture_output=True, text=True, check=False, timeout=600
    )
    if result.returncode != 0:
        raise ChartError(f"could not download {pin.name} {pin.version} from {pin.repo}: {result.stderr.strip()[-400:]}")
    return into / pin.name


def _place(unpacked: Path, pinned: PinnedChart, root: Path) -> None:
    """Move a checked chart into `root` under its folder name, replacing an altered copy."""
    bad = problems(unpacked, pinned.files)
    if bad:
        shown = "\n".join(f"  - {line}" for line in bad[:10])
        more = f"\n  ... and {len(bad) - 10} more" if len(bad) > 10 else ""
        raise ChartError(f"{pinned.chart} {pinned.version} is not the pinned chart:\n{shown}{more}")
    target = root / pinned.folder
    if target.exists():
        shutil.rmtree(target)
    unpacked.replace(target)


def fetch(
    cache: Path | None = None,
    *,
    source: Path | None = None,
    download: Download = helm_pull,
    charts: Iterable[PinnedChart] | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> Path:
    """Put every pinned chart not already intact into the cache, from `source` (a local folder of chart copies)
    or by downloading it; returns the cache's charts folder. Every chart is tried; ChartError then names each one
    that failed. Nothing half-written is left, and neither is an empty cache folder."""
    root = charts_root(cache)
    made = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    try:
        for pinned in charts if charts is not None else PINNED.values():
            if (root / pinned.folder).is_dir() and not problems(root / pinned.folder, pinned.files):
                continue  # already fetched and intact
            try:
                _fetch_one(pinned, root, source, download, log)
            except ChartError as error:
                log(f"{pinned.folder}: not fetched")
                failed.append(str(error))
    finally:
        if made and not any(root.iterdir()):
            root.rmdir()
    if failed:
        raise ChartError("\n".join(failed))
    return root


def _fetch_one(
    pinned: PinnedChart, root: Path, source: Path | None, download: Download, log: Callable[[str], None]
) -> None:
    with tempfile.TemporaryDirectory(dir=root, prefix=".fetch-") as work:
        if source is not None:
            log(f"{pinned.folder}: copying from {source}")
            unpacked = _copy_from(source, pinned, Path(work))
        else:
            pin = _pin_of(pinned)
            log(f"{pinned.folder}: downloading from {pin.repo}")
            unpacked = download(pin, Path(work))
        _place(unpacked, pinned, root)
    log(f"{pinned.folder}: {len(pinned.files)} files verified")


def _copy_from(source: Path, pinned: PinnedChart, staging: Path) -> Path:
    found = source / pinned.folder
    if not found.is_dir():
        raise ChartError(f"{source} has no {pinned.folder}")
    unpacked = staging / pinned.folder
    for relative in pinned.files:  # only the pinned files: nothing else of the copy comes along
        if (found / relative).is_file():
            (unpacked / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(found / relative, unpacked / relative)
    return unpacked


def digests_json(directory: Path) -> str:
    """The text of `chart_digests.json` from a folder of the pinned charts' copies (`../shared/reference/charts`)."""
    entries = {}
    for pin in pinned_charts():
        folder = next(
            (directory / n for n in folder_names(pin.name, pin.version, pin.folder) if (directory / n).is_dir()), None
        )
        if folder is None:
            continue
        files = {
            path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*"))
            if path.is_file()
        }
        entries[folder.name] = {"chart": pin.name, "version": pin.version, "files": files}
    document = {
        "about": "sha256 of every file of each pinned Helm chart the offline model renders, by chart folder. Metadata, "
        "not upstream content.",
        "source": "the reference copies of the pinned charts (their sources: ../shared/reference/charts/SOURCES.md). "
        "Regenerate when a pin moves: python -m components.tools.charts digests ../shared/reference/charts > "
        "components/tools/charts/chart_digests.json",
        "charts": dict(sorted(entries.items())),
    }
    return json.dumps(document, indent=1) + "\n"
