"""What a preflight check concludes: a status, the evidence it rests on, and what to do about it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"


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


def worst(statuses: list[Status]) -> Status:
    order = (Status.PASS, Status.WARN, Status.FAIL)
    return max(statuses, key=order.index, default=Status.PASS)


def exit_code(results: list[CheckResult]) -> int:
    """1 when any check failed, else 0 (warnings do not stop a deployment)."""
    return 1 if any(r.status is Status.FAIL for r in results) else 0
