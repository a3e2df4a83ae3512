"""The inspector of one page that `memlens serve` serves (``python -m inspector.cli.served_page``)."""

import sys

from .main import main_for
from .tui import run_served_page

if __name__ == "__main__":
    sys.exit(main_for(run_served_page))
