"""What a preflight check concludes: a status, the evidence it rests on, and what to do about it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    #: The check could not be made: an AWS call failed (the row carries the service's message).
    ERROR = "ERROR"


@dataclass(frozen=True)
class CheckResult:
    """One conclusion about the account. `name` is stable (CI may key on it); `fix` is empty when nothing is to do."""

    name: str
    status: Status
    evidence: str
    fix: str = ""

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status.value}


def passed(name: str, evidence: str) -> CheckResult:
    return CheckResult(name, Status.PASS, evidence)


def warned(name: str, evidence: str, fix: str) -> CheckResult:
    return CheckResult(name, Status.WARN, evidence, fix)


def failed(name: str, evidence: str, fix: str) -> CheckResult:
    return CheckResult(name, Status.FAIL, evidence, fix)


def errored(name: str, evidence: str, fix: str) -> CheckResult:
    return CheckResult(name, Status.ERROR, evidence, fix)


def worst(statuses: list[Status]) -> Status:
    order = (Status.PASS, Status.WARN, Status.ERROR, Status.FAIL)
    return max(statuses, key=order.index, default=Status.PASS)


#: Exit statuses of the preflight (2, an invalid stack config, is `components.tools.commands.INVALID_STACK`).
PASSED, CHECK_FAILED, UNREACHABLE = 0, 1, 3


def exit_code(results: list[CheckResult]) -> int:
    """1 when a check failed; else 3 when AWS could not be reached or a call failed (an ERROR row); else 0
    (warnings do not stop a deployment)."""
    if any(r.status is Status.FAIL for r in results):
        return CHECK_FAILED
    return UNREACHABLE if any(r.status is Status.ERROR for r in results) else PASSED
