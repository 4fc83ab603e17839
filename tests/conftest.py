"""Shared fixtures. Device tests create their own loop devices from files in tmp dirs and
always detach them; they never touch any other block device. No test reads or writes the
user's store, model cache or calibration (``keep_user_files_out``)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

# PYTHONDONTWRITEBYTECODE (set on this project's machines) keeps .pyc files out of the source
# tree, and pytest then rewrites the asserts of every test module again on every run: 5.1 s
# of collection against 1.45 s from a cache (`pytest --co`, this suite). The rewritten
# modules, and whatever this process imports from here on, are cached under .pytest_cache
# instead (sys.pycache_prefix, which pytest honours), still outside the tree's own dirs.
# A prefix the user set is kept; a tree we cannot write to is left alone.
if sys.dont_write_bytecode and not sys.pycache_prefix:
    _prefix = Path(__file__).resolve().parents[1] / ".pytest_cache" / "pycache"
    try:
        _prefix.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    else:
        if os.access(_prefix, os.W_OK):
            sys.pycache_prefix = str(_prefix)
            sys.dont_write_bytecode = False

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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """pyproject's addopts run the suite in two processes (pytest-xdist, ``--dist
    loadgroup``): the device tests go to one of them, one after another as they were
    written to run (loop devices, /dev/shm, a probe's measured seconds), while the other
    takes the unit and TUI tests. First among the hooks: xdist's own reads the group marks
    to tie each test to its group."""
    for item in items:
        if item.get_closest_marker("device"):
            item.add_marker(pytest.mark.xdist_group("device"))


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


# Measured figures of the probed_store fixture: per (matrix, configuration) the IOPS of each
# repetition; power is 50 W in every run, so ops/J = IOPS / 50.
PROBED_IOPS = {
    ("m-base", "ext4"): (10_000.0, 10_200.0, 9_800.0),
    ("m-base", "xfs"): (12_000.0, 12_300.0, 11_700.0),
    ("m-new", "ext4"): (10_050.0, 9_950.0, 10_100.0),
    ("m-new", "xfs"): (15_000.0, 15_200.0, 14_800.0),
}


@pytest.fixture
def probed_store(tmp_db, tmp_path, monkeypatch):
    """A real store holding two probe matrices (m-base, m-new) of profile oltp's workload on
    a loop device: ext4 defaults and xfs -o noatime, 3 ok repetitions each (PROBED_IOPS),
    energy from ipmi at system scope. Each test gets its own model cache."""
    from fsadvisor.domain import Device, FsConfig
    from fsadvisor.records import EnergyReading, RunRecord
    from fsadvisor.profiles import load_profile
    from fsadvisor.service import advice
    from fsadvisor.store import open_store

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    advice._cache.clear()
    w = load_profile("oltp").workload
    dev = Device(path="/dev/loop9", size_bytes=8 << 30, kind="loop", model="loop on ext4 (test)")
    configs = {"ext4": FsConfig.make("ext4"), "xfs": FsConfig.make("xfs", mount=["noatime"])}
    with open_store(str(tmp_db)) as store:
        store.ensure_seeded()
        for mid in ("m-base", "m-new"):
            store.start_matrix({"reps": 3, "device": dev.path, "profile": "oltp"}, matrix_id=mid)
            for (m, fs), iops in PROBED_IOPS.items():
                if m != mid:
                    continue
                for rep, x in enumerate(iops, 1):
                    store.record_run(
                        RunRecord(
                            cell_key=f"{configs[fs].key()} | profile:oltp",
                            device=dev,
                            config=configs[fs],
                            workload_name="profile:oltp",
                            workload=w,
                            rep=rep,
                            status="ok",
                            started_at=1_790_000_000.0 + rep,
                            wall_s=12.0,
                            metrics={
                                "iops": x,
                                "mb_s": x * w.bs_bytes / 1e6,
                                "p99_latency_us": 900.0 + rep,
                                "mean_latency_us": 300.0,
                            },
                            energy=EnergyReading(
                                source="ipmi",
                                scope="system",
                                energy_j=500.0,
                                avg_watts=50.0,
                                duration_s=10.0,
                                samples=10,
                            ),
                            host={"hostname": "box", "kernel": "6.18"},
                            matrix_id=mid,
                        )
                    )
            store.finish_matrix(mid)
    return tmp_db


@pytest.fixture
def probed_iops():
    """PROBED_IOPS, for tests that check figures of probed_store."""
    return PROBED_IOPS
