"""The preflight's results as a terminal table, as Markdown, or as JSON for CI."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .results import CheckResult, Status

_WIDTH = 118


def summary(results: Sequence[CheckResult]) -> dict[str, int]:
    counts = Counter(r.status for r in results)
    return {status.value: counts.get(status, 0) for status in Status}


def _summary_text(results: Sequence[CheckResult]) -> str:
    return ", ".join(f"{count} {status}" for status, count in summary(results).items())


def render_table(results: Sequence[CheckResult], *, title: str) -> str:
    name_width = max((len(r.name) for r in results), default=4)
    indent = " " * (6 + name_width + 2)
    lines = [title, ""]
    for r in results:
        head = f"{r.status.value:<6}{r.name:<{name_width}}  "
        lines += textwrap.wrap(r.evidence, _WIDTH, initial_indent=head, subsequent_indent=indent)
        if r.fix:
            lines += textwrap.wrap(r.fix, _WIDTH, initial_indent=f"{indent}fix: ", subsequent_indent=f"{indent}     ")
    lines += ["", _summary_text(results)]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|") or " "


def render_markdown(results: Sequence[CheckResult]) -> str:
    lines = ["| status | check | evidence | fix |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.status.value} | `{r.name}` | {_cell(r.evidence)} | {_cell(r.fix)} |" for r in results]
    return "\n".join(lines)


def as_json(results: Sequence[CheckResult], *, stack: str, region: str) -> dict[str, Any]:
    return {
        "stack": stack,
        "region": region,
        "summary": summary(results),
        "checks": [r.as_json() for r in results],
    }


def render_json(results: Sequence[CheckResult], *, stack: str, region: str) -> str:
    return json.dumps(as_json(results, stack=stack, region=region), indent=2, sort_keys=True)
