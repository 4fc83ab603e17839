"""`fsadvisor calibrate` on real loop devices: the whole path (plan, raw-device runs, fit,
store, then predict --device saying "calibrated"), a failing step that saves nothing and
names itself, and a refused device refused exactly like `probe` refuses it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fsadvisor.host import loopdev
from fsadvisor.catalog.device_params import PARAM_KEYS

pytestmark = pytest.mark.device


def cli(*args: str, db: Path, timeout: float = 240):
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def params_rows(db: Path) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "SELECT identity, kind, n_runs, run_ids, params, log_sd, source FROM device_params"
        ).fetchall()
    finally:
        con.close()


def test_calibrate_scratch_end_to_end_then_predict_says_calibrated(tmp_path):
    db = tmp_path / "cal.db"
    # 17 runs of 1 s (2 reps, the sweep 1), and on a host of several cores one run of the
    # 128 KiB writes from as many jobs: well under a minute of measuring.
    several = len(os.sched_getaffinity(0)) > 1
    n = 17 + several
    p = cli(
        "calibrate",
        "--scratch",
        "1G",
        "--scratch-dir",
        str(tmp_path),
        "--runtime",
        "1",
        "--reps",
        "2",
        "--json",
        db=db,
    )
    assert p.returncode == 0, p.stderr
    assert f"fsadvisor: calibrating a scratch loop device: {n} raw-device runs of 1 s" in p.stderr
    out = json.loads(p.stdout)
    assert out["kind"] == "loop" and out["identity"].startswith("loop:loop on ")
    assert "direct I/O" in out["identity"] and "/dev/loop" not in out["identity"]
    assert out["n_runs"] == n and len(out["run_ids"]) == n
    for key in PARAM_KEYS:
        prm = out["params"][key]
        lo, hi = prm["interval_90"]
        assert lo < prm["value"] < hi and prm["log_sd"] > 0
    measured = {k for k, v in out["params"].items() if v["measured"]}
    # every key the plan targets is measured (parallelism only if the sweep bent; how far
    # the device scales with submitters only where there are several cores to submit from)
    assert set(PARAM_KEYS) - {"parallelism", "bw_submitters"} <= measured
    assert ("bw_submitters" in measured) == several
    assert out["params"]["bw_submitters"]["value"] >= 1.0
    # the host is measured too: this VM is the reference machine (factor near 1 unless the
    # machine is loaded), with the CPUs this process may use
    assert 0.3 < out["params"]["host_cpu_factor"]["value"] < 4.0
    assert out["params"]["host_cores"]["value"] == len(os.sched_getaffinity(0))
    # ... and the CPU the device's own deep-queue reads took (fio's thread, the host's CPUs):
    # a few microseconds per read, never more than the host's CPUs could give in the time
    assert {"submit_cpu_us_read", "host_cpu_us_read"} <= measured
    read_cap = out["params"]["read_iops_cap"]["value"]
    for key, cpus in (("submit_cpu_us_read", 1), ("host_cpu_us_read", os.cpu_count())):
        assert 0 < out["params"][key]["value"] <= 1.05 * cpus * 1e6 / read_cap
    (row,) = params_rows(db)
    assert row[0] == out["identity"] and row[1] == "loop" and row[2] == n
    assert sorted(json.loads(row[3])) == sorted(out["run_ids"])
    assert json.loads(row[4])["read_iops_cap"] == pytest.approx(
        out["params"]["read_iops_cap"]["value"]
    )
    # the runs are stored like a probe's, with provenance
    con = sqlite3.connect(db)
    runs = con.execute("SELECT status, configuration_id, command, host_id FROM runs").fetchall()
    plan = json.loads(con.execute("SELECT plan FROM matrices").fetchone()[0])
    con.close()
    assert len(runs) == n and all(r[0] == "ok" and r[1] is None and r[3] for r in runs)
    assert plan["purpose"] == "calibration"

    # Another loop device of the same class (a file on the same filesystem, direct I/O) is
    # the same device as far as its parameters go: predict says it is calibrated.
    with loopdev.scratch_loop(512 << 20, tmp_path) as dev:
        pr = cli(
            "predict",
            "--config",
            '{"filesystem": "xfs"}',
            "--profile",
            "oltp",
            "--device",
            dev,
            "--json",
            db=db,
        )
        assert pr.returncode == 0, pr.stderr
        basis = json.loads(pr.stdout)["basis"]
        assert basis["device_parameters"].startswith(f"calibrated on this device, {n} runs, ")
        assert basis["device_params"]["identity"] == out["identity"]
        text = cli(
            "predict",
            "--config",
            '{"filesystem": "xfs"}',
            "--profile",
            "oltp",
            "--device",
            dev,
            db=db,
        )
        assert f"device parameters: calibrated on this device, {n} runs" in text.stdout
    # ... and a store without that calibration says it used the prior
    with loopdev.scratch_loop(512 << 20, tmp_path) as dev:
        other = cli(
            "predict",
            "--config",
            '{"filesystem": "xfs"}',
            "--profile",
            "oltp",
            "--device",
            dev,
            "--json",
            db=tmp_path / "other.db",
        )
        assert json.loads(other.stdout)["basis"]["device_parameters"].startswith(
            "prior for kind loop"
        )


def test_a_calibration_of_some_workloads_is_completed_by_a_later_one(tmp_path):
    """An adaptive probe calibrates only the workloads its decision rests on; a later
    profile's calibration measures what is missing and is fitted with the earlier runs:
    one device_params row, both calibrations' runs, both calibrations' figures."""
    from fsadvisor.service import calibration

    db = str(tmp_path / "partial.db")

    def run(only, extends=()):
        plan = calibration.plan_calibration(
            scratch="512M",
            scratch_dir=tmp_path,
            runtime_s=1,
            reps=2,
            db=db,
            only=only,
            extends=extends,
        )
        return plan, calibration.run_calibration(plan)

    plan, first = run(["4k-randwrite-fsync1"])
    assert [w.name for w in plan.workloads] == ["4k-randwrite-qd1", "4k-randwrite-fsync1"]
    assert len(first.run_ids) == 4
    measured = set(first.params.details["measured"])
    assert {"write_latency_us", "flush_latency_us"} <= measured
    assert "read_bw_bytes_s" not in measured
    plan, second = run(["128k-read-qd8"], extends=first.run_ids)
    assert [w.name for w in plan.workloads] == ["128k-read-qd8"]
    assert set(first.run_ids) < set(second.run_ids) and len(set(second.run_ids)) == 6
    both = set(second.params.details["measured"])
    assert {"write_latency_us", "flush_latency_us", "read_bw_bytes_s"} <= both
    assert second.params.values["flush_latency_us"] == pytest.approx(
        first.params.values["flush_latency_us"]
    )
    (row,) = params_rows(Path(db))
    assert sorted(json.loads(row[3])) == sorted(second.run_ids) and row[2] == 6


def test_a_failing_step_saves_no_parameters_and_names_the_step(tmp_path):
    from fsadvisor.service import calibration

    db = tmp_path / "fail.db"
    plan = calibration.plan_calibration(
        scratch="512M", scratch_dir=tmp_path, runtime_s=1, reps=2, db=str(db)
    )
    # A real failure of fio itself: an I/O engine that does not exist, on the fsync run.
    plan.workloads = [
        replace(w, workload=replace(w.workload, ioengine="no-such-engine"))
        if w.name == "4k-randwrite-fsync1"
        else w
        for w in plan.workloads
    ]
    with pytest.raises(calibration.CalibrationFailed) as e:
        calibration.run_calibration(plan)
    msg = str(e.value)
    assert (
        "calibration failed at step raw device (no filesystem), sched none | 4k-randwrite-fsync1 | rep 1"
        in msg
    )
    assert "no device parameters were saved" in msg and "\n" not in msg
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT count(*) FROM device_params").fetchone()[0] == 0
        statuses = [r[0] for r in con.execute("SELECT status FROM runs ORDER BY id")]
        assert statuses == ["ok", "ok", "failed"]  # stopped at the failure
        assert con.execute("SELECT status FROM matrices").fetchone()[0] == "failed"
    finally:
        con.close()
    assert not list(tmp_path.glob("fsadvisor-scratch-*.img"))  # cleaned up
    from fsadvisor.probe.state import StateFile, state_path_for

    assert "calibrate:scratch" not in StateFile(state_path_for(db)).load().matrices


@pytest.fixture
def mounted_loop(loop_device, tmp_path):
    dev = loop_device(320 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", dev, str(mnt)], check=True)
    try:
        yield dev, mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_a_refused_device_is_refused_like_probe(mounted_loop, tmp_path):
    dev, mnt = mounted_loop
    db = tmp_path / "r.db"
    probe = cli("probe", dev, "--quick", "--yes-wipe", dev, db=db)
    for extra in ([], ["--dry-run"]):
        cal = cli("calibrate", dev, "--yes-wipe", dev, *extra, db=db)
        assert cal.returncode == probe.returncode == 2, cal.stderr
        assert cal.stdout == "" and len(cal.stderr.strip().splitlines()) == 1
        assert cal.stderr == probe.stderr and "mounted" in cal.stderr
    assert not db.exists()  # refused before anything was opened, let alone stored


def test_an_interrupted_calibration_saves_nothing_and_is_not_left_to_resume(tmp_path):
    from fsadvisor.probe.run import Interruptions
    from fsadvisor.probe.state import StateFile, state_path_for
    from fsadvisor.service import calibration

    db = tmp_path / "int.db"
    plan = calibration.plan_calibration(
        scratch="512M", scratch_dir=tmp_path, runtime_s=1, reps=2, db=str(db)
    )
    stop = Interruptions()
    stop.cancel("SIGTERM")  # as a TUI worker would: stop at the first step boundary
    with pytest.raises(calibration.CalibrationInterrupted) as e:
        calibration.run_calibration(plan, interruptions=stop)
    assert e.value.signame == "SIGTERM" and "no device parameters were saved" in str(e.value)
    assert params_rows(db) == []
    state = StateFile(state_path_for(db)).load()
    assert "calibrate:scratch" not in state.matrices and not state.has_live_resources
    assert not list(tmp_path.glob("fsadvisor-scratch-*.img"))
