"""The safety verdict on real devices: loop devices this test creates (at most two at once,
always cleaned up in ``finally``) and, read-only, the disk holding ``/``."""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

from fsadvisor.host import device

from fsadvisor.host import loopdev
from fsadvisor.host.device import Host
from fsadvisor.errors import ConfigError, DeviceRefused

pytestmark = pytest.mark.device

SMALL = 64 << 20


def run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{argv}: {proc.stderr}"
    return proc


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing {', '.join(missing)}")


@contextlib.contextmanager
def mounted(dev: str, mnt: Path):
    mnt.mkdir(exist_ok=True)
    run("mount", dev, str(mnt))
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60)


def refused(path: str, needle: str, **kw) -> device.Verdict:
    v = device.safety_verdict(path, **kw)
    assert not v.ok and v.reason and needle in v.reason and "\n" not in v.reason, v
    with pytest.raises(DeviceRefused) as ei:
        device.require_safe(path, **kw)
    assert str(ei.value) == v.reason
    return v


def test_fresh_loop_device_is_ok(loop_device):
    dev = loop_device(SMALL)
    v = device.safety_verdict(dev)
    assert (v.ok, v.reason, v.resolved_path, v.needs_force, v.signatures) == (
        True,
        None,
        dev,
        False,
        [],
    )
    assert device.require_safe(dev) == dev


def test_symlink_to_a_fresh_device_resolves(loop_device, tmp_path):
    dev = loop_device(SMALL)
    link = tmp_path / "by-id" / "nvme-FAKE_SERIAL"
    link.parent.mkdir()
    link.symlink_to(dev)
    assert device.require_safe(str(link)) == dev
    assert device.inspect(str(link)).path == dev


def root_disk() -> str:
    src = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True, text=True
    ).stdout.strip()
    if not src.startswith("/dev/"):
        pytest.skip(f"/ is not on a block device here ({src!r})")
    return src


def test_disk_holding_root_is_refused_and_only_inspected(tmp_path):
    root = root_disk()
    v = refused(root, "holds /; never probed")
    assert v.resolved_path == os.path.realpath(root) and not v.needs_force
    link = tmp_path / "innocent-looking"
    link.symlink_to(root)
    refused(str(link), f"{link} (-> {os.path.realpath(root)})")
    d = device.inspect(root)
    sectors = int(Path("/sys/class/block", Path(os.path.realpath(root)).name, "size").read_text())
    assert d.path == os.path.realpath(root) and d.size_bytes == sectors * 512 > 0
    # read-only: even --force cannot talk the verdict into it
    assert not device.safety_verdict(root, force=True).ok


def test_unreadable_device_signatures_fail_closed():
    """blkid exits 2 ("nothing found") also for "Permission denied"; here the sandbox denies
    even root an open of the root disk (EPERM), which must be a refusal, not "no signatures"."""
    root = os.path.realpath(root_disk())
    try:
        os.close(os.open(root, os.O_RDONLY))
        pytest.skip(f"{root} is readable here")
    except OSError:
        pass
    with pytest.raises(DeviceRefused, match=f"blkid -p {root} failed: .*(not permitted|denied)"):
        device.read_signatures(root)


def test_proc_mounts_alone_is_enough(loop_device, tmp_path):
    """/proc/self/mounts is the source of truth, matched through symlinks (a by-uuid name)."""
    dev = loop_device(SMALL)
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "swaps").write_text(Path("/proc/swaps").read_text())
    link = tmp_path / "by-uuid-1234"
    link.symlink_to(dev)
    (proc / "self" / "mounts").write_text(
        Path("/proc/self/mounts").read_text() + f"{link} /srv/my\\040data ext4 rw 0 0\n"
    )
    refused(dev, f"{dev} is mounted on /srv/my data", host=Host(proc_root=str(proc)), force=True)


def test_detached_loop_device_has_no_medium():
    proc = subprocess.run(["losetup", "--find"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        pytest.skip("no free loop device")
    free = proc.stdout.strip()
    v = device.safety_verdict(free)
    if Path("/sys/class/block", Path(free).name, "size").read_text().strip() != "0":
        pytest.skip(f"{free} was attached meanwhile by someone else")
    assert not v.ok and v.reason == f"{free} has no medium (size 0; a detached loop device?)"


def test_mounted_device_and_a_symlink_to_it(loop_device, tmp_path):
    need("mkfs.ext4")
    dev = loop_device(SMALL)
    run("mkfs.ext4", "-q", "-F", dev)
    link = tmp_path / "disk-link"
    link.symlink_to(dev)
    with mounted(dev, tmp_path / "mnt") as mnt:
        v = refused(dev, f"{dev} is mounted on {mnt}; unmount it first", force=True)
        assert v.signatures == [] and not v.needs_force  # signatures are not even read then
        refused(str(link), f"{link} (-> {dev}) is mounted on {mnt}", force=True)
        assert "busy" in device.exclusive_guard(dev)
    # unmounted, the ext4 is what remains
    v = refused(dev, "ext4 signature found; pass --force")
    assert v.needs_force and v.signatures == ["ext4"]


def test_existing_ext4_needs_force(loop_device):
    need("mkfs.ext4")
    dev = loop_device(SMALL)
    run("mkfs.ext4", "-q", "-F", dev)
    v = refused(dev, f"{dev} holds data: ext4 signature found; pass --force to destroy it")
    assert v.needs_force and v.signatures == ["ext4"]
    v = device.safety_verdict(dev, force=True)
    assert v.ok and v.signatures == ["ext4"]
    assert device.require_safe(dev, force=True) == dev


def lvm_label() -> bytes:
    """An LVM2 physical-volume label (sector 1), crc as libblkid checks it; this machine has
    no dm driver, so a real PV cannot be created (domain notes §6)."""
    table = []
    for i in range(16):
        c = i
        for _ in range(4):
            c = (c >> 1) ^ (0xEDB88320 if c & 1 else 0)
        table.append(c)
    label = bytearray(512)
    label[0:8] = b"LABELONE"
    struct.pack_into("<QxxxxI", label, 8, 1, 32)  # sector_xl, (crc), offset_xl
    label[24:32] = b"LVM2 001"
    label[32:64] = b"A" * 32  # PV UUID
    crc = 0xF597A6CF
    for byte in label[20:]:
        crc ^= byte
        crc = (crc >> 4) ^ table[crc & 0xF]
        crc = (crc >> 4) ^ table[crc & 0xF]
    struct.pack_into("<I", label, 16, crc)
    return bytes(label)


def test_an_lvm_member_is_refused_even_with_force(loop_device):
    """An LVM physical volume belongs to a volume group: formatting it destroys the group's
    data, so --force does not override it (it overrides only a plain filesystem)."""
    dev = loop_device(SMALL)
    fd = os.open(dev, os.O_WRONLY)
    try:
        os.pwrite(fd, lvm_label(), 512)
        os.fsync(fd)
    finally:
        os.close(fd)
    for force in (False, True):
        v = refused(dev, "LVM2_member signature); --force does not override it", force=force)
        assert not v.needs_force and v.signatures == ["LVM2_member"]


def test_partitioned_device_parent_and_child(loop_device, tmp_path):
    need("sfdisk", "partx", "mkfs.ext4")
    dev = loop_device(SMALL)
    run("sfdisk", "-q", dev, stdin="label: dos\n,32M,L\n")
    part = dev + "p1"
    try:
        subprocess.run(
            ["partx", "-a", dev], capture_output=True, timeout=60
        )  # "already exists" is fine
        for _ in range(50):
            if os.path.exists(part):
                break
            time.sleep(0.1)
        assert os.path.exists(part), f"{part} did not appear"
        refused(dev, "has partitions (" + Path(part).name + ")", force=True)
        refused(part, f"is a partition of {Path(dev).name}", force=True)
        # the parent's partition table is a signature too, but "has partitions" is the reason given
        assert device.safety_verdict(dev).needs_force is False
        assert device.read_scheduler(part) == device.read_scheduler(
            dev
        )  # partitions use the disk's queue
        assert device.block_stat(part)["read_ios"] >= 0
        inspected = device.inspect(part)
        assert (inspected.kind, inspected.size_bytes, inspected.path) == ("loop", 32 << 20, part)
        run("mkfs.ext4", "-q", "-F", part)
        with mounted(part, tmp_path / "mnt") as mnt:
            refused(dev, f"{dev} is mounted through {part} on {mnt}", force=True)
            refused(part, f"{part} is mounted on {mnt}", force=True)
        if shutil.which("mkswap") and shutil.which("swapon"):
            run("mkswap", part)
            run("swapon", part)
            try:  # the whole disk under an active swap partition is protected like /'s disk
                refused(
                    dev,
                    f"{dev} is on disk {Path(dev).name}, whose {part} is active swap",
                    force=True,
                )
            finally:
                subprocess.run(["swapoff", part], capture_output=True, timeout=60)
    finally:
        # Partitions added with partx outlive the loop device's detach (seen here: a stale
        # loop1p1 on the next user's loop1), so they go first.
        subprocess.run(["partx", "-d", dev], capture_output=True, timeout=60)
    assert not os.path.exists(f"/sys/class/block/{Path(part).name}")


def test_active_swap_is_refused(loop_device):
    need("mkswap", "swapon", "swapoff")
    dev = loop_device(SMALL)
    run("mkswap", dev)
    run("swapon", dev)
    try:
        refused(dev, f"{dev} is active swap (/proc/swaps); never probed", force=True)
        assert "busy" in device.exclusive_guard(dev)
    finally:
        subprocess.run(["swapoff", dev], capture_output=True, timeout=60)
    v = refused(dev, "swap signature found")
    assert v.needs_force


def test_read_only_device_is_refused(tmp_path):
    img = tmp_path / "ro.img"
    loopdev.create_backing_file(img, SMALL)
    proc = subprocess.run(
        ["losetup", "--find", "--show", "--read-only", str(img)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0:
        pytest.skip(f"no free loop device: {proc.stderr.strip()}")
    dev = proc.stdout.strip()
    try:
        refused(dev, f"{dev} is read-only", force=True)
    finally:
        loopdev.detach(dev)


def test_exclusive_open_guard(loop_device):
    dev = loop_device(SMALL)
    fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    try:
        v = refused(dev, f"{dev} is busy (mounted or claimed")
        assert v.resolved_path == dev
    finally:
        os.close(fd)
    assert device.safety_verdict(dev).ok


def copy_sys_node(real_dir: Path, fake_root: Path, rdev: int) -> Path:
    """A fake sysfs with just what the verdict reads for one device."""
    node = fake_root / "devices" / "virtual" / "block" / real_dir.name
    node.mkdir(parents=True)
    for name in ("size", "ro"):
        (node / name).write_text((real_dir / name).read_text())
    (node / "holders").mkdir()
    (fake_root / "dev" / "block").mkdir(parents=True)
    (fake_root / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}").symlink_to(node)
    (fake_root / "class" / "block").mkdir(parents=True)
    (fake_root / "class" / "block" / real_dir.name).symlink_to(node)
    return node


def test_holders_refuse_with_a_fake_sysfs(loop_device, tmp_path):
    dev = loop_device(SMALL)
    rdev = os.stat(dev).st_rdev
    real_dir = Path(os.path.realpath(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}"))
    node = copy_sys_node(real_dir, tmp_path / "sys", rdev)
    host = Host(sys_root=str(tmp_path / "sys"))
    assert device.safety_verdict(dev, host=host).ok  # the fake tree alone changes nothing
    (node / "holders" / "dm-0").mkdir()
    refused(
        dev,
        f"{dev} is held by dm-0 (holders of {real_dir.name}: LVM, md or dm)",
        host=host,
        force=True,
    )


def test_missing_tools_fail_closed(loop_device, tmp_path):
    dev = loop_device(SMALL)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    refused(dev, "lsblk not found", host=Host(tool_path=str(bin_dir)))
    for tool in ("lsblk", "findmnt", "wipefs"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    refused(dev, "blkid not found", host=Host(tool_path=str(bin_dir)))
    (bin_dir / "blkid").symlink_to(shutil.which("blkid", path="/usr/sbin:/sbin:/usr/bin"))
    assert device.safety_verdict(dev, host=Host(tool_path=str(bin_dir))).ok


def test_inspect_loop_device(loop_device):
    dev = loop_device(SMALL)
    d = device.inspect(dev, plp="no")
    name = Path(dev).name
    assert (d.path, d.size_bytes, d.kind, d.plp) == (dev, SMALL, "loop", "no")
    q = Path("/sys/block", name, "queue")
    assert d.logical_block_size == int((q / "logical_block_size").read_text())
    assert d.rotational == ((q / "rotational").read_text().strip() == "1")
    assert d.write_cache == (q / "write_cache").read_text().strip()
    assert device.device_from_spec(dev) == d.__class__(**{**d.to_dict(), "plp": "unknown"})


def test_scheduler_set_read_restore(loop_device):
    dev = loop_device(SMALL)
    original, available = device.read_scheduler(dev)
    try:
        for name in [s for s in ("none", "mq-deadline", "kyber", "bfq") if s in available]:
            before, _ = device.read_scheduler(dev)
            assert device.set_scheduler(dev, name) == before
            assert device.read_scheduler(dev)[0] == name
            assert (
                f"[{name}]" in Path("/sys/block", Path(dev).name, "queue", "scheduler").read_text()
            )
        with pytest.raises(ConfigError, match="unknown scheduler 'cfq' for loop.*available: none"):
            device.set_scheduler(dev, "cfq")
    finally:
        device.set_scheduler(dev, original)
    assert device.read_scheduler(dev)[0] == original


def test_block_stat_counts_writes(loop_device):
    dev = loop_device(SMALL)
    before = device.block_stat(dev)
    assert set(before) <= set(device.STAT_FIELDS) and len(before) in (11, 15, 17)
    fd = os.open(dev, os.O_WRONLY)
    try:
        os.pwrite(fd, b"\xa5" * (1 << 20), 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    after = device.block_stat(dev)
    assert after["write_sectors"] - before["write_sectors"] >= (1 << 20) // 512


def test_inspect_nvme_with_fake_sysfs_and_id_ctrl(loop_device, tmp_path):
    """No NVMe here: the loop device's number is mapped to a fake nvme0n1 sysfs node and
    nvme-cli is replaced by a script printing recorded-shape id-ctrl JSON."""
    dev = loop_device(SMALL)
    rdev = os.stat(dev).st_rdev
    sys_root = tmp_path / "sys"
    node = sys_root / "devices" / "pci0000:00" / "nvme" / "nvme0" / "nvme0n1"
    (node / "queue").mkdir(parents=True)
    for name, value in {
        "size": "3750748848",
        "queue/rotational": "0",
        "queue/logical_block_size": "4096",
        "queue/write_cache": "write through",
    }.items():
        (node / name).write_text(value + "\n")
    (node / "device").mkdir()
    (node / "device" / "model").write_text("sysfs model\n")
    (sys_root / "dev" / "block").mkdir(parents=True)
    (sys_root / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}").symlink_to(node)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "lsblk").symlink_to(shutil.which("lsblk"))
    d = device.inspect(dev, host=Host(sys_root=str(sys_root), tool_path=str(bin_dir)))
    assert (d.kind, d.size_bytes, d.logical_block_size, d.write_cache, d.rotational, d.model) == (
        "nvme",
        3750748848 * 512,
        4096,
        "write through",
        False,
        "sysfs model",
    )  # no nvme-cli: tolerated
    fake = bin_dir / "nvme"
    fake.write_text(
        '#!/bin/sh\necho \'{"sn": "S4EWNX0R123456  ", "mn": "Samsung SSD 980 PRO 2TB  ", '
        '"fr": "5B2QGXA7"}\'\n'
    )
    fake.chmod(0o755)
    d = device.inspect(dev, plp="yes", host=Host(sys_root=str(sys_root), tool_path=str(bin_dir)))
    assert (d.model, d.serial, d.firmware, d.plp) == (
        "Samsung SSD 980 PRO 2TB",
        "S4EWNX0R123456",
        "5B2QGXA7",
        "yes",
    )


def test_loopdev_detach_unmounts_non_ascii_mounts_and_refuses_other_disks(tmp_path):
    """A real loop device mounted at a non-ASCII path: mountpoints_of names it as it is,
    detach() unmounts and detaches it; a disk that is no loop device is refused untouched."""
    need("mkfs.ext4", "losetup")
    if os.geteuid() != 0:
        pytest.skip("needs root")
    img = tmp_path / "l.img"
    loopdev.create_backing_file(img, SMALL)
    try:
        dev = loopdev.attach(img)
    except loopdev.LoopError as e:
        pytest.skip(f"no free loop device: {e}")
    mnt = tmp_path / "café 日本"
    try:
        run("mkfs.ext4", "-q", "-F", dev)
        mnt.mkdir()
        run("mount", dev, str(mnt))
        assert loopdev.mountpoints_of(dev) == [str(mnt)]
        root_src = next(
            src for src, m in device.parse_mounts(Path("/proc/self/mounts").read_text()) if m == "/"
        )
        with pytest.raises(loopdev.LoopError, match="not a loop device"):
            loopdev.detach(root_src)
        assert os.path.ismount("/")
        loopdev.detach(dev)
        assert not os.path.ismount(mnt)
        assert loopdev.backing_file(dev) is None
        dev = None
    finally:
        if dev:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
            subprocess.run(["losetup", "--detach", dev], capture_output=True)
