"""The sweep's plans and reports as text for people (the JSON form is each value's `as_json`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .model import Failure, Found, Kept, SweepPlan, SweepReport, SweepTarget

if TYPE_CHECKING:
    from .leaks import LeakReport


def _heading(target: SweepTarget, what: str) -> str:
    vpc = target.vpc_id or "no VPC"
    shared = "" if target.owns_vpc else ", not the stack's own"
    return (
        f"{what} of cluster {target.cluster_name!r} in {target.region} ({vpc}{shared}; "
        f"statefulResources: {target.stateful_policy.value})"
    )


def _found_lines(items: Sequence[Found]) -> list[str]:
    return [f"  {f.kind.value:<20} {f.id}  {f.label}".rstrip() for f in items]


def _kept_lines(items: Sequence[Kept]) -> list[str]:
    return [f"  {k.found.kind.value:<20} {k.found.id}  {k.found.label}: {k.reason}" for k in items]


def _failure_lines(items: Sequence[Failure]) -> list[str]:
    return [f"  {f.found.kind.value:<20} {f.found.id}  {f.error}" for f in items]


def _section(title: str, lines: list[str]) -> list[str]:
    return ["", f"{title} ({len(lines)}):", *lines] if lines else []


def _advice(advice: Sequence[str]) -> list[str]:
    return ["", "What to do:", *(f"  - {line}" for line in advice)] if advice else []


def plan_text(plan: SweepPlan) -> str:
    lines = [_heading(plan.target, "Dry run of the sweep")]
    lines += _section("Would delete", _found_lines(plan.delete))
    lines += _section("Would keep", _kept_lines(plan.keep))
    lines += _section("Would block deleting the network", _kept_lines(plan.blockers))
    lines += _section("Could not list", _failure_lines(plan.failed))
    if not (plan.delete or plan.keep or plan.failed):
        lines += ["", "Nothing of the cluster's is left to sweep."]
    return "\n".join(lines + _advice(plan.advice))


def report_text(report: SweepReport) -> str:
    lines = [_heading(report.target, "Sweep")]
    lines += _section("Deleted", _found_lines(report.deleted))
    lines += _section("Kept", _kept_lines(report.kept))
    lines += _section("Blocking the network", _kept_lines(report.blockers))
    lines += _section("Could not delete", _failure_lines(report.failed))
    if not (report.deleted or report.kept or report.failed):
        lines += ["", "Nothing of the cluster's was left to sweep."]
    return "\n".join(lines + _advice(report.advice))


def leak_text(report: LeakReport) -> str:
    lines = [_heading(report.target, "Leak check")]
    lines += _section("Left behind", _found_lines(report.leaks))
    lines += _section("Kept", _kept_lines(report.retained))
    lines += _section("Could not list", _failure_lines(report.failed))
    lines += ["", "No leaks." if report.ok else "Leaks found: run `python -m components.tools.sweep --stack <stack>`."]
    return "\n".join(lines)
