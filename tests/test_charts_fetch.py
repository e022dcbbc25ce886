"""Fetching the pinned Helm charts the offline model renders: what is placed, what is refused, and what the model
then says it could or could not judge."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from components.tools import charts
from components.tools.charts.__main__ import main
from components.tools.cluster_model import helm
from components.versions import ChartPin
from components.versions import charts as pinned_charts

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "charts"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference charts are not next to the repository")

#: Two small charts, enough to see what a fetch does with each.
SOME = [charts.PINNED["aws-efa-k8s-device-plugin-v0.5.29"], charts.PINNED["aws-fsx-csi-driver-1.17.0"]]


class FakeRepository:
    """`helm pull --untar` of the published charts, served from the reference copies (some files replaced)."""

    def __init__(self, changes: dict[str, bytes] | None = None, *, fail: bool = False):
        self.changes = changes or {}
        self.fail = fail
        self.pulled: list[str] = []

    def __call__(self, pin: ChartPin, into: Path) -> Path:
        self.pulled.append(pin.name)
        if self.fail:
            raise charts.ChartError(f"could not download {pin.name} {pin.version} from {pin.repo}: no route to host")
        (pinned,) = (p for p in charts.PINNED.values() if p.chart == pin.name and p.version == pin.version)
        unpacked = into / pin.name
        shutil.copytree(REFERENCE / pinned.folder, unpacked)
        for relative, content in self.changes.items():
            (unpacked / relative).write_bytes(content)
        return unpacked


def test_the_digests_are_those_of_the_reference_copies():
    shipped = (Path(charts.__file__).parent / charts.DIGESTS).read_text()
    assert charts.digests_json(REFERENCE) == shipped


def test_every_pinned_chart_is_covered_but_the_one_without_a_reference_copy():
    uncovered = {pin.name for pin in pinned_charts() if not charts.covered(pin.name, pin.version)}
    assert uncovered == {"neuron-helm-chart"}
    assert not any(REFERENCE.glob("neuron-helm-chart*"))


def test_a_download_is_checked_and_placed_under_its_folder(tmp_path):
    repository = FakeRepository()
    root = charts.fetch(tmp_path, download=repository, charts=SOME)
    assert repository.pulled == ["aws-efa-k8s-device-plugin", "aws-fsx-csi-driver"]
    assert sorted(p.name for p in root.iterdir()) == [p.folder for p in SOME]
    assert helm.chart_dir(root, "aws-fsx-csi-driver", "1.17.0") == root / "aws-fsx-csi-driver-1.17.0"
    again = FakeRepository()
    charts.fetch(tmp_path, download=again, charts=SOME)
    assert again.pulled == []


def test_a_published_chart_that_differs_is_refused_naming_the_file_and_nothing_is_left(tmp_path):
    repository = FakeRepository({"values.yaml": b"image: {tag: latest}\n"})
    with pytest.raises(charts.ChartError, match=re.escape("values.yaml: sha256 differs from the pinned digest")):
        charts.fetch(tmp_path, download=repository, charts=SOME[:1])
    assert not (tmp_path / "charts").exists()
    assert charts.status(tmp_path / "charts")[SOME[0].folder] == "not downloaded"


def test_a_failed_download_leaves_no_empty_folder_and_reads_as_not_downloaded(tmp_path):
    with pytest.raises(charts.ChartError, match="no route to host"):
        charts.fetch(tmp_path, download=FakeRepository(fail=True), charts=SOME)
    assert not (tmp_path / "charts").exists()
    with pytest.raises(helm.HelmUnavailable, match=re.escape(f"run `{charts.FETCH_COMMAND}`")):
        helm.chart_dir(tmp_path / "charts", "aws-fsx-csi-driver", "1.17.0")


def test_one_chart_failing_does_not_stop_the_others_and_leaves_nothing_half_written(tmp_path):
    class FailsFirst(FakeRepository):
        def __call__(self, pin: ChartPin, into: Path) -> Path:
            self.fail = not self.pulled
            return super().__call__(pin, into)

    repository = FailsFirst()
    with pytest.raises(charts.ChartError) as error:
        charts.fetch(tmp_path, download=repository, charts=SOME)
    assert repository.pulled == ["aws-efa-k8s-device-plugin", "aws-fsx-csi-driver"]
    assert "aws-efa-k8s-device-plugin" in str(error.value)
    assert "aws-fsx-csi-driver" not in str(error.value)
    assert sorted(p.name for p in (tmp_path / "charts").iterdir()) == [SOME[1].folder]


def test_an_altered_cached_chart_is_not_rendered_and_the_reason_names_the_fetch(tmp_path):
    root = charts.fetch(tmp_path, source=REFERENCE, charts=SOME)
    (root / SOME[1].folder / "values.yaml").write_text("controller: {}\n")
    with pytest.raises(helm.HelmUnavailable) as error:
        helm.chart_dir(root, "aws-fsx-csi-driver", "1.17.0")
    assert "altered or incomplete" in str(error.value)
    assert "values.yaml" in str(error.value)
    assert charts.FETCH_COMMAND in str(error.value)
    charts.fetch(tmp_path, source=REFERENCE, charts=SOME)  # a second fetch repairs it
    assert helm.chart_dir(root, "aws-fsx-csi-driver", "1.17.0") == root / SOME[1].folder


def test_a_chart_no_fetch_brings_says_so():
    with pytest.raises(helm.HelmUnavailable, match="no pinned copy to check it against"):
        helm.chart_dir(REFERENCE, "neuron-helm-chart", "1.10.0")


def test_the_command_copies_every_chart_from_a_local_folder_and_reports_status(tmp_path, capsys):
    assert main(["status", "--cache", str(tmp_path)]) == 1
    assert "aws-fsx-csi-driver-1.17.0: not downloaded" in capsys.readouterr().out
    assert main(["fetch", "--cache", str(tmp_path), "--from", str(REFERENCE)]) == 0
    assert main(["status", "--cache", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.endswith(": fetched") for line in lines) == len(charts.PINNED)
    assert charts.status(tmp_path / "charts") == dict.fromkeys(sorted(charts.PINNED), "fetched")
