"""What the folders of vendored tests (another library's own tests, run against memlens) share:
marking the tests each one leaves out, with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest


def skip_left_out(items: list[pytest.Item], folder: Path, left_out: dict[str, str]) -> None:
    """Skip, with its reason, each test of ``folder`` that ``left_out`` names (``FILE::TEST``, a
    parametrised test by its name alone or with its parameters). A conftest's hook sees every
    test collected, so only ``folder``'s own are looked at."""
    for item in items:
        if not item.path.is_relative_to(folder):
            continue
        for key in (f"{item.path.name}::{item.name}", f"{item.path.name}::{item.originalname}"):
            if key in left_out:
                item.add_marker(pytest.mark.skip(reason=left_out[key]))
                break
