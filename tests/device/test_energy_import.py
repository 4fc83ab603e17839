"""A power meter's log, exported after a real probe, is aligned to each run's measurement
window (meter-log with a clock offset; a log that does not cover a run leaves that
run's energy missing with a one-line warning, never interpolated)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from fsadvisor.store import open_store

pytestmark = pytest.mark.device

WATTS = 50.0


def cli(*args, db):
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    tmp = tmp_path_factory.mktemp("import")
    db = tmp / "store.db"
    r = cli(
        "probe",
        "--scratch",
        "512M",
        "--scratch-dir",
        str(tmp),
        "--fs",
        "ext4",
        "--schedulers",
        "none",
        "--no-variants",
        "--no-baseline",
        "--workloads",
        "4k-randread-qd32,4k-randwrite-qd32",
        "--reps",
        "1",
        "--runtime",
        "1",
        "--cooldown",
        "0",
        "--size",
        "64M",
        "--yes-wipe",
        "scratch",
        "--json",
        db=db,
    )
    assert r.returncode == 0, r.stderr
    runs = open_store(db).runs(status="ok")
    assert len(runs) == 2
    return tmp, db, runs


def write_log(path, start, end, offset_s=0.0):
    """HOBO-like CSV, one sample a second at constant power, on a meter clock that is
    ``offset_s`` ahead of the host's, from just before ``start`` to the first whole second
    at or after ``end``. The next run starts after ``end`` and lasts at least its 1 s
    runtime, so it always ends after the log does."""
    rows = ["Date Time,Watts"]
    t = math.floor(start) - 1
    while t <= math.ceil(end):
        rows.append(f"{t + offset_s:.0f},{WATTS}")
        t += 1
    path.write_text("\n".join(rows) + "\n")


def test_probe_records_each_measurement_window(probed):
    _, _, runs = probed
    for run in runs:
        m = run["metrics"]
        assert m["window_end_epoch_s"] > m["window_start_epoch_s"]
        assert m["window_end_epoch_s"] - m["window_start_epoch_s"] < 30


def test_log_is_aligned_with_clock_offset_and_uncovered_runs_are_missing(probed):
    tmp, db, runs = probed
    first, second = sorted(runs, key=lambda r: r["metrics"]["window_start_epoch_s"])
    w0 = first["metrics"]
    log = tmp / "meter.csv"
    # the meter's clock runs an hour ahead; the log covers only the first run
    write_log(log, w0["window_start_epoch_s"], w0["window_end_epoch_s"], offset_s=3600)
    r = cli("energy", "import-log", str(log), "--clock-offset", "-3600", "--json", db=db)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert [u["run_id"] for u in rep["updated"]] == [first["run_id"]]
    assert [m["run_id"] for m in rep["missing"]] == [second["run_id"]]
    assert "covers" in rep["missing"][0]["reason"]

    by_id = {r["run_id"]: r for r in open_store(db).runs(status="ok")}
    got = by_id[first["run_id"]]
    window = w0["window_end_epoch_s"] - w0["window_start_epoch_s"]
    assert got["energy_source"] == "meter-log" and got["power_scope"] == "system"
    assert got["energy_j"] == pytest.approx(WATTS * window, rel=0.02)
    miss = by_id[second["run_id"]]
    assert miss["energy_source"] == "meter-log" and miss["energy_j"] is None
    assert miss["energy_missing"]
    watts = [
        o
        for o in open_store(db).observations()
        if o.source.startswith("probe") and o.metric == "watts"
    ]
    assert [(o.energy_source, o.power_scope) for o in watts] == [("meter-log", "system")]
    assert watts[0].value == pytest.approx(WATTS, rel=0.02)

    # without the offset the log covers nothing: every run is missing, one warning each
    r = cli("energy", "import-log", str(log), db=db)
    assert r.returncode == 0
    warnings = [ln for ln in r.stderr.splitlines() if "energy missing" in ln]
    assert len(warnings) == 2

    # the model only learns measured power from runs that have it
    obs = open_store(db).observations()
    assert not [o for o in obs if o.source.startswith("probe") and o.metric == "watts"]
