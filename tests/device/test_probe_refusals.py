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

from fsadvisor.host import device as devmod

pytestmark = pytest.mark.device

QUICK = ["--fs", "ext4", "--schedulers", "none", "--quick", "--runtime", "1", "--cooldown", "0"]


def probe_cli(*args: str, db: Path, input: str | None = None):
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", "probe", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        input=input,
    )


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
    src = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True, text=True
    ).stdout.strip()
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
    for args, needle in (
        (["--scratch", "1G", "--fs", "zfs"], "unknown filesystem 'zfs'"),
        (["--scratch", "1G", "--config", "{nope"], "--config is not JSON"),
        (["--scratch", "1G", "--schedulers", "cfq"], "unknown scheduler"),
        (["--scratch", "64M"], "at least"),
        ([], "either a DEVICE or --scratch"),
    ):
        p = probe_cli(*args, "--dry-run", db=tmp_path / "p.db")
        one_line_refusal(p, needle)


# The library's verdicts for these are tested in test_safety.py; these make sure the command
# in front of them turns each into exit 2 and one line, with or without --force and --dry-run.


def test_a_partitioned_device_and_its_partition_are_refused(loop_device, tmp_path):
    import time

    dev = loop_device(320 << 20)
    subprocess.run(
        ["sfdisk", "-q", dev],
        input="label: dos\n,32M,L\n",
        text=True,
        check=True,
        capture_output=True,
    )
    part = dev + "p1"
    try:
        subprocess.run(["partx", "-a", dev], capture_output=True, timeout=60)
        for _ in range(50):
            if os.path.exists(part):
                break
            time.sleep(0.1)
        assert os.path.exists(part), f"{part} did not appear"
        before = untouched(dev)
        for extra in ([], ["--force"], ["--dry-run"]):
            one_line_refusal(
                probe_cli(dev, *QUICK, "--yes-wipe", dev, *extra, db=tmp_path / "p.db"),
                "has partitions",
                os.path.basename(part),
            )
            one_line_refusal(
                probe_cli(part, *QUICK, "--yes-wipe", part, *extra, db=tmp_path / "p.db"),
                f"is a partition of {os.path.basename(dev)}",
            )
        assert untouched(dev) == before
    finally:
        # partx partitions outlive the loop device's detach (test_safety.py says why)
        subprocess.run(["partx", "-d", dev], capture_output=True, timeout=60)


def test_active_swap_is_refused_even_with_force(loop_device, tmp_path):
    dev = loop_device(320 << 20)
    subprocess.run(["mkswap", dev], check=True, capture_output=True)
    subprocess.run(["swapon", dev], check=True, capture_output=True)
    try:
        for extra in ([], ["--force"], ["--dry-run"]):
            one_line_refusal(
                probe_cli(dev, *QUICK, "--yes-wipe", dev, *extra, db=tmp_path / "p.db"),
                "active swap",
            )
    finally:
        subprocess.run(["swapoff", dev], capture_output=True, timeout=60)
    # swapped off, its signature still needs --force
    one_line_refusal(
        probe_cli(dev, *QUICK, "--yes-wipe", dev, db=tmp_path / "p.db"), "swap signature", "--force"
    )


def test_symlinks_to_refused_targets_are_refused_by_what_they_point_at(mounted_loop, tmp_path):
    dev, mnt = mounted_loop
    by_id = tmp_path / "disk" / "by-id"
    by_id.mkdir(parents=True)
    (by_id / "nvme-Spare_SSD_S123").symlink_to(dev)
    (by_id / "chain").symlink_to(by_id / "nvme-Spare_SSD_S123")
    for link in ("nvme-Spare_SSD_S123", "chain"):
        path = str(by_id / link)
        one_line_refusal(
            probe_cli(path, *QUICK, "--yes-wipe", path, "--force", db=tmp_path / "p.db"),
            "mounted",
            str(mnt),
        )
    regular = tmp_path / "disk.img"
    regular.write_bytes(b"\0" * 4096)
    (by_id / "file").symlink_to(regular)
    one_line_refusal(
        probe_cli(
            str(by_id / "file"), *QUICK, "--yes-wipe", str(by_id / "file"), db=tmp_path / "p.db"
        ),
        "not a block device",
    )
    assert (mnt / "precious").read_text() == "keep me"
