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
    """Two inventory hosts, both this machine through ansible_connection=local, each with its
    own venv, store and scratch loop device: one calibrates, one probes (the two modes); the
    controller merges both stores and recommends once for their common device model."""
    playbook = _ansible()
    devs = [loop_device(512 << 20), loop_device(512 << 20)]
    venvs = [tmp_path / "venv-a", tmp_path / "venv-b"]
    fleet = tmp_path / "fleet"
    inv = tmp_path / "inventory.ini"
    common = f"ansible_connection=local ansible_python_interpreter={sys.executable}"
    inv.write_text(
        "[fleet]\n"
        f"localhost {common} fsadvisor_venv={venvs[0]} fsadvisor_device={devs[0]} "
        "fsadvisor_mode=calibrate fsadvisor_args='--runtime 1 --reps 2'\n"
        f"node2 {common} fsadvisor_venv={venvs[1]} fsadvisor_device={devs[1]} "
        "fsadvisor_mode=probe fsadvisor_args='--quick --runtime 1 --fs ext4 --schedulers none'\n"
    )
    extra = {
        "fsadvisor_src": str(REPO),
        "fsadvisor_become": False,
        "fleet_dir": str(fleet),
        "fleet_fsadvisor": str(venvs[0] / "bin" / "fsadvisor"),
        "fleet_profile": "fio-randread-4k-j4",
    }
    env = dict(
        os.environ,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="False",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-tmp"),
        # the probes' model cache and data dirs stay in this test's tmp dir
        XDG_DATA_HOME=str(tmp_path / "xdg-data"),
        XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
        XDG_STATE_HOME=str(tmp_path / "xdg-state"),
    )
    env.pop("FSADVISOR_DB", None)
    p = subprocess.run(
        [playbook, "-i", str(inv), str(PLAYBOOK), "-e", json.dumps(extra)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    fetched = {h: fleet / "hosts" / f"{h}.db" for h in ("localhost", "node2")}
    merged = fleet / "fleet.db"
    assert all(f.is_file() for f in fetched.values()) and merged.is_file()

    def query(db: Path, sql: str) -> list[tuple]:
        con = sqlite3.connect(db)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()

    # host a: the calibration, its params fitted on every run it stored, with the host vars
    # (--reps 2, --runtime 1) reaching the command (play defaults must not win)
    ((n_runs, run_ids),) = query(fetched["localhost"], "SELECT n_runs, run_ids FROM device_params")
    assert n_runs == len(json.loads(run_ids)) >= 17
    reps, runtime_s, configs = query(
        fetched["localhost"],
        "SELECT max(rep), max(runtime_s), count(configuration_id) FROM runs WHERE status = 'ok'",
    )[0]
    assert reps == 2 and runtime_s < 3 and configs == 0  # raw-device runs only
    # host b: a probe of ext4 under the none scheduler, one rep of 1 s
    probe_rows = query(
        fetched["node2"],
        "SELECT c.fs, c.scheduler, r.rep, r.runtime_s FROM runs r "
        "JOIN configurations c ON c.id = r.configuration_id WHERE r.status = 'ok'",
    )
    assert probe_rows and {(r[0], r[1], r[2]) for r in probe_rows} == {("ext4", "none", 1)}
    assert max(r[3] for r in probe_rows) < 3
    # the merge: every run of both hosts once, each with its own uid, host and device
    per_host = {h: query(f, "SELECT uid FROM runs") for h, f in fetched.items()}
    rows = query(
        merged,
        "SELECT r.uid, r.origin, h.hostname, d.kind, d.model, d.path FROM runs r "
        "JOIN devices d ON d.id = r.device_id LEFT JOIN hosts h ON h.id = r.host_id",
    )
    assert sorted(r[0] for r in rows) == sorted(u for us in per_host.values() for (u,) in us)
    assert len({r[0] for r in rows}) == len(rows)
    assert {r[1] for r in rows} == {"probe"} and {r[3] for r in rows} == {"loop"}
    assert {r[2] for r in rows} == {os.uname().nodename}
    assert {r[5] for r in rows} == set(devs)
    model = rows[0][4]
    assert {r[4] for r in rows} == {model}  # two loop devices of one backing class
    # the last play printed one recommendation for that model
    assert "TASK [Show it]" in p.stdout, p.stdout[-3000:]
    assert f'"msg": "{model} ({os.uname().nodename}): ' in p.stdout, p.stdout[-3000:]
    # merging a fetched store again adds nothing (stable run ids)
    fsadvisor = str(venvs[0] / "bin" / "fsadvisor")
    again = subprocess.run(
        [fsadvisor, "db", "merge", str(fetched["node2"]), "--db", str(merged), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["merged"][0]["runs_added"] == 0
    # the per-model calibration was fitted on the raw-device runs of both hosts
    raw_total = len(
        query(merged, "SELECT id FROM runs WHERE configuration_id IS NULL AND status = 'ok'")
    )
    rec = subprocess.run(
        [
            fsadvisor,
            "fleet",
            "recommend",
            "-p",
            "fio-randread-4k-j4",
            "--db",
            str(merged),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert rec.returncode == 0, rec.stderr
    (d,) = json.loads(rec.stdout)["devices"]
    assert d["raw_runs_fitted"] == raw_total >= n_runs and d["runs"] == len(rows)
    identities = {i for (i,) in query(merged, "SELECT identity FROM devices")}
    assert d["devices"] == sorted(identities) and len(identities) == 1
    assert d["recommendations"] and d["device_parameters"].startswith("calibrated")
