"""``python -m placerl``."""

import sys

from placerl.cli import main

sys.exit(main())
