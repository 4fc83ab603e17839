"""The TUI runs against a real SQLite store (FSADVISOR_DB), with the model cache and user data
dirs pointed at tmp too, so a test never reads the user's files and the shipped data alone
decides every number on screen.

Every test starts from the same freshly seeded store: a copy of one seeded once per test
process, at the same path each time. The store's quick version (its path, seed fingerprint
and row counts) is then the template's, so the model fitted on it once serves every test
that does not write; a test that adds a run changes the version and gets its own fit, as a
user would. Fitting anew for each of the ~150 tests cost about as much as the tests did."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session")
def _store_dirs(tmp_path_factory):
    """(template store, the path each test's copy lives at, the shared model cache)."""
    from fsadvisor.service import advice
    from fsadvisor.store import open_store

    base = tmp_path_factory.mktemp("tui-store")
    template = base / "template" / "fsadvisor.db"
    template.parent.mkdir()
    live = base / "live" / "fsadvisor.db"
    live.parent.mkdir()
    cache = base / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(cache))
        mp.setenv("XDG_DATA_HOME", str(base / "data"))
        mp.setenv("XDG_CONFIG_HOME", str(base / "config"))
        with open_store(str(template)) as store:
            store.ensure_seeded()
        for suffix in ("-wal", "-shm"):
            assert not template.with_name(template.name + suffix).exists(), "store left open"
        _fresh_copy(template, live)
        advice.get_model(str(live))  # the fit every test that does not write shares
    return template, live, cache


def _fresh_copy(template, db):
    from fsadvisor.store import integrity

    for suffix in ("", "-wal", "-shm", "-journal"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    shutil.copyfile(template, db)
    # the copy is the store fsadvisor wrote and closed, byte for byte: known intact, as it
    # would be had this process written it (store/integrity.py)
    integrity.remember(db)


@pytest.fixture(autouse=True)
def tmp_env(tmp_path, monkeypatch, _store_dirs):
    template, db, cache = _store_dirs
    monkeypatch.setenv("FSADVISOR_DB", str(db))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    _fresh_copy(template, db)
    return db
