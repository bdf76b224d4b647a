"""``python -m roundwise ...``: the same as the ``roundwise`` command."""

import sys

from .cli import main

sys.exit(main())
