"""`python -m components.preview --stack dev --out build/preview/dev`

The preview is one short batch run, so the process is tuned as one:

- the cyclic garbage collector stays off: registering the stack allocates millions of short-lived objects that
  reference counting frees, and the collector's passes over them cost about a quarter of the run (peak memory grows
  by a few MiB);
- once the report is printed and every file is closed, the process ends without the interpreter's teardown, which
  would spend most of a second freeing the SDKs' modules one object at a time.
"""

import gc
import os
import sys

gc.disable()

from ..tools.preview import main  # noqa: E402 - after the collector is off, so imports run without it too

code = main()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
