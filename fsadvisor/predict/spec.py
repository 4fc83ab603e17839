"""The model's option effects, declared once: what each mkfs/mount option and the XFS
allocation-group count does, *through which mechanism*, and where that mechanism applies.

An option does not make a filesystem faster everywhere. It changes one piece of work, and it
matters only where the workload does that work: allocation groups let concurrent allocations
proceed in parallel, so they act through *allocating writers at once* and not at all on reads
or on overwrites of a laid-out file; a smaller block avoids read-modify-write only for I/O
smaller than the default block; a larger inode holds xattrs and small directories inline,
which only metadata work touches. Each effect here is therefore

    feature = size(option) x condition(workload)

with ``size`` how far the option is from its default (0 at the default) and ``condition``
how much of the workload runs through the mechanism (0 where it does not). Where either is 0
the feature is absent: the effect is exactly zero, whatever any data said elsewhere, and the
option can only tie with its default there (the ranking then keeps the default).

An entry names the configuration input it reads, its condition, its prior (mean, sd on the
log scale before the prior width of models/calibration.json, and the reason), and the words
and citation `recommend` prints. features.py builds the option features from this table
alone; the priors (settings.py), the why-lines (rank.py) and the fit cache's key (fit.py) read
it too, so an effect is added or changed here and nowhere else.

Era: the seeds' 2010 rows (an HDD server, first SATA SSDs, 2.6.3x kernels) load on an
``<effect>@2010`` twin as well as on the shared effect, with a prior as wide as the shared
one's: such a row can move today's effect by at most half of what it shows, so a 2010 table
informs an option's direction on NVMe but never makes it a tight figure there.
"""

from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from fsadvisor.domain import Workload


# Workload-shape terms whose cost is the filesystem's own work (its journal commit on fsync,
# its metadata updates). On a device measured here, what one filesystem shows of them is that
# filesystem's: a filesystem row carries the device's and kind's shape terms as offsets and
# its own deviation in ``d:<id>|fs:<fs>*<term>`` (fit.obs_rows). ext4, the baseline, has no
# shared fs: terms, so it gets these deviations by name (features.device_config_features).
FS_MEDIATED = ("fsync", "meta")
# Every shape term a filesystem's cells can show on a device measured here: the mediated ones,
# the other shared fs: interactions ext4 is the baseline of, and buffered I/O (the page
# cache's writeback is the filesystem's). A filesystem row carries the device's and kind's
# shape terms as offsets and deviates through its own d:<id>|fs:<fs>*<term>: what btrfs's
# buffered appends show on a device says nothing of XFS's there.
FS_SHAPE_TERMS = FS_MEDIATED + ("wf", "lc", "rndw", "smallw", "buffered")

# Today's defaults the sizes are measured from (mkfs.xfs(8), mke2fs.conf(5), xfs(5)).
DEFAULT_BLOCK = 4096
DEFAULT_INODE = {"ext": 256, "xfs": 512}
DEFAULT_INODE_2010 = {"ext": 128, "xfs": 256}  # the seeds' 2010 tools
DEFAULT_AG_REF = 4  # mkfs.xfs's count for a 128 MiB - 4 TiB single device
DEFAULT_AG_REF_2010 = 16  # seed 004's baseline
DEFAULT_LOGBUFS = 8  # xfs(5): "The default value is 8 buffers"
DEFAULT_BTRFS_NODESIZE = 16384
ERA_SUFFIX = "@2010"
ERA_2010_KINDS = frozenset({"hdd", "sata-ssd"})  # the seeds' 2010 devices


# ------------------------------------------------------------------ workload conditions


def _files_written(w: Workload) -> float:
    """Share of operations that allocate or free space: creates and deletes, and in a
    file-level workload (op "file": files written whole after their create, or appended)
    its data writes. A block-level or database workload overwrites files laid out before
    it runs (the probe lays them out; a database preallocates), which allocates nothing."""
    if w.rw in ("filecreate", "filedelete"):
        return 1.0
    share = min(1.0, w.create_frac + w.delete_frac)
    if w.op == "file":
        share += (1.0 - w.read_pct / 100.0) * (1.0 - w.metadata_frac)
    return min(1.0, share)


def concurrent_allocation(w: Workload) -> float:
    """Allocating writers at once: the allocating share of operations times log2 of the
    writer threads (a thread allocates one extent at a time, so queue depth adds nothing),
    1 at 64 writers that only allocate; 0 for one writer, for reads and for overwrites."""
    writers = max(w.numjobs, 1)
    return _files_written(w) * math.log2(writers) / 6.0


# Device kinds whose smallest write is a 512-byte sector: a disk. A flash drive programs whole
# pages of 4 KiB or more (NVMe and SATA SSDs; a loop or zram device goes through 4 KiB pages
# of the page cache), so a smaller filesystem block only moves the read-modify-write of a
# sub-4 KiB write from the filesystem into the device.
SUB_PAGE_WRITES = frozenset({"hdd"})


def sub_block_io(w: Workload, kind: str = "hdd") -> float:
    """I/O smaller than the default 4 KiB block (or tiny files), on a device that can write
    less than 4 KiB: what a smaller block spares a read-modify-write of."""
    if kind not in SUB_PAGE_WRITES:
        return 0.0
    if w.metadata_frac >= 1.0:
        return 1.0 if w.file_size_bytes < DEFAULT_BLOCK else 0.0
    small_io = w.bs_bytes < DEFAULT_BLOCK
    tiny_files = w.op == "file" and w.file_size_bytes < DEFAULT_BLOCK
    return 1.0 if small_io or tiny_files else 0.0


def metadata(w: Workload) -> float:
    return w.metadata_frac


def data_reads(w: Workload) -> float:
    """Share of operations that read file data (each may update an access time)."""
    return (1.0 - w.metadata_frac) * w.read_pct / 100.0


def data_writes(w: Workload) -> float:
    return (1.0 - w.metadata_frac) * (1.0 - w.read_pct / 100.0)


def random_writes(w: Workload) -> float:
    return data_writes(w) if w.random else 0.0


def buffered_writes(w: Workload) -> float:
    """Share of operations that write file data through the page cache."""
    return 0.0 if w.direct else data_writes(w)


def data_io(w: Workload) -> float:
    return 1.0 - w.metadata_frac


def syncing(w: Workload) -> float:
    """Journal/log commits forced by the workload: writes that fsync, plus metadata work."""
    fsync = (1.0 - w.read_pct / 100.0) if (w.fsync_every > 0 or w.fsync_mode != "none") else 0.0
    return min(1.0, fsync + w.metadata_frac)


@dataclass(frozen=True)
class Condition:
    """Where a mechanism applies: a function of the workload and the device's kind, 0 where
    the mechanism does no work."""

    key: str
    of: Callable[[Workload, str], float]


def _w(fn: Callable[[Workload], float]) -> Callable[[Workload, str], float]:
    return lambda w, kind: fn(w)


CONDITIONS: dict[str, Condition] = {
    c.key: c
    for c in (
        Condition("alloc", _w(concurrent_allocation)),
        Condition("subblock", sub_block_io),
        Condition("meta", _w(metadata)),
        Condition("rf", _w(data_reads)),
        Condition("wf", _w(data_writes)),
        Condition("rndw", _w(random_writes)),
        Condition("bufw", _w(buffered_writes)),
        Condition("data", _w(data_io)),
        Condition("sync", _w(syncing)),
    )
}


# ------------------------------------------------------------------ the effects


@dataclass(frozen=True)
class Effect:
    """One option's effect through one mechanism. ``reads`` names the configuration input;
    ``size(value, era2010, workload)`` is its distance from the default (0 at the default,
    None when the value does not apply); the feature is size x the condition's value."""

    name: str
    reads: str  # "mkfs:<key>", "mount:<key>" (the option before '='), or "ag_count"
    filesystems: tuple[str, ...]
    condition: str  # a CONDITIONS key
    size: Callable[[str, bool, Workload], float | None]
    prior_mean: float
    prior_sd: float
    why_prior: str
    text: str
    cite: str


def _on(value: str, era2010: bool, w: Workload) -> float:
    return 1.0


def _log2_ratio(
    default: int, *, inverse: bool = False, default_2010: int | None = None
) -> Callable[[str, bool, Workload], float | None]:
    def size(value: str, era2010: bool, w: Workload) -> float | None:
        try:
            v = int(value)
        except (TypeError, ValueError):
            return None
        if v <= 0:
            return None
        ref = default_2010 if (era2010 and default_2010) else default
        return math.log2(ref / v) if inverse else math.log2(v / ref)

    return size


def _logbsize(value: str, era2010: bool, w: Workload) -> float | None:
    # the size parser only for an xfs logbsize option
    from fsadvisor.sizes import parse_size

    try:
        return math.log2(parse_size(value) / 32768) / 3
    except (ValueError, TypeError, ArithmeticError):
        return None


def _commit(value: str, era2010: bool, w: Workload) -> float | None:
    return math.log2(int(value) / 5) / 4 if value.isdigit() and int(value) > 5 else None


def _ag_log(value: str, era2010: bool, w: Workload | None = None) -> float | None:
    ref = DEFAULT_AG_REF_2010 if era2010 else DEFAULT_AG_REF
    return math.log2(int(value) / ref) if int(value) > 0 else None


def _ag_curve(value: str, era2010: bool, w: Workload) -> float | None:
    r = _ag_log(value, era2010)
    return None if r is None else r * r / 4.0


def _blk_below_io(value: str, era2010: bool, w: Workload) -> float | None:
    """How many halvings of the 4 KiB block the I/O (or the tiny file) can use: a 2 KiB block
    spares a 2 KiB write its read-modify-write, a 1 KiB block spares it nothing more."""
    try:
        block = int(value)
    except (TypeError, ValueError):
        return None
    if block <= 0 or block >= DEFAULT_BLOCK:
        return None
    unit = min(w.bs_bytes, DEFAULT_BLOCK)
    if w.op == "file" or w.metadata_frac >= 1.0:
        unit = min(unit, max(w.file_size_bytes, 512))
    return math.log2(DEFAULT_BLOCK / max(block, unit))


# Compression's CPU work per byte by algorithm, relative to zstd level 1-3 (btrfs's zstd
# default is level 3; f2fs's lz4 is of lzo's class). Ordinal, from btrfs(5)'s description
# ("LZO: faster compression and decompression than ZLIB ... ZSTD: compression comparable to
# zlib with higher compression/decompression speeds"): the scale of the effect is fitted
# (opt:compress*), this only says which algorithm does more of it. Higher zstd levels cost
# more per level step; zlib's default level 3 costs about twice zstd:3.
COMPRESS_WORK = {"lzo": 0.5, "lz4": 0.5, "zstd": 1.0, "zlib": 2.0, "lzo-rle": 0.5}


def _compress_work(value: str, era2010: bool, w: Workload) -> float | None:
    """``compress`` (zlib, btrfs's bare default), ``compress=zstd:5``, ``lzo``, ``no``..."""
    alg, _, level = (value or "zlib").partition(":")
    if alg in ("no", "none", "off"):
        return None
    work = COMPRESS_WORK.get(alg)
    if work is None:
        return 1.0
    if alg == "zstd" and level.isdigit() and int(level) > 3:
        work *= 1.0 + (int(level) - 3) / 6.0
    return work


# The prior every option starts from: centred on "no effect", as wide as the option's family.
NEUTRAL = "no effect unless the data show one"
OPT_SD = 0.35  # priors.toml's "opt:" width: an option plausibly moves a metric by +-40%
AG_SD = 0.25

EFFECTS: tuple[Effect, ...] = (
    # ---- block size
    Effect(
        "opt:blk_small*subblock",
        "mkfs:block_size",
        ("ext4", "ext3", "ext2", "xfs"),
        "subblock",
        _blk_below_io,
        0.0,
        OPT_SD,
        NEUTRAL,
        "a smaller block avoids read-modify-write of partial blocks for I/O smaller than "
        "4 KiB on a disk, and stores tiny files in fewer bytes (a flash drive programs "
        "4 KiB pages whatever the block)",
        "seed 004 §5.5 and Table 2 (2 KB OLTP pages); mkfs.xfs(8): 4 KiB suits almost everything",
    ),
    Effect(
        "opt:blk_small*alloc",
        "mkfs:block_size",
        ("ext4", "ext3", "ext2", "xfs"),
        "alloc",
        _log2_ratio(DEFAULT_BLOCK, inverse=True),
        0.0,
        OPT_SD,
        NEUTRAL,
        "a smaller block means more blocks to allocate and map per file written",
        "seed 004 Table 2 (blk1k, blk2k on fileserver/varmail)",
    ),
    Effect(
        "opt:blk_small*bufw",
        "mkfs:block_size",
        ("ext4", "ext3", "ext2"),
        "bufw",
        _log2_ratio(DEFAULT_BLOCK, inverse=True),
        0.0,
        OPT_SD,
        NEUTRAL,
        "ext4's buffered writes keep one buffer head per block of a page: a 1 KiB block is "
        "four per page to map, dirty and write back (XFS's iomap path keeps none)",
        "reference matrix (RAM-backed loop): 64 KiB buffered appends with fsync, ext4 with "
        "1 KiB blocks at half the rate of 4 KiB, XFS within 2%",
    ),
    # ---- inode size: inline xattrs, small directories and extent maps
    Effect(
        "opt:isz_large*meta",
        "mkfs:inode_size",
        ("ext4", "ext3", "ext2", "xfs"),
        "meta",
        lambda v, era, w: None,
        0.0,
        OPT_SD,  # size set per family in option_features
        NEUTRAL,
        "a larger inode holds xattrs, small directories and extent maps inline, which "
        "only metadata work reads and writes",
        "seed 004 Table 2 (isz1k), Table 3; xfs(5)",
    ),
    # ---- access times
    Effect(
        "opt:noatime*rf",
        "mount:noatime",
        ("ext4", "ext3", "ext2", "xfs", "btrfs", "f2fs"),
        "rf",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "noatime skips the inode write an access-time update costs on a read (relatime, "
        "the default, already writes it at most daily)",
        "seed 002 (5-15% of write IOPS); seed 004 Table 2; mount(8) relatime",
    ),
    Effect(
        "opt:noatime*meta",
        "mount:noatime",
        ("ext4", "ext3", "ext2", "xfs", "btrfs", "f2fs"),
        "meta",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "noatime skips directory access-time updates of lookups and listings",
        "seed 004 Table 2; mount(8) relatime",
    ),
    # ---- ext4 journal modes and commits
    Effect(
        "opt:ext.data=writeback*wf",
        "mount:data=writeback",
        ("ext4", "ext3"),
        "wf",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "data=writeback drops data-before-metadata ordering in the ext4 journal (stale "
        "data may appear after a crash)",
        "seed 002 (ext4_tuned), seed 004 Table 2 (wrbck)",
    ),
    Effect(
        "opt:ext.data=writeback*sync",
        "mount:data=writeback",
        ("ext4", "ext3"),
        "sync",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "data=writeback lets a commit skip flushing ordered data first",
        "seed 002 (ext4_tuned); ext4(5)",
    ),
    Effect(
        "opt:ext.data=journal*wf",
        "mount:data=journal",
        ("ext4", "ext3"),
        "wf",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "data=journal writes every data block twice and disables delalloc",
        "seed 002; ext4(5); domain notes (verified: O_DIRECT silently buffered)",
    ),
    Effect(
        "opt:ext.data=journal*sync",
        "mount:data=journal",
        ("ext4", "ext3"),
        "sync",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "data=journal makes an fsync one sequential journal write",
        "ext4(5); seed 002",
    ),
    Effect(
        "opt:ext.journal_async_commit*sync",
        "mount:journal_async_commit",
        ("ext4",),
        "sync",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "journal_async_commit writes the commit block without waiting for the descriptor blocks",
        "ext4(5)",
    ),
    Effect(
        "opt:ext.nojournal*wf",
        "mkfs:journal",
        ("ext4", "ext3", "ext2"),
        "wf",
        lambda v, era, w: 1.0 if str(v).lower() in ("false", "0", "no") else None,
        0.0,
        OPT_SD,
        NEUTRAL,
        "without a journal no metadata is written twice (and a crash needs fsck)",
        "seed 004 Table 2 (ext2 vs ext3); ext4(5)",
    ),
    Effect(
        "opt:commit_long*wf",
        "mount:commit",
        ("ext4", "ext3", "btrfs"),
        "wf",
        _commit,
        0.0,
        OPT_SD,
        NEUTRAL,
        "a longer journal commit interval batches metadata writes (and loses up to that "
        "many seconds on power loss)",
        "seed 002 (commit=60)",
    ),
    # ---- flushes
    Effect(
        "opt:nobarrier*sync",
        "mount:nobarrier",
        ("ext4", "ext3", "btrfs", "f2fs"),
        "sync",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "no cache flush per journal commit/fsync: safe only with power-loss protection",
        "seed 002 (fsync decomposition: 360 us saved)",
    ),
    Effect(
        "opt:nobarrier*wf",
        "mount:nobarrier",
        ("ext4", "ext3", "btrfs", "f2fs"),
        "wf",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "no cache flush for the journal's own commits of written data",
        "seed 002 (fsync decomposition)",
    ),
    # ---- XFS log
    Effect(
        "opt:xfs.logbsize*sync",
        "mount:logbsize",
        ("xfs",),
        "sync",
        _logbsize,
        0.0,
        OPT_SD,
        NEUTRAL,
        "larger XFS log buffers batch log writes for fsync- and metadata-heavy work",
        "seed 002 (xfs logbufs=8,logbsize=256k); xfs(5)",
    ),
    Effect(
        "opt:xfs.logbufs*sync",
        "mount:logbufs",
        ("xfs",),
        "sync",
        _log2_ratio(DEFAULT_LOGBUFS),
        0.0,
        OPT_SD,
        NEUTRAL,
        "more in-memory XFS log buffers let more log writes be in flight (8 is the default)",
        "xfs(5)",
    ),
    # ---- XFS allocation groups
    Effect(
        "ag:log*alloc",
        "ag_count",
        ("xfs",),
        "alloc",
        _ag_log,
        0.0,
        AG_SD,
        NEUTRAL,
        "more XFS allocation groups let more writers allocate at once",
        "seed 004 Table 2 (agcnt64 +23% fileserver) and §5.6; seed 000 §IV.D; xfs(5)",
    ),
    # Allocation concurrency saturates and many small AGs fragment free space: the effect is
    # not monotone (seed 004 Table 2: fileserver ops/J +25% at 64 AGs, +8% at 128).
    Effect(
        "ag:log^2*alloc",
        "ag_count",
        ("xfs",),
        "alloc",
        _ag_curve,
        0.0,
        AG_SD,
        NEUTRAL,
        "too many XFS allocation groups fragment free space",
        "seed 004 Table 2 (fileserver: +23% at 64 AGs, less at 128)",
    ),
    # ---- compression, discard, copy-on-write
    Effect(
        "opt:compress*wf",
        "mount:compress",
        ("btrfs", "f2fs"),
        "wf",
        _compress_work,
        0.0,
        OPT_SD,
        NEUTRAL,
        "compression trades CPU for fewer bytes written (lzo least, zlib most per byte)",
        "btrfs(5); reference matrix (mechanisms): lzo, zstd:1, zlib on RAM-backed devices",
    ),
    Effect(
        "opt:compress*rf",
        "mount:compress",
        ("btrfs", "f2fs"),
        "rf",
        _compress_work,
        0.0,
        OPT_SD,
        NEUTRAL,
        "compressed data costs CPU to decompress on every read",
        "btrfs(5)",
    ),
    Effect(
        "opt:discard*wf",
        "mount:discard",
        ("ext4", "xfs", "btrfs", "f2fs"),
        "wf",
        lambda v, era, w: 1.0 if v != "async" else None,
        0.0,
        OPT_SD,
        NEUTRAL,
        "online discard issues a trim with every free, adding latency to deletes and overwrites",
        "domain notes §4; ext4(5), xfs(5)",
    ),
    Effect(
        "opt:discard_async*wf",
        "mount:discard",
        ("btrfs",),
        "wf",
        lambda v, era, w: 1.0 if v == "async" else None,
        0.0,
        OPT_SD,
        NEUTRAL,
        "asynchronous discard queues trims and issues them later, in the background",
        "btrfs(5) (discard=async default since Linux 6.2)",
    ),
    Effect(
        "opt:btrfs.nodatacow*rndw",
        "mount:nodatacow",
        ("btrfs",),
        "rndw",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "nodatacow updates in place (no fragmentation under random overwrites)",
        "seed 002, allocator section",
    ),
    # nodatacow's other half -- no data checksums for a read to verify -- is the absence of
    # the mechanism m:btrfs.csum_read (mechanisms.py), priced per byte read on the device.
    Effect(
        "opt:btrfs.nodesize*meta",
        "mkfs:nodesize",
        ("btrfs",),
        "meta",
        _log2_ratio(DEFAULT_BTRFS_NODESIZE),
        0.0,
        OPT_SD,
        NEUTRAL,
        "a larger btrfs metadata node holds more items per tree block (and rewrites more "
        "bytes per change)",
        "mkfs.btrfs(8)",
    ),
    Effect(
        "opt:btrfs.nodesize*wf",
        "mkfs:nodesize",
        ("btrfs",),
        "wf",
        _log2_ratio(DEFAULT_BTRFS_NODESIZE),
        0.0,
        OPT_SD,
        NEUTRAL,
        "every copy-on-write data write rewrites tree nodes of this size",
        "mkfs.btrfs(8); seed 002, allocator section",
    ),
    Effect(
        "opt:btrfs.checksum*data",
        "mkfs:checksum",
        ("btrfs",),
        "data",
        lambda v, era, w: None if v == "crc32c" else 1.0,
        0.0,
        OPT_SD,
        NEUTRAL,
        "the checksum algorithm's CPU cost per byte read or written (crc32c is the default)",
        "mkfs.btrfs(8)",
    ),
    Effect(
        "opt:f2fs.lfs*wf",
        "mount:mode",
        ("f2fs",),
        "wf",
        lambda v, era, w: 1.0 if v == "lfs" else None,
        0.0,
        OPT_SD,
        NEUTRAL,
        "f2fs mode=lfs writes only sequentially into clean segments, cleaning on demand",
        "f2fs kernel documentation (Documentation/filesystems/f2fs.rst)",
    ),
    Effect(
        "opt:f2fs.features*meta",
        "mkfs:features",
        ("f2fs",),
        "meta",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "extra inode attributes and checksums cost work on metadata updates",
        "mkfs.f2fs(8)",
    ),
    Effect(
        "opt:f2fs.features*wf",
        "mkfs:features",
        ("f2fs",),
        "wf",
        _on,
        0.0,
        OPT_SD,
        NEUTRAL,
        "the compression feature adds a cluster check to every data write",
        "mkfs.f2fs(8)",
    ),
)

BY_NAME: dict[str, Effect] = {e.name: e for e in EFFECTS}
# A value-less (flag) or valued mount option that is the default, or a mount key the ranking
# does not treat as an option: no effect at all.
NEUTRAL_MOUNT = frozenset(
    {"relatime", "defaults", "rw", "ordered", "data=ordered", "nodiscard", "barrier", "barrier=1"}
)
_MOUNT_KEY_ALIAS = {
    "barrier=0": "nobarrier",
    "fsync_mode=nobarrier": "nobarrier",
    "compress-force": "compress",
    "compress_algorithm": "compress",
}
_FAMILY = {"ext2": "ext", "ext3": "ext", "ext4": "ext"}


def _mount_reads(opt: str) -> tuple[str, str]:
    """(the ``reads`` key a mount option answers to, its value)."""
    if opt in _MOUNT_KEY_ALIAS:
        return _MOUNT_KEY_ALIAS[opt], ""
    key, _, val = opt.partition("=")
    key = _MOUNT_KEY_ALIAS.get(key, key)
    if key == "data":  # data=writeback / data=journal are two options, not one
        return f"data={val}", ""
    return key, val


@functools.lru_cache(maxsize=None)
def _effects_reading(reads: str, fs: str) -> tuple[Effect, ...]:
    return tuple(e for e in EFFECTS if e.reads == reads and fs in e.filesystems)


def option_features(
    fs: str,
    mkfs: Mapping[str, object],
    mount: tuple[str, ...],
    ag_count: int | None,
    w: Workload,
    kind: str,
) -> dict[str, float]:
    """The option features of a configuration for a workload: each declared effect's size
    times its condition, absent where either is 0; a 2010-era row also loads on each
    effect's era twin. An option no entry declares (a configuration from --config) gets a
    term named after it on any work, as nothing says where it applies
    (tests/unit/test_spec.py: no catalog option is among them)."""
    f: dict[str, float] = {}
    fam = _FAMILY.get(fs, fs)
    era2010 = kind in ERA_2010_KINDS

    def add(effect: Effect, size: float | None) -> None:
        if not size:
            return
        x = size * CONDITIONS[effect.condition].of(w, kind)
        if x:
            f[effect.name] = f.get(effect.name, 0.0) + x
            if era2010:
                twin = effect.name + ERA_SUFFIX
                f[twin] = f.get(twin, 0.0) + x

    for opt in mount:
        if opt in NEUTRAL_MOUNT:
            continue
        reads, val = _mount_reads(opt)
        effects = _effects_reading(f"mount:{reads}", fs)
        if not effects:
            _undeclared(f, f"opt:{fs}.{opt}", w)
            continue
        for e in effects:
            add(e, e.size(val, era2010, w))
    for key, setting in mkfs.items():
        if key == "inode_size":
            ref = (DEFAULT_INODE_2010 if era2010 else DEFAULT_INODE).get(fam)
            try:
                r = (
                    math.log2(int(setting) / ref)
                    if ref and isinstance(setting, (int, float, str))
                    else None
                )
            except (ValueError, ZeroDivisionError):
                r = None
            for e in _effects_reading("mkfs:inode_size", fs):
                add(e, r)
            continue
        effects = _effects_reading(f"mkfs:{key}", fs)
        if not effects:
            _undeclared(f, f"opt:{fs}.mkfs.{key}={setting}", w)
            continue
        for e in effects:
            add(e, e.size(str(setting), era2010, w))
    if fs == "xfs" and ag_count:
        for e in _effects_reading("ag_count", fs):
            add(e, e.size(str(ag_count), era2010, w))
    return f


def _undeclared(f: dict[str, float], name: str, w: Workload) -> None:
    x = data_io(w) + w.metadata_frac  # any work at all: nothing says where it applies
    if x:
        f[name + "*any"] = x


def effect_of(feature: str) -> Effect | None:
    """The declared effect a model term belongs to (its era twin and its power twin too)."""
    name = feature[4:] if feature.startswith("pwf:") else feature
    if name.endswith(ERA_SUFFIX):
        name = name[: -len(ERA_SUFFIX)]
    return BY_NAME.get(name)


def prior(name: str) -> tuple[float, float] | None:
    """(mean, sd) of a declared effect's coefficient (before the prior width), its era twin's
    (mean 0, as wide as the effect's own), or None for a name this table does not declare."""
    if name.endswith(ERA_SUFFIX):
        e = BY_NAME.get(name[: -len(ERA_SUFFIX)])
        return (0.0, e.prior_sd) if e else None
    e = BY_NAME.get(name)
    return (e.prior_mean, e.prior_sd) if e else None


@functools.lru_cache(maxsize=1)
def fingerprint() -> str:
    """A hash of the code that turns configurations into features (this table, features.py,
    mechanisms.py, and device_fit.py, which reads the device figures they price with): part of the fit cache's key, so a cached fit of other features is never
    read back as this one's, with nothing to bump by hand."""
    here = Path(__file__).parent
    crc = 0
    for name in ("spec.py", "features.py", "mechanisms.py", "device_fit.py"):
        crc = zlib.crc32((here / name).read_bytes(), crc)
    return f"{crc:08x}"
