"""Preflight: read-only checks of the AWS account a stack deploys to, before `pulumi up`.

`python -m components.tools.preflight --stack <name>` reads the stack's config, resolves credentials like the stack
(`aws:profile`, `aws:region`) and reports each check with PASS / WARN / FAIL, its evidence and the fix. The checks
are pure functions (`checks_access`, `checks_capacity`, `checks_account`) of what `reads` gathers; `selection` says
which instance types a NodePool allows (the cost estimate reads it too).
"""

from .results import CheckResult, Status

__all__ = ["CheckResult", "Status"]
