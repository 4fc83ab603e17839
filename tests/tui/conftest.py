"""The TUI runs against a real SQLite store in a tmp dir (FSADVISOR_DB), with the model
cache and user data dirs pointed at tmp too, so a test never reads the user's files and
the shipped data alone decides every number on screen."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def tmp_env(tmp_path, monkeypatch):
    db = tmp_path / "fsadvisor.db"
    monkeypatch.setenv("FSADVISOR_DB", str(db))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return db
