"""Kubeflow runs exact images: every image upstream's manifests name by a moving tag (`mysql:8.4`, Katib's
`mysql:8.0`, ...) is replaced by the pin in `components/versions/`, wherever an object names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.images import architectures, is_exact
from components.kubeflow import entries, image_pins, plan, render
from components.kubeflow.credentials import Admin
from components.kubeflow.objects import containers
from components.kubeflow.teams import Team
from components.versions import KUBEFLOW_IMAGES, ImagePin, Pin
from tests.kubeflow_support import template_of

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")

#: Every entry a stack can install, each optional component on (the upstream alternatives duplicate default objects).
EVERYTHING = entries.selected(katib=True, spark=True, hub=True, knative=True, hub_registry=True, cluster_tokens=True)
TEAM = Team(name="team-a", owner="a@example.org", gpu_ceiling=1, s3_prefix="teams/team-a")

#: Tags without a patch number that still name one release, by the publisher's own numbering; nothing else may stay.
ALLOWED = {
    # SeaweedFS numbers its releases major.minor (3.99, 4.00, 4.01): 4.00 is one release.
    "chrislusf/seaweedfs:4.00",
    # NVIDIA's NGC containers are monthly releases named YY.MM: 25.10-py3 is the October 2025 build, never moved on.
    "nvcr.io/nvidia/jax:25.10-py3",
    # PostgreSQL numbers its releases major.minor since 10: 17.6 is one patch release (the Hub's model catalog).
    "postgres:17.6",
}


@pytest.fixture(scope="module")
def rendered(render_cache) -> dict[str, list[dict[str, Any]]]:
    return render.render(REFERENCE, EVERYTHING, cache_dir=render_cache)


@pytest.fixture(scope="module")
def planned(rendered) -> list[dict[str, Any]]:
    """The objects a stack with every component registers, through the platform's own changes."""
    settings = plan.Settings(
        admin=Admin("platform@example.org"), storage_class="gp3", teams=(TEAM,), hub_registry_team=TEAM.name
    )
    return [item.manifest for item in plan.platform_objects(rendered, settings)]


def images_of(objects, kind: str, name: str) -> list[str]:
    (obj,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return [c["image"] for c in containers(template_of(obj)["spec"])]


def test_moving_tags_are_told_from_exact_ones():
    for moving in ("mysql:8.4", "postgres:16-alpine", "busybox", "example.org/app:latest", "example.org/app:1"):
        assert not is_exact(moving), moving
    exact_ones = (
        "mysql:8.4.8",
        "quay.io/brancz/kube-rbac-proxy:v0.13.1",
        "pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime",
    )
    for exact in exact_ones:
        assert is_exact(exact), exact
    assert is_exact("postgres:16-alpine@sha256:" + "0" * 64)  # a digest names one build whatever the tag


def test_no_kubeflow_image_a_stack_registers_uses_a_moving_tag(rendered, planned):
    upstream = image_pins.moving(o for objects in rendered.values() for o in objects)
    pinned = {p.moving for p in KUBEFLOW_IMAGES}
    assert pinned <= upstream  # what upstream renders today: mysql:8.4, mysql:8.0, postgres:16-alpine, busybox, ...
    assert image_pins.moving(planned) == ALLOWED
    assert upstream >= ALLOWED  # every exception is still rendered (a stale one would hide nothing)


def test_the_databases_run_the_pinned_images(planned):
    pins = {p.moving: p.image for p in KUBEFLOW_IMAGES}
    assert images_of(planned, "Deployment", "mysql") == [pins["mysql:8.4"]]
    assert images_of(planned, "Deployment", "katib-mysql") == [pins["mysql:8.0"]]
    assert images_of(planned, "Deployment", "model-registry-db") == [pins["postgres:16-alpine"]]
    catalog = [o for o in planned if o["kind"] == "Deployment" and o["metadata"]["name"] == "model-catalog-server"]
    init = [c["image"] for c in template_of(catalog[0])["spec"]["initContainers"]]
    assert init == [pins["busybox"]]


def test_istios_injection_template_names_the_pinned_busybox(planned):
    (injector,) = [o for o in planned if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "istio-sidecar-injector"]
    text = "\n".join(injector["data"].values())
    pins = {p.moving: p.image for p in KUBEFLOW_IMAGES}
    assert f"image: {pins['busybox:1.28']}" in text
    assert "busybox:1.28\n" not in text


def test_every_pin_names_an_exact_tag_of_its_image_with_its_source():
    assert len({p.moving for p in KUBEFLOW_IMAGES}) == len(KUBEFLOW_IMAGES)  # each moving reference pinned once
    for p in KUBEFLOW_IMAGES:
        assert is_exact(f"{p.repository}:{p.pin.version}") or p.pin.digest is not None, p
        assert p.pin.digest is not None, p  # every one has a publisher's record (the format is checked by Pin)
        assert "repo-info" in p.pin.source, p
        assert p.image == f"{p.repository}:{p.pin.version}@{p.pin.digest}", p
        assert p.repository in p.pin.source, p


def test_the_pinned_images_keep_their_architecture_facts():
    # Pipelines' and Katib's MySQL and the Hub's Postgres are published for arm64 too: pinning them must not send
    # their pods to amd64 nodes only (`transform.pinned_architectures` reads these facts).
    for p in KUBEFLOW_IMAGES:
        assert {"amd64", "arm64"} <= architectures(p.image), p.image


def test_pins_change_only_the_references_they_name():
    pins = (ImagePin("mysql:8.4", Pin("mysql", "8.4.8", "test")),)
    pod: dict[str, Any] = {
        "kind": "Deployment",
        "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "mysql:8.4"}]}}},
    }
    other = {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"image": "mysql:8.4.1"}]}}}}
    config = {"kind": "ConfigMap", "data": {"t": "spec:\n  containers:\n  - image: mysql:8.4\n    name: x\n"}}
    changed = image_pins.pin([pod, other, config], pins)
    assert changed[0]["spec"]["template"]["spec"]["containers"][0] == {"name": "a", "image": "mysql:8.4.8"}
    assert changed[1] is other
    assert changed[2]["data"]["t"] == "spec:\n  containers:\n  - image: mysql:8.4.8\n    name: x\n"
    assert pod["spec"]["template"]["spec"]["containers"][0]["image"] == "mysql:8.4"  # the input is not changed
