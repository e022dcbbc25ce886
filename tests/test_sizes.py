"""Every module of the package, the engine tier and the policies is short enough to read in one sitting (at most
400 lines) and every function short enough to hold in one's head (at most 60): past those, a change needs a map of
the file before it can be made, and the next change lands in the same place again. Split by meaning (see
REVIEWING.md), not by line count."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import REPO

MODULE_LINES = 400
FUNCTION_LINES = 60
HELD = ("components", "engine", "policies")


def modules() -> Iterator[Path]:
    for folder in HELD:
        yield from sorted((REPO / folder).rglob("*.py"))
    yield REPO / "__main__.py"


def lines_of(path: Path) -> int:
    return len(path.read_text().splitlines())


def long_functions(path: Path) -> Iterator[tuple[str, int]]:
    """Each function (method, nested function) longer than the limit: from its `def` to its last line, decorators
    not counted; a nested function counts in its own length and in its parent's."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > FUNCTION_LINES:
                yield f"{node.name} (line {node.lineno})", length


def test_the_size_rule_sees_the_package_the_engine_tier_the_policies_and_the_entry_point():
    found = set(modules())
    held = {REPO / "components/platform/build.py", REPO / "engine/cluster.py", REPO / "__main__.py"}
    assert held <= found
    assert any(path.parent == REPO / "policies" for path in found)


def test_no_module_is_over_400_lines():
    over = [f"{path.relative_to(REPO)}: {lines_of(path)} lines" for path in modules() if lines_of(path) > MODULE_LINES]
    assert not over, f"modules over {MODULE_LINES} lines (split them by what their parts do):\n" + "\n".join(over)


def test_no_function_is_over_60_lines():
    over = [
        f"{path.relative_to(REPO)}: {name}, {length} lines"
        for path in modules()
        for name, length in long_functions(path)
    ]
    assert not over, f"functions over {FUNCTION_LINES} lines:\n" + "\n".join(over)


@pytest.mark.parametrize(("body", "expected"), [(FUNCTION_LINES, []), (FUNCTION_LINES + 1, [("f (line 1)", 61)])])
def test_a_function_is_measured_from_its_def_to_its_last_line(
    tmp_path: Path, body: int, expected: list[tuple[str, int]]
):
    source = tmp_path / "m.py"
    source.write_text("def f():\n" + "    x = 1\n" * (body - 1))
    assert list(long_functions(source)) == expected
