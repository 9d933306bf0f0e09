"""``python -m placerl``."""

import sys

from placerl.cli import main

if __name__ == "__main__":  # importing the module (the API reference does) runs nothing
    sys.exit(main())
