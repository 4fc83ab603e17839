"""File-backed loop devices: the scratch device for ``probe --scratch`` and for the tests.

Direct I/O on the loop device (``losetup --direct-io=on``) keeps the host page cache out of
the numbers; even so a loop device's figures describe the backing file's filesystem and
disk, not an SSD, and everything measured on one is labelled ``device_kind = "loop"``.
Only argument lists are executed.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator


class LoopError(RuntimeError):
    pass


def attach(backing_file: str | os.PathLike, direct_io: bool = True) -> str:
    """Attach ``backing_file`` to a free loop device and return its path."""
    cmd = ["losetup", "--find", "--show"]
    if direct_io:
        cmd.append("--direct-io=on")
    cmd.append(str(backing_file))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LoopError(f"losetup failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout.strip()


def detach(dev: str) -> None:
    """Detach ``dev``; unmount anything still mounted from it first (a crashed run may leave
    one behind). Never raises for an already-detached device."""
    for mnt in mountpoints_of(dev):
        subprocess.run(["umount", "-l", mnt], capture_output=True)
    subprocess.run(["losetup", "--detach", dev], capture_output=True)


def backing_file(dev: str) -> str | None:
    name = Path(dev).name
    p = Path("/sys/block") / name / "loop" / "backing_file"
    try:
        return p.read_text().strip()
    except OSError:
        return None


def mountpoints_of(dev: str) -> list[str]:
    """Mount points whose source is ``dev`` (from /proc/self/mounts; octal escapes decoded)."""
    out = []
    real = os.path.realpath(dev)
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and os.path.realpath(parts[0]) == real:
            out.append(parts[1].encode().decode("unicode_escape"))
    return out


def create_backing_file(path: str | os.PathLike, size_bytes: int) -> None:
    """A sparse file of ``size_bytes``. Sparse is fine: probes fill before they read."""
    with open(path, "wb") as f:
        f.truncate(size_bytes)


@contextlib.contextmanager
def scratch_loop(size_bytes: int, directory: str | os.PathLike | None = None,
                 direct_io: bool = True) -> Iterator[str]:
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
