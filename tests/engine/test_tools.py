"""The engine tier's tools: each wrapper module requires exactly the pinned version, and the build's cache never
holds a half-built tool."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from engine.tools import build
from engine.tools.pins import TOOLS, Binary

HERE = Path(build.__file__).resolve().parent


def _required(go_mod: str) -> dict[str, str]:
    """module -> version of every require line (in blocks or single)."""
    found = {}
    for line in go_mod.splitlines():
        match = re.match(r"^\s*(?:require\s+)?([\w.\-/]+)\s+(v[\w.\-+]+)(?:\s*//.*)?$", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.folder)
def test_each_wrapper_module_requires_exactly_the_pinned_version(tool):
    go_mod = (HERE / tool.folder / "go.mod").read_text()
    assert _required(go_mod).get(tool.module) == tool.version
    assert (HERE / tool.folder / "go.sum").is_file(), "go.sum pins every module's hash"


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.folder)
def test_each_binary_is_built_from_its_module_or_the_wrapper(tool):
    for binary in tool.binaries:
        assert binary.package.startswith((tool.module, "./", ".")), binary
    for script in tool.scripts:
        assert (HERE / tool.folder / "scripts" / script).stat().st_mode & 0o111, f"{script} is executable"


def test_the_control_plane_replaces_every_staging_module_with_its_release():
    go_mod = (HERE / "control-plane" / "go.mod").read_text()
    replaced = dict(re.findall(r"^\s*(k8s\.io/[\w\-]+) => k8s\.io/[\w\-]+ (v[\w.\-]+)$", go_mod, re.MULTILINE))
    tool = next(t for t in TOOLS if t.folder == "control-plane")
    staging = "v0." + tool.version.removeprefix("v1.")
    assert len(replaced) > 25
    assert set(replaced.values()) == {staging}


def test_a_changed_pin_is_a_new_cache_key_and_an_unchanged_one_the_same():
    tool = TOOLS[-1]
    assert build.key(tool, "go1.26.8") == build.key(tool, "go1.26.8")
    assert build.key(dataclasses.replace(tool, version="v9.9.9"), "go1.26.8") != build.key(tool, "go1.26.8")
    assert build.key(tool, "go1.27.0") != build.key(tool, "go1.26.8")


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go")
def test_a_failed_build_leaves_nothing_that_looks_built(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    kwok = next(t for t in TOOLS if t.folder == "kwok")
    broken = dataclasses.replace(kwok, binaries=(Binary("kwok", "sigs.k8s.io/kwok/cmd/no-such-command"),))
    with pytest.raises(subprocess.CalledProcessError):
        build.build(broken, "go1.26.8", log=False)
    assert list(build.cache_root().iterdir()) == []


def test_two_builds_at_once_build_each_tool_once_and_agree_on_the_folder(tmp_path, monkeypatch):
    """CI builds the tools in the background while lint and the offline tier run, and its engine tier asks for them
    while that build may still be going; two test workers can start at once too. The second waits for the first
    and builds nothing: without the lock both would compile every tool, and the later rename into place fails."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    tools = tuple(t for t in TOOLS if t.folder in ("etcd", "kwok"))
    monkeypatch.setattr(build, "TOOLS", tools)
    monkeypatch.setattr(build, "_go", lambda: "go")
    monkeypatch.setattr(build, "_go_version", lambda: "go1.26.8")
    compiled: list[str] = []
    compiling = threading.Lock()

    def go_build(args, **_):
        output = Path(args[args.index("-o") + 1])
        with compiling:
            compiled.append(output.name)
        time.sleep(0.2)  # long enough for the other caller to arrive while this one builds
        output.write_text("#!/bin/sh\n")
        return subprocess.CompletedProcess(args, 0)

    monkeypatch.setattr(build.subprocess, "run", go_build)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        folders = list(pool.map(lambda _: build.bin_dir(), range(2)))
    assert folders[0] == folders[1]
    assert sorted(compiled) == sorted(b.name for t in tools for b in t.binaries)
    assert {link.name for link in folders[0].iterdir()} == set(compiled)
