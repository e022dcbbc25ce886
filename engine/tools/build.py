"""Build the engine tier's tools into the per-user cache, each only when its pin or wrapper changed.

    python -m engine.tools.build            # build what is missing, print the folder holding every binary
    python -m engine.tools.build --status   # say what is built and what is missing, build nothing

Each tool lands in `<cache>/engine/<folder>-<key>/`, where the key hashes its pin, its wrapper module (go.mod,
go.sum, Go files, scripts) and the Go version, so a changed pin builds anew and an unchanged one never does. A build
goes to a temporary folder first and is renamed into place when complete: an interrupted build leaves nothing that
looks built. `bin_dir()` gathers the current tools into one folder of links, the one the tier runs from.

One build runs at a time per cache (a lock file beside the tools): a second, such as CI's engine tier started while
its background build of the tools is still going, or two test workers starting at once, waits for the first and
then finds its tools built.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from engine.tools.pins import TOOLS, Tool

HERE = Path(__file__).resolve().parent


def cache_root() -> Path:
    """The per-user cache (XDG_CACHE_HOME, else ~/.cache), shared with the Kubeflow tree's."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "eks-ml-platform" / "engine"


def _go() -> str:
    path = shutil.which("go")
    if path is None:
        raise SystemExit("engine tools: no `go` on PATH (Go 1.26 builds the engine tier's tools)")
    return path


def _go_version() -> str:
    return subprocess.run([_go(), "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()


def _wrapper_files(tool: Tool) -> list[Path]:
    folder = HERE / tool.folder
    files = [folder / "go.mod", folder / "go.sum", *sorted(folder.rglob("*.go"))]
    files += [folder / "scripts" / script for script in tool.scripts]
    return files


def key(tool: Tool, go_version: str) -> str:
    digest = hashlib.sha256(repr((tool, go_version)).encode())
    for path in _wrapper_files(tool):
        digest.update(path.relative_to(HERE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def tool_dir(tool: Tool, go_version: str) -> Path:
    return cache_root() / f"{tool.folder}-{key(tool, go_version)}"


def _ldflags(stamps: Iterable[tuple[str, str]]) -> list[str]:
    flags = " ".join(f"-X {name}={value}" for name, value in stamps)
    # -s -w: no symbol table or DWARF; the binaries are run, never debugged, and link faster without.
    return ["-ldflags", f"-s -w {flags}".strip()]


def _prepare(tool: Tool, env: dict[str, str]) -> None:
    """Steps a wrapper needs before `go build`: the Kubernetes provider embeds the schema its module carries."""
    if tool.folder != "kubernetes-provider":
        return
    folder = HERE / tool.folder
    # `go mod download -json` fetches the module if it is not in the module cache yet, and says where it is.
    downloaded = subprocess.run(
        [_go(), "mod", "download", "-json", tool.module],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    module_dir = json.loads(downloaded.stdout)["Dir"]
    schema = Path(module_dir) / "cmd" / "pulumi-resource-kubernetes" / "schema.json"
    shutil.copyfile(schema, folder / "schema.json")


def build(tool: Tool, go_version: str, *, log: bool = True) -> Path:
    """Build `tool` into the cache unless it is there; return its folder."""
    target = tool_dir(tool, go_version)
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    env = {**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false", "CGO_ENABLED": "0"}
    folder = HERE / tool.folder
    staging = Path(tempfile.mkdtemp(prefix=f".{tool.folder}-", dir=target.parent))
    try:
        _prepare(tool, env)
        for binary in tool.binaries:
            if log:
                print(f"engine tools: building {binary.name} ({tool.module} {tool.version})", flush=True)
            subprocess.run(
                [
                    _go(),
                    "build",
                    "-trimpath",
                    *_ldflags(binary.stamps),
                    "-o",
                    str(staging / binary.name),
                    binary.package,
                ],
                cwd=folder,
                env=env,
                check=True,
            )
        for script in tool.scripts:
            shutil.copy2(folder / "scripts" / script, staging / script)
            (staging / script).chmod(0o755)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if log:
        print(f"engine tools: {tool.folder} built in {time.monotonic() - started:.0f} s -> {target}", flush=True)
    return target


@contextlib.contextmanager
def _one_builder() -> Iterator[None]:
    """Hold the cache's build lock; say so when another build holds it and this one waits."""
    lock_file = cache_root() / ".build.lock"
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"engine tools: another build holds {lock_file}; waiting for it", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def bin_dir(*, build_missing: bool = True) -> Path:
    """One folder with every tool's binaries (links into the cache), for this set of pins."""
    with _one_builder():
        return _bin_dir(build_missing)


def _bin_dir(build_missing: bool) -> Path:
    go_version = _go_version()
    dirs = [build(tool, go_version) if build_missing else tool_dir(tool, go_version) for tool in TOOLS]
    combined = cache_root() / ("bin-" + hashlib.sha256("".join(d.name for d in dirs).encode()).hexdigest()[:16])
    if not combined.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=".bin-", dir=cache_root()))
        for folder in dirs:
            for binary in folder.iterdir():
                (staging / binary.name).symlink_to(binary)
        staging.rename(combined)
    return combined


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.tools.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("--status", action="store_true", help="say what is built and what is missing; build nothing")
    args = parser.parse_args(argv)
    go_version = _go_version()
    if args.status:
        missing = [tool for tool in TOOLS if not tool_dir(tool, go_version).is_dir()]
        for tool in TOOLS:
            state = "missing" if tool in missing else "built"
            print(f"{tool.folder:20} {tool.version:40} {state}  {tool_dir(tool, go_version)}")
        return 1 if missing else 0
    print(bin_dir())
    return 0


if __name__ == "__main__":
    sys.exit(main())
