"""Workload profiles: what the application does and what the answer must satisfy.

A profile is a small TOML file (or one table of a preset file) that becomes a
:class:`fsadvisor.domain.Profile`. The workload can be written in plain words
(``[workload]``) or with fio's own option names (``[fio]``); both map to the same
:class:`~fsadvisor.domain.Workload`, and giving one field both ways with different
values is an error rather than a silent choice. Everything a user can get wrong is
reported as one :class:`~fsadvisor.errors.ProfileError` line naming file, field and
problem, e.g. ``profile oltp.toml: workload.read_pct = 140 is out of range 0..100``.

Format::

    name = "oltp"                 # optional; defaults to the file stem
    description = "Postgres-style OLTP"
    source = "practical preset: ..."   # or "seed 004, Table 1"
    fio_job = "filebench-oltp.fio"     # optional runner/ job file that reproduces it
    tags = ["database"]                # optional

    [workload]                    # descriptive keys ...
    read_pct = 70                 # 0..100 (reads as a share of data I/O)
    pattern = "random"            # random | sequential
    request_size = "8k"           # bytes or 4k/128K/1M ... (binary units, like fio)
    jobs = 16                     # 1..4096 threads/processes
    queue_depth = 1               # 1..4096 outstanding I/Os per job
    fsync = "per_transaction"     # none | every_n | per_transaction
    fsync_every = 1               # writes per fsync (every_n: required; per_transaction: default 1)
    direct = false                # O_DIRECT (true) or page cache (false)
    ioengine = "psync"            # any fio ioengine
    working_set = "64G"           # bytes touched; default file_size * files
    files = 1                     # number of files
    file_size = "64G"             # mean file size; default working_set / files
    file_size_max = "64G"         # optional, >= file_size
    metadata = { create = 0.0, stat = 0.0, delete = 0.0 }   # fractions of all ops, sum <= 1
    dir_shape = "flat"            # flat | deep (default: deep when dir_depth > 1)
    dir_depth = 1                 # mean directory depth, 0..64 (seed 004 Table 1 has 0.3..3.6)
    op = "transaction"            # what one "operation" is: io | file | db_op | transaction
    rank_by = "ops"               # ops | bytes (default: bytes for sequential >= 128 KiB
                                  # without metadata, else ops)

    [fio]                         # ... OR fio-style keys, with fio's meaning
    rw = "randrw"                 # read write randread randwrite rw randrw filecreate filestat filedelete
    bs = "8k"
    iodepth = 1
    numjobs = 16
    rwmixread = 70
    fsync = 1                     # fio fsync=N: fsync every N writes (0: never)
    direct = 0
    ioengine = "psync"
    nrfiles = 1
    filesize = "64G"              # also "4k-16k": a uniform range (mean and max)
    size = "64G"                  # fio's size: the working set

    [constraints]
    min_iops = 5000               # optional floors/ceilings on the answer
    min_mb_s = 200
    max_p99_ms = 5
    durability = true             # must survive power loss (fsync'd data is never lost)
    features = ["snapshots"]      # snapshots | checksums | compression
    plp = "unknown"               # yes | no | unknown: drive has power-loss protection
    allow_risky = false           # accept durability hazards explicitly

A preset file holds either one profile in that form or many as ``[profiles.<name>]``
tables, each with the same structure (``[profiles.<name>.workload]`` ...);
``load_profile("file.toml:NAME")`` (:mod:`.presets`) picks one of many. ``workload_from_dict`` takes the
workload keys of both forms in one flat table (as datasets/workloads.toml does): there
``fsync`` is fio's ``fsync=N`` when an integer and the descriptive mode when a string.

Normalisation, so that equal workloads compare equal however they were written: a mixed
``rw``/``randrw`` with 100% or 0% reads becomes the pure mode; for pure modes ``rwmixread``
is fio's default 50 (fio ignores it there); a metadata ``rw`` (filecreate ...) is also the
fio ioengine that runs it, and its default ``op`` is "file".
"""

from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from fsadvisor.domain import METADATA_MODES, RW_MODES, Constraints, FsyncMode, Profile, Workload
from fsadvisor.errors import ProfileError, one_line
from fsadvisor.infra.resources import read_toml
from fsadvisor.sizes import format_size, parse_size
from fsadvisor.profiles.write import toml_string

PATTERNS = ("random", "sequential")
FSYNC_MODES = ("none", "every_n", "per_transaction")
PLP_VALUES = ("yes", "no", "unknown")
FEATURES = ("snapshots", "checksums", "compression")
DIR_SHAPES = ("flat", "deep")
OPS = ("io", "file", "db_op", "transaction")
RANK_BY = ("ops", "bytes")
# fio 3.33's engines that make sense for a filesystem workload (``fio --enghelp``), plus
# the metadata engines that double as our metadata ``rw`` values.
IOENGINES = (
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "io_uring",
    "libaio",
    "posixaio",
    "mmap",
    "splice",
    "null",
    "filecreate",
    "filestat",
    "filedelete",
)

KIB = 1 << 10
MIB = 1 << 20
PIB = 1 << 50
# fio accepts far larger, but a request over 64 MiB or a working set over 1 PiB is a typo
# in a profile for one SSD, not a workload.
BS_RANGE = (1, 64 * MIB)
BYTES_RANGE = (1, PIB)
JOBS_RANGE = (1, 4096)
NRFILES_RANGE = (1, 100_000_000)
FSYNC_EVERY_RANGE = (0, 1_000_000)
DIR_DEPTH_RANGE = (0.0, 64.0)
MAX_KEY_DEPTH = 32
# O_DIRECT transfers whole logical blocks, and no block device has blocks under 512 bytes:
# a direct bs below 512 or off a 512 multiple fails with EINVAL (fio 3.33 here: bs=1000
# direct=1 -> "first direct IO errored", tests/fixtures/fio/fio-3.33-error-direct-einval.out).
DIRECT_MIN_BS = 512
# Sequential requests this large are bandwidth work: ranked by bytes per joule.
BYTES_RANK_MIN_BS = 128 * KIB

DESCRIPTIVE_KEYS = (
    "read_pct",
    "pattern",
    "request_size",
    "jobs",
    "queue_depth",
    "fsync",
    "fsync_every",
    "direct",
    "ioengine",
    "working_set",
    "files",
    "file_size",
    "file_size_max",
    "metadata",
    "create_frac",
    "stat_frac",
    "delete_frac",
    "dir_shape",
    "dir_depth",
    "op",
    "rank_by",
)
FIO_KEYS = (
    "rw",
    "bs",
    "iodepth",
    "numjobs",
    "rwmixread",
    "fsync",
    "direct",
    "ioengine",
    "nrfiles",
    "filesize",
    "size",
)
# Workload's own field names, so ``workload_from_dict(w.to_dict()) == w``.
FIELD_KEYS = (
    "bs_bytes",
    "fsync_mode",
    "working_set_bytes",
    "file_size_bytes",
    "file_size_max_bytes",
)
# Carried by datasets/workloads.toml rows next to the workload; not part of it.
IGNORED_FLAT_KEYS = ("description", "source")
FLAT_KEYS = tuple(dict.fromkeys(DESCRIPTIVE_KEYS + FIO_KEYS + FIELD_KEYS + IGNORED_FLAT_KEYS))
METADATA_KEYS = ("create", "stat", "delete")

PROFILE_KEYS = (
    "name",
    "description",
    "source",
    "fio_job",
    "tags",
    "workload",
    "fio",
    "constraints",
)
CONSTRAINT_KEYS = (
    "min_iops",
    "min_mb_s",
    "max_p99_ms",
    "durability",
    "features",
    "plp",
    "allow_risky",
)


# ---------------------------------------------------------------- error formatting


def show_value(value: Any) -> str:
    """A value as the user wrote it (TOML-ish), on one short line."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = toml_string(value)
    elif isinstance(value, int) and value.bit_length() > 128:
        text = f"<{value.bit_length()}-bit integer>"  # repr fails beyond 4300 digits
    else:
        text = repr(value)
    text = text.replace("\n", " ").replace("\r", " ")
    return text if len(text) <= 60 else text[:57] + "..."


class _Where:
    """Names the place of an error: ``profile oltp.toml`` plus a field prefix."""

    def __init__(self, origin: str, prefix: str = ""):
        self.origin = origin
        self.prefix = prefix

    def sub(self, prefix: str) -> "_Where":
        return _Where(self.origin, self.prefix + prefix)

    def field(self, key: str) -> str:
        return self.prefix + key

    def fail(self, key: str, value: Any, problem: str) -> ProfileError:
        return ProfileError(
            one_line(f"{self.origin}: {self.field(key)} = {show_value(value)} {problem}")
        )

    def fail_key(self, key: str, problem: str) -> ProfileError:
        return ProfileError(one_line(f"{self.origin}: {self.field(key)} {problem}"))

    def fail_plain(self, problem: str) -> ProfileError:
        return ProfileError(one_line(f"{self.origin}: {problem}"))


def _unknown_key(where: _Where, key: Any, known: Iterable[str]) -> ProfileError:
    key_s = str(key)
    close = difflib.get_close_matches(key_s, list(known), n=3, cutoff=0.7)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return where.fail_key(
        show_value(key_s) if not key_s.isidentifier() else key_s, f"is not a known key{hint}"
    )


# ---------------------------------------------------------------- typed readers


def _int(where: _Where, key: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise where.fail(key, v, "must be an integer")
    if not lo <= v <= hi:
        raise where.fail(key, v, f"is out of range {lo}..{hi}")
    return v


def _float(where: _Where, key: str, v: Any, lo: float, hi: float | None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise where.fail(key, v, "must be a number")
    try:
        f = float(v)
    except OverflowError:  # an integer beyond float range
        f = math.inf
    if math.isnan(f) or f < lo or (hi is not None and f > hi) or math.isinf(f):
        rng = f"{lo:g}..{hi:g}" if hi is not None else f">= {lo:g}"
        raise where.fail(key, v, f"is out of range {rng}")
    return f


def _bool(where: _Where, key: str, v: Any, allow_01: bool = False) -> bool:
    if isinstance(v, bool):
        return v
    if allow_01 and isinstance(v, int) and v in (0, 1):
        return bool(v)
    raise where.fail(key, v, "must be true or false" + (" (or 0/1)" if allow_01 else ""))


def _choice(where: _Where, key: str, v: Any, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if not isinstance(v, str) or v not in choices:
        hint = ""
        if isinstance(v, str):
            close = difflib.get_close_matches(v, choices, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
        raise where.fail(key, v, f"must be one of {', '.join(choices)}{hint}")
    return v


def _size(where: _Where, key: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise where.fail(key, v, 'must be a size such as 4096 or "4k"')
    try:
        n = parse_size(v)
    except (ValueError, OverflowError):
        raise where.fail(key, v, "is not a size (use bytes or 4k, 128K, 1M, 64G ...)") from None
    if not lo <= n <= hi:
        raise where.fail(key, v, f"is out of range {format_size(lo)}..{format_size(hi)}")
    return n


def _size_range(where: _Where, key: str, v: Any) -> tuple[int, int | None]:
    """fio's ``filesize`` is a size or a ``lo-hi`` range of uniformly chosen sizes."""
    if isinstance(v, str) and "-" in v:
        lo_s, _, hi_s = v.partition("-")
        lo = _size(where, key, lo_s, *BYTES_RANGE) if lo_s.strip() else None
        hi = _size(where, key, hi_s, *BYTES_RANGE) if hi_s.strip() else None
        if lo is None or hi is None or hi < lo:
            raise where.fail(key, v, "is not a size or a low-high size range")
        return (lo + hi) // 2, hi
    return _size(where, key, v, *BYTES_RANGE), None


# ---------------------------------------------------------------- workload


@dataclass
class _Slot:
    """A canonical fact of a profile, with the key and raw value that set it."""

    value: Any
    field: str  # qualified name of the key that set it
    raw: Any


class _Facts:
    """Canonical facts gathered from any mix of keys; one fact given twice must agree."""

    def __init__(self, where: _Where):
        self.where = where
        self.slots: dict[str, _Slot] = {}

    def set(self, slot: str, value: Any, where: _Where, key: str, raw: Any) -> None:
        old = self.slots.get(slot)
        if old is not None and old.value != value:
            raise where.fail(key, raw, f"contradicts {old.field} = {show_value(old.raw)}")
        if old is None:
            self.slots[slot] = _Slot(value, where.field(key), raw)

    def get(self, slot: str, default: Any = None) -> Any:
        s = self.slots.get(slot)
        return default if s is None else s.value

    def has(self, slot: str) -> bool:
        return slot in self.slots

    def conflict(self, a: str, b: str, problem: str = "contradicts") -> ProfileError:
        sa, sb = self.slots[a], self.slots[b]
        return ProfileError(
            one_line(
                f"{self.where.origin}: {sa.field} = {show_value(sa.raw)} "
                f"{problem} {sb.field} = {show_value(sb.raw)}"
            )
        )


def _read_key(facts: _Facts, where: _Where, key: str, v: Any, style: str) -> None:
    """Record what one key says. ``style``: "desc" ([workload]), "fio" ([fio]) or "flat"."""
    s = facts.set
    if key in ("read_pct", "rwmixread"):
        s(key, _int(where, key, v, 0, 100), where, key, v)
    elif key == "pattern":
        s("random", _choice(where, key, v, PATTERNS) == "random", where, key, v)
    elif key == "rw":
        s("rw", _choice(where, key, v, RW_MODES), where, key, v)
    elif key in ("request_size", "bs", "bs_bytes"):
        if isinstance(v, str) and ("," in v or ":" in v):
            raise where.fail(key, v, "gives several sizes; one request size per profile")
        s("bs", _size(where, key, v, *BS_RANGE), where, key, v)
    elif key in ("jobs", "numjobs"):
        s("numjobs", _int(where, key, v, *JOBS_RANGE), where, key, v)
    elif key in ("queue_depth", "iodepth"):
        s("iodepth", _int(where, key, v, *JOBS_RANGE), where, key, v)
    elif key == "fsync":
        if style == "fio" or (style == "flat" and not isinstance(v, str)):
            s("fsync_every", _int(where, key, v, *FSYNC_EVERY_RANGE), where, key, v)  # fio fsync=N
        else:
            s("fsync_mode", _choice(where, key, v, FSYNC_MODES), where, key, v)
    elif key == "fsync_mode":
        s("fsync_mode", _choice(where, key, v, FSYNC_MODES), where, key, v)
    elif key == "fsync_every":
        s("fsync_every", _int(where, key, v, *FSYNC_EVERY_RANGE), where, key, v)
    elif key == "direct":
        s("direct", _bool(where, key, v, allow_01=True), where, key, v)
    elif key == "ioengine":
        s("ioengine", _choice(where, key, v, IOENGINES), where, key, v)
    elif key in ("working_set", "size", "working_set_bytes"):
        s("working_set", _size(where, key, v, *BYTES_RANGE), where, key, v)
    elif key in ("files", "nrfiles"):
        s("nrfiles", _int(where, key, v, *NRFILES_RANGE), where, key, v)
    elif key == "filesize":
        mean, mx = _size_range(where, key, v)
        s("file_size", mean, where, key, v)
        if mx is not None:
            s("file_size_max", mx, where, key, v)
    elif key in ("file_size", "file_size_bytes"):
        s("file_size", _size(where, key, v, *BYTES_RANGE), where, key, v)
    elif key in ("file_size_max", "file_size_max_bytes"):
        if v is not None:  # Workload.to_dict() carries None for "no maximum"
            s("file_size_max", _size(where, key, v, *BYTES_RANGE), where, key, v)
    elif key == "metadata":
        if not isinstance(v, Mapping):
            raise where.fail(
                key, v, "must be a table like { create = 0.1, stat = 0.2, delete = 0.1 }"
            )
        sub = where.sub("metadata.")
        for mk, mv in v.items():
            if mk not in METADATA_KEYS:
                raise _unknown_key(sub, mk, METADATA_KEYS)
            s(f"{mk}_frac", _float(sub, mk, mv, 0.0, 1.0), sub, mk, mv)
    elif key in ("create_frac", "stat_frac", "delete_frac"):
        s(key, _float(where, key, v, 0.0, 1.0), where, key, v)
    elif key == "dir_shape":
        s("dir_shape", _choice(where, key, v, DIR_SHAPES), where, key, v)
    elif key == "dir_depth":
        s("dir_depth", _float(where, key, v, *DIR_DEPTH_RANGE), where, key, v)
    elif key == "op":
        s("op", _choice(where, key, v, OPS), where, key, v)
    elif key == "rank_by":
        s("rank_by", _choice(where, key, v, RANK_BY), where, key, v)
    elif key in IGNORED_FLAT_KEYS:
        pass
    else:  # pragma: no cover - callers check key sets first
        raise _unknown_key(where, key, FLAT_KEYS)


def _mix(facts: _Facts) -> tuple[str, int]:
    """rw and rwmixread from rw/pattern/read_pct/rwmixread, whichever were given."""
    rw = facts.get("rw")
    if rw is None and facts.get("ioengine") in METADATA_MODES:
        rw = facts.get("ioengine")  # fio runs metadata jobs as ioengine=filecreate ...
    elif facts.get("ioengine") in METADATA_MODES and facts.get("ioengine") != rw:
        raise facts.conflict("ioengine", "rw")
    if rw in METADATA_MODES:
        derived = 100 if rw == "filestat" else 0
        if facts.has("read_pct") and facts.get("read_pct") != derived:
            raise facts.conflict("read_pct", "rw" if facts.has("rw") else "ioengine")
        return rw, 50
    if rw is not None:
        random = rw.startswith("rand")
        if facts.has("random") and facts.get("random") != random:
            raise facts.conflict("random", "rw")
        if rw in ("rw", "randrw"):
            if (
                facts.has("read_pct")
                and facts.has("rwmixread")
                and facts.get("read_pct") != facts.get("rwmixread")
            ):
                raise facts.conflict("read_pct", "rwmixread")
            pct = facts.get("rwmixread", facts.get("read_pct", 50))
        else:
            pct = 100 if rw in ("read", "randread") else 0
            if facts.has("read_pct") and facts.get("read_pct") != pct:
                raise facts.conflict("read_pct", "rw")
    else:
        random = facts.get("random", True)
        if (
            facts.has("read_pct")
            and facts.has("rwmixread")
            and facts.get("read_pct") != facts.get("rwmixread")
        ):
            raise facts.conflict("read_pct", "rwmixread")
        pct = facts.get("read_pct", facts.get("rwmixread", 50))
    prefix = "rand" if random else ""
    if pct == 100:
        return prefix + "read", 50
    if pct == 0:
        return prefix + "write", 50
    return ("randrw" if random else "rw"), pct


def _fsync(facts: _Facts) -> tuple[FsyncMode, int]:
    mode = facts.get("fsync_mode")
    every = facts.get("fsync_every")
    if mode is None:
        every = every or 0
        return ("every_n" if every > 0 else "none"), every
    if mode == "none":
        if every:
            raise facts.conflict("fsync_mode", "fsync_every")
        return "none", 0
    if every is None:
        if mode == "every_n":
            s = facts.slots["fsync_mode"]
            raise ProfileError(
                one_line(
                    f"{facts.where.origin}: {s.field} = {show_value(s.raw)} "
                    f"needs fsync_every = N (writes per fsync, >= 1)"
                )
            )
        return mode, 1  # one fsync per transaction's write
    if every == 0:
        raise facts.conflict("fsync_mode", "fsync_every")
    return mode, every


def _build_workload(items: Iterable[tuple[_Where, str, Any, str]], origin: _Where) -> Workload:
    facts = _Facts(origin)
    for where, key, value, style in items:
        _read_key(facts, where, key, value, style)

    rw, rwmixread = _mix(facts)
    fsync_mode, fsync_every = _fsync(facts)

    nrfiles = facts.get("nrfiles", 1)
    ws, fsz = facts.get("working_set"), facts.get("file_size")
    if ws is None and fsz is None:
        ws = Workload.working_set_bytes
    if fsz is None:
        fsz = max(1, ws // nrfiles)  # fio's size= is shared among nrfiles files
    if ws is None:
        ws = fsz * nrfiles
        if ws > BYTES_RANGE[1]:
            raise facts.conflict(
                "file_size",
                "nrfiles",
                f"gives a working set over {format_size(BYTES_RANGE[1])} with",
            )
    fmax = facts.get("file_size_max")
    if fmax is not None and fmax < fsz:
        if facts.has("file_size"):
            raise facts.conflict("file_size_max", "file_size", "is smaller than")
        s = facts.slots["file_size_max"]
        raise ProfileError(
            one_line(
                f"{origin.origin}: {s.field} = {show_value(s.raw)} is smaller than the mean file size "
                f"{format_size(fsz)} (working set / files)"
            )
        )

    fracs = {k: facts.get(f"{k}_frac", 0.0) for k in METADATA_KEYS}
    if sum(fracs.values()) > 1.0 + 1e-9:
        given = ", ".join(f"{k} {v:g}" for k, v in fracs.items() if v)
        raise origin.fail_plain(
            f"metadata fractions ({given}) sum to {sum(fracs.values()):g}, more than 1"
        )

    dir_depth = facts.get("dir_depth", Workload.dir_depth)
    dir_shape = facts.get("dir_shape", "deep" if dir_depth > 1 else "flat")

    ioengine = facts.get("ioengine")
    if ioengine is None:
        ioengine = rw if rw in METADATA_MODES else Workload.ioengine
    elif ioengine in METADATA_MODES and rw != ioengine:
        # rw was derived from read_pct/pattern yet the engine only does metadata.
        raise origin.fail_plain(
            f"ioengine = {show_value(ioengine)} runs only {ioengine} jobs, but the workload is {rw}"
        )

    bs = facts.get("bs", Workload.bs_bytes)
    direct = facts.get("direct", Workload.direct)
    if direct and rw not in METADATA_MODES and bs % DIRECT_MIN_BS:
        s = facts.slots["bs"]  # the default 4096 is a multiple, so bs was given
        how = "direct = true" if facts.has("direct") else "direct I/O (the default)"
        problem = (
            f"is below {DIRECT_MIN_BS} bytes"
            if bs < DIRECT_MIN_BS
            else f"is not a multiple of {DIRECT_MIN_BS} bytes"
        )
        raise ProfileError(
            one_line(
                f"{origin.origin}: {s.field} = {show_value(s.raw)} {problem}: with {how} O_DIRECT "
                f"needs whole logical blocks (>= {DIRECT_MIN_BS} B); use direct = false or a "
                f"larger request size"
            )
        )
    meta = sum(fracs.values()) > 0 or rw in METADATA_MODES
    random = rw.startswith("rand") or rw in METADATA_MODES
    default_rank = "bytes" if (not random and not meta and bs >= BYTES_RANK_MIN_BS) else "ops"

    return Workload(
        rw=rw,
        bs_bytes=bs,
        iodepth=facts.get("iodepth", Workload.iodepth),
        numjobs=facts.get("numjobs", Workload.numjobs),
        rwmixread=rwmixread,
        fsync_every=fsync_every,
        fsync_mode=fsync_mode,
        direct=direct,
        ioengine=ioengine,
        working_set_bytes=ws,
        nrfiles=nrfiles,
        file_size_bytes=fsz,
        file_size_max_bytes=fmax,
        create_frac=fracs["create"],
        stat_frac=fracs["stat"],
        delete_frac=fracs["delete"],
        dir_shape=dir_shape,
        dir_depth=dir_depth,
        op=facts.get("op", "file" if rw in METADATA_MODES else Workload.op),
        rank_by=facts.get("rank_by", default_rank),
    )


def _check_mapping(where: _Where, key: str, v: Any) -> Mapping:
    if not isinstance(v, Mapping):
        raise where.fail(key, v, "must be a table")
    return v


def workload_from_dict(d: Mapping[str, Any], *, where: str = "workload") -> Workload:
    """A Workload from one flat mapping of descriptive and/or fio-style keys.

    Also takes Workload's own field names (``bs_bytes``, ``fsync_mode`` ...), the flat
    ``create_frac``/``stat_frac``/``delete_frac`` of datasets/workloads.toml, and ignores
    ``description`` and ``source``. ``fsync`` is fio's ``fsync=N`` when an integer and the
    descriptive mode when a string. Raises ProfileError naming ``where`` and the key.
    """
    origin = _Where(where)
    if not isinstance(d, Mapping):
        raise origin.fail_plain(f"expected a table of workload keys, got {type(d).__name__}")
    for k in d:
        if k not in FLAT_KEYS:
            raise _unknown_key(origin, k, FLAT_KEYS)
    return _build_workload(((origin, k, v, "flat") for k, v in d.items()), origin)


# ---------------------------------------------------------------- constraints and profiles


def _constraints(where: _Where, d: Mapping[str, Any]) -> Constraints:
    for k in d:
        if k not in CONSTRAINT_KEYS:
            raise _unknown_key(where, k, CONSTRAINT_KEYS)
    kw: dict[str, Any] = {}
    for k in ("min_iops", "min_mb_s"):
        if k in d:
            kw[k] = _float(where, k, d[k], 0.0, 1e12)
    if "max_p99_ms" in d:
        kw["max_p99_ms"] = _float(where, "max_p99_ms", d["max_p99_ms"], 0.0, 1e9)
        if kw["max_p99_ms"] == 0:
            raise where.fail("max_p99_ms", d["max_p99_ms"], "must be > 0")
    for k in ("durability", "allow_risky"):
        if k in d:
            kw[k] = _bool(where, k, d[k])
    if "plp" in d:
        kw["plp"] = _choice(where, "plp", d["plp"], PLP_VALUES)
    if "features" in d:
        feats = d["features"]
        if not isinstance(feats, list):
            raise where.fail("features", feats, f"must be a list of {', '.join(FEATURES)}")
        for f in feats:
            _choice(where, "features", f, FEATURES)
        kw["features"] = tuple(dict.fromkeys(sorted(feats)))
    return Constraints(**kw)


def _text(where: _Where, key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise where.fail(key, v, "must be a string")
    return v


def _profile(d: Any, name: str, origin: str, name_is_default: bool = True) -> Profile:
    top = _Where(origin)
    if not isinstance(d, Mapping):
        raise top.fail_plain(f"expected a table, got {type(d).__name__}")
    for k in d:
        if k not in PROFILE_KEYS:
            raise _unknown_key(top, k, PROFILE_KEYS)
    if "name" in d:
        given = _text(top, "name", d["name"])
        if not name_is_default and given != name:
            raise top.fail("name", given, f"differs from the table name {show_value(name)}")
        name = given
    if not isinstance(name, str) or not name.strip() or any(c in name for c in "\n\r\t"):
        raise top.fail("name", name, "must be a non-empty single-line name")

    items: list[tuple[_Where, str, Any, str]] = []
    for table, style, keys in (("workload", "desc", DESCRIPTIVE_KEYS), ("fio", "fio", FIO_KEYS)):
        sub = top.sub(table + ".")
        for k, v in _check_mapping(top, table, d.get(table, {})).items():
            if k not in keys:
                if table == "workload" and k in FIO_KEYS:
                    raise sub.fail_key(k, "is a fio-style key: put it under [fio]")
                if table == "fio" and k in DESCRIPTIVE_KEYS:
                    raise sub.fail_key(k, "is a descriptive key: put it under [workload]")
                raise _unknown_key(sub, k, keys)
            items.append((sub, k, v, style))
    workload = _build_workload(items, top)
    constraints = _constraints(
        top.sub("constraints."), _check_mapping(top, "constraints", d.get("constraints", {}))
    )
    if "workload" not in d and "fio" not in d:
        # Every field has a default, so an empty file would silently mean a 4k randrw.
        raise top.fail_plain("no [workload] or [fio] table")

    fio_job = d.get("fio_job")
    if fio_job is not None:
        fio_job = _text(top, "fio_job", fio_job)
    tags = d.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise top.fail("tags", tags, "must be a list of strings")
    return Profile(
        name=name,
        description=_text(top, "description", d.get("description", "")),
        workload=workload,
        constraints=constraints,
        source=_text(top, "source", d.get("source", "")),
        fio_job=fio_job,
        tags=tuple(tags),
    )


def profile_from_dict(
    d: Mapping[str, Any], name: str = "", *, origin: str | None = None
) -> Profile:
    """One profile from a parsed TOML table ([workload]/[fio]/[constraints] sub-tables).

    ``name`` is the default when the table has no ``name`` key; ``origin`` names the
    source in errors (default ``profile <name>``)."""
    return _profile(d, name, origin or f"profile {name or '<unnamed>'}")


def _profiles_in(doc: Mapping[str, Any], stem: str, origin: str) -> list[Profile]:
    if "profiles" not in doc:
        return [_profile(doc, stem, origin)]
    top = _Where(origin)
    extra = [k for k in doc if k != "profiles"]
    if extra:
        raise top.fail_key(
            extra[0], "must be inside a [profiles.<name>] table when the file holds [profiles]"
        )
    table = _check_mapping(top, "profiles", doc["profiles"])
    if not table:
        raise top.fail_plain("[profiles] holds no profile")
    return [
        _profile(body, name, f"{origin} [profiles.{name}]", name_is_default=False)
        for name, body in table.items()
    ]


def load_profiles(path: str | Path) -> list[Profile]:
    """Every profile in one TOML file (one profile, or many as [profiles.<name>]). The
    profiles are checked and built from it every time it is read."""
    p = Path(path)
    origin = f"profile {p.name}"
    try:
        doc = read_toml(p, lambda raw: _toml_doc(raw, origin))
    except OSError as e:
        raise ProfileError(one_line(f"{origin}: cannot read {p}: {e.strerror or e}")) from None
    return _profiles_in(doc, p.stem, origin)


def _toml_doc(raw: bytes, origin: str) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProfileError(f"{origin}: not UTF-8 text") from None
    return _parse_toml(text, origin)


def profiles_from_toml(text: str, stem: str = "", origin: str = "profile") -> list[Profile]:
    """Parse TOML text holding one or many profiles (``stem`` names a lone one)."""
    return _profiles_in(_parse_toml(text, origin), stem, origin)


def _parse_toml(text: str, origin: str) -> dict[str, Any]:

    for line in text.splitlines():
        head = (
            line.split("=", 1)[0] if "=" in line else line if line.lstrip().startswith("[") else ""
        )
        if head.count(".") > MAX_KEY_DEPTH:
            # tomllib's time and memory grow with the square of a dotted key's depth
            # (20,000 levels took 1.5 GB here); real profiles nest 3 deep.
            raise ProfileError(f"{origin}: a key is nested more than {MAX_KEY_DEPTH} levels deep")
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ProfileError(
            f"{origin}: malformed TOML: arrays or tables nested too deeply"
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(one_line(f"{origin}: malformed TOML: {e}")) from None
    except ValueError as e:  # tomllib lets int()'s 4300-digit limit escape as ValueError
        raise ProfileError(one_line(f"{origin}: unreadable TOML value: {e}")) from None
