"""The configuration reference: one row per key a stack file can set, walked from the config models (pure).

The meaning of a key is its field's `description` on the model; its type, constraints and default are read from the
field itself, and the defaults that come from `environment` from `environment_defaults`. Nothing here is written by
hand, so the tables in docs/configuration.md cannot drift from what `parse_config` and `parse_team_config` accept.
There is one table per kind of stack file: the platform's, and a team stack's (`components.team.config`).

    python -m components.tools.config_reference                    # print the platform's table
    python -m components.tools.config_reference --stack team       # print a team stack's
    # rewrite both blocks (make config-reference):
    python -m components.tools.config_reference --write docs/configuration.md
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from ipaddress import IPv4Network
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

from ..config.types import Environment
from ..platform.config import AWS_KEYS, CONTEXT_KEYS, PlatformConfig
from ..platform.parse import environment_defaults
from ..team import config as team_config
from ..team.config import TeamStackConfig

#: Stands for a mapping's key (`karpenter.nodePools.<name>.weight`) and for every item of a list (`taints[].key`).
NAME, ITEM = "<name>", "[]"
#: The region as the environment defaults show it (`<region>a`).
REGION = "<region>"


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


class _Section:
    def __repr__(self) -> str:
        return "SECTION"


#: A key the stack must set.
REQUIRED: Any = _Required()
#: A section whose keys have their own defaults.
SECTION: Any = _Section()


@dataclass(frozen=True)
class StackKeys:
    """The keys of one kind of stack file: its config model, the fields the Pulumi context fills in (never stack
    config), those written in the `aws:` namespace, whether `environment` gives defaults, and the reference block its
    table is written between."""

    name: str
    model: type[BaseModel]
    context_keys: tuple[str, ...]
    aws_keys: tuple[str, ...]
    start: str
    end: str
    environments: bool = False


PLATFORM = StackKeys(
    "platform",
    PlatformConfig,
    CONTEXT_KEYS,
    AWS_KEYS,
    "<!-- config-reference:start -->",
    "<!-- config-reference:end -->",
    environments=True,
)
TEAM = StackKeys(
    "team",
    TeamStackConfig,
    team_config.CONTEXT_KEYS,
    team_config.AWS_KEYS,
    "<!-- team-config-reference:start -->",
    "<!-- team-config-reference:end -->",
)
STACKS = {stack.name: stack for stack in (PLATFORM, TEAM)}


@dataclass(frozen=True)
class Row:
    """One key: `default` is a JSON value, REQUIRED or SECTION; `by_environment` the value each environment gives a
    key left out (empty when the environment does not set it)."""

    key: str
    type: str
    default: Any
    by_environment: Mapping[str, Any]
    meaning: str


@dataclass(frozen=True)
class KeyField:
    """A model field reached by the walk, with the key path it is written under."""

    model: type[BaseModel]
    name: str
    info: FieldInfo
    key: str


# --------------------------------------------------------------------------------------------------------- the walk


def fields(stack: StackKeys = PLATFORM) -> Iterator[KeyField]:
    """Every field the stack file can set, depth first in the models' order, each followed by the fields of the
    models it holds (a nested model, a mapping of them by name, a list of them)."""
    for name, info in stack.model.model_fields.items():
        if name in stack.context_keys:
            continue
        key = info.alias or name
        if name in stack.aws_keys:
            key = f"aws:{key}"
        yield from _walk(stack.model, name, info, key)


def _walk(model: type[BaseModel], name: str, info: FieldInfo, key: str) -> Iterator[KeyField]:
    yield KeyField(model, name, info, key)
    for nested, suffix in _models_in(info.annotation):
        for child_name, child in nested.model_fields.items():
            yield from _walk(nested, child_name, child, f"{key}{suffix}.{child.alias or child_name}")


def _models_in(annotation: Any) -> list[tuple[type[BaseModel], str]]:
    """The models a value of this type holds, with the key suffix that reaches each."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, "")]
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _models_in(arguments[0])
    if origin is dict:
        return [(m, f".{NAME}{s}") for m, s in _models_in(arguments[1])]
    if origin is tuple:
        return [(m, f"{ITEM}{s}") for m, s in _models_in(arguments[0])]
    return [found for argument in arguments for found in _models_in(argument)]


def undescribed(stack: StackKeys = PLATFORM) -> list[str]:
    """Keys whose field has no description (the reference would show an empty meaning), and fields filled in from
    the Pulumi context without one."""
    context = [(n, f) for n, f in stack.model.model_fields.items() if n in stack.context_keys]
    found = [(f.key, f.info) for f in fields(stack)] + context
    return [key for key, info in found if not (info.description or "").strip()]


# ---------------------------------------------------------------------------------------------------------- rows


def rows(stack: StackKeys = PLATFORM) -> list[Row]:
    """The reference of every key of the stack file (the platform stack's, by default)."""
    by_environment = (
        {env.value: _flatten(environment_defaults(env, REGION)) for env in Environment} if stack.environments else {}
    )
    found = []
    for f in fields(stack):
        given = {env: values[f.key] for env, values in by_environment.items() if f.key in values}
        kind = type_text(f.info.annotation, f.info.metadata)
        found.append(Row(f.key, kind, _default(f.info), given, f.info.description or ""))
    return found


def _flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in values.items():
        flat[prefix + key] = SECTION if isinstance(value, Mapping) else value
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{prefix}{key}."))
    return flat


def _default(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return REQUIRED
    else:
        value = info.default
    if isinstance(value, BaseModel):
        return SECTION
    if isinstance(value, Mapping) and any(isinstance(v, BaseModel) for v in value.values()):
        return dict.fromkeys(value, SECTION)
    return to_jsonable_python(value, by_alias=True, exclude_none=True)


# ---------------------------------------------------------------------------------------------------------- types

_BASE = {bool: "bool", int: "int", float: "number", str: "string", IPv4Network: "IPv4 CIDR", Any: "any"}
_PLURAL = {"bool": "bools", "int": "ints", "number": "numbers", "string": "strings", "IPv4 CIDR": "IPv4 CIDRs"}


def type_text(annotation: Any, metadata: Sequence[Any] = ()) -> str:
    """What a value of this type is, in the words of the reference: `a` \\| `b` for choices, constraints added."""
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return type_text(arguments[0], (*annotation.__metadata__, *metadata))
    if origin in (Union, UnionType):
        present = [a for a in arguments if a is not type(None)]
        if len(present) == 1:
            return type_text(present[0], metadata)
        return " or ".join(type_text(a) for a in present)
    if origin is Literal:
        return _choices(arguments)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _choices([member.value for member in annotation])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    if origin is tuple:
        return _sized(_list_of(type_text(arguments[0])), metadata, "item")
    if origin is dict:
        key, value = (type_text(a).removeprefix("a ").removeprefix("an ") for a in arguments)
        return _sized(f"mapping of {key} → {value}", metadata, "entry")
    text = _BASE.get(annotation, getattr(annotation, "__name__", str(annotation)))
    for item in metadata:
        check: Any = getattr(item, "func", None)
        if hasattr(check, "choices"):
            return _choices(check.choices)
        if hasattr(check, "expected"):
            text = _quoted(check.expected)
        if hasattr(check, "constraint"):
            text = f"{text}, {check.constraint}"
    if text == "string" and any(isinstance(m, annotated_types.MinLen) and m.min_length == 1 for m in metadata):
        text = "non-empty string"
    return text + _bounds(metadata)


def _choices(values: Sequence[Any]) -> str:
    return " \\| ".join(f"`{yaml_text(v)}`" for v in values)


def _list_of(item: str) -> str:
    if item in _PLURAL:
        return f"list of {_PLURAL[item]}"
    if item == "mapping":
        return "list of mappings"
    if item.startswith("`"):
        return f"list of {item}"
    return f"list, each {item}"


def _quoted(text: str) -> str:
    """The validators' texts quote examples as 'x'; the reference shows them as code."""
    return re.sub(r"'([^' ]+)'", r"`\1`", text)


def _bounds(metadata: Sequence[Any]) -> str:
    low = next((f"{m.ge}" for m in metadata if isinstance(m, annotated_types.Ge)), None)
    above = next((f"{m.gt}" for m in metadata if isinstance(m, annotated_types.Gt)), None)
    high = next((f"{m.le}" for m in metadata if isinstance(m, annotated_types.Le)), None)
    if low is not None and high is not None:
        return f", {low} to {high}"
    parts = [f"above {above}"] if above is not None else [f"at least {low}"] if low is not None else []
    parts += [f"at most {high}"] if high is not None else []
    return f", {' and '.join(parts)}" if parts else ""


def _sized(text: str, metadata: Sequence[Any], unit: str) -> str:
    low = next((m.min_length for m in metadata if isinstance(m, annotated_types.MinLen)), None)
    high = next((m.max_length for m in metadata if isinstance(m, annotated_types.MaxLen)), None)
    plural = "entries" if unit == "entry" else f"{unit}s"
    if low is not None and high is not None:
        return f"{text}; {low} to {high} {plural}"
    if low is not None:
        return f"{text}; at least {low} {unit if low == 1 else plural}"
    if high is not None:
        return f"{text}; at most {high} {plural}"
    return text


# ----------------------------------------------------------------------------------------------------- rendering

_PLAIN = re.compile(r"[A-Za-z0-9<_/.][A-Za-z0-9<>_./@%-]*")
_NOT_A_STRING = re.compile(
    r"[-+]?(\d[\d_]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?|true|false|yes|no|on|off|null|~", re.IGNORECASE
)


def yaml_text(value: Any) -> str:
    """A JSON value as it is written in a stack file (YAML flow style, quoted only where YAML would read otherwise)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        plain = _PLAIN.fullmatch(value) and not _NOT_A_STRING.fullmatch(value)
        return value if plain else json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{yaml_text(k)}: {yaml_text(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(yaml_text(v) for v in value) + "]"


def default_text(row: Row) -> str:
    given = list(row.by_environment.values())
    if given and SECTION not in given and given.count(given[0]) == len(given) == len(Environment):
        return f"`{yaml_text(given[0])}`"  # every environment gives the same value
    if given and SECTION not in given:
        return "*env*: " + ", ".join(f"{env} `{yaml_text(v)}`" for env, v in row.by_environment.items())
    if row.by_environment or row.default is SECTION:
        return ""  # a section: its keys say
    if row.default is REQUIRED:
        return "required"
    if row.default is None:
        return "none"
    if isinstance(row.default, Mapping) and row.default and all(v is SECTION for v in row.default.values()):
        return ", ".join(f"`{key}`" for key in row.default)
    return f"`{yaml_text(row.default)}`"


def _cell(text: str) -> str:
    return re.sub(r"(?<!\\)\|", r"\\|", " ".join(text.split()))


def table(found: Sequence[Row] | None = None, stack: StackKeys = PLATFORM) -> str:
    """The reference as a Markdown table: `found`, else every row of the stack file."""
    lines = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for row in rows(stack) if found is None else found:
        lines.append(f"| `{row.key}` | {_cell(row.type)} | {_cell(default_text(row))} | {_cell(row.meaning)} |")
    return "\n".join(lines) + "\n"


def replace_block(text: str, block: str, stack: StackKeys = PLATFORM) -> str:
    """`text` with what lies between the stack's markers replaced by `block`."""
    start, end = stack.start, stack.end
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"expected one {start} ... {end} block")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{block}{end}{tail}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m components.tools.config_reference", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--stack", choices=sorted(STACKS), default=PLATFORM.name, help="the table to print")
    parser.add_argument(
        "--write", type=Path, metavar="FILE", help="rewrite every stack's block between its markers in this file"
    )
    args = parser.parse_args(argv)
    if missing := [key for stack in STACKS.values() for key in undescribed(stack)]:
        print(f"fields without a description: {', '.join(missing)}", file=sys.stderr)
        return 1
    if args.write is None:
        sys.stdout.write(table(stack=STACKS[args.stack]))
        return 0
    text = updated = args.write.read_text()
    try:
        for stack in STACKS.values():
            updated = replace_block(updated, table(stack=stack), stack)
    except ValueError as error:
        print(f"{args.write}: {error}", file=sys.stderr)
        return 1
    if updated != text:
        args.write.write_text(updated)
        print(f"{args.write}: configuration reference updated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
