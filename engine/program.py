"""What the engine tier's `pulumi up` runs: the stack's own program, after the test-only transforms of
`engine.transforms`. The tier's runner (engine.stack) names the chart copies and a scratch folder in the environment."""

import os
from pathlib import Path

from components.platform.entry import program
from engine.transforms import register

register(charts=Path(os.environ["EKSML_ENGINE_CHARTS"]), postrender=Path(os.environ["EKSML_ENGINE_SCRATCH"]))
program()
