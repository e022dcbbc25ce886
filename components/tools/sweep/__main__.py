"""Sweep a stack's cluster leftovers, or check that none remain.

    python -m components.tools.sweep --stack dev              # list what would be deleted and kept (a dry run)
    python -m components.tools.sweep --stack dev --yes        # list it, then delete it (what the teardown step does)
    python -m components.tools.sweep --stack dev --check      # leak check after `pulumi destroy` (CI)

Nothing is deleted without --yes. The stack file gives the cluster name, region, AWS profile, `statefulResources`
and, with network.existing, the VPC; a VPC the stack created is found by its tags. Exit status: 0 done (nothing
failed, nothing blocks the network; for --check: no leaks); 1 something could not be deleted or listed, kept file
systems block the network, or (--check) something is left; 2 the stack's configuration is invalid or its VPC cannot
be told apart.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable
from typing import Any

import boto3

from ...sweep.clients import AWS_ERRORS, Clients, describe
from ...sweep.leaks import find_leaks, leak_text
from ...sweep.model import plan_text, report_text
from ...sweep.sweeper import Sweeper
from ..commands import INVALID_STACK, add_stack_arguments, read_stack
from .locate import VpcLookupError, locate_vpc, target_for

SessionFactory = Callable[..., Any]

#: Exit statuses (2, an invalid stack config, is `components.tools.commands.INVALID_STACK`; preflight uses the same).
DONE, FOUND, UNREACHABLE = 0, 1, 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m components.tools.sweep", description=__doc__.split("\n\n")[0])
    add_stack_arguments(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--yes", action="store_true", help="delete: list what will be deleted and kept, then delete it")
    mode.add_argument(
        "--dry-run", action="store_true", help="list what would be deleted and kept; delete nothing (the default)"
    )
    mode.add_argument(
        "--check", action="store_true", help="exit 1 if anything tagged for the cluster remains (3: could not tell)"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of text")
    return parser


def main(argv: list[str] | None = None, *, session_factory: SessionFactory = boto3.Session) -> int:
    args = _parser().parse_args(argv)
    why: list[str] = []
    config = read_stack(args, report=why.append)
    if config is None:
        return _stopped(args.json, INVALID_STACK, why[0])

    try:
        session = session_factory(profile_name=config.profile, region_name=config.region)
        clients = Clients.from_session(session, config.region)
        vpc = locate_vpc(clients.ec2, config)
    except VpcLookupError as error:
        return _stopped(args.json, INVALID_STACK, f"Stack '{args.stack}': {error}")
    except AWS_ERRORS as error:
        return _stopped(args.json, UNREACHABLE, f"could not look for the stack's VPC: {describe(error)}")
    target = target_for(config, vpc)
    if not args.json:
        print(f"VPC: {vpc.vpc_id or 'none'} ({vpc.how})", file=sys.stderr)

    if args.check:
        leaks = find_leaks(clients, target)
        _emit(args.json, leaks.as_json(), leak_text(leaks))
        return FOUND if leaks.leaks else UNREACHABLE if leaks.failed else DONE
    progress = (lambda line: None) if args.json else (lambda line: print(line, file=sys.stderr))
    sweeper = Sweeper(clients, target, log=progress)
    plan = sweeper.plan()
    if not args.yes:
        _emit(args.json, plan.as_json(), plan_text(plan))
        print(
            f"Nothing was deleted (a dry run). To delete what is listed: {_command(argv)} --yes",
            file=sys.stderr,
        )
        return UNREACHABLE if plan.failed else DONE
    # What it is about to remove, before it does (on stderr, so that stdout stays the report).
    print(plan_text(plan, about_to_delete=True), file=sys.stderr)
    report = sweeper.run()
    _emit(args.json, report.as_json(), report_text(report))
    return DONE if report.clean else FOUND


def _command(argv: list[str] | None) -> str:
    """This command line as the user gave it, without --dry-run."""
    given = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m components.tools.sweep", *(shlex.quote(a) for a in given if a != "--dry-run")])


def _stopped(as_json: bool, code: int, error: str) -> int:
    """Why the run stopped before it had a result: one JSON document on stdout with --json, else a line on stderr."""
    if as_json:
        print(json.dumps({"ok": False, "error": error, "exit": code}, indent=2, sort_keys=True))
    else:
        print(f"error: {error}" if code == UNREACHABLE else error, file=sys.stderr)
    return code


def _emit(as_json: bool, document: dict[str, Any], text: str) -> None:
    print(json.dumps(document, indent=2, sort_keys=True) if as_json else text)


if __name__ == "__main__":
    sys.exit(main())
