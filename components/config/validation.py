"""Small validation pieces shared by the config models."""

from __future__ import annotations

import re

from pydantic import AfterValidator


class FieldProblems(ValueError):
    """Raised from a model validator to report problems on named fields of that model (not on the model).

    The config parser reports each problem under its own key path.
    """

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{key}: {message}" for key, message in problems))


def matches(regex: str, what: str) -> AfterValidator:
    """A validator accepting strings that fully match `regex`; the error says what was expected."""
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"expected {what}, got {value!r}")
        return value

    check.expected = what  # type: ignore[attr-defined]  # what the configuration reference calls the type
    return AfterValidator(check)
