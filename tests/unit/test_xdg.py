"""fsadvisor/infra/xdg.py's directories are the ones platformdirs gives on Linux (the XDG Base
Directory rule), whatever the environment says."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from fsadvisor.infra import xdg


@pytest.mark.parametrize("value", [None, "", "relative/dir", "/abs/xdg", "/abs/with space/"])
@pytest.mark.parametrize("home", [None, "/home/someone", ""])
def test_the_directories_are_platformdirs_own(monkeypatch, value, home):
    for var in ("XDG_DATA_HOME", "XDG_CACHE_HOME"):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    if home is None:
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", home)
    assert xdg.data_dir() == Path(platformdirs.user_data_dir("fsadvisor"))
    assert xdg.cache_dir() == Path(platformdirs.user_cache_dir("fsadvisor"))


def test_an_absolute_xdg_variable_wins_and_a_relative_one_is_ignored(monkeypatch):
    monkeypatch.setenv("HOME", "/home/u")
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/tmp/c")
    monkeypatch.setenv("XDG_DATA_HOME", "d")
    assert xdg.cache_dir() == Path("/var/tmp/c/fsadvisor")
    assert xdg.data_dir() == Path("/home/u/.local/share/fsadvisor")
