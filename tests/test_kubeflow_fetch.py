"""Fetching the pinned Kubeflow tree: what is kept, what is refused, and what `tree()` accepts."""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import pytest
import yaml

from components.kubeflow import fetch, pins
from components.kubeflow.pins import JOBSET, LWS
from components.kubeflow.tree_digests import FILES

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")

SOURCES = (LWS, JOBSET)
SUBSET = {path: digest for path, digest in FILES.items() if path.startswith((LWS.folder, JOBSET.folder))}


def archive(source: pins.SourcePin, *, changes: dict[str, bytes] | None = None, extra: bool = True) -> bytes:
    """A GitHub-shaped archive of one source, built from the reference files (some replaced by `changes`)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        for path in fetch.files_of(source):
            content = (changes or {}).get(path, (REFERENCE / path).read_bytes())
            info = tarfile.TarInfo(f"{source.archive_root}/{path.removeprefix(source.folder + '/')}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        if extra:  # what the subset leaves out, and what must never be followed
            info = tarfile.TarInfo(f"{source.archive_root}/docs/README.md")
            info.size = 2
            tar.addfile(info, io.BytesIO(b"hi"))
            link = tarfile.TarInfo(f"{source.archive_root}/escape")
            link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(link)
    return buffer.getvalue()


class FakeGitHub:
    def __init__(self, archives: dict[str, bytes]):
        self.archives = archives
        self.requested: list[str] = []

    def __call__(self, url: str, destination: Path) -> None:
        self.requested.append(url)
        destination.write_bytes(self.archives[url])


@pytest.fixture(scope="module")
def archives() -> dict[str, bytes]:
    return {source.archive_url: archive(source) for source in SOURCES}


def test_fetch_keeps_exactly_the_pinned_files_and_tree_accepts_them(tmp_path, archives):
    github = FakeGitHub(archives)
    root = fetch.fetch(tmp_path, download=github, sources=SOURCES, files=SUBSET)
    assert github.requested == [s.archive_url for s in SOURCES]
    kept = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert kept == sorted(SUBSET)
    assert fetch.tree(None, cache=tmp_path, files=SUBSET) == root


def test_a_second_fetch_downloads_nothing(tmp_path, archives):
    fetch.fetch(tmp_path, download=FakeGitHub(archives), sources=SOURCES, files=SUBSET)
    again = FakeGitHub(archives)
    fetch.fetch(tmp_path, download=again, sources=SOURCES, files=SUBSET)
    assert again.requested == []


def test_an_archive_with_a_changed_file_is_refused_and_nothing_is_kept(tmp_path, archives):
    path = next(p for p in fetch.files_of(LWS) if p.endswith("manager.yaml"))
    tampered = dict(archives)
    tampered[LWS.archive_url] = archive(LWS, changes={path: b"kind: Deployment\n"})
    with pytest.raises(fetch.TreeError, match=re.escape(path)):
        fetch.fetch(tmp_path, download=FakeGitHub(tampered), sources=(LWS,), files=SUBSET)
    assert not (fetch.cached_tree_path(tmp_path) / LWS.folder).exists()


def test_an_archive_missing_a_file_is_refused(tmp_path):
    path = next(iter(fetch.files_of(LWS)))
    short = archive(LWS, changes={}, extra=False)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(short), mode="r:gz") as src, tarfile.open(fileobj=buffer, mode="w:gz") as dst:
        for member in src:
            if not member.name.endswith(path.removeprefix(LWS.folder + "/")):
                dst.addfile(member, src.extractfile(member))
    with pytest.raises(fetch.TreeError, match=re.escape(f"{path}: not in the archive")):
        fetch.fetch(tmp_path, download=FakeGitHub({LWS.archive_url: buffer.getvalue()}), sources=(LWS,), files=SUBSET)


def test_a_tampered_cache_is_refused_naming_the_file_and_the_fetch_command(tmp_path, archives):
    root = fetch.fetch(tmp_path, download=FakeGitHub(archives), sources=SOURCES, files=SUBSET)
    victim = sorted(SUBSET)[3]
    (root / victim).write_text("tampered\n")
    with pytest.raises(fetch.TreeError) as error:
        fetch.tree(None, cache=tmp_path, files=SUBSET)
    assert f"{victim}: sha256 differs" in str(error.value)
    assert fetch.FETCH_COMMAND in str(error.value)


def test_a_missing_tree_names_the_fetch_command(tmp_path):
    with pytest.raises(fetch.TreeError, match=re.escape(f"run `{fetch.FETCH_COMMAND}` first")):
        fetch.tree(None, cache=tmp_path)


def test_a_failed_first_download_leaves_no_folder_and_reads_as_not_downloaded(tmp_path):
    def unreachable(url: str, destination: Path) -> None:
        raise OSError("Network is unreachable")

    with pytest.raises(fetch.TreeError, match="could not download"):
        fetch.fetch(tmp_path, download=unreachable, sources=SOURCES, files=SUBSET)
    assert not fetch.cached_tree_path(tmp_path).exists()
    with pytest.raises(fetch.TreeError, match="has not been downloaded"):
        fetch.tree(None, cache=tmp_path, files=SUBSET)


def test_fetch_repairs_a_tampered_source(tmp_path, archives):
    root = fetch.fetch(tmp_path, download=FakeGitHub(archives), sources=SOURCES, files=SUBSET)
    (root / sorted(fetch.files_of(JOBSET))[0]).unlink()
    github = FakeGitHub(archives)
    fetch.fetch(tmp_path, download=github, sources=SOURCES, files=SUBSET)
    assert github.requested == [JOBSET.archive_url]


def test_the_reference_tree_is_intact():
    assert fetch.tree(REFERENCE) == REFERENCE


def test_the_shipped_digests_are_the_reference_listing_of_the_pinned_sources():
    generated = fetch.digests_json((REFERENCE / "FILES.sha256").read_text())
    assert generated == (Path(fetch.__file__).parent / "tree_digests.json").read_text()
    assert len(FILES) == 712
    assert "REMOTES.yaml" not in FILES
    assert "expected-objects.tsv" not in FILES


def test_pins_name_the_commits_of_the_reference_sources():
    sources = (REFERENCE / "SOURCES.md").read_text()
    for source in pins.SOURCES:
        row = next(line for line in sources.splitlines() if f"`{source.commit}`" in line)
        assert f"`{source.ref}`" in row
        assert source.archive_url == f"https://github.com/{source.repository}/archive/{source.commit}.tar.gz"
        assert source.archive_root == f"{source.repository.split('/')[1]}-{source.commit}"
        assert fetch.files_of(source), source.repository


def test_every_remote_base_is_pinned_as_the_reference_lists_it():
    listed = yaml.safe_load((REFERENCE / "REMOTES.yaml").read_text())["remotes"]
    assert [(r["url"], r["local"], tuple(r["used_by"]), r.get("build_from")) for r in listed] == [
        (r.url, r.local, r.used_by, r.build_from) for r in pins.REMOTES
    ]
