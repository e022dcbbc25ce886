"""Regenerate the pinned EC2 instance prices (`components/instances/instance_prices.json`).

    python -m components.tools.cost.prices --karpenter zz_generated.pricing_aws.go --ref v1.14.1
    python -m components.tools.cost.prices --refresh [--region eu-west-1 ...]   # needs AWS credentials

`--karpenter` reads Karpenter's generated price table (aws/karpenter-provider-aws, the file at the tag `--ref`);
`--refresh` reads the AWS Price List API for the regions the table already holds and those given with `--region`.
Exit status: 0 written; 1 the source could not be read; 2 wrong arguments.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from ....instances import prices as instance_prices
from ....regions import region_argument
from ...preflight.clients import PRICING_REGION, session_for
from . import INSTANCE_DATA, INSTANCES_DOCUMENT, instance_tables
from .generate import dump, from_karpenter, from_price_list
from .karpenter import NotAPriceTable, parse

DEFAULT_OUT = Path(instance_prices.__file__).resolve().parent / INSTANCE_DATA


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.tools.cost.prices", description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--karpenter", type=Path, metavar="FILE", help="Karpenter's zz_generated.pricing_aws.go")
    source.add_argument("--refresh", action="store_true", help="read the AWS Price List API (needs credentials)")
    parser.add_argument("--ref", help="the Karpenter tag the file was taken from (with --karpenter)")
    parser.add_argument(
        "--region",
        action="append",
        default=[],
        type=region_argument,
        help="a region to add (with --refresh; repeatable)",
    )
    parser.add_argument("--profile", help="AWS profile for --refresh (default: the ambient credentials)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="file to write (default: the pinned table)")
    args = parser.parse_args(argv)

    if args.karpenter is not None:
        if not args.ref:
            parser.error("--karpenter needs --ref, the tag the file was taken from (e.g. v1.14.1)")
        try:
            document = from_karpenter(parse(args.karpenter.read_text(encoding="utf-8")), args.ref)
        except (OSError, NotAPriceTable) as error:
            print(f"error: {args.karpenter}: {error}", file=sys.stderr)
            return 1
    else:
        regions = [*instance_tables(INSTANCES_DOCUMENT), *args.region]
        try:
            pricing = session_for(args.profile, PRICING_REGION).client("pricing")
            document = from_price_list(pricing, regions, datetime.now(UTC).date())
        except (ClientError, BotoCoreError, ValueError) as error:
            print(f"error: could not read the Price List API: {error}", file=sys.stderr)
            return 1
    args.out.write_text(dump(document), encoding="utf-8")
    counts = ", ".join(f"{region} {len(prices)}" for region, prices in document["regions"].items())
    print(f"wrote {args.out}: {document['source']} of {document['date']}; instance types per region: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
