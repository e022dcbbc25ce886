"""Preview another Pulumi program that uses the package (a team stack): its own `__main__.py` under the same mocks,
with the stacks it references answered from recorded outputs.

    python -m components.preview --project-dir examples/team-stack --stack prod --out build/preview/team-prod \\
        --stack-reference acme/eks-ml-platform/prod=examples/team-stack/platform-outputs.prod.json
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import json
import runpy
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from ...config.errors import ConfigError, ConfigIssue
from ...platform.config import PROJECT_NAMESPACE
from . import mocks
from .inventory import Inventory


def is_platform(project: str) -> bool:
    return project == PROJECT_NAMESPACE


def read_stack_references(specs: Iterable[str]) -> dict[str, dict[str, Any]]:
    """`org/project/stack=outputs.json` pairs as {stack: outputs}; ValueError naming a malformed one."""
    references = {}
    for spec in specs:
        stack, sep, path = spec.partition("=")
        if not sep or stack.count("/") != 2:
            raise ValueError(f"--stack-reference {spec!r}: expected ORG/PROJECT/STACK=FILE")
        outputs = json.loads(Path(path).read_text())
        if not isinstance(outputs, dict):
            raise ValueError(f"--stack-reference {spec!r}: {path} holds no JSON object of outputs")
        references[stack] = outputs
    return references


def run_program(
    project_dir: Path,
    project: str,
    stack: str,
    config: Mapping[str, str],
    secret_keys: list[str],
    stack_references: Mapping[str, Mapping[str, Any]],
) -> Inventory:
    """Run the project's `__main__.py` (from its folder, as Pulumi does) under mocks. ConfigError when its stack
    file has no `aws:region`; what the program raises (pulumi.RunError for its own config errors) goes through."""
    if "aws:region" not in config:
        raise ConfigError([ConfigIssue(path="aws:region", message="is required (e.g. 'us-west-2')")])
    main = project_dir.resolve() / "__main__.py"
    sys.path.insert(0, str(main.parent))  # its own modules, as the Pulumi language host finds them

    def program() -> None:
        with one_package():
            runpy.run_path(str(main), run_name="__main__")

    try:
        return mocks.run(
            program,
            project=project,
            stack=stack,
            region=config["aws:region"],
            config=config,
            secret_keys=secret_keys,
            stack_references=stack_references,
        )
    finally:
        sys.path.remove(str(main.parent))


#: The package's two import names (setup.py): what library users import, and the repository's folder.
PACKAGE_NAMES = ("eks_ml_platform", "components")


class _SameModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves `<other name>.x.y` to this package's own loaded `x.y` module, so a program importing the package by
    the other name gets the very classes and errors the preview runs with (one ConfigError, one set of components)."""

    def __init__(self, own: str, other: str) -> None:
        self.own, self.other = own, other
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.other and not fullname.startswith(self.other + "."):
            return None
        module = importlib.import_module(self.own + fullname.removeprefix(self.other))
        # A package only where the module is one: the import system gives a module the spec's search locations as
        # its `__path__` when it has none, which would turn a plain module into an empty package for good.
        return importlib.machinery.ModuleSpec(fullname, self, is_package=hasattr(module, "__path__"))

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.own + spec.name.removeprefix(self.other))
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Already executed under the package's own name. The import system has just set the alias's spec on the
        module: give it back its own, which finds its data files (`importlib.resources`) and its source."""
        module.__spec__ = self._specs.pop(module.__name__)


@contextlib.contextmanager
def one_package() -> Iterator[None]:
    """While a program runs under the preview, the package answers to both its names as one package."""
    own = __name__.split(".")[0]
    (other,) = (name for name in PACKAGE_NAMES if name != own)
    finder = _SameModules(own, other)
    saved = {name: module for name, module in sys.modules.items() if name == other or name.startswith(other + ".")}
    for name in saved:
        del sys.modules[name]
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [name for name in sys.modules if name == other or name.startswith(other + ".")]:
            del sys.modules[name]
        sys.modules.update(saved)
