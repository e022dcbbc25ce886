"""Exact images in place of the moving tags upstream's manifests name (`mysql:8.4`, Katib's `mysql:8.0`, ...).

A moving tag is rebuilt and re-pointed by its publisher, so the same manifests would run a different database on
each node that pulls it. One override table (`versions.KUBEFLOW_IMAGES`) replaces each such reference wherever a
rendered object names an image: any `image` field (pod templates, and the pod templates nested in training runtimes)
and any `image:` line of a text value (Istio's sidecar injection templates).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from ..images import is_exact
from ..versions import KUBEFLOW_IMAGES, ImagePin
from .objects import Manifest

#: An `image:` line inside a text value (YAML carried in a ConfigMap); the reference is group 2.
_IMAGE_LINE = re.compile(r"""(?m)^([ \t]*(?:-[ \t]*)?image:[ \t]*["']?)([^\s"'#{}$]+)""")


def references(obj: Any) -> Iterator[str]:
    """Every image reference an object names: `image` fields at any depth and `image:` lines of its text values."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "image" and isinstance(value, str):
                yield value
            else:
                yield from references(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from references(value)
    elif isinstance(obj, str) and "image:" in obj:
        yield from (match.group(2) for match in _IMAGE_LINE.finditer(obj))


def moving(objects: Iterable[Manifest]) -> set[str]:
    """The image references among `objects` that name no exact release (see `images.is_exact`)."""
    return {image for obj in objects for image in references(obj) if not is_exact(image)}


def pin(objects: Iterable[Manifest], pins: Iterable[ImagePin] = KUBEFLOW_IMAGES) -> list[Manifest]:
    """The objects with each pinned moving reference replaced by its exact image; objects naming none are returned
    as they are."""
    exact = {p.moving: p.image for p in pins}

    def line(match: re.Match[str]) -> str:
        return match.group(1) + exact.get(match.group(2), match.group(2))

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: exact.get(v, v) if k == "image" and isinstance(v, str) else walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str) and "image:" in value:
            return _IMAGE_LINE.sub(line, value)
        return value

    return [walk(obj) if any(r in exact for r in references(obj)) else obj for obj in objects]
