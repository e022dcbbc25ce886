"""The docs state what the code does: every policy rule with its level, a row for every config key."""

from __future__ import annotations

import re
import typing
from typing import Any

from pydantic import BaseModel

from tests.conftest import REPO


def test_the_policy_page_lists_every_policy_rule_with_its_level():
    from components.policy.rules import RULES

    text = (REPO / "docs" / "policy-pack.md").read_text()
    for rule in RULES:
        assert f"| `{rule.name}` | {rule.enforcement} |" in text


def _config_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every key a stack file can set below `model`, as dotted camelCase paths (`<name>` for a mapping's keys, `[]`
    for a list's items), sections included."""
    keys = []
    for name, field in model.model_fields.items():
        path = f"{prefix}.{field.alias or name}" if prefix else field.alias or name
        keys.append(path)
        for nested_model, suffix in _models_in(field.annotation):
            keys.extend(_config_keys(nested_model, path + suffix))
    return keys


def _models_in(annotation: Any) -> list[tuple[type[BaseModel], str]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, "")]
    arguments = typing.get_args(annotation)
    if typing.get_origin(annotation) is dict:
        return [(m, ".<name>" + s) for m, s in _models_in(arguments[1])]
    if typing.get_origin(annotation) is tuple:
        return [(m, "[]" + s) for m, s in _models_in(arguments[0])]
    return [found for argument in arguments for found in _models_in(argument)]


def test_the_config_reference_has_a_row_for_every_key_a_stack_file_can_set_and_no_other():
    from components.platform.config import PlatformConfig

    text = (REPO / "docs" / "configuration.md").read_text()
    block = text.split("<!-- config-reference:start -->", 1)[1].split("<!-- config-reference:end -->", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \|", block, flags=re.MULTILINE)
    # project and stack come from the Pulumi context; region and profile are keys of the aws: namespace.
    supplied = {"project": None, "stack": None, "region": "aws:region", "profile": "aws:profile"}
    keys = [supplied.get(key, key) for key in _config_keys(PlatformConfig)]
    assert sorted(rows) == sorted(key for key in keys if key is not None)
