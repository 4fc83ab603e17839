"""Where the shipped data lives: top-level datasets/, models/, runner/ in a checkout, or the
copy a wheel carries under fsadvisor/_data."""

from __future__ import annotations

import os
from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Directory ``name`` (datasets | models | runner). FSADVISOR_DATA_ROOT overrides, for tests."""
    override = os.environ.get("FSADVISOR_DATA_ROOT")
    candidates = [Path(override) / name] if override else []
    candidates += [_PKG / "_data" / name, _PKG.parent / name]
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError(f"shipped data directory {name!r} not found (looked in "
                            + ", ".join(str(c) for c in candidates) + ")")


def presets_dir() -> Path:
    return _PKG / "profiles" / "presets"
