"""Preflight of a stack against its AWS account: read-only checks of what `pulumi up` will need.

    python -m components.tools.preflight --stack prod [--json | --markdown]

Exit status: 0 when every check passed (warnings allowed), 1 when one failed, 2 when the stack config is invalid,
3 when AWS could not be reached or a call failed (an ERROR row) and no check failed.
"""

from __future__ import annotations

import argparse
import sys

from botocore.exceptions import BotoCoreError

from ..commands import INVALID_STACK, add_format_arguments, add_stack_arguments, read_stack
from ..stack_files import load_stack
from .clients import Clients, session_for
from .report import render_json, render_markdown, render_table
from .results import errored, exit_code
from .runner import placeholder_checks, run_preflight, unset_secret_checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.tools.preflight", description=__doc__.split("\n\n")[0])
    add_stack_arguments(parser)
    add_format_arguments(parser, "the results")
    args = parser.parse_args(argv)

    loaded = read_stack(args, load_stack)
    if loaded is None:
        return INVALID_STACK
    config, raw_config, _ = loaded
    unset = unset_secret_checks(raw_config)  # judged from the stack file alone, like the placeholders
    try:
        clients = Clients.from_session(session_for(config.profile, config.region))
    except BotoCoreError as error:  # e.g. aws:profile names a profile this machine does not have
        results = [
            *unset,
            *placeholder_checks(config),
            errored("identity", f"no AWS session: {error}", "set aws:profile to a configured profile, or remove it"),
        ]
    else:
        results = [*unset, *run_preflight(config, clients)]
    if args.json:
        print(render_json(results, stack=args.stack, region=config.region))
    elif args.markdown:
        print(render_markdown(results))
    else:
        title = f"Preflight of stack '{args.stack}' (cluster {config.cluster_name}, {config.region})"
        print(render_table(results, title=title))
    return exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
