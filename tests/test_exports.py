"""The public API: `from components import X` for every component and its args, the same names for type checkers as
at run time, and an import of the package that loads none of them."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import subprocess
import sys
import typing

import pulumi

import components

from .conftest import REPO


def type_checking_imports() -> dict[str, str]:
    """{name: module} of the package's `if TYPE_CHECKING:` block, as type checkers and editors read it."""
    tree = ast.parse((REPO / "components" / "__init__.py").read_text())
    (block,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    found = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module, ast.unparse(node)
        for alias in node.names:
            # `X as X`: re-exported to type checkers whatever they make of the computed __all__
            assert alias.asname == alias.name, ast.unparse(node)
            found[alias.name] = node.module
    return found


def test_type_checkers_see_exactly_the_names_the_package_exports_at_run_time():
    lazy = {name: f"components.{module}" for name, module in components._EXPORTS.items()}
    assert type_checking_imports() == lazy
    assert components.__all__ == sorted(lazy)


def test_every_export_is_the_class_its_module_defines():
    for name, module in type_checking_imports().items():
        exported = getattr(components, name)
        assert exported is getattr(importlib.import_module(module), name)
        assert exported.__module__ == module, f"{name} is defined in {exported.__module__}, not {module}"


def library_components() -> set[str]:
    """Every ComponentResource the package defines (read from the source: loaded or not)."""
    found = set()
    for path in (REPO / "components").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b) == "pulumi.ComponentResource" for b in node.bases):
                found.add(node.name)
    return found


def test_every_component_and_the_args_it_takes_are_exported():
    names = library_components()
    assert {"Cluster", "Network", "Observability", "TeamProfile"} <= names
    assert names <= set(components.__all__)
    for name in names:
        component = getattr(components, name)
        assert issubclass(component, pulumi.ComponentResource)
        args = typing.get_type_hints(component.__init__)["args"]
        assert dataclasses.is_dataclass(args), f"{name} takes {args}, not an args dataclass"
        assert getattr(components, args.__name__) is args, f"{name}'s {args.__name__} is not exported"


def test_importing_the_package_creates_nothing_and_loads_no_part():
    code = "import sys, components; print(sorted(m for m in sys.modules if m.startswith(('components', 'pulumi'))))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.strip() == "['components', 'components._lazy']"
