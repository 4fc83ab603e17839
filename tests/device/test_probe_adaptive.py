"""probe --adaptive end to end on a scratch loop device the probe creates (and detaches):
calibration first (the store has none), then model-chosen cells until the budget or the
target; every run stored with the matrix's provenance; refusals before anything is touched."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.device

ARGS = ["--scratch", "1G", "--adaptive", "--profile", "fio-randwrite-4k-j1",
        "--fs", "ext4,xfs", "--schedulers", "none", "--runtime", "1", "--cooldown", "0"]


def probe_cli(*args: str, db: Path, timeout: float = 600):
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run([sys.executable, "-m", "fsadvisor.cli", "probe", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def loops_on(pattern: str) -> list[str]:
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if pattern in ln]


@pytest.fixture(scope="module")
def adaptive_run(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    db = tmp_path_factory.mktemp("adaptive") / "s.db"
    p = probe_cli(*ARGS, "--budget", "3m", "--json", db=db)
    return p, db


def test_runs_end_to_end_within_the_budget(adaptive_run):
    p, db = adaptive_run
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(p.stdout)
    d = doc["decision"]
    assert doc["calibration"] and doc["calibration"]["wall_s"] > 0  # none stored before
    assert 0.0 <= d["confidence"] <= 1.0 and d["leader"]
    # the budget bounds what is started: the last cell may overrun its estimate a little
    assert d["device_time_s"] <= 180 * 1.15
    assert d["runs"] >= 1 and d["reason"]
    assert doc["steps"] and doc["steps"][-1]["leader"] == d["leader"]
    assert "leader " in p.stderr and "confidence" in p.stderr and "full matrix" in p.stderr


def test_every_run_is_stored_with_its_matrix(adaptive_run):
    p, db = adaptive_run
    from fsadvisor.store import open_store
    doc = json.loads(p.stdout)
    mid = doc["probe"]["matrix_id"]
    with open_store(db) as store:
        rows = store.runs(matrix_id=mid)
        assert len(rows) == doc["decision"]["runs"]
        assert all(r["status"] == "ok" and r["workload_name"] == "profile:fio-randwrite-4k-j1"
                   for r in rows)
        assert store.calibrated_devices()  # the calibration it ran first is stored


def test_the_scratch_device_is_gone(adaptive_run):
    assert not loops_on("fsadvisor-scratch-")


def test_a_budget_too_small_for_calibration_is_refused_before_anything(tmp_path):
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "fsadvisor-scratch-*")))
    p = probe_cli(*ARGS, "--budget", "20s", db=tmp_path / "s.db", timeout=120)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "too small for even the device calibration" in lines[0]
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "fsadvisor-scratch-*"))) == before
    assert not loops_on("fsadvisor-scratch-")


def test_an_adaptive_run_on_a_refused_device_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    root_src = subprocess.run(["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True,
                              text=True).stdout.strip()
    if not root_src.startswith("/dev/"):
        pytest.skip("/ is not on a block device here")
    p = probe_cli(root_src, "--adaptive", "--profile", "fio-randwrite-4k-j1", "--yes-wipe",
                  root_src, db=tmp_path / "s.db", timeout=120)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
