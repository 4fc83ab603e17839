"""probe --adaptive end to end on a scratch loop device the probe creates (and detaches):
calibration first (the store has none), then model-chosen cells until the budget or the
target; every run stored with the matrix's provenance; refusals before anything is touched."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.device

ARGS = [
    "--scratch",
    "1G",
    "--adaptive",
    "--profile",
    "fio-randwrite-4k-j1",
    "--fs",
    "ext4,xfs",
    "--schedulers",
    "none",
    "--runtime",
    "1",
    "--cooldown",
    "0",
]
BUDGET_S = 120


def probe_cli(*args: str, db: Path, timeout: float = 600):
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", "probe", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def why(p) -> str:
    """What a failed probe said: its stderr's tail and, from its --json answer, each failed
    cell with fio's or the step's error (a failed cell exits 1 and says so only on stdout)."""
    failed = []
    try:
        failed = json.loads(p.stdout)["probe"]["failed"]
    except (ValueError, KeyError, TypeError):
        pass
    return p.stderr[-3000:] + "".join(f"\nfailed cell: {f}" for f in failed)


def loops_on(scratch_dir: Path) -> list[str]:
    """Loop devices backed by a file in this module's scratch directory: the machine is
    shared, and a loop another process left behind is not this probe's."""
    out = subprocess.run(
        ["losetup", "-a", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True
    ).stdout
    return [ln for ln in out.splitlines() if f"{scratch_dir}/" in ln]


@pytest.fixture(scope="module")
def scratch_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("scratch")


@pytest.fixture(scope="module")
def adaptive_run(tmp_path_factory, scratch_dir):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    db = tmp_path_factory.mktemp("adaptive") / "s.db"
    # 2 minutes: the calibration (only the QD32 writes these cells' comparison rests on) takes
    # its 1 s windows from --runtime
    p = probe_cli(
        *ARGS, "--scratch-dir", str(scratch_dir), "--budget", f"{BUDGET_S}s", "--json", db=db
    )
    return p, db


def test_runs_end_to_end_within_the_budget(adaptive_run):
    p, db = adaptive_run
    assert p.returncode == 0, why(p)
    doc = json.loads(p.stdout)
    d = doc["decision"]
    assert doc["calibration"] and doc["calibration"]["wall_s"] > 0  # none stored before
    assert 0.0 <= d["confidence"] <= 1.0 and d["leader"]
    # the budget bounds what is started: the last cell may overrun its estimate a little
    assert d["device_time_s"] <= BUDGET_S * 1.15
    assert d["runs"] >= 1 and d["reason"]
    assert doc["steps"] and doc["steps"][-1]["leader"] == d["leader"]
    assert "leader " in p.stderr and "confidence" in p.stderr and "full matrix" in p.stderr
    # the bar counts device seconds against the budget, not configurations x MAX_REPS
    assert re.search(rf"\] +\d+/{BUDGET_S} s +\d+%", p.stderr), p.stderr[-2000:]
    cells = doc["probe"]["cells"]
    assert cells["total"] == sum(v for k, v in cells.items() if k != "total")


def test_every_run_is_stored_with_its_matrix(adaptive_run):
    p, db = adaptive_run
    from fsadvisor.store import open_store

    doc = json.loads(p.stdout)
    mid = doc["probe"]["matrix_id"]
    with open_store(db) as store:
        rows = store.runs(matrix_id=mid)
        assert len(rows) == doc["decision"]["runs"]
        assert all(
            r["status"] == "ok" and r["workload_name"] == "profile:fio-randwrite-4k-j1"
            for r in rows
        )
        assert store.calibrated_devices()  # the calibration it ran first is stored


def test_the_scratch_device_is_gone(adaptive_run, scratch_dir):
    assert not loops_on(scratch_dir) and not list(scratch_dir.iterdir())


def test_a_budget_too_small_for_calibration_is_refused_before_anything(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    # a budget of the calibration's own estimate (its dry run's): no room for a cell after it
    dry = probe_cli(
        *ARGS, "--scratch-dir", str(scratch), "--dry-run", "--json", db=tmp_path / "s.db"
    )
    assert dry.returncode == 0, dry.stderr
    calib = json.loads(dry.stdout)["calibration_estimate_s"]
    assert calib > 0
    p = probe_cli(
        *ARGS,
        "--scratch-dir",
        str(scratch),
        "--budget",
        f"{max(1, math.floor(calib))}s",
        db=tmp_path / "s.db",
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "too small for even the device calibration" in lines[0]
    assert not list(scratch.iterdir()) and not loops_on(scratch)


def test_an_adaptive_run_on_a_refused_device_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    root_src = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True, text=True
    ).stdout.strip()
    if not root_src.startswith("/dev/"):
        pytest.skip("/ is not on a block device here")
    p = probe_cli(
        root_src,
        "--adaptive",
        "--profile",
        "fio-randwrite-4k-j1",
        "--yes-wipe",
        root_src,
        db=tmp_path / "s.db",
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr


def test_a_second_profile_reuses_the_calibration_and_a_plain_resume_is_adaptive(
    adaptive_run, scratch_dir, tmp_path
):
    """The calibrated store of the first run: the scratch device's backing class is
    calibrated, so no calibration runs again. Interrupted after its first stored cell, the
    probe is resumed by ``probe --scratch 1G --resume`` without --adaptive: it continues the
    same matrix adaptively within the budget it started with."""
    from fsadvisor.store import open_store

    _, calibrated_db = adaptive_run
    db = tmp_path / "s.db"
    shutil.copy(calibrated_db, db)
    with open_store(db) as store:
        before = {m["id"] for m in store.matrices()}
    args = [a if a != "fio-randwrite-4k-j1" else "fs-overhead-randwrite-4k-fsync1" for a in ARGS]
    env = dict(os.environ, FSADVISOR_DB=str(db))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsadvisor.cli",
            "probe",
            *args,
            "--scratch-dir",
            str(scratch_dir),
            "--budget",
            "40s",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        mid, deadline = None, time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.3)
            with open_store(db) as store:
                new = [m for m in store.matrices() if m["id"] not in before]
                if new and new[0]["runs_ok"] >= 1:
                    mid = new[0]["id"]
                    break
        assert mid is not None, proc.communicate()[1][-3000:]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert "has no calibration" not in err
    first = json.loads(out)
    assert first["calibration"] is None  # reused: stored for this backing class
    assert not loops_on(scratch_dir)
    p = probe_cli("--scratch", "1G", "--resume", "--json", db=db)
    assert p.returncode == 0, why(p)
    doc = json.loads(p.stdout)
    assert doc["adaptive"] is True and doc["probe"]["matrix_id"] == mid
    assert doc["calibration"] is None
    d = doc["decision"]
    assert d["device_time_s"] <= 40 * 1.15 and d["reason"]
    with open_store(db) as store:
        rows = store.runs(matrix_id=mid, status="ok")
    assert len(rows) == d["runs"] and len(rows) >= 1
    # adaptively: not every configuration x MAX_REPS (the full path would run them all)
    cells = doc["probe"]["cells"]
    assert cells["total"] == sum(v for k, v in cells.items() if k != "total")
    assert not loops_on(scratch_dir) and not list(scratch_dir.iterdir())
