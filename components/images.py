"""Which CPU architectures each image the platform runs is built for: pinned facts, each with its source
(`image_architectures.json` beside this module). A fact holds for the tag it was read for; an image it does not cover
is taken to be amd64-only, the one architecture every image here is built for."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

UNKNOWN = frozenset({"amd64"})


@cache
def _facts() -> tuple[dict[str, Any], ...]:
    text = resources.files(__package__ or "").joinpath("image_architectures.json").read_text()
    entries = json.loads(text)["images"]
    # Longest repository first, so a specific image wins over its registry's family.
    return tuple(sorted(entries, key=lambda e: -len(e["match"])))


def split(image: str) -> tuple[str, str]:
    """Repository and tag of an image reference (a digest is dropped; no tag is `latest`)."""
    reference = image.split("@", 1)[0]
    repository, _, tag = reference.rpartition(":")
    if not repository or "/" in tag:
        return reference, "latest"
    return repository, tag


#: A tag that names one release: a full version (major.minor.patch, `v` and a build suffix allowed).
_EXACT_TAG = re.compile(r"^v?\d+\.\d+\.\d+(?:[-+_.][0-9A-Za-z._+-]*)?$")


def is_exact(image: str) -> bool:
    """Whether a reference names one build or release: a digest, or a tag with a full version. `latest`, a missing
    tag, major-only and major.minor tags (`mysql:8.4`, `postgres:16-alpine`) move with each new release."""
    if "@sha256:" in image:
        return True
    return bool(_EXACT_TAG.match(split(image)[1]))


#: The architectures Karpenter pools of this platform launch (`kubernetes.io/arch` values).
POOL_ARCHITECTURES = frozenset({"amd64", "arm64"})


def architectures(image: str) -> frozenset[str]:
    repository, tag = split(image)
    for entry in _facts():
        if repository.startswith(entry["match"]) and entry["tag"] in (tag, "*") and entry["architectures"]:
            return frozenset(entry["architectures"])
    return UNKNOWN


def common_architectures(images: list[str]) -> frozenset[str]:
    """The architectures every one of these images runs on."""
    found = POOL_ARCHITECTURES
    for image in images:
        found &= architectures(image)
    return found
