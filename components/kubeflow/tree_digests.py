"""sha256 of every file of the pinned Kubeflow tree the renders read, by path in the tree: the data is
`tree_digests.json` (with its source), shipped with the package."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType

FILES: Mapping[str, str] = MappingProxyType(
    json.loads(resources.files(__package__ or "").joinpath("tree_digests.json").read_text(encoding="utf-8"))["files"]
)
