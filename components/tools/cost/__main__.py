"""What a stack costs: the idle baseline and the GPU spend ceiling of every NodePool, from its config alone.

    python -m components.tools.cost --stack prod [--json | --markdown] [--live] [--on 2026-12-15]

Prices come from the pinned table (`components/tools/cost/prices.py`, no credentials needed); `--live` reads EC2
instance prices from the AWS Price List API and the spot price history instead, with the stack's credentials. Exit
status: 0; 1 when `--live` cannot read prices; 2 when the stack config is invalid.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, date, datetime

from botocore.exceptions import BotoCoreError, ClientError

from components.tools.commands import INVALID_STACK, add_format_arguments, add_stack_arguments, read_stack
from components.tools.preflight.clients import PRICING_REGION, session_for

from .calculator import estimate
from .live import live_table
from .prices import PINNED
from .render import render_json, render_markdown, render_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.tools.cost", description=__doc__.split("\n\n")[0])
    add_stack_arguments(parser)
    parser.add_argument(
        "--live", action="store_true", help="read EC2 prices from the AWS Price List API (needs credentials)"
    )
    parser.add_argument(
        "--on",
        type=date.fromisoformat,
        default=date.today(),
        help="date deciding standard or extended EKS support (default: today)",
    )
    add_format_arguments(parser, "the estimate")
    args = parser.parse_args(argv)

    config = read_stack(args)
    if config is None:
        return INVALID_STACK
    prices = PINNED
    if args.live:
        try:
            session = session_for(config.profile, config.region)
            prices = live_table(
                PINNED,
                config,
                pricing=session.client("pricing", region_name=PRICING_REGION),
                ec2=session.client("ec2"),
                now=datetime.now(UTC),
            )
        except (ClientError, BotoCoreError) as error:
            print(f"error: could not read live prices: {error}", file=sys.stderr)
            return 1
    result = estimate(config, prices, on=args.on)
    print(render_json(result) if args.json else render_markdown(result) if args.markdown else render_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
