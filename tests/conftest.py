"""Shared fixtures. Device tests create their own loop devices from files in tmp dirs and
always detach them; they never touch any other block device. No test reads or writes the
user's store, model cache or calibration (``keep_user_files_out``)."""

from __future__ import annotations

import os
import shutil

import pytest

from fsadvisor.host import loopdev

USER_DIRS = ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME")


@pytest.fixture(scope="session", autouse=True)
def keep_user_files_out(tmp_path_factory):
    """Every test runs with the store (FSADVISOR_DB), the fit cache and the calibration in a
    session tmp dir, never the user's. One dir for the whole session, so the shipped seed
    data is loaded and fitted once, not once per test; a test that needs a fresh store asks
    for ``tmp_db`` (or sets FSADVISOR_DB itself)."""
    base = tmp_path_factory.mktemp("user")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FSADVISOR_DB", str(base / "fsadvisor.db"))
        for name in USER_DIRS:
            mp.setenv(name, str(base / name.lower()))
        yield base


def _can_loop() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if not shutil.which("losetup"):
        return "losetup missing"
    return None


@pytest.fixture
def loop_device(tmp_path):
    """Factory: ``loop_device(size_bytes)`` -> /dev/loopN over a sparse file in tmp_path."""
    why = _can_loop()
    if why:
        pytest.skip(why)
    attached: list[str] = []

    def make(size_bytes: int = 512 << 20, direct_io: bool = True) -> str:
        img = tmp_path / f"loop{len(attached)}.img"
        loopdev.create_backing_file(img, size_bytes)
        dev = loopdev.attach(img, direct_io=direct_io)
        attached.append(dev)
        return dev

    try:
        yield make
    finally:
        for dev in attached:
            loopdev.detach(dev)


@pytest.fixture
def tmp_db(tmp_path, monkeypatch):
    """A real SQLite store file, selected the way users select it (FSADVISOR_DB)."""
    path = tmp_path / "fsadvisor.db"
    monkeypatch.setenv("FSADVISOR_DB", str(path))
    return path
