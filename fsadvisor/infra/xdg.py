"""Where fsadvisor keeps its store and its model cache: the XDG Base Directory rule.

fsadvisor runs on Linux only (it formats and mounts block devices), where the rule is two
lines: ``$XDG_DATA_HOME`` / ``$XDG_CACHE_HOME`` when set to an absolute path (the spec says a
relative one is invalid and ignored), else ``~/.local/share`` / ``~/.cache``; then the
application's own directory. platformdirs computes the same on Linux (a test holds the two
equal), but importing it pulls in tempfile and random, a sizeable share of what all of
fsadvisor's own start-up takes (benchmarks/recommend_vs_numpy.py measures it).
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

APP = "fsadvisor"


def _home() -> str:
    # A relative or empty $HOME would root the path at the working directory or at /:
    # such a HOME is ignored and the account's home directory is used.
    home = os.environ.get("HOME", "")
    if os.path.isabs(home):
        return home
    return pwd.getpwuid(os.getuid()).pw_dir


def _base(env_var: str, default: str) -> Path:
    value = os.environ.get(env_var, "")
    if os.path.isabs(value):
        return Path(value)
    return Path(_home(), default)


def data_dir() -> Path:
    """``$XDG_DATA_HOME/fsadvisor``, else ``~/.local/share/fsadvisor``."""
    return _base("XDG_DATA_HOME", ".local/share") / APP


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/fsadvisor``, else ``~/.cache/fsadvisor``."""
    return _base("XDG_CACHE_HOME", ".cache") / APP


def default_store_path() -> Path:
    """``$FSADVISOR_DB`` if set, else the data directory's ``fsadvisor.db``. Here, beside the
    directories, not in store/: what needs only to know where the store is (the calibration
    file beside it, predict/settings.py) then does not depend on the store."""
    env = os.environ.get("FSADVISOR_DB")
    if env:
        return Path(env).expanduser()
    return data_dir() / "fsadvisor.db"
