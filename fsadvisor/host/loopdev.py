"""File-backed loop devices: the scratch device for ``probe --scratch`` and for the tests.

Direct I/O on the loop device (``losetup --direct-io=on``) keeps the host page cache out of
the numbers; even so a loop device's figures describe the backing file's filesystem and
disk, not an SSD, and everything measured on one is labelled ``device_kind = "loop"``.
Only argument lists are executed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from fsadvisor.host import run as hostrun
from fsadvisor.host.device import parse_mounts

# Loop devices have block major 7 (LOOP_MAJOR); an attached one also has /sys/block/NAME/loop,
# which the kernel removes on detach (verified: loop0..7 here, none attached, no "loop" dir).
LOOP_MAJOR = 7
# losetup and umount -l answer in milliseconds; a minute means something hangs.
LOSETUP_TIMEOUT_S = 60.0


class LoopError(RuntimeError):
    pass


def attach(
    backing_file: str | os.PathLike, direct_io: bool = True, sys_root: str | os.PathLike = "/sys"
) -> str:
    """Attach ``backing_file`` to a free loop device and return its path.

    With ``direct_io`` the kernel's own answer is checked: losetup exits 0 even when the
    kernel falls back to buffered I/O (a backing filesystem without O_DIRECT, a block size it
    cannot match), and then every number would measure the host's page cache. Such a device
    is detached again and LoopError says why."""
    cmd = ["losetup", "--find", "--show"]
    if direct_io:
        cmd.append("--direct-io=on")
    cmd.append(str(backing_file))
    proc = hostrun.run(cmd, timeout_s=LOSETUP_TIMEOUT_S)
    if proc.returncode != 0:
        raise LoopError(f"losetup failed: {proc.stderr.strip() or proc.stdout.strip()}")
    dev = proc.stdout.strip()
    if direct_io:
        dio = direct_io_state(dev, sys_root)
        if dio is not True:
            hostrun.run(["losetup", "--detach", dev], timeout_s=LOSETUP_TIMEOUT_S)
            why = (
                "the kernel fell back to buffered I/O"
                if dio is False
                else "the kernel does not report it (no loop/dio in sysfs)"
            )
            raise LoopError(
                f"direct I/O is not in effect on {dev} for {backing_file}: {why}; "
                "put the backing file on a filesystem that supports O_DIRECT"
            )
    return dev


def direct_io_state(dev: str, sys_root: str | os.PathLike = "/sys") -> bool | None:
    """What the kernel says of ``dev``'s direct I/O (/sys/block/NAME/loop/dio): True, False,
    or None when it does not say."""
    p = Path(sys_root) / "block" / Path(os.path.realpath(dev)).name / "loop" / "dio"
    try:
        value = p.read_text().strip()
    except OSError:
        return None
    return {"1": True, "0": False}.get(value)


def detach(
    dev: str,
    sys_root: str | os.PathLike = "/sys",
    mounts_path: str | os.PathLike = "/proc/self/mounts",
) -> None:
    """Detach ``dev``; unmount anything still mounted from it first (a crashed run may leave
    one behind). Never raises for an already-detached loop device; raises LoopError for
    anything that is not a loop device, before unmounting anything (``umount -l`` on every
    mount of an arbitrary disk would pull the host's filesystems away)."""
    name = Path(os.path.realpath(dev)).name
    sysdir = Path(sys_root) / "block" / name
    if not name or not (sysdir / "loop").is_dir():
        if _major(sysdir) == LOOP_MAJOR:
            return  # a loop device with nothing attached: nothing to unmount or detach
        raise LoopError(
            f"refusing to detach {dev}: not a loop device ({sysdir / 'loop'} does not exist)"
        )
    for mnt in mountpoints_of(dev, mounts_path):
        hostrun.run(["umount", "-l", mnt], timeout_s=LOSETUP_TIMEOUT_S)
    hostrun.run(["losetup", "--detach", dev], timeout_s=LOSETUP_TIMEOUT_S)


def _major(sysdir: Path) -> int | None:
    try:
        return int((sysdir / "dev").read_text().split(":")[0])
    except (OSError, ValueError):
        return None


def backing_file(dev: str) -> str | None:
    name = Path(dev).name
    p = Path("/sys/block") / name / "loop" / "backing_file"
    try:
        return p.read_text().strip()
    except OSError:
        return None


def mountpoints_of(dev: str, mounts_path: str | os.PathLike = "/proc/self/mounts") -> list[str]:
    """Mount points whose source is ``dev`` (octal escapes decoded as device.parse_mounts
    does, so non-ASCII mount points come back as they are)."""
    real = os.path.realpath(dev)
    try:
        text = Path(mounts_path).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return []
    # Only absolute sources can be this device; "proc", "tmpfs"... would resolve against cwd.
    return [
        mnt
        for src, mnt in parse_mounts(text)
        if src.startswith("/") and os.path.realpath(src) == real
    ]


def create_backing_file(path: str | os.PathLike, size_bytes: int) -> None:
    """A sparse file of ``size_bytes``. Sparse is fine: probes fill before they read."""
    with open(path, "wb") as f:
        f.truncate(size_bytes)


@contextlib.contextmanager
def scratch_loop(
    size_bytes: int, directory: str | os.PathLike | None = None, direct_io: bool = True
) -> Iterator[str]:
    """A loop device over a fresh sparse file, detached and deleted on exit, whatever happens."""
    fd, path = tempfile.mkstemp(prefix="fsadvisor-scratch-", suffix=".img", dir=directory)
    os.close(fd)
    dev = None
    try:
        create_backing_file(path, size_bytes)
        dev = attach(path, direct_io=direct_io)
        yield dev
    finally:
        if dev:
            detach(dev)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
