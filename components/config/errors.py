"""Stack configuration errors: one issue per problem, each with its full key path, and how pydantic's errors
become them (including a did-you-mean for unknown keys)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .validation import FieldProblems


class ConfigIssue(BaseModel):
    """One problem in a stack's configuration."""

    model_config = ConfigDict(frozen=True)

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(Exception):
    """The stack configuration is invalid; `issues` lists every problem found."""

    def __init__(self, issues: Iterable[ConfigIssue]):
        self.issues = tuple(sorted(set(issues), key=lambda issue: (issue.path, issue.message)))
        lines = "\n".join(f"  - {issue}" for issue in self.issues)
        super().__init__(f"invalid stack configuration ({len(self.issues)} problem(s)):\n{lines}")


def issues_from(error: ValidationError, root: type[BaseModel]) -> list[ConfigIssue]:
    """One issue per problem pydantic found while validating `root`."""
    issues = []
    for detail in error.errors():
        loc = tuple(detail["loc"])
        cause = (detail.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblems):
            for key, message in cause.problems:
                issues.append(ConfigIssue(path=_join(loc, key), message=message))
            continue
        if loc and loc[-1] == "[key]":
            issues.append(
                ConfigIssue(
                    path=_join(loc[:-1]), message=f"the key {loc[-2]!r}: {detail['msg'].removeprefix('Value error, ')}"
                )
            )
            continue
        if detail["type"] == "extra_forbidden":
            issues.append(ConfigIssue(path=_join(loc), message=_unknown_key_message(root, loc)))
            continue
        if detail["type"] == "missing":
            issues.append(ConfigIssue(path=_join(loc), message="is required"))
            continue
        ctx = detail.get("ctx") or {}
        if detail["type"] == "too_short":
            issues.append(
                ConfigIssue(
                    path=_join(loc),
                    message=f"expected at least {ctx['min_length']} item(s), got {ctx['actual_length']}",
                )
            )
            continue
        if detail["type"] == "too_long":
            issues.append(
                ConfigIssue(
                    path=_join(loc), message=f"expected at most {ctx['max_length']} item(s), got {ctx['actual_length']}"
                )
            )
            continue
        message = detail["msg"].removeprefix("Value error, ")
        if detail["type"] not in {"value_error"}:
            message = f"{message}, got {detail['input']!r}"
        issues.append(ConfigIssue(path=_join(loc), message=message))
    return issues


def _join(loc: tuple[Any, ...], extra: str | None = None) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            parts[-1] = f"{parts[-1]}[{part}]"
        else:
            parts.append(str(part))
    if extra is not None:
        if extra.startswith("aws:"):
            return extra
        parts.extend(extra.split("."))
    if parts and parts[0] in {"project", "stack"}:
        return parts[0]
    if parts and parts[0] == "region":
        return "aws:region"
    return ".".join(parts)


def _unknown_key_message(root: type[BaseModel], loc: tuple[Any, ...]) -> str:
    known = _known_keys(root, loc[:-1])
    known -= {"project", "stack", "region", "profile"}
    hint = difflib.get_close_matches(str(loc[-1]), sorted(known), n=1)
    suffix = f"; did you mean {hint[0]!r}?" if hint else ""
    return f"unknown key (expected one of {', '.join(sorted(known))}){suffix}"


def _known_keys(model: type[BaseModel], path: tuple[Any, ...]) -> set[str]:
    """The keys a model accepts at `path` (walking through nested models, mappings and sequences)."""
    current: Any = model
    for part in path:
        if isinstance(part, int):
            continue
        target = _model_in(current)
        if target is None:
            return set()
        fields = {field.alias or name: field for name, field in target.model_fields.items()}
        # a mapping key: the value type carries on
        current = fields[part].annotation if part in fields else target
    target = _model_in(current)
    if target is None:
        return set()
    return {field.alias or name for name, field in target.model_fields.items()}


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None
