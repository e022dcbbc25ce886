"""`python -m components.tools.cluster_model PREVIEW [PREVIEW ...] [--charts DIR]`: judge what one or more offline
previews (a platform stack first, then team stacks on it) put in one cluster. Exit 0 when every rule holds, 1
otherwise."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..charts import default_charts
from . import check_previews

#: The project folder, whose `../shared/reference/charts` is the fallback when no charts were fetched.
PROJECT = Path(__file__).resolve().parents[3]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.tools.cluster_model", description=__doc__)
    parser.add_argument("previews", nargs="+", type=Path, help="preview folders (python -m components.preview --out)")
    parser.add_argument(
        "--charts",
        type=Path,
        default=default_charts(PROJECT),
        help="folder of unpacked upstream charts named <chart>-<version> (default: the fetched ones in the per-user "
        "cache, else ../shared/reference/charts)",
    )
    args = parser.parse_args(argv)
    for folder in args.previews:
        if not (folder / "resources.json").is_file():
            parser.error(
                f"{folder} is not a preview folder (no resources.json): "
                "write one with python -m components.preview --out"
            )
    platform, problems = check_previews(args.previews, args.charts)
    for release, why in sorted(platform.unrendered.items()):
        print(f"not judged: the pods of Helm release {release} ({why})")
    if not platform.vpc.known:
        print(platform.vpc.describe())
    for problem in problems:
        print(problem)
    print(
        f"platform model: {len(platform.workloads)} workloads on {len(platform.nodes)} kinds of node, "
        f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
