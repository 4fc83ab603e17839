"""`fsadvisor apply --execute` on a loop device this test creates: formats only after the
safety verdict and the exact --yes-wipe, writes the real UUID into fstab and the mount unit;
the Ansible tasks it writes run for real (ansible-playbook, localhost) against the same
device with fstab and the udev rules directory pointed into tmp_path and no mount: they
find the filesystem, do not format again, and write the fstab line with its UUID."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.device


def cli(*args: str, db: Path):
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def blkid(dev: str, tag: str) -> str:
    return subprocess.run(
        ["blkid", "-p", "-o", "value", "-s", tag, dev], capture_output=True, text=True
    ).stdout.strip()


def test_execute_formats_after_confirmation_and_tasks_are_idempotent(tmp_path, loop_device):
    dev = loop_device(320 << 20)
    db = tmp_path / "s.db"
    cfg = '{"filesystem": "xfs", "mount": ["noatime"], "scheduler": "none"}'
    # a wrong confirmation: refused, device untouched
    p = cli("apply", "-d", dev, "-c", cfg, "--execute", "--yes-wipe", "/dev/loop999", db=db)
    assert p.returncode == 2 and "not confirmed" in p.stderr and p.stderr.count("\n") == 1
    assert blkid(dev, "TYPE") == ""
    out_dir = tmp_path / "out"
    p = cli(
        "apply",
        "-d",
        dev,
        "-c",
        cfg,
        "--execute",
        "--yes-wipe",
        dev,
        "--mount-unit",
        "--mountpoint",
        "/srv/fsadv-test",
        "-o",
        str(out_dir),
        "--json",
        db=db,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    uuid = blkid(dev, "UUID")
    assert blkid(dev, "TYPE") == "xfs" and uuid and out["uuid"] == uuid
    assert (out_dir / "fstab").read_text() == f"UUID={uuid} /srv/fsadv-test xfs noatime 0 0\n"
    assert f"What=/dev/disk/by-uuid/{uuid}" in (out_dir / "srv-fsadv\\x2dtest.mount").read_text()
    rule = (out_dir / "60-fsadvisor-scheduler.rules").read_text()
    assert f'KERNEL=="{Path(dev).name}"' in rule  # a loop device reports no WWN or serial
    # now it holds a filesystem: --execute again is refused without --force
    p = cli("apply", "-d", dev, "-c", cfg, "--execute", "--yes-wipe", dev, db=db)
    assert p.returncode == 2 and "holds data" in p.stderr
    assert blkid(dev, "UUID") == uuid

    exe = Path(sys.executable).parent / "ansible-playbook"
    if not exe.exists():
        pytest.skip("ansible-core not installed")
    # the fstab flavour of the tasks (no --mount-unit)
    p = cli(
        "apply",
        "-d",
        dev,
        "-c",
        cfg,
        "--mountpoint",
        "/srv/fsadv-test",
        "-o",
        str(tmp_path / "plain"),
        db=db,
    )
    assert p.returncode == 0, p.stderr
    play = tmp_path / "play.yml"
    play.write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n"
        "  tasks:\n    - ansible.builtin.import_tasks: plain/fsadvisor-apply-tasks.yml\n"
    )
    fstab = tmp_path / "fstab"
    fstab.write_text("# test fstab\n")
    extra = {
        "fsadvisor_fstab": str(fstab),
        "fsadvisor_udev_rules_dir": str(tmp_path),
        "fsadvisor_mount": False,
    }
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "atmp"))
    for attempt in range(2):
        p = subprocess.run(
            [
                str(exe),
                "-i",
                "localhost,",
                str(play),
                "-e",
                json.dumps(extra),
                "-e",
                f"ansible_python_interpreter={sys.executable}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert p.returncode == 0, p.stdout[-3000:]
        # the device holds a filesystem: the format task is skipped, never run
        assert re.search(r"TASK \[Format the device \(xfs\)\] \**\nskipping", p.stdout)
        # first run: rule and fstab line written; second run: nothing left to change
        assert f"changed={2 if attempt == 0 else 0} " in p.stdout
    assert blkid(dev, "UUID") == uuid
    assert fstab.read_text() == f"# test fstab\nUUID={uuid} /srv/fsadv-test xfs noatime 0 0\n"
    assert (tmp_path / "60-fsadvisor-scheduler.rules").read_text() == rule
