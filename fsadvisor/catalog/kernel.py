"""Whether the running kernel can mount a filesystem.

/proc/filesystems lists what is built in or already loaded; a filesystem built as a module that
nobody has loaded yet is missing there but mounts fine (mount loads it), so modules.dep is read
too. On this machine f2fs is in neither: mkfs.f2fs works, mount would fail.
"""

from __future__ import annotations

import os
from pathlib import Path


def _default_modules_dep() -> str:
    return f"/lib/modules/{os.uname().release}/modules.dep"


def kernel_supports(
    fs: str,
    proc_filesystems: str | os.PathLike = "/proc/filesystems",
    modules_dep: str | os.PathLike | None = None,
) -> bool:
    try:
        lines = Path(proc_filesystems).read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split()
        if fields and fields[-1] == fs:
            return True
    try:
        deps = Path(modules_dep or _default_modules_dep()).read_text()
    except OSError:
        return False
    # modules.dep lines start "kernel/fs/f2fs/f2fs.ko.xz: dependency ..."
    for line in deps.splitlines():
        path = line.split(":", 1)[0]
        name = path.rsplit("/", 1)[-1]
        if name.split(".ko", 1)[0] == fs and ".ko" in name:
            return True
    return False
