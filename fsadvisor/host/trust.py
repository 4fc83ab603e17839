"""Whether a file in a directory could be replaced by someone else: what a root process must
know before it acts on a file it reads there (the probe's state file) or writes one there
(apply's --out). A directory is safe when it belongs to this user or root and nobody else
may write to it, or when it is sticky (/tmp: others may add files but not replace ours)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def untrusted_dir(directory: str | os.PathLike[str]) -> str | None:
    """Why a file in ``directory`` could be replaced by someone else; None when it cannot."""
    directory = Path(directory)
    try:
        st = os.stat(directory)
    except OSError as e:
        return f"cannot check the directory {directory}: {e.strerror}"
    sticky = bool(st.st_mode & stat.S_ISVTX)
    if st.st_uid not in (os.geteuid(), 0) and not sticky:
        return (
            f"the directory {directory} belongs to uid {st.st_uid}, who could replace "
            "its files: use a directory of your own"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky:
        return (
            f"the directory {directory} is writable by others (mode "
            f"{stat.S_IMODE(st.st_mode):o}), who could replace its files: use a directory "
            "only you can write"
        )
    return None
