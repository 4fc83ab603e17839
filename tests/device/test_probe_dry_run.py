"""--dry-run as an unprivileged user (uid/gid 65534 via setpriv): it prints every command a
real probe would run and runs none of them; without --dry-run the same user is refused.

"Runs none" is checked three ways: shims named like every tool a probe executes sit first
on PATH and log any call; the device's write/discard counters and scheduler do not move;
nothing gets mounted. The interpreter lives under root's home (mode 700) here, so the child
keeps exactly one capability, CAP_DAC_READ_SEARCH, to read it: it still cannot write a
root-owned file, mount, or open a device for writing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fsadvisor
from fsadvisor.host import device as devmod

pytestmark = pytest.mark.device

TOOLS = (
    "blkdiscard",
    "mkfs.ext4",
    "mkfs.xfs",
    "mkfs.btrfs",
    "mkfs.f2fs",
    "mount",
    "umount",
    "fio",
    "losetup",
    "db_bench",
    "sysbench",
    "wipefs",
    "truncate",
    "dd",
)


def unprivileged(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search",
            *argv,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=120,
    )


@pytest.fixture
def nobody_env(tmp_path):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to drop privileges")
    tmp_path.chmod(0o777)
    shims = tmp_path / "shims"
    shims.mkdir()
    log = tmp_path / "executed.log"
    log.touch()
    log.chmod(0o666)
    for tool in TOOLS:
        s = shims / tool
        s.write_text(f'#!/bin/sh\necho "$0 $*" >> {log}\nexit 1\n')
        s.chmod(0o755)
    shims.chmod(0o755)
    src = str(Path(fsadvisor.__file__).resolve().parent.parent)
    env = {
        "PATH": f"{shims}:/usr/bin:/bin:/usr/sbin:/sbin",
        "PYTHONPATH": src,
        "FSADVISOR_DB": str(tmp_path / "nobody.db"),
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
    }
    probe = unprivileged([sys.executable, "-c", "import os, typer; print(os.geteuid())"], env)
    if probe.returncode != 0 or probe.stdout.strip() != "65534":
        pytest.skip(f"cannot run the interpreter as uid 65534: {probe.stderr[-300:]}")
    return env, log


def mounts_of(dev: str) -> list[str]:
    return [
        ln
        for ln in Path("/proc/self/mounts").read_text().splitlines()
        if os.path.realpath(ln.split()[0]) == os.path.realpath(dev)
    ]


def test_dry_run_as_nobody_prints_everything_and_executes_nothing(loop_device, nobody_env):
    env, log = nobody_env
    dev = loop_device(512 << 20)
    # nobody's own loop device (its backing file is): another user's is refused even in a
    # dry run (tests/device/test_loop_not_yours.py)
    name = os.path.basename(os.path.realpath(dev))
    backing = Path(f"/sys/block/{name}/loop/backing_file").read_text().strip()
    os.chown(backing, 65534, 65534)
    before = devmod.block_stat(dev), devmod.read_scheduler(dev)[0]
    p = unprivileged(
        [
            sys.executable,
            "-m",
            "fsadvisor.cli",
            "probe",
            dev,
            "--fs",
            "ext4,xfs,btrfs,f2fs",
            "--schedulers",
            "none,mq-deadline",
            "--reps",
            "2",
            "--runtime",
            "2",
            "--dry-run",
        ],
        env,
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout
    # the header folds over its first comment lines (and a note follows it)
    comments = " ".join(ln.removeprefix("# ") for ln in out.splitlines() if ln.startswith("# "))
    assert "nothing below is executed" in comments
    for needle in (
        f"blkdiscard -f {dev}",
        f"mkfs.ext4 -F",
        f"mkfs.xfs -f",
        "mkfs.btrfs -f",
        f"mount -t xfs {dev} ",
        "umount ",
        "echo mq-deadline > /sys/block/",
        "echo 3 > /proc/sys/vm/drop_caches",
        "fio --output-format=json",
        f"--filename={dev}",
        "--create_only=1",
        "--rw=write --bs=1048576",
        "#   mkfs.f2fs",
        "SKIPPED: f2fs: not supported by this kernel",
    ):
        assert needle in out, needle
    cells = [ln for ln in out.splitlines() if ln.startswith("## cell ")]
    assert len(cells) == int(cells[0].split("/")[1].split(":")[0])
    # what a real run executes before the matrix is listed too (and, per the shims, not run)
    # (each with its note on the comment line above it: the command stays whole, the note
    # folds to 80 columns)
    lines = out.splitlines()
    at = lines.index("fio --version")
    assert lines[at - 1].startswith("# a real run executes this before the first cell")
    probe_at = next(
        i
        for i, ln in enumerate(lines)
        if ln.startswith("fio --output-format=json --name=probe --filename=")
        and ln.endswith("--ioengine=io_uring --iodepth=4 --number_ios=8")
    )
    assert any(
        "a real run executes this io_uring self-test" in ln
        for ln in lines[max(0, probe_at - 3) : probe_at]
    )
    assert log.read_text() == "", f"the dry run executed: {log.read_text()}"
    assert (devmod.block_stat(dev), devmod.read_scheduler(dev)[0]) == before
    assert mounts_of(dev) == []
    assert not Path(env["FSADVISOR_DB"]).exists()  # not even the store was created


def test_without_dry_run_nobody_is_refused_in_one_line(loop_device, nobody_env):
    env, log = nobody_env
    dev = loop_device(512 << 20)
    for args in ([dev, "--yes-wipe", dev], ["--scratch", "1G"]):
        p = unprivileged([sys.executable, "-m", "fsadvisor.cli", "probe", *args, "--quick"], env)
        assert p.returncode == 2, (p.stdout, p.stderr)
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "needs root" in lines[0], p.stderr
    assert log.read_text() == ""


def test_scratch_dry_run_shows_the_loop_device_lifecycle(nobody_env):
    env, log = nobody_env
    p = unprivileged(
        [
            sys.executable,
            "-m",
            "fsadvisor.cli",
            "probe",
            "--scratch",
            "1G",
            "--fs",
            "ext4",
            "--quick",
            "--dry-run",
        ],
        env,
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert any("not an SSD" in ln for ln in lines)
    assert any(ln.startswith("losetup --find --show --direct-io=on ") for ln in lines)
    assert lines[-2] == "losetup --detach /dev/loopN"
    assert log.read_text() == ""
