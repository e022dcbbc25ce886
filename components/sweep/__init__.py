"""Teardown sweep: delete what the cluster's controllers created in AWS and `pulumi destroy` does not know about.

Karpenter's instances, launch templates and instance profiles; the load balancer controller's load balancers, target
groups and security groups; volumes and file systems of claims; the VPC CNI's leftover interfaces; GuardDuty's
endpoint in the VPC. Only objects tagged for this cluster (or, for interfaces and the endpoint, in the stack's VPC)
are touched, in dependency order, with bounded waits; the stateful policy decides about data.

    report = Sweeper(boto3.Session(), SweepTarget("ml-dev", "us-west-2", "destroy", vpc_id="vpc-0abc...")).run()
    report.raise_unless_clean()

`python -m components.tools.sweep --stack <name> [--yes | --dry-run | --check] [--json]` runs it for a stack
(without --yes it only lists).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .model import (
    NETWORK_KINDS,
    STEP_KINDS,
    Failure,
    Found,
    Kept,
    Kind,
    SweepFailed,
    SweepPlan,
    SweepReport,
    SweepTarget,
    Timeouts,
    plan_text,
    report_text,
)

if TYPE_CHECKING:
    from .clients import Clients
    from .leaks import LeakReport, find_leaks, leak_text
    from .sweeper import Sweeper

#: What calls AWS, and brings botocore, is imported on first use: the stack's program imports `model` (through the
#: cluster's sweep step) on every run, and only the sweep itself calls AWS.
_ON_FIRST_USE = {
    "Clients": "clients",
    "LeakReport": "leaks",
    "find_leaks": "leaks",
    "leak_text": "leaks",
    "Sweeper": "sweeper",
}


def __getattr__(name: str) -> Any:
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_ON_FIRST_USE[name]}", __name__), name)


__all__ = [
    "NETWORK_KINDS",
    "STEP_KINDS",
    "Clients",
    "Failure",
    "Found",
    "Kept",
    "Kind",
    "LeakReport",
    "SweepFailed",
    "SweepPlan",
    "SweepReport",
    "SweepTarget",
    "Sweeper",
    "Timeouts",
    "find_leaks",
    "leak_text",
    "plan_text",
    "report_text",
]
