"""Hostile targets through the probe command: a mounted loop device, the disk under /, a
regular file, an unconfirmed wipe. Each is refused with exit code 2 and one line on stderr,
and the device is left exactly as it was (the detailed verdicts are the device module's
tests; this covers the CLI path in front of them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsadvisor import device as devmod

pytestmark = pytest.mark.device

QUICK = ["--fs", "ext4", "--schedulers", "none", "--quick", "--runtime", "1", "--cooldown", "0"]


def probe_cli(*args: str, db: Path, input: str | None = None):
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run([sys.executable, "-m", "fsadvisor.cli", "probe", *args],
                          capture_output=True, text=True, timeout=120, env=env, input=input)


def one_line_refusal(p, *needles: str) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def untouched(dev: str) -> tuple:
    """What a probe would change: write counters, discards, scheduler, signatures."""
    st = devmod.block_stat(dev)
    blkid = subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True)
    return (st["write_ios"], st.get("discard_ios"), devmod.read_scheduler(dev)[0], blkid.stdout)


@pytest.fixture
def mounted_loop(loop_device, tmp_path):
    dev = loop_device(320 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", dev, str(mnt)], check=True)
    (mnt / "precious").write_text("keep me")
    try:
        yield dev, mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_a_mounted_loop_device_is_refused(mounted_loop, tmp_path):
    dev, mnt = mounted_loop
    before = untouched(dev)
    for extra in ([], ["--force"], ["--dry-run"]):
        p = probe_cli(dev, *QUICK, "--yes-wipe", dev, *extra, db=tmp_path / "p.db")
        one_line_refusal(p, "mounted", str(mnt))
    assert (mnt / "precious").read_text() == "keep me"
    assert untouched(dev)[1:] == before[1:]


def test_the_root_disk_is_refused(tmp_path):
    src = subprocess.run(["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True,
                         text=True).stdout.strip()
    if not src.startswith("/dev/"):
        pytest.skip(f"/ is on {src!r}, not a block device")
    p = probe_cli(src, *QUICK, "--yes-wipe", src, "--force", db=tmp_path / "p.db")
    one_line_refusal(p, "never probed")


def test_a_regular_file_is_refused(tmp_path):
    f = tmp_path / "disk.img"
    f.write_bytes(b"\0" * 4096)
    p = probe_cli(str(f), *QUICK, "--yes-wipe", str(f), db=tmp_path / "p.db")
    one_line_refusal(p, "regular file", "not a block device")
    assert f.read_bytes() == b"\0" * 4096


def test_a_wipe_that_is_not_confirmed_exactly_touches_nothing(loop_device, tmp_path):
    dev = loop_device(320 << 20)
    devmod.set_scheduler(dev, "kyber")
    before = untouched(dev)
    # --yes-wipe naming another device
    p = probe_cli(dev, *QUICK, "--yes-wipe", dev + "0", db=tmp_path / "p.db")
    one_line_refusal(p, "does not match")
    # the prompt answered wrongly (a near miss is no match)
    p = probe_cli(dev, *QUICK, db=tmp_path / "p.db", input=os.path.basename(dev) + "\n")
    assert p.returncode == 2 and "not confirmed" in p.stderr.splitlines()[-1], p.stderr
    assert "Traceback" not in p.stderr
    assert untouched(dev) == before
    assert not Path(f"{tmp_path / 'p.db'}.probe-state.json").exists()


def test_bad_options_are_one_line_errors(tmp_path):
    for args, needle in ((["--scratch", "1G", "--fs", "zfs"], "unknown filesystem 'zfs'"),
                         (["--scratch", "1G", "--config", "{nope"], "--config is not JSON"),
                         (["--scratch", "1G", "--schedulers", "cfq"], "unknown scheduler"),
                         (["--scratch", "64M"], "at least"),
                         ([], "either a DEVICE or --scratch")):
        p = probe_cli(*args, "--dry-run", db=tmp_path / "p.db")
        one_line_refusal(p, needle)
