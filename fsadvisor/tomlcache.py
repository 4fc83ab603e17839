"""TOML files read through a JSON copy in the cache directory, as Python keeps .pyc files.

Every `recommend` reads five TOML documents (the model's priors and device figures, the
mechanisms' explanations, the profile presets). Parsing the five with tomllib took 1.9 ms,
and importing tomllib ~1.1 ms by -X importtime, of a start-up held to 2x a
numpy import; reading the same data back from their JSON copies (C-parsed) takes 0.2 ms
(measured in-process, 2026-11-25).

A copy is valid only for the file it was made from: the key is the file's device, inode,
size, mtime and ctime (ns), and the copy holds its key, so a file that changed in any way,
was replaced, or collided with another's copy name is a miss and is parsed again. A copy is
written only for a file last changed at least ``SETTLED_S`` ago (git's "racy clean" rule): a
file system stamps times from a coarse clock, so a file rewritten twice within one tick with
the same size would otherwise keep the first version's key. Any later change then stamps a
time after the one in the key.

Nothing here can change an answer: a copy that cannot be read, written or trusted is
ignored, and values JSON cannot carry exactly (TOML dates and times) are never copied.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from pathlib import Path
from typing import Any, Callable

from fsadvisor.host.readfile import read_bounded

# A file must have been left alone this long before its parsed form is kept (see above).
SETTLED_S = 2.0
# A profile or model TOML is kilobytes; a file far larger is not one (and is not read whole).
MAX_FILE_BYTES = 16 << 20
_MAGIC = "fsadvisor-toml-1"


def _key(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _copy_path(path: Path) -> Path:
    from fsadvisor import xdg

    data = os.path.abspath(path).encode("utf-8", "surrogatepass")
    return xdg.cache_dir() / "toml" / f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}.json"


def json_exact(value: Any) -> bool:
    """Whether JSON gives ``value`` back as it is: dicts with string keys, lists, strings,
    bools, ints and floats (NaN and infinities included), nothing else (a TOML date is a
    datetime, which JSON would turn into text or refuse)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and json_exact(v) for k, v in value.items())
    if isinstance(value, list):
        return all(json_exact(v) for v in value)
    return isinstance(value, (str, bool, int, float))


def parse_toml(raw: bytes) -> dict[str, Any]:
    """A TOML file's bytes as tomllib.load reads them (UTF-8, then tomllib.loads); tomllib
    is imported here, on a miss only."""
    import tomllib

    return tomllib.loads(raw.decode())


def load_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``path`` parsed as tomllib.load would, through its cached copy."""
    return load(path, parse_toml)


def load(path: str | os.PathLike[str], parse: Callable[[bytes], dict[str, Any]]) -> dict[str, Any]:
    """The document in ``path``: from its cached copy when the file is unchanged since the
    copy was made, else ``parse(the file's bytes)`` (the caller's own parser and errors),
    kept for next time when the file has settled. OSError from the file itself is the
    caller's, as with open()."""
    p = Path(path)
    st = os.stat(p)
    key = _key(st)
    copy = _copy_path(p)
    try:
        with open(copy, "rb") as f:
            doc = json.loads(f.read())
        if doc.get("magic") == _MAGIC and doc.get("key") == key:
            return doc["data"]
    except (OSError, ValueError, AttributeError, KeyError, TypeError, RecursionError):
        pass  # no copy, another file's, or a damaged one: parse
    raw = read_bounded(p, MAX_FILE_BYTES)  # a regular file only: /dev/zero, a FIFO are refused
    data = parse(raw)
    # Nanoseconds against the file's own nanosecond stamps (exact integers, no float rounding).
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) >= SETTLED_S * 1e9 \
            and _key(os.stat(p)) == key and json_exact(data):
        _write(copy, {"magic": _MAGIC, "key": key, "data": data})
    return data


def _write(copy: Path, doc: dict[str, Any]) -> None:
    tmp = copy.with_name(f".{copy.name}.{os.getpid()}.tmp")
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(doc))
        os.replace(tmp, copy)  # readers see the old copy or the new one, never half of one
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass  # a read-only cache directory only costs a parse next time

