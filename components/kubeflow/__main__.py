"""`python -m components.kubeflow fetch [--cache DIR] [--no-render]`: download and verify the pinned Kubeflow tree
(and fill the render cache, so the first preview does not pay for kustomize).
`python -m components.kubeflow bench [--tree DIR]`: time rendering the default set cold and warm.
`python -m components.kubeflow digests FILES.sha256`: print `tree_digests.json` for a new pin."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import bench, entries, fetch, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.kubeflow")
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_cmd = commands.add_parser("fetch", help="download and verify the pinned Kubeflow tree")
    fetch_cmd.add_argument("--cache", type=Path, help="cache root (default: the per-user cache)")
    fetch_cmd.add_argument("--no-render", action="store_true", help="do not fill the render cache")
    fetch_cmd.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="install a local copy of the pinned tree (verified) instead of downloading",
    )
    bench_cmd = commands.add_parser("bench", help="time rendering the default set cold and warm")
    bench_cmd.add_argument("--tree", type=Path, help="a verified tree (default: the fetched one)")
    digests_cmd = commands.add_parser("digests", help="print tree_digests.json from a sha256sum listing")
    digests_cmd.add_argument("listing", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            root = fetch.install_from(args.source, args.cache) if args.source else fetch.fetch(args.cache, log=print)
            print(f"Kubeflow tree verified at {root}")
            if not args.no_render:
                stats = render.RenderStats()
                render.render(root, entries.ALL, cache_dir=render.default_render_cache(args.cache), stats=stats)
                print(f"render cache: {len(stats.rendered)} entries rendered, {len(stats.cached)} already cached")
        elif args.command == "bench":
            for name, value in bench.measure(args.tree).items():
                print(f"{name}: {value:.0f}" if name == "objects" else f"{name}: {value:.2f}")
        else:
            sys.stdout.write(fetch.digests_json(args.listing.read_text()))
    except (fetch.TreeError, render.RenderError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
