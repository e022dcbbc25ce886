"""What a stack costs: the idle baseline and the GPU spend ceiling of every NodePool, from its config alone.

    python -m components.tools.cost --stack prod [--preview build/preview/prod] [--json | --markdown] [--live]
    python -m components.tools.cost --by-team --from 2026-06-01 --to 2026-07-01 --stack prod [--prometheus URL] [--json]

Prices come from the pinned table (`components/tools/cost/prices/`, no credentials needed); `--live` reads EC2
instance prices from the AWS Price List API and the spot price history instead, with the stack's credentials.
`--preview` names the stack's offline preview folder, from which the model of the running platform counts the
platform's own pods on Karpenter pools (`make cost` previews first). Exit status: 0; 1 when `--live` cannot read
prices; 2 when the stack config is invalid or the preview folder cannot be read.

`--by-team` is what each team's GPUs cost between two dates, read from the stack's Prometheus (`by_team.py`, which
says its exit status).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, date, datetime
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from ...platform.config import PlatformConfig
from ..charts import default_charts
from ..cluster_model.platform import Platform, load
from ..commands import INVALID_STACK, add_format_arguments, add_stack_arguments, read_stack
from ..preflight.clients import PRICING_REGION, session_for
from .by_team import main as by_team
from .calculator import estimate
from .live import live_table
from .prices import PINNED, PriceTable
from .render import render_json, render_markdown, render_table


def main(argv: list[str] | None = None, prog: str = "python -m components.tools.cost") -> int:
    """The command; `prog` is the name its usage and errors give it (`components.cost` runs it too)."""
    argv = sys.argv[1:] if argv is None else argv
    if "--by-team" in argv:
        return by_team(argv, prog)
    args = _parser(prog).parse_args(argv)
    config = read_stack(args)
    if config is None:
        return INVALID_STACK
    platform: Platform | None = None
    if args.preview is not None:
        try:
            platform = load([args.preview], args.charts or default_charts(args.project_dir))
        except (OSError, ValueError, KeyError) as error:
            print(f"error: {args.preview} is not a readable preview folder: {error}", file=sys.stderr)
            return INVALID_STACK
    prices = PINNED
    if args.live:
        try:
            prices = _live_prices(config)
        except (ClientError, BotoCoreError) as error:
            print(f"error: could not read live prices: {error}", file=sys.stderr)
            return 1
    result = estimate(config, prices, on=args.on, platform=platform)
    print(render_json(result) if args.json else render_markdown(result) if args.markdown else render_table(result))
    return 0


def _parser(prog: str) -> argparse.ArgumentParser:
    """The estimate's arguments (`--by-team` listed, though `main` hands it to `by_team.py` before parsing)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--by-team",
        action="store_true",
        help="instead: what each team's GPUs cost between two dates, from Prometheus: --by-team --from YYYY-MM-DD "
        "--to YYYY-MM-DD (--stack NAME | --region REGION | --no-spot-prices) [--prometheus URL] [--json] "
        "(see --by-team --help)",
    )
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
    parser.add_argument(
        "--preview", type=Path, help="the stack's offline preview folder: count the platform's own pods (its model)"
    )
    parser.add_argument(
        "--charts",
        type=Path,
        help="folder of the pinned upstream charts the model renders (default: the fetched ones in the per-user cache, "
        "else ../shared/reference/charts beside the project, when it is there)",
    )
    add_format_arguments(parser, "the estimate")
    return parser


def _live_prices(config: PlatformConfig) -> PriceTable:
    """The pinned table with EC2's instance and spot prices read live, with the stack's credentials."""
    session = session_for(config.profile, config.region)
    return live_table(
        PINNED,
        config,
        pricing=session.client("pricing", region_name=PRICING_REGION),
        ec2=session.client("ec2"),
        now=datetime.now(UTC),
    )


if __name__ == "__main__":
    sys.exit(main())
