"""Where the shipped data lives: top-level datasets/, models/, runner/ in a checkout, or the
copy a wheel carries under fsadvisor/_data."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Callable

from fsadvisor.infra.readfile import read_bounded

# The fsadvisor package directory (this module is in its infra/).
_PKG = Path(__file__).resolve().parents[1]
# A shipped or user TOML document larger than this is no document of ours.
MAX_TOML_BYTES = 16 << 20


def data_dir(name: str) -> Path:
    """Directory ``name`` (datasets | models | runner). FSADVISOR_DATA_ROOT overrides, for tests."""
    override = os.environ.get("FSADVISOR_DATA_ROOT")
    candidates = [Path(override) / name] if override else []
    candidates += [_PKG / "_data" / name, _PKG.parent / name]
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError(
        f"shipped data directory {name!r} not found (looked in "
        + ", ".join(str(c) for c in candidates)
        + ")"
    )


def presets_dir() -> Path:
    return _PKG / "profiles" / "presets"


def read_toml(
    path: str | os.PathLike[str], parse: Callable[[bytes], dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The TOML document in ``path``: a regular file of at most MAX_TOML_BYTES (a FIFO or
    /dev/zero is refused, infra/readfile.py), parsed by tomllib or by ``parse`` (the
    caller's own parser and errors). OSError from the file itself is the caller's."""
    raw = read_bounded(Path(path), MAX_TOML_BYTES)
    return parse(raw) if parse is not None else tomllib.loads(raw.decode())
