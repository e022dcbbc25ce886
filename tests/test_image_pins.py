"""The images the platform sets itself, pinned once in components/versions/: by tag, and by digest where the
publisher records one. A digest pin must hold the digest as the publisher's record writes it, cite that record at a
fixed commit, and reach the pods that run the image."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from components import versions
from components.images import split
from components.versions import Pin

CHARTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "charts"
pytest_charts = pytest.mark.skipif(
    not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository"
)

#: How both publishers' records used here write a digest: Docker's official-images record (`docker pull
#: busybox@sha256:<hex>`) and registry.k8s.io's promoter manifest (`"sha256:<hex>": [tags]`).
RECORDED_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _pins(value: object) -> Iterator[Pin]:
    if isinstance(value, Pin):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _pins(item)


def every_pin() -> list[Pin]:
    return [pin for value in vars(versions).values() for pin in _pins(value)]


def test_a_pinned_image_reference_is_tag_at_digest_and_the_tag_alone_without_one():
    digest = "sha256:" + "0123456789abcdef" * 4
    assert Pin("app", "1.2.3", "https://example.com/app", digest=digest).image_tag == f"1.2.3@{digest}"
    assert Pin("app", "1.2.3", "https://example.com/app").image_tag == "1.2.3"


@pytest.mark.parametrize(
    "digest",
    [
        "0123456789abcdef" * 4,  # no algorithm
        "sha256:" + "0123456789abcdef" * 3,  # 48 digits
        "sha256:" + "0123456789ABCDEF" * 4,  # registries write lowercase
        "sha512:" + "0123456789abcdef" * 8,
        "sha256:" + "0123456789abcdef" * 4 + "\n",
    ],
)
def test_a_digest_that_is_not_sha256_and_64_lowercase_hex_digits_is_refused(digest):
    with pytest.raises(ValueError, match=r"app 1\.2\.3: digest .* is not sha256:<64 hex digits>"):
        Pin("app", "1.2.3", "https://example.com/app", digest=digest)


def test_every_digest_is_written_as_its_record_writes_it_and_cites_that_record_at_a_fixed_commit():
    digested = [pin for pin in every_pin() if pin.digest]
    assert versions.BUSYBOX in digested
    for pin in digested:
        assert RECORDED_DIGEST.fullmatch(pin.digest or ""), pin
        # A branch moves; the record a digest was read from is named at the commit it was read at.
        assert re.search(r"github\.com/[\w.-]+/[\w.-]+/blob/[0-9a-f]{40}/", pin.source), pin


# ------------------------------------------------------------------------------------------------ rendered


@pytest.fixture(scope="module")
def pod_images(dev) -> dict[str, set[str]]:
    """Every container image of every pod template the dev stack installs (charts rendered with the platform's
    values through the pinned Helm), by repository."""
    from components.tools.preview import platform_model

    built, _ = platform_model(dev, CHARTS)
    assert built.unrendered == {}
    images: dict[str, set[str]] = {}
    for _, obj in built.objects:
        spec: dict[str, Any] = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
            images.setdefault(split(container["image"])[0], set()).add(container["image"])
    return images


@pytest.mark.stack
@pytest.mark.subprocess
@pytest_charts
def test_the_images_the_platform_sets_run_by_digest_where_one_is_pinned(pod_images):
    """busybox (kube-prometheus-stack's CRD upgrade job) by its digest; the bin-packing scheduler and Kueue's controller
    as their pins say (by tag while the publisher's record holds no digest for it)."""
    busybox, scheduler = versions.BUSYBOX, versions.KUBE_SCHEDULER[versions.DEFAULT_KUBERNETES_VERSION]
    expected = {
        "docker.io/busybox": f"docker.io/busybox:{busybox.version}@{busybox.digest}",
        versions.KUBE_SCHEDULER_IMAGE: f"{versions.KUBE_SCHEDULER_IMAGE}:{scheduler.image_tag}",
        versions.KUEUE_IMAGE.name: f"{versions.KUEUE_IMAGE.name}:{versions.KUEUE_IMAGE.image_tag}",
    }
    assert {repository: pod_images.get(repository) for repository in expected} == {
        repository: {image} for repository, image in expected.items()
    }
