"""Package exports that load their module on first use.

A part's package names its public classes without importing them, so a pure module that imports the part's config
or renderer never loads the part's resource code (and config models can import each other without a circle).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` resolving each name in `exports` from `<package>.<module>`."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
