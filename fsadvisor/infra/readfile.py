"""Reading a file a user named, within bounds: only a regular file is read (a device such as
/dev/zero never ends, a FIFO blocks until someone writes to it), and never more than the
caller's limit. Failures are OSError with a one-line ``strerror``, as open() gives, so every
caller's existing "cannot read FILE: why" handling words them."""

from __future__ import annotations

import errno
import os
import stat

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file at ``path``; OSError(EINVAL) for anything that is not a
    regular file, OSError(EFBIG) for one larger than ``limit`` bytes."""
    # O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise OSError(errno.EINVAL, f"is {kind}, not a regular file")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise OSError(errno.EFBIG, f"larger than {limit:,} bytes")
    finally:
        os.close(fd)
