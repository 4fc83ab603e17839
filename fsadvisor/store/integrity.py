"""Whether a store file is intact before anything reads or writes it.

Every command opens the store through :func:`fsadvisor.store.schema.connect`, which runs
SQLite's ``PRAGMA quick_check`` unless the file is exactly as an fsadvisor process last left
it (its size and modification time, and its write-ahead log's, remembered in the user's
cache directory when a store is closed): a store damaged on disk is refused in one line by
``recommend`` as by ``db info``, instead of being read or written further. Before a probe
writes, the full ``PRAGMA integrity_check`` runs (probing.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path

from fsadvisor.errors import StoreError, one_line

# Remembered files, most recent last; a user with more stores than this re-checks some.
_MAX_REMEMBERED = 64


def _checks_file() -> Path:
    # the user directories only when the checks file is first needed (start-up)
    from fsadvisor.infra import xdg

    return xdg.cache_dir() / "store-checks.json"


def signature(path: Path) -> str | None:
    """The file as the filesystem sees it now: size and mtime of the store and its WAL."""
    parts = []
    for p in (path, path.with_name(path.name + "-wal")):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            parts.append("-")
            continue
        except OSError:
            return None
        if p is not path and st.st_size == 0:
            parts.append("-")  # an empty WAL (SQLite creates it at open) holds nothing
            continue
        parts.append(f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")
    return "|".join(parts)


def _load() -> dict[str, str]:
    try:
        doc = json.loads(_checks_file().read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def known_intact(path: Path) -> bool:
    """Whether the file is as an fsadvisor process left it after a check or its own writes."""
    sig = signature(path)
    return sig is not None and _load().get(str(path.resolve())) == sig


def remember(path: Path) -> None:
    """After a close: the file as this process leaves it (its own writes are SQLite's,
    committed whole). A cache that cannot be written only costs a check next time."""
    sig = signature(path)
    if sig is None:
        return
    doc = _load()
    key = str(path.resolve())
    if doc.get(key) == sig:
        return  # a store only read: nothing to write
    doc.pop(key, None)
    doc[key] = sig
    while len(doc) > _MAX_REMEMBERED:
        doc.pop(next(iter(doc)))
    target = _checks_file()
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, target)


def check(conn: sqlite3.Connection, label: str, full: bool = False) -> None:
    """StoreError in one line unless SQLite finds the file's pages consistent."""
    pragma = "integrity_check" if full else "quick_check"
    try:
        rows = conn.execute(f"PRAGMA {pragma}(5)").fetchall()
    except sqlite3.DatabaseError as e:
        raise StoreError(
            f"{label} is damaged ({one_line(e)}); restore it from a backup "
            "(or `fsadvisor db export` what still reads)"
        ) from e
    if rows != [("ok",)]:
        first = one_line(str(rows[0][0])) if rows else "no answer"
        raise StoreError(
            f"{label} is damaged (PRAGMA {pragma}: {first}); nothing more is read "
            "from or written to it: restore it from a backup"
        )
