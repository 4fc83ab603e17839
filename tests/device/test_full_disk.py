"""A full disk under the store: the probe state is written atomically, a probe
that runs out of space cleans up first and leaves a state the next run reads correctly,
and ``db info`` says "disk full". Each test mounts its own small tmpfs and unmounts it in a
``finally``; the probe test holds one scratch loop device, detached by the probe itself."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsadvisor.probe.state import ProbeState, ProcessRef, StateFile, StateFileError, state_path_for

pytestmark = pytest.mark.device


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str):
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=60)


def fill(directory: Path) -> Path:
    """Write zeros until ENOSPC, in pages and then byte by byte: the filesystem is full."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for chunk in (b"\0" * 4096, b"\0"):
            while True:
                try:
                    os.write(fd, chunk)
                except OSError:
                    break
    finally:
        os.close(fd)
    assert os.statvfs(directory).f_bavail == 0
    return filler


def cli(*args: str, db: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_db_info_on_a_full_disk_says_disk_full(tmp_path):
    made = tmp_path / "s.db"
    assert cli("db", "info", db=made).returncode == 0  # created, seeded and closed elsewhere
    assert not Path(f"{made}-wal").exists()  # checkpointed: the file is the whole store
    with small_tmpfs(tmp_path / "full", "1m") as d:
        db = d / "s.db"
        db.write_bytes(made.read_bytes())
        fill(d)
        p = cli("db", "info", db=db)
        assert p.returncode == 2, p.stdout
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "disk full" in lines[0], p.stderr
        assert "not a readable fsadvisor store" not in p.stderr and "Traceback" not in p.stderr


def live_state() -> ProbeState:
    s = ProbeState()
    s.owner = ProcessRef.of(os.getpid())
    s.mounts = [{"device": "/dev/loop7", "mountpoint": "/tmp/fsadvisor-mnt-x"}]
    s.matrices = {"scratch": {"matrix_id": "m1", "plan": {}, "started_at": 0.0}}
    return s


def test_state_writes_on_a_full_disk_are_atomic_and_end_readable(tmp_path):
    with small_tmpfs(tmp_path / "full", "64k") as d:
        sf = StateFile(d / "p.db.probe-state.json")
        sf.save(live_state())
        before = sf.path.read_text()
        filler = fill(d)
        # Something still live: the old record stays exactly as it was, nothing half-written.
        more = live_state()
        more.scratch = {"backing_file": "/tmp/x.img", "loop_device": "/dev/loop6"}
        with pytest.raises(StateFileError, match="disk full"):
            sf.save(more)
        assert sf.path.read_text() == before and sorted(os.listdir(d)) == sorted(
            ["filler", sf.path.name]
        )
        # Cleaned up (nothing live, the matrix kept for --resume): written in the old file's room.
        cleaned = live_state()
        cleaned.clear_live()
        sf.save(cleaned)
        loaded = sf.load()
        assert not loaded.has_live_resources and loaded.matrices["scratch"]["matrix_id"] == "m1"
        # No room even for that: no file at all, which reads as "nothing to clean up".
        sf.path.unlink()
        fill(d)
        with pytest.raises(StateFileError, match="cannot record its unfinished matrix"):
            sf.save(cleaned)
        assert not sf.path.exists() and sf.load().matrices == {}
        assert [f for f in os.listdir(d) if f.endswith(".tmp")] == []
        filler.unlink()


def test_a_probe_that_runs_out_of_space_cleans_up_and_leaves_a_readable_state(tmp_path):
    from fsadvisor.host import loopdev
    from fsadvisor.service import probing

    scratch_dir = tmp_path / "scratch"
    scratch_dir.mkdir()
    with small_tmpfs(tmp_path / "full", "2m") as d:
        db = d / "p.db"
        assert cli("db", "info", db=db).returncode == 0
        plan = probing.plan_probe(
            probing.ProbeRequest.make(
                scratch="512M",
                scratch_dir=scratch_dir,
                filesystems=["ext4"],
                schedulers=["none"],
                quick=True,
                workloads=["4k-randread-qd32"],
                baseline=False,
                runtime_s=1,
                cooldown_s=0,
                energy="estimate",
                db=db,
            )
        )
        seen: dict = {}

        def on_progress(e):
            if e.kind == "cell-start" and "filled" not in seen:
                seen["filled"] = fill(d)  # the disk fills up while the cell runs
                seen["state"] = json.loads(state_path_for(db).read_text())

        with pytest.raises(Exception) as err:
            probing.run_probe(plan, on_progress=on_progress)
        msg = str(err.value)
        assert "\n" not in msg and "disk full" in msg, msg
        # What the probe had live while it ran: its pid, a mount, the scratch loop device.
        live = seen["state"]
        assert live["owner"] and live["mounts"] and live["scratch"]["loop_device"]
        loop = live["scratch"]["loop_device"]
        # All of it undone before the state was written ...
        assert not any(
            m["mountpoint"] in Path("/proc/self/mounts").read_text() for m in live["mounts"]
        )
        assert loopdev.backing_file(loop) != live["scratch"]["backing_file"]
        assert list(scratch_dir.iterdir()) == []
        # ... and the state the next run reads names none of it.
        state = StateFile(state_path_for(db)).load()
        assert not state.has_live_resources, state
        seen["filled"].unlink()
        p = cli("db", "info", db=db)
        assert p.returncode == 0, p.stderr
