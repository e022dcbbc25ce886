"""A release rendered as `helm install` would render it, with the pinned Helm (`components.tools.charts.binary`).

Charts are read from a folder of unpacked charts named `<chart>-<version>` (the fetched ones in the per-user cache,
or the reference copies beside the repository), each checked against its pinned digests before it is rendered.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ...versions import HELM
from ...versions import charts as charts_pinned
from ..charts import FETCH_COMMAND, covered, folder_names, usable
from ..charts.binary import HelmUnavailable, cache_dir, digest, helm_binary


def chart_dir(charts: Path, chart: str, version: str) -> Path:
    """The unpacked chart, in a folder named after the chart or, for a chart whose source folder is named otherwise
    (`ChartPin.folder`), after that folder; HelmUnavailable when it is missing or differs from its pinned digests."""
    source_folders = [pin.folder for pin in charts_pinned() if pin.name == chart and pin.folder]
    for name in folder_names(chart, version, *source_folders[:1]):
        if (charts / name / "Chart.yaml").exists():
            if (why := usable(charts / name)) is not None:
                raise HelmUnavailable(why)
            return charts / name
    if not covered(chart, version):
        raise HelmUnavailable(f"{chart} {version} has no pinned copy to check it against, so no fetch brings it")
    raise HelmUnavailable(f"no chart {chart} {version} under {charts}: run `{FETCH_COMMAND}`")


def render(release: Mapping[str, Any], charts: Path, kube_version: str) -> list[dict[str, Any]]:
    """The objects `helm install` would create for a release written by the preview (`helm/<release>.yaml`), CRDs
    left out. Renders are cached by everything that decides them (chart folder, values, versions)."""
    directory = chart_dir(charts, release["chart"], str(release["version"]))
    key = digest(
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
    # A name of this process's own: two previews at once (a test run's workers, `make preview` beside them) may
    # render the same release, and neither may rename the other's half-written file into place.
    partial = cached.with_suffix(f".{os.getpid()}.partial")
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
