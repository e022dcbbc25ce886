"""`python -m components.tools.charts fetch [--from DIR] [--cache DIR]`: put the pinned Helm charts the offline model
renders into the per-user cache, every file checked against its pinned digest.
`python -m components.tools.charts status [--cache DIR]`: which pinned charts are fetched, missing or altered.
`python -m components.tools.charts digests DIR`: print `chart_digests.json` from a folder of the charts' copies."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import ChartError, charts_root, digests_json, fetch, status

#: Exit statuses: done; a chart could not be fetched or is altered.
OK, FAILED = 0, 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.tools.charts", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_cmd = commands.add_parser("fetch", help="fetch and verify the pinned charts into the per-user cache")
    fetch_cmd.add_argument("--cache", type=Path, help="cache root (default: the per-user cache)")
    fetch_cmd.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="copy the charts from this folder of <chart>-<version> copies (verified) instead of downloading them",
    )
    status_cmd = commands.add_parser("status", help="say which pinned charts are fetched, missing or altered")
    status_cmd.add_argument("--cache", type=Path, help="cache root (default: the per-user cache)")
    digests_cmd = commands.add_parser("digests", help="print chart_digests.json from a folder of the charts")
    digests_cmd.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    if args.command == "digests":
        sys.stdout.write(digests_json(args.directory))
        return OK
    if args.command == "status":
        found = status(charts_root(args.cache))
        for folder, state in found.items():
            print(f"{folder}: {state}")
        return OK if set(found.values()) == {"fetched"} else FAILED
    try:
        root = fetch(args.cache, source=args.source, log=print)
    except ChartError as error:
        print(f"error: {error}", file=sys.stderr)
        return FAILED
    print(f"pinned charts verified at {root}")
    return OK


if __name__ == "__main__":
    raise SystemExit(main())
