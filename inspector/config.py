"""The inspector's settings between runs (today: the theme), one small JSON file in the
platform's config directory, or in ``$MEMLENS_CONFIG_DIR`` (tests point it at a temporary one)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FILE_NAME = "inspector.json"


def config_path() -> Path:
    root = os.environ.get("MEMLENS_CONFIG_DIR")
    if not root:
        from platformdirs import user_config_dir

        root = user_config_dir("memlens", appauthor=False)
    return Path(root) / FILE_NAME


def load() -> dict[str, Any]:
    """The saved settings; empty when there are none or the file cannot be read as settings."""
    try:
        data = json.loads(config_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(**changes: Any) -> Path:
    """Merge ``changes`` into the file, written whole through a temporary file. Raises OSError."""
    path = config_path()
    data = {**load(), **changes}
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path
