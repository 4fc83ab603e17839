"""probe with several --profile end to end: one adaptive session on a scratch loop device
whose backing file is in RAM (/dev/shm), which the probe creates and detaches. Cells of any
profile are chosen under one budget, every run stored in one matrix, and the answer is per
profile. A third profile (a file) has the second one's workload: their cells are measured
once and stored for both. 1 s runs without cool-down keep it short.

The store is given a calibration of the scratch device's class first (its kind's prior,
saved under the identity the probe keys on), so the budget buys cells: a real calibration
takes 2.5 min here at its own 4 s windows, runs on the same code path for one profile or
several, and is tested end to end (with 1 s windows) by test_probe_adaptive.py; that a joint
plan calibrates once for all its profiles is tests/unit/test_adaptive.py's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.device

PROFILES = ("fio-randwrite-4k-j1", "fio-randread-4k-j1")
BUDGET_S = 60  # a few cells of each profile (the calibration is stored beforehand)
TWIN = "randread-twin"  # a profile file whose workload is PROFILES[1]'s


def twin_profile(path: Path) -> str:
    """Write TWIN: PROFILES[1] under another name (the same measurement, another answer)."""
    from dataclasses import replace

    from fsadvisor.profiles import load_profile
    from fsadvisor.profiles.write import profile_to_toml

    path.write_text(profile_to_toml(replace(load_profile(PROFILES[1]), name=TWIN)))
    return str(path)


def loops_on(scratch_dir: Path) -> list[str]:
    """Loop devices backed by a file in this module's scratch directory (the machine is
    shared: another process's loop devices are not this probe's)."""
    out = subprocess.run(
        ["losetup", "-a", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True
    ).stdout
    return [ln for ln in out.splitlines() if f"{scratch_dir}/" in ln]


@pytest.fixture(scope="module")
def ram_dir():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm to back a RAM loop device")
    d = Path(tempfile.mkdtemp(prefix="fsadvisor-joint-", dir="/dev/shm"))
    try:
        yield d
    finally:
        for ln in loops_on(d):  # only if the probe failed to detach its own device
            subprocess.run(["losetup", "-d", ln.split()[0]], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def joint_run(tmp_path_factory, ram_dir):
    where = tmp_path_factory.mktemp("joint")
    db = where / "s.db"
    args = [
        "--scratch",
        "1G",
        "--scratch-dir",
        str(ram_dir),
        "--fs",
        "ext4,xfs",
        "--schedulers",
        "none",
        "--runtime",
        "1",
        "--cooldown",
        "0",
        "--budget",
        f"{BUDGET_S}s",
        "--json",
    ]
    for p in (*PROFILES, twin_profile(where / "twin.toml")):
        args += ["--profile", p]
    calibrate_like_the_probe(db, ram_dir)
    env = dict(os.environ, FSADVISOR_DB=str(db))
    p = subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", "probe", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    return p, db


def calibrate_like_the_probe(db: Path, ram_dir: Path) -> None:
    """Store the scratch device's kind prior as its calibration, under the identity the
    probe will key on (a dry-run plan of the same scratch device names it)."""
    from fsadvisor.catalog.device_params import prior_params
    from fsadvisor.service import adaptive as ad
    from fsadvisor.service.device_figures import devices_table
    from fsadvisor.service.request import ProbeRequest
    from fsadvisor.store import open_store

    guess = ad.plan_adaptive(
        ProbeRequest.make(
            None,
            scratch="1G",
            scratch_dir=str(ram_dir),
            profile=PROFILES[0],
            filesystems="ext4,xfs",
            schedulers="none",
            runtime_s=1,
            db=str(db),
            dry_run=True,
        ),
        0.95,
        "10m",
    ).device
    assert "ram" in guess.kind, guess.kind
    with open_store(db) as store:
        store.save_device_params(
            prior_params(guess.kind, devices_table(), device_id=guess.identity)
        )


def test_the_answer_per_profile_in_words(joint_run, ram_dir, tmp_path):
    """The same store, now calibrated, without --json: a short session whose summary gives
    each profile's leader, ranking and stop reason, then the session's device time."""
    _, calibrated = joint_run
    db = tmp_path / "s.db"
    shutil.copy(calibrated, db)
    args = [
        "--scratch",
        "1G",
        "--scratch-dir",
        str(ram_dir),
        "--fs",
        "ext4,xfs",
        "--schedulers",
        "none",
        "--runtime",
        "1",
        "--cooldown",
        "0",
        "--budget",
        "40s",
    ]
    for p in PROFILES:
        args += ["--profile", p]
    env = dict(os.environ, FSADVISOR_DB=str(db))
    p = subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", "probe", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "has no calibration" not in p.stderr  # the stored calibration serves both
    out = p.stdout.splitlines()
    for prof in PROFILES:
        assert any(
            ln.startswith(f"adaptive: profile {prof}: ") and " is best (within 1%) " in ln
            for ln in out
        ), p.stdout[-3000:]
        assert any(ln.startswith(f"adaptive: profile {prof}: ranking: 1. ") for ln in out)
        assert any(
            ln.startswith(f"adaptive: profile {prof}: stopped: ")
            or ln == f"adaptive: profile {prof}: not settled when the probe ended"
            for ln in out
        )
    assert any(ln.startswith("adaptive: one session for 2 profiles: ") for ln in out)
    assert not loops_on(ram_dir)


def test_one_session_answers_each_profile_within_one_budget(joint_run):
    p, _ = joint_run
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(p.stdout)
    assert doc["adaptive"] is True and doc["decision"] is None
    assert doc["calibration"] is None  # the stored calibration serves every profile
    assert "has no calibration" not in p.stderr
    assert "ram" in doc["probe"]["device_kind"], doc["probe"]["device_kind"]
    answers = doc["profiles"]
    write, read, twin = answers
    assert [write["profile"], read["profile"]] == list(PROFILES)
    assert twin["profile"].endswith("/twin.toml")
    session = doc["session"]
    for a in answers:
        d = a["decision"]
        assert d["leader"] and 0.0 <= d["confidence"] <= 1.0
        assert d["ranking"][0]["config"] == d["leader"] and len(d["ranking"]) >= 2
        assert d["reason"], d  # every profile's stop rule, or the budget, ended it
    assert write["workload"] == f"profile:{PROFILES[0]}" and write["shares_cells_with"] == []
    # the twin is measured with the read profile's workload, and they share its cells
    assert read["workload"] == twin["workload"] == f"profile:{PROFILES[1]}"
    assert read["shares_cells_with"] == [twin["profile"]]
    assert twin["shares_cells_with"] == [PROFILES[1]]
    # the budget bounds what is started: the last cell may overrun its estimate a little
    assert session["device_time_s"] <= BUDGET_S * 1.15 and session["reason"]
    # a shared run counts for both profiles it serves, and once in the session
    assert twin["decision"]["runs"] == read["decision"]["runs"] >= 1
    assert session["runs"] == write["decision"]["runs"] + read["decision"]["runs"]
    assert doc["steps"] and all(
        set(s["answers"]) == {a["profile"] for a in answers} for s in doc["steps"]
    )
    cells = doc["probe"]["cells"]
    assert cells["total"] == sum(v for k, v in cells.items() if k != "total")
    # the chooser said, before each cell, which profile it was for
    assert (
        "next: for fio-randwrite-4k-j1: " in p.stderr
        or "next: for fio-randread-4k-j1: " in p.stderr
    ), p.stderr[-2000:]


def test_every_run_is_stored_in_the_one_matrix(joint_run):
    p, db = joint_run
    from fsadvisor.store import open_store

    doc = json.loads(p.stdout)
    mid = doc["probe"]["matrix_id"]
    with open_store(db) as store:
        rows = store.runs(matrix_id=mid)
        assert len(rows) == doc["session"]["runs"]
        assert {r["workload_name"] for r in rows} <= {f"profile:{x}" for x in PROFILES}
        by_profile = {x: sum(r["workload_name"] == f"profile:{x}" for r in rows) for x in PROFILES}
        assert by_profile == {a["profile"]: a["decision"]["runs"] for a in doc["profiles"][:2]}
        # a shared run is stored once, under the read profile's workload, for both profiles
        # (the twin by the name its file holds): each one's lookup finds it
        for r in rows:
            assert r["profiles"] == (
                [PROFILES[1], TWIN]
                if r["workload_name"] == f"profile:{PROFILES[1]}"
                else [PROFILES[0]]
            )
        mine = {
            x: [r["run_id"] for r in store.runs(profile=x, matrix_id=mid)]
            for x in (*PROFILES, TWIN)
        }
        assert mine[TWIN] == mine[PROFILES[1]] and len(mine[TWIN]) == by_profile[PROFILES[1]]
        assert sorted(mine[PROFILES[0]] + mine[TWIN]) == [r["run_id"] for r in rows]
        assert {s["config_key"] for s in store.summaries(profile=TWIN, matrix_id=mid)} == {
            s["config_key"] for s in store.summaries(profile=PROFILES[1], matrix_id=mid)
        }
        # one matrix for the session's every profile
        assert {m["id"] for m in store.matrices()} == {mid}
    # the history names every profile of the session (a file's as it was given)
    from fsadvisor.service.store import history

    shown = next(h for h in history(db=db) if h["id"] == mid)["profile"]
    assert shown.startswith(f"{PROFILES[0]} + {PROFILES[1]} + ") and shown.endswith("twin.toml")


def test_the_ram_loop_device_is_gone(joint_run, ram_dir):
    assert not loops_on(ram_dir) and not list(ram_dir.iterdir())
