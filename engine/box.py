"""A cluster in a box for a person: `python -m engine.box [--stack dev]` (or `make engine-box`) builds the tools if
needed, starts the control plane and kwok in a network namespace of their own, adds the stack's nodes (from its
offline preview in build/preview/<stack>), and prints how to reach it. Ctrl-C stops it and removes the namespace.

Everything runs inside the namespace; to use the cluster, enter it too:

    ip netns exec <namespace> .venv/bin/kubectl --kubeconfig <folder>/admin.kubeconfig get nodes
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path

from components.kubeflow.render import kubectl_binary
from engine import nodes
from engine.cluster import Box
from engine.tools.build import bin_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.box", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev", help="whose nodes to add (reads build/preview/<stack>)")
    args = parser.parse_args(argv)
    preview = Path("build") / "preview" / args.stack
    if not (preview / "resources.json").is_file():
        print(f"no offline preview at {preview}: run `make preview STACK={args.stack}` first", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="eksml-box-"))
    box = Box(bin_dir(), folder)
    try:
        kube = box.start()
        nodes.create(kube, nodes.from_preview(preview))
        print(f"namespace:  {box.namespace}")
        print(f"kubeconfig: {box.kubeconfig}")
        print(f"logs:       {folder / 'logs'}")
        print(f"try:        ip netns exec {box.namespace} {kubectl_binary()} --kubeconfig {box.kubeconfig} get nodes")
        print("Ctrl-C stops the box.", flush=True)
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        box.stop()
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    sys.exit(main())
