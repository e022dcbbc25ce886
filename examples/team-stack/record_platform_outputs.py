"""Record a platform stack's outputs as the offline preview computes them, for previewing this team stack offline.

    python examples/team-stack/record_platform_outputs.py --stack prod > examples/team-stack/platform-outputs.prod.json

Only the outputs team stacks read (the contract in the README) are recorded, none of them secret. With a deployed
platform, the real outputs come from `pulumi stack output --json --stack acme/eks-ml-platform/prod` instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from eks_ml_platform.cluster.attach import HANDLE_OUTPUTS
from eks_ml_platform.team.offer import OFFER_OUTPUTS
from eks_ml_platform.tools.preview import run_preview

PLATFORM = Path(__file__).resolve().parents[2]


def recorded_outputs(stack: str) -> str:
    outputs = run_preview(PLATFORM, stack).stack_outputs
    contract = {name: outputs[name] for name in {*HANDLE_OUTPUTS, *OFFER_OUTPUTS} if name in outputs}
    return json.dumps(contract, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="the platform stack (reads Pulumi.<stack>.yaml)")
    sys.stdout.write(recorded_outputs(parser.parse_args().stack))
