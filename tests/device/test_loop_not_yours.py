"""A loop device on a file that is not the user's is refused by the one safety verdict every
front end goes through: `fsadvisor probe`, `calibrate DEVICE` and `apply --execute` exit 2
with one line saying whose file it is and what to do instead (the TUI shows the same
reason: test_tui_probe.py). A loop device on the user's own file passes. The test attaches its
own loop devices over files in tmp_path (one handed to uid 65534) and detaches them in a
finally; nothing is formatted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsadvisor.host import loopdev
from fsadvisor.service import probing

pytestmark = [
    pytest.mark.device,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (losetup, chown)"),
]

NOBODY = 65534
QUICK = ["--fs", "ext4", "--schedulers", "none", "--quick", "--runtime", "1", "--cooldown", "0"]


def cli(*args: str, db: Path, env: dict[str, str] | None = None):
    full = dict(os.environ, FSADVISOR_DB=str(db))
    full.pop("SUDO_UID", None)  # plain root unless a test says it came through sudo
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=full,
    )


def refused_in_one_line(p, *needles: str) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def attach_owned_by(tmp_path):
    """Factory: ``attach_owned_by(uid)`` -> /dev/loopN over a fresh sparse file of ``uid``."""
    attached: list[str] = []

    def make(uid: int) -> tuple[str, Path]:
        img = tmp_path / f"owned-by-{uid}-{len(attached)}.img"
        loopdev.create_backing_file(img, 320 << 20)
        os.chown(img, uid, uid)
        dev = loopdev.attach(img, direct_io=False)
        attached.append(dev)
        return dev, img

    try:
        yield make
    finally:
        for dev in attached:
            loopdev.detach(dev)


def test_the_cli_refuses_another_users_loop_device(attach_owned_by, tmp_path):
    dev, img = attach_owned_by(NOBODY)
    db = tmp_path / "s.db"
    needles = (dev, str(img), f"uid {NOBODY}", "not yours", "--scratch SIZE")
    for extra in ([], ["--force"], ["--dry-run"]):
        refused_in_one_line(cli("probe", dev, *QUICK, "--yes-wipe", dev, *extra, db=db), *needles)
    refused_in_one_line(cli("calibrate", dev, "--yes-wipe", dev, db=db), *needles)
    refused_in_one_line(
        cli(
            "apply",
            "-d",
            dev,
            "-c",
            '{"filesystem": "ext4"}',
            "--execute",
            "--yes-wipe",
            dev,
            db=db,
        ),
        *needles,
    )
    assert subprocess.run(["blkid", "-p", dev], capture_output=True).returncode == 2  # blank


def test_a_loop_device_on_the_users_own_file_passes(attach_owned_by, tmp_path):
    dev, _ = attach_owned_by(os.geteuid())
    p = cli("probe", dev, *QUICK, "--dry-run", db=tmp_path / "s.db")
    assert p.returncode == 0, p.stderr
    assert "not yours" not in p.stdout + p.stderr
    assert probing.block_device(dev).allowed


def test_under_sudo_the_invoking_users_file_is_theirs(attach_owned_by, tmp_path):
    """Root started through sudo: the file of the user who ran sudo counts as the user's
    (and root's own still does); any third uid is refused."""
    dev, _ = attach_owned_by(NOBODY)
    ok = cli("probe", dev, *QUICK, "--dry-run", db=tmp_path / "s.db", env={"SUDO_UID": str(NOBODY)})
    assert ok.returncode == 0, ok.stderr
    other = cli(
        "probe", dev, *QUICK, "--dry-run", db=tmp_path / "s.db", env={"SUDO_UID": str(NOBODY - 1)}
    )
    refused_in_one_line(other, f"uid {NOBODY}", "not yours")
