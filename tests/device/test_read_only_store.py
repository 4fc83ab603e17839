"""A store nothing can be written to is found before a probe attaches a scratch
loop device or formats anything: an immutable store file (SQLite opens it read-only and
would complain only at the first write) and a store on a read-only filesystem."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.device


def cli(*args: str, db: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@contextlib.contextmanager
def immutable(path: Path):
    if os.geteuid() != 0:
        pytest.skip("needs root for chattr")
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i not supported on this filesystem")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def test_an_immutable_store_is_refused_before_the_scratch_device_is_attached(tmp_path, monkeypatch):
    from fsadvisor.errors import StoreError
    from fsadvisor.host import loopdev
    from fsadvisor.service import probing

    db = tmp_path / "p.db"
    assert cli("db", "info", db=db).returncode == 0
    attached: list = []
    monkeypatch.setattr(loopdev, "attach", lambda *a, **k: attached.append(a) or "/dev/loopX")
    plan = probing.plan_probe(
        probing.ProbeRequest.make(
            scratch="512M",
            scratch_dir=tmp_path,
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
    with immutable(db):
        with pytest.raises(StoreError) as e:
            probing.run_probe(plan)
        assert "read-only" in str(e.value) and "\n" not in str(e.value)
        assert attached == [] and not list(tmp_path.glob("fsadvisor-scratch-*"))
        assert not Path(f"{db}.probe-state.json").exists()
        # through the command: one line, nothing attached or cleaned up after
        p = cli(
            "probe",
            "--scratch",
            "512M",
            "--scratch-dir",
            str(tmp_path),
            "--fs",
            "ext4",
            "--quick",
            "--schedulers",
            "none",
            "--no-baseline",
            "--runtime",
            "1",
            "--cooldown",
            "0",
            "--energy",
            "estimate",
            db=db,
        )
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert p.returncode == 2 and len(lines) == 1 and "read-only" in lines[0], p.stderr


def test_a_store_on_a_read_only_filesystem_says_so(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to mount")
    d = tmp_path / "ro"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(d)], check=True)
    try:
        assert cli("db", "info", db=d / "p.db").returncode == 0
        subprocess.run(["mount", "-o", "remount,ro", str(d)], check=True)
        p = cli("db", "info", db=d / "p.db")
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert p.returncode == 2 and len(lines) == 1, p.stderr
        assert "read-only filesystem" in lines[0] and "not a readable" not in lines[0]
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True, timeout=60)
