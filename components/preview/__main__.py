"""`python -m components.preview --stack dev --out build/preview/dev`"""

import sys

from components.preview import main

sys.exit(main())
