"""Package exports that load their module on first use.

A part's package names its public classes without importing them, so a pure module that imports the part's config
or renderer never loads the part's resource code (and config models can import each other without a circle).
"""

from __future__ import annotations

import importlib
import warnings
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


def moved_exports(module: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for a module whose names moved: each name in `exports` is resolved from its new module
    (`<package>.<new module>`, `package` being `module`'s own), with a DeprecationWarning naming where it lives now."""
    package = module.rsplit(".", 1)[0]

    def __getattr__(name: str) -> Any:
        new = exports.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is deprecated: import it from {package}.{new}", DeprecationWarning, stacklevel=2
        )
        return getattr(importlib.import_module(f"{package}.{new}"), name)

    return __getattr__
