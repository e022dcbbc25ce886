"""`python -m components.cost`: the cost command of `components.tools.cost`, under this name."""

import sys

from ..tools.cost.__main__ import main

sys.exit(main(prog="python -m components.cost"))
