"""Reading a stack file as Pulumi does: YAML whose mappings have unique keys.

Pulumi's own YAML reader refuses a key given twice in one mapping; PyYAML keeps the last silently, which would
drop a node pool or a bucket without a word. Both that and a syntax error become one ConfigError naming the file,
line and column, so the offline preview fails where `pulumi up` would, with the config exit status.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError, ConfigIssue


class _UniqueKeyLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                first = seen[key].start_mark
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"the key {key!r} is given twice in one mapping (first on line {first.line + 1}); Pulumi refuses "
                    "a stack file with a repeated key",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def load_stack_file(path: Path) -> Any:
    """The YAML document of a stack file; a syntax error or a repeated key raises ConfigError at its place."""
    try:
        return yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path.name}:{mark.line + 1}:{mark.column + 1}" if mark else path.name
        problem = error.problem or error.context or "not valid YAML"
        raise ConfigError([ConfigIssue(path=where, message=problem)]) from None
