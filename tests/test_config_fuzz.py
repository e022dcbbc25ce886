"""A value of the wrong shape anywhere in a stack file gives a config error naming its key, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from components.config.errors import ConfigError
from components.platform.parse import parse_config

from .conftest import PROJECT, stack_config

#: Shapes a hand-edited stack file gets wrong: a mapping or list where a scalar belongs, a number, null, a boolean,
#: a very long string, and a string where a mapping or list belongs.
WRONG_SHAPES: tuple[Any, ...] = ({"a": {"b": 1}}, [1, [2]], 7, 2.5, None, True, "x" * 5000, "text")


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key and list item below a config value, as a path."""
    if path:
        yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = new
    return copy


def _dotted(full_key: str, path: tuple[Any, ...]) -> str:
    """The key path as config errors spell it (`karpenter.nodePools.gpu.limits`, `network.availabilityZones[0]`)."""
    key = full_key.split(":", 1)[1] if full_key.startswith(f"{PROJECT}:") else full_key
    text = key
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _cases(stack: str) -> Iterator[tuple[str, tuple[Any, ...]]]:
    for full_key, raw in sorted(stack_config(stack).items()):
        value = json.loads(raw) if raw[:1] in "{[" else raw
        yield full_key, ()
        for path in _paths(value):
            yield full_key, path


CASES = [(stack, key, path) for stack in ("dev", "prod") for key, path in _cases(stack)]


@pytest.mark.parametrize(("stack", "full_key", "path"), CASES, ids=[f"{s}:{_dotted(k, p)}" for s, k, p in CASES])
def test_a_wrong_shape_at_any_key_is_a_config_error_naming_that_key(stack, full_key, path):
    raw = stack_config(stack)
    original = json.loads(raw[full_key]) if raw[full_key][:1] in "{[" else raw[full_key]
    where = _dotted(full_key, path)
    for shape in WRONG_SHAPES:
        value = _replaced(original, path, shape)
        changed = dict(raw)
        changed[full_key] = value if isinstance(value, str) else json.dumps(value)
        try:
            parse_config(changed, project=PROJECT, stack=stack)
        except ConfigError as error:
            paths = [issue.path for issue in error.issues]
            # The error names the key itself, or the key that holds it (a mapping key that is itself refused).
            parent = where.rsplit(".", 1)[0] if "." in where else where
            assert any(p.startswith(parent) or where.startswith(p) for p in paths), (shape, where, paths)


@pytest.mark.parametrize("document", ["config: [1, 2]\n", "- just\n- a list\n", "config: plain text\n"])
def test_a_stack_file_whose_config_is_not_a_mapping_is_a_config_error(document, tmp_path, capsys):
    from components.tools.preview import main

    from .conftest import REPO

    (tmp_path / "Pulumi.yaml").write_text((REPO / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.dev.yaml").write_text(document)
    assert main(["--stack", "dev", "--out", str(tmp_path / "out"), "--project-dir", str(tmp_path)]) == 2
    assert "config: expected a mapping of config keys in Pulumi.dev.yaml" in capsys.readouterr().err
