"""A device that belongs to an md array, an LVM volume group or a LUKS volume is refused with
and without --force, naming what it belongs to, and its header is still there afterwards.

The headers are written by hand onto loop devices this test creates (mdadm, lvm2 and
cryptsetup are not needed, nor wanted, on a test machine): an md 1.2 superblock with its
checksum, an LVM2 physical-volume label with LVM's CRC, a LUKS1 header. blkid recognises each
(linux_raid_member, LVM2_member, crypto_LUKS), which is all the product reads."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import uuid

import pytest

from fsadvisor.host import device as devmod
from fsadvisor.host import loopdev

pytestmark = pytest.mark.device


def _luks1(dev) -> None:
    hdr = bytearray(592)
    hdr[0:6] = b"LUKS\xba\xbe"
    struct.pack_into(">H", hdr, 6, 1)  # version
    hdr[8:11], hdr[40:51], hdr[72:78] = b"aes", b"xts-plain64", b"sha256"
    struct.pack_into(">II", hdr, 104, 4096, 64)  # payload offset, key bytes
    u = str(uuid.uuid4()).encode()
    hdr[168 : 168 + len(u)] = u
    dev.seek(0)
    dev.write(hdr)


def _lvm_crc(data: bytes, crc: int = 0xF597A6CF) -> int:
    # LVM2's calc_crc: the reflected CRC-32 polynomial from LVM's own initial value
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc & 0xFFFFFFFF


def _lvm2(dev) -> None:
    sec = bytearray(512)
    sec[0:8] = b"LABELONE"
    struct.pack_into("<QxxxxI", sec, 8, 1, 32)  # sector_xl, (crc), offset_xl
    sec[24:32] = b"LVM2 001"
    sec[32:64] = uuid.uuid4().hex.encode()
    struct.pack_into("<Q", sec, 64, 64 << 20)
    struct.pack_into("<I", sec, 16, _lvm_crc(bytes(sec[20:])))
    dev.seek(512)
    dev.write(sec)


def _md12(dev) -> None:
    sb = bytearray(256)
    struct.pack_into("<II", sb, 0, 0xA92B4EFC, 1)  # magic, major version
    sb[16:32] = uuid.uuid4().bytes
    sb[32:38] = b"host:0"
    struct.pack_into("<IIQII", sb, 72, 1, 0, 1 << 16, 0, 2)  # raid1, 2 disks
    struct.pack_into("<QQQ", sb, 128, 2048, 1 << 16, 8)  # data offset/size, super offset
    sb[168:184] = uuid.uuid4().bytes
    total = sum(struct.unpack_from("<64I", sb))
    struct.pack_into("<I", sb, 216, ((total & 0xFFFFFFFF) + (total >> 32)) & 0xFFFFFFFF)
    dev.seek(4096)
    dev.write(sb)


HEADERS = {"linux_raid_member": _md12, "LVM2_member": _lvm2, "crypto_LUKS": _luks1}


def _blkid_type(dev: str) -> str:
    return subprocess.run(
        ["blkid", "-p", "-o", "value", "-s", "TYPE", dev], capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture(params=sorted(HEADERS))
def member(request, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    with loopdev.scratch_loop(64 << 20, tmp_path) as dev:
        with open(dev, "r+b") as f:
            HEADERS[request.param](f)
            f.flush()
            os.fsync(f.fileno())
        assert _blkid_type(dev) == request.param  # the header is what blkid calls it
        yield request.param, dev


def test_the_safety_verdict_refuses_a_member_with_and_without_force(member):
    kind, dev = member
    for force in (False, True):
        v = devmod.safety_verdict(dev, force=force)
        assert not v.ok and kind in v.reason and "--force does not override it" in v.reason
        assert not v.needs_force


@pytest.mark.parametrize("command", ["probe", "apply"])
def test_probe_and_apply_with_force_refuse_it_in_one_line_and_leave_it(member, command, tmp_path):
    kind, dev = member
    args = {
        "probe": [
            "probe",
            dev,
            "--force",
            "--yes-wipe",
            dev,
            "--fs",
            "ext4",
            "--schedulers",
            "none",
            "--runtime",
            "1",
            "--cooldown",
            "0",
        ],
        "apply": [
            "apply",
            "--config",
            '{"filesystem": "ext4"}',
            "--device",
            dev,
            "--execute",
            "--force",
            "--yes-wipe",
            dev,
        ],
    }[command]
    env = dict(os.environ, FSADVISOR_DB=str(tmp_path / "s.db"))
    p = subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and kind in lines[0] and "Traceback" not in p.stderr, p.stderr
    assert _blkid_type(dev) == kind  # nothing was written


def test_a_busy_device_is_reported_busy_before_what_it_holds(tmp_path):
    """Held open exclusively by another program (here: this test) and holding a filesystem:
    the refusal says it is busy, not "holds data; pass --force" (which would not help)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    with loopdev.scratch_loop(64 << 20, tmp_path) as dev:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
        try:
            v = devmod.safety_verdict(dev, force=False)
        finally:
            os.close(fd)
        assert not v.ok and "busy" in v.reason and "holds data" not in v.reason
        assert "holds data" in devmod.safety_verdict(dev, force=False).reason
