"""Helm's post-render step for the engine tier: `python -m engine.postrender <release>` reads the release's rendered
objects on stdin and writes them back with the changes `engine.transforms.CHART_OBJECTS` lists."""

from __future__ import annotations

import sys

import yaml

from engine.transforms import UnlistedWebhook, post_render


def main() -> int:
    documents = [d for d in yaml.safe_load_all(sys.stdin) if d]
    try:
        kept = post_render(documents, sys.argv[1])
    except (UnlistedWebhook, yaml.YAMLError) as error:  # Helm shows what the post-renderer printed
        print(f"engine.postrender {sys.argv[1]}: {error}", file=sys.stderr)
        return 1
    yaml.safe_dump_all(kept, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
