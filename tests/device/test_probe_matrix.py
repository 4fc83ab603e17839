"""A real probe through the CLI: ext4, xfs and btrfs (and f2fs, which this kernel cannot
mount) x two schedulers x 4k random read/write x 2 repetitions on a loop device, 1 s runs.

The stored results must be complete (every cell x repetition, nothing invented) and
plausible by physics, not by an assumed ranking: Little's law ties IOPS, latency and queue
depth together, bandwidth is IOPS x block size, reads reach the device (direct I/O
honoured) and the device writes at least what fio wrote.
"""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsadvisor.host import device as devmod
from fsadvisor.tools import fio
from fsadvisor.store import open_store

pytestmark = pytest.mark.device

FILESYSTEMS = ("ext4", "xfs", "btrfs")
SCHEDULERS = ("none", "mq-deadline")
WORKLOADS = ("4k-randread-qd32", "4k-randwrite-qd32")
REPS = 2
QD = 32
BS = 4096


def probe_cli(*args: str, db: Path, timeout: float = 600, input: str | None = None):
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", "probe", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        input=input,
    )


def mounts_of(dev: str) -> list[str]:
    real = os.path.realpath(dev)
    return [
        ln.split()[1]
        for ln in Path("/proc/self/mounts").read_text().splitlines()
        if os.path.realpath(ln.split()[0]) == real
    ]


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """One real probe shared by the assertions below (it takes a minute or two)."""
    from fsadvisor.host import loopdev

    if os.geteuid() != 0:
        pytest.skip("needs root")
    tmp = tmp_path_factory.mktemp("probe-matrix")
    img = tmp / "dev.img"
    loopdev.create_backing_file(img, 512 << 20)
    try:
        dev = loopdev.attach(img)
    except loopdev.LoopError as e:
        pytest.skip(f"no free loop device: {e}")
    try:
        # Not the kernel default, so restoring it is visible.
        devmod.set_scheduler(dev, "bfq")
        db = tmp / "probe.db"
        p = probe_cli(
            dev,
            "--fs",
            ",".join(FILESYSTEMS + ("f2fs",)),
            "--schedulers",
            ",".join(SCHEDULERS),
            "--quick",
            "--reps",
            str(REPS),
            "--runtime",
            "1",
            "--cooldown",
            "0",
            "--yes-wipe",
            dev,
            "--json",
            db=db,
        )
        blkid = subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True)
        yield {
            "dev": dev,
            "db": db,
            "proc": p,
            "scheduler_after": devmod.read_scheduler(dev)[0],
            "mounts_after": mounts_of(dev),
            "signature_after": blkid.stdout,
        }
    finally:
        loopdev.detach(dev)


def summary(probed) -> dict:
    p = probed["proc"]
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def test_every_cell_and_repetition_is_stored_ok(probed):
    s = summary(probed)
    runnable = REPS * (
        len(SCHEDULERS) * len(WORKLOADS)  # raw-device baseline
        + len(FILESYSTEMS) * len(SCHEDULERS) * len(WORKLOADS)
    )
    skipped = REPS * len(SCHEDULERS) * len(WORKLOADS)  # f2fs
    assert s["cells"] == {
        "total": runnable + skipped,
        "ok": runnable,
        "already_done": 0,
        "failed": 0,
        "skipped": skipped,
        "incomplete": 0,
    }
    assert s["skipped_reasons"] == {"f2fs: not supported by this kernel": skipped}
    with open_store(probed["db"]) as store:
        runs = store.runs(matrix_id=s["matrix_id"], include_raw=True)
    assert len(runs) == runnable and {r["status"] for r in runs} == {"ok"}
    got = {
        (
            r["filesystem"] or "raw",
            r["scheduler"] or r["cell_key"].split()[1],
            r["workload_name"],
            r["rep"],
        )
        for r in runs
    }
    want = {
        (fs, sch, w, rep)
        for fs in FILESYSTEMS + ("raw",)
        for sch in SCHEDULERS
        for w in WORKLOADS
        for rep in range(1, REPS + 1)
    }
    assert got == want
    assert not any(r["filesystem"] == "f2fs" for r in runs)


def test_metrics_are_complete_and_physically_consistent(probed):
    s = summary(probed)
    with open_store(probed["db"]) as store:
        runs = store.runs(matrix_id=s["matrix_id"], include_raw=True)
    for r in runs:
        m, where = r["metrics"], f"{r['cell_key']} rep {r['rep']}: {r['metrics']}"
        for k in (
            "iops",
            "mb_s",
            "mean_latency_us",
            "p50_latency_us",
            "p99_latency_us",
            "p999_latency_us",
            "ops",
            "runtime_s",
            "host_cpu_busy_pct",
        ):
            assert m.get(k, 0) > 0, f"{k} missing or zero in {where}"
        assert 0.9 <= m["runtime_s"] <= 3.0, where
        assert m["p50_latency_us"] <= m["p99_latency_us"] <= m["p999_latency_us"], where
        # fio's own numbers agree with each other
        assert m["ops"] / m["runtime_s"] == pytest.approx(m["iops"], rel=0.05), where
        assert m["mb_s"] == pytest.approx(m["iops"] * BS / 1e6, rel=0.02), where
        # Little's law: outstanding I/Os = IOPS x latency, at most the queue depth
        in_flight = m["iops"] * m["mean_latency_us"] / 1e6
        assert QD / 8 <= in_flight <= QD * 1.1, f"{in_flight:.1f} in flight: {where}"
        assert m["iops"] < 5e6, where  # no page-cache fantasy on a direct=1 job
        if r["workload_name"] == "4k-randread-qd32":
            # the reads reached the device: direct I/O honoured, file really filled
            assert m["dev_read_bytes"] >= 0.9 * m["app_read_bytes"], where
            assert "direct-io-not-honoured" not in r["flags"], where
        else:
            assert 0.9 <= m["write_amplification"] <= 20, where
            assert m["dev_write_bytes"] >= 0.9 * m["app_write_bytes"], where
        assert r["tool"] == "fio" and r["command"][0] == "fio"
        assert fio.parse(r["raw_output"]).metrics()["iops"] == pytest.approx(m["iops"])
        assert r["hostname"] and r["kernel"] == os.uname().release


def test_each_run_says_where_its_device_time_went(probed):
    s = summary(probed)
    with open_store(probed["db"]) as store:
        runs = store.runs(matrix_id=s["matrix_id"], include_raw=True)
    for r in runs:
        steps = r["metrics"]["step_seconds"]
        fs_steps = {"mkfs", "mount", "umount"} if r["filesystem"] else set()
        assert {"measure", "cache drop"} | fs_steps <= set(steps), steps
        # fio's window lies inside its own step, and the steps inside the cell's wall time
        assert steps["measure"] >= r["metrics"]["runtime_s"] * 0.95, steps
        assert sum(steps.values()) <= r["wall_s"] + 0.05, (steps, r["wall_s"])
    d = s["device_time"]
    assert d["cells"] == len(runs) and 0 < d["window_share"] < 1
    assert sum(d["outside_s"].values()) + d["window_s"] == pytest.approx(d["cells_s"], abs=1.0)


def test_energy_is_the_labelled_estimate(probed):
    s = summary(probed)
    assert s["energy"]["source"] == "estimate"
    assert "not a measurement" in s["energy"]["why"]
    with open_store(probed["db"]) as store:
        runs = store.runs(matrix_id=s["matrix_id"])
    for r in runs:
        assert r["energy_source"] == "estimate" and r["power_scope"] == "system"
        assert r["energy_j"] > 0 and r["avg_watts"] > 0
        assert r["energy_assumptions"], "an estimate must say what it assumed"
        assert {"energy-estimate", "loop-device"} <= set(r["flags"])
        assert r["device_kind"] == "loop"


def test_summaries_have_two_reps_with_intervals_and_overhead(probed):
    s = summary(probed)
    rows = s["results"]
    assert len(rows) == (len(FILESYSTEMS) + 1) * len(SCHEDULERS) * len(WORKLOADS)
    for row in rows:
        assert row["n"] == REPS and row["ranked"]
        for k in ("iops", "mb_s", "p99_latency_us", "ops_per_joule"):
            st = row[k]
            assert st["mean"] > 0 and st["ci95_low"] <= st["mean"] <= st["ci95_high"], (k, row)
        assert row["energy_source"] == "estimate"
        if row["filesystem"] == "raw-device":
            assert row["vs_raw_iops"] is None
        else:
            assert row["vs_raw_iops"] > 0


def test_the_machine_is_left_as_found(probed):
    assert probed["scheduler_after"] == "bfq"
    assert probed["mounts_after"] == []
    # the last cell's filesystem is wiped: the device is as empty as it was given
    assert "TYPE=" not in probed["signature_after"], probed["signature_after"]
    assert "wiped the probe's last filesystem signature" in probed["proc"].stderr
    state = Path(f"{probed['db']}.probe-state.json")
    assert not state.exists(), state.read_text() if state.exists() else ""


def test_progress_goes_to_stderr_with_eta(probed):
    err = probed["proc"].stderr
    # stderr is a pipe here, so every event is its own line carrying the bar
    bars = re.findall(r"\[#*-*\] +(\d+)/(\d+) +\d+%  ETA \S+  running ", err)
    assert bars and {int(total) for _, total in bars} == {summary(probed)["cells"]["total"]}, err
    assert [int(done) for done, _ in bars] == sorted(int(done) for done, _ in bars)
    assert "f2fs: not supported by this kernel" in err
    json.loads(probed["proc"].stdout)  # stdout is the JSON document only


def test_f2fs_dry_run_shows_the_commands_it_would_run(loop_device, tmp_path):
    dev = loop_device(512 << 20)
    p = probe_cli(
        dev, "--fs", "f2fs", "--schedulers", "none", "--quick", "--dry-run", db=tmp_path / "d.db"
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "SKIPPED: f2fs: not supported by this kernel" in out
    assert f"#   mkfs.f2fs -f -q {dev}" in out and "#   mount -t f2fs" in out


def test_a_failing_cell_is_recorded_and_the_matrix_goes_on(tmp_path):
    """mkfs.xfs rejecting its options (a shim first on PATH, the rest real tools): every xfs
    cell is stored as failed with mkfs's own reason, every ext4 cell still runs."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "mkfs.xfs").write_text(
        "#!/bin/sh\necho 'agsize (1234 blocks) too small' >&2\nexit 1\n"
    )
    (shims / "mkfs.xfs").chmod(0o755)
    env = dict(
        os.environ,
        FSADVISOR_DB=str(tmp_path / "p.db"),
        PATH=f"{shims}:{os.environ.get('PATH', '/usr/bin:/bin')}:/usr/sbin:/sbin",
    )
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsadvisor.cli",
            "probe",
            "--scratch",
            "512M",
            "--scratch-dir",
            str(tmp_path),
            "--fs",
            "xfs,ext4",
            "--schedulers",
            "none",
            "--workloads",
            "4k-randwrite-qd32",
            "--reps",
            "2",
            "--runtime",
            "1",
            "--cooldown",
            "0",
            "--no-baseline",
            "--no-variants",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 1, p.stderr  # some cells failed
    s = json.loads(p.stdout)
    assert s["cells"] == {
        "total": 4,
        "ok": 2,
        "already_done": 0,
        "failed": 2,
        "skipped": 0,
        "incomplete": 0,
    }
    with open_store(tmp_path / "p.db") as store:
        runs = store.runs(matrix_id=s["matrix_id"])
    failed = [r for r in runs if r["status"] == "failed"]
    assert {r["filesystem"] for r in failed} == {"xfs"} and len(failed) == 2
    assert all(
        "mkfs: mkfs.xfs exited 1: agsize (1234 blocks) too small" == r["error"] for r in failed
    )
    assert all(r["iops"] is None for r in failed)  # a failure carries no result
    ok = [r for r in runs if r["status"] == "ok"]
    assert {r["filesystem"] for r in ok} == {"ext4"} and all(r["iops"] > 0 for r in ok)
    assert [(r["filesystem"], r["workload"]) for r in s["results"]] == [
        ("ext4", "4k-randwrite-qd32")
    ]
    assert list(tmp_path.glob("fsadvisor-scratch-*")) == []
