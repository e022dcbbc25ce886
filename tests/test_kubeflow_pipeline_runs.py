"""Pipeline runs' pods, which Argo makes at run time: KFP 2.16.1's driver and launcher are amd64-only and the launcher
runs inside every step's container, so every run pod selects amd64 nodes; the platform model judges those pods."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from components.kubeflow import entries, pipeline_runs, render
from components.kubeflow.objects import containers
from components.tools.cluster_model import check_previews
from tests.kubeflow_support import template_of

from .test_platform_model import SYSTEM_GROUP, agents, node_pool, preview

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")


@pytest.fixture(scope="module")
def pipelines(render_cache) -> list[dict[str, Any]]:
    rendered = render.render(REFERENCE, [entries.PIPELINES], cache_dir=render_cache)
    return [o for objects in rendered.values() for o in objects]


def server(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return next(o for o in objects if pipeline_runs.is_api_server(o))


def env(obj: dict[str, Any], name: str) -> str:
    values = [e.get("value") for c in containers(template_of(obj)["spec"]) for e in c.get("env") or ()]
    names = [e["name"] for c in containers(template_of(obj)["spec"]) for e in c.get("env") or ()]
    value = dict(zip(names, values, strict=True)).get(name)
    assert value is not None, f"the API server sets no {name}"
    return value


def with_env(obj: dict[str, Any], name: str, value: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    for container in containers(template_of(obj)["spec"]):
        for entry in container.get("env") or ():
            if entry["name"] == name:
                entry["value"] = value
    return obj


def test_every_compiled_run_selects_the_architecture_the_driver_and_launcher_are_built_for(pipelines):
    assert pipeline_runs.run_images(server(pipelines)) == (
        "ghcr.io/kubeflow/kfp-driver:2.16.1",
        "ghcr.io/kubeflow/kfp-launcher:2.16.1",
    )
    assert json.loads(env(server(pipelines), pipeline_runs.PATCH_ENV)) == {}  # upstream: runs go anywhere
    pinned = server(pipeline_runs.pin_run_pods(pipelines))
    assert json.loads(env(pinned, pipeline_runs.PATCH_ENV)) == {"nodeSelector": {"kubernetes.io/arch": "amd64"}}


def test_the_pin_keeps_what_the_patch_already_says_and_goes_when_the_images_are_multi_arch(pipelines):
    patched = with_env(server(pipelines), pipeline_runs.PATCH_ENV, '{"nodeSelector": {"team": "a"}, "parallelism": 3}')
    pinned = pipeline_runs.pin_run_pods([patched])[0]
    assert json.loads(env(pinned, pipeline_runs.PATCH_ENV)) == {
        "nodeSelector": {"team": "a", "kubernetes.io/arch": "amd64"},
        "parallelism": 3,
    }
    # A later pin whose images are published for arm64 too (argoexec is) needs no pin.
    multi_arch = with_env(server(pipelines), pipeline_runs.DRIVER_ENV, "quay.io/argoproj/argoexec:v3.7.3")
    multi_arch = with_env(multi_arch, pipeline_runs.LAUNCHER_ENV, "quay.io/argoproj/argoexec:v3.7.3")
    assert pipeline_runs.pin_run_pods([multi_arch]) == [multi_arch]


def test_a_patch_that_is_not_a_json_object_is_refused(pipelines):
    broken = with_env(server(pipelines), pipeline_runs.PATCH_ENV, "[]")
    with pytest.raises(ValueError, match=r"COMPILED_PIPELINE_SPEC_PATCH .* not a JSON object"):
        pipeline_runs.pin_run_pods([broken])


def model_problems(tmp_path: Path, objects: list[dict[str, Any]]) -> list[str]:
    kept = [o for o in objects if o["kind"] in {"Deployment", "ConfigMap"}]
    both = node_pool("cpu", arch=("amd64", "arm64"))
    _, found = check_previews([preview(tmp_path, [*kept, both, *agents()], (SYSTEM_GROUP,))], None)
    return [str(p) for p in found if p.rule == "architecture" and "pipeline step" in str(p)]


def test_the_model_judges_where_a_runs_driver_and_executor_pods_land(pipelines, tmp_path):
    unpinned = model_problems(tmp_path / "unpinned", pipelines)
    assert any("driver pod" in p and "as arm64" in p and "kfp-driver:2.16.1" in p for p in unpinned)
    assert any("executor pod" in p and "as arm64" in p and "kfp-launcher:2.16.1" in p for p in unpinned)
    assert model_problems(tmp_path / "pinned", pipeline_runs.pin_run_pods(pipelines)) == []
