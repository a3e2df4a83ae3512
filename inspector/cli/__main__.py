"""`python -m inspector.cli`: the memlens command."""

import sys

from .main import main

sys.exit(main())
