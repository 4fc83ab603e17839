"""runner/ansible/fleet.yml for real: ansible-playbook against localhost
(ansible_connection=local) installs fsadvisor from this checkout into a fresh venv, calibrates
a scratch loop device this test creates, fetches the store, merges it on the "controller"
and prints the recommendation per device model. The loop device is detached in a finally
(conftest.loop_device)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.device

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / "runner" / "ansible" / "fleet.yml"
BIN = Path(sys.executable).parent


def _ansible() -> str:
    exe = BIN / "ansible-playbook"
    if exe.exists():
        return str(exe)
    found = shutil.which("ansible-playbook")
    if not found:
        pytest.skip("ansible-playbook missing (pip install -e '.[test]' installs ansible-core)")
    return found


def test_playbook_calibrates_fetches_merges_and_recommends(tmp_path, loop_device):
    playbook = _ansible()
    dev = loop_device(512 << 20)
    venv = tmp_path / "host-venv"
    fleet = tmp_path / "fleet"
    inv = tmp_path / "inventory.ini"
    inv.write_text(
        "[fleet]\n"
        f"localhost ansible_connection=local ansible_python_interpreter={sys.executable} "
        f"fsadvisor_device={dev} fsadvisor_mode=calibrate "
        "fsadvisor_args='--runtime 1 --reps 2'\n")
    extra = {"fsadvisor_venv": str(venv), "fsadvisor_src": str(REPO),
             "fsadvisor_become": False, "fleet_dir": str(fleet),
             "fleet_fsadvisor": str(venv / "bin" / "fsadvisor"),
             "fleet_profile": "fio-randread-4k-j4"}
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_HOST_KEY_CHECKING="False",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
               ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-tmp"),
               # the probe's state file and model cache stay in this test's tmp dir
               XDG_DATA_HOME=str(tmp_path / "xdg-data"), XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
               XDG_STATE_HOME=str(tmp_path / "xdg-state"))
    env.pop("FSADVISOR_DB", None)
    p = subprocess.run([playbook, "-i", str(inv), str(PLAYBOOK), "-e", json.dumps(extra)],
                       capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    # the fetched per-host store and the merged one
    fetched = fleet / "hosts" / "localhost.db"
    merged = fleet / "fleet.db"
    assert fetched.is_file() and merged.is_file()
    con = sqlite3.connect(merged)
    try:
        rows = con.execute(
            "SELECT r.uid, r.origin, h.hostname, d.kind, d.model FROM runs r "
            "JOIN devices d ON d.id = r.device_id LEFT JOIN hosts h ON h.id = r.host_id "
            "WHERE r.status = 'ok'").fetchall()
    finally:
        con.close()
    # every run the host's calibration was fitted on, all on this host's loop device
    con = sqlite3.connect(fetched)
    try:
        (n_runs, run_ids), = con.execute("SELECT n_runs, run_ids FROM device_params").fetchall()
    finally:
        con.close()
    assert len(rows) == n_runs == len(json.loads(run_ids)) >= 17
    assert {r[1] for r in rows} == {"probe"} and {r[3] for r in rows} == {"loop"}
    assert {r[2] for r in rows} == {os.uname().nodename}
    assert len({r[0] for r in rows}) == n_runs
    # the host vars reached the command: --reps 2, --runtime 1 (play defaults must not win)
    con = sqlite3.connect(merged)
    try:
        reps, runtime_s = con.execute("SELECT max(rep), max(runtime_s) FROM runs").fetchone()
    finally:
        con.close()
    assert reps == 2 and runtime_s < 3
    model = rows[0][4]
    # the last play printed the recommendation for the loop device's model, with its host
    assert "TASK [Show it]" in p.stdout, p.stdout[-3000:]
    assert f'"msg": "{model} ({os.uname().nodename}): ' in p.stdout, p.stdout[-3000:]
    # merging the fetched store again adds nothing (stable run ids)
    again = subprocess.run([str(venv / "bin" / "fsadvisor"), "db", "merge", str(fetched),
                            "--db", str(merged), "--json"], capture_output=True, text=True,
                           env=env, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["merged"][0]["runs_added"] == 0
    # the per-model calibration was fitted from this host's raw runs
    rec = subprocess.run([str(venv / "bin" / "fsadvisor"), "fleet", "recommend", "-p",
                          "fio-randread-4k-j4", "--db", str(merged), "--json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert rec.returncode == 0, rec.stderr
    (d,) = json.loads(rec.stdout)["devices"]
    assert d["raw_runs_fitted"] == n_runs and d["hosts"] == [os.uname().nodename]
    assert d["recommendations"] and d["device_parameters"].startswith("calibrated")
