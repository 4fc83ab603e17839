"""Filesystem mechanisms in device terms, shared by every device.

A filesystem does not take "a share" of a device away: it adds work per operation, and how much
that work costs depends on the device. Each mechanism below is a named feature whose *value*
is computed from the workload and the device's own parameters (service times, flush latency)
and whose coefficient is one shared, fitted number with a prior (mean 1 = "the mechanism as
described"). A coefficient fitted on RAM-backed reference devices therefore moves the
prediction for an NVMe drive by that drive's own time shares, not by the same percentage:

    log iops = log roofline(device) + sum_m theta_m * x_m(config, workload, device) + residual

Every extra piece of work is priced as a share of t_op, the bare device's wall time per
operation at the workload's own concurrency (1 / roofline): at queue depth 1 the service time,
at depth 32 a fraction of it. Extra writes are priced in the device's deep-queue terms
(:func:`write_time_us`: the larger of its share of the IOPS ceiling and of the bandwidth), so
the same 16 KiB of scattered metadata is cheap next to a 128 KiB write on a device whose small
random writes run at bandwidth speed (RAM) and dear on one where they do not (a disk).

Each mechanism is one entry of :data:`MECHANISMS`: its value (a small function of the
configuration, workload and device figures, None where the workload does not do that work),
its prior with the reason, and the words and citation `recommend` prints. The priors
(:data:`PRIORS`, settings.py), the why-lines (rank.py), which filesystems count as measured
for a workload (:func:`own_data_terms`) and the fit cache's key (spec.fingerprint hashes
this file) are derived from it, so a mechanism is added or changed there and nowhere else.
Fitted values are recorded in ``models/mechanisms_fit.json`` (mechanism_fit.py): what the
shipped data teach each coefficient, next to its prior; the model refits from the data.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

from fsadvisor.catalog.device_params import HOST_PRIOR, for_submitters
from fsadvisor.domain import FsConfig, Workload

# The request a buffered read or write reaches the device's queue in, bytes: readahead's and
# writeback's merged I/O (128 KiB, the default read_ahead_kb), so a small buffered write
# costs the scheduler a share of a request, a direct one a whole request.
BUFFERED_REQUEST_BYTES = 128 << 10
# Reference per-op CPU cost of a filesystem's I/O path, microseconds (the unit m:cpu scales).
FS_CPU_US = 5.0
# Time a blk-mq I/O scheduler adds per request an operation waits for, microseconds, in
# series (queue depth 1). Measured on a RAM-backed loop, each scheduler against none,
# alternating, 3 rounds (benchmarks/results/scheduler-qd1-2026-11-29.txt): a lone direct
# 4 KiB read or write +1.4-2.3 us under mq-deadline and kyber, +10-13 us under bfq; a
# write with its flush, or ext4's fsync per write (five requests), 2.4-4.2 us more under
# mq-deadline and kyber, 7-8 under bfq: flushes and commit writes cost less each than a
# lone data request, which the fitted coefficient weighs against the probe's own fsync
# cells (6-9% under mq-deadline, datasets/reference/runs-schedulers.csv). An unknown
# scheduler is priced as mq-deadline. They matter on RAM-fast devices and vanish on an HDD.
SCHED_US = {"mq-deadline": 2.0, "kyber": 2.0, "bfq": 8.0}
# One submitting thread's wall time per raw 4K I/O on that machine, microseconds: the RAM-backed
# loop device ran ~200k IOPS at QD32 with one job (datasets/reference/runs.csv, shm-loop raw
# 4k-randread-qd32: 213k-218k), i.e. ~5 us per I/O. Below it the CPU share is not extrapolated.
CPU_FLOOR_US = 5.0
# seed 003's CFQ/Deadline/NOOP map onto blk-mq's bfq/mq-deadline/none (as in features.py).
_SCHED_ALIASES = {"cfq": "bfq", "deadline": "mq-deadline", "noop": "none", "": "none"}
# Metadata written per small CoW overwrite (seed 002: 16-24 KB per 4 KB write; lower end).
COW_META_BYTES = 16 << 10
# CPU time of one metadata operation (create/stat/delete) without fsync, microseconds: the
# creates measured "tens of thousands per second" on this machine; 50 us = 20k/s per core.
META_CPU_US = 50.0
META_CPU_LOG_SD = 0.7
MIB = 1 << 20
# Dependent writes of one log commit besides its flush (the log's blocks, then the write that
# points at them); the fitted coefficient of m:fsync_writers scales the whole wait.
COMMIT_ROUND_TRIPS = 2
# CPU time of one fsync besides the writes and flushes it waits for, microseconds: handing
# the commit to the journal's (or log's) worker thread and being woken when it is done. On
# zram, where a write costs little and a flush nothing, XFS's fsync per 4 KiB write took
# 62 us per op against the bare device's 21 us (datasets/reference/runs.csv,
# 4k-randwrite-fsync1), about 40 us more, of which one commit write explains 15-20; on the
# disk-backed loop the same wake-ups are a small share of a flush. Priced in series: the
# writer waits for it.
FSYNC_CPU_US = 20.0
# Host CPU time per KiB of data under ext4's data=journal (filed into the journal's commit,
# checksummed, written, checkpointed), microseconds, that the writes wait for, beyond the
# second write to the device: the RAM-backed loop's data=journal against plain ext4 less that
# write (128 KiB direct writes from one thread about 0.8 us per KiB; 64 KiB buffered appends
# from four writers with fsync, 11.4k against 61k writes/s, about 0.9 when the journal's one
# thread does that work, twice that were it shared between the cores; there data=journal ran
# 4.9-6.6x below plain ext4, which writing twice does not explain). On zram the second write
# explains the gap by itself: the fitted coefficient weighs the two devices' evidence.
DATA_JOURNAL_US_PER_KIB = 0.8
# The host CPU work of one direct copy-on-write write in btrfs beyond ext4's, microseconds per
# request and per KiB, that the writes wait for (its ordered extent's completion inserts the
# new extent and the data checksums into their trees): the RAM-backed loop's direct writes against
# plain ext4's, 4 KiB at QD32 (62 us per write against 5) and 128 KiB at QD8 (291 against
# 23-34). The per-request figure holds what m:cow prices in device time too (one more
# scattered metadata write per overwrite), which is small on that RAM-backed device.
BTRFS_WRITE_US = 50.0
BTRFS_WRITE_US_PER_KIB = 1.7
# Host CPU time btrfs spends per KiB of buffered data an fsync writes back and logs (the
# delalloc ranges turned into extents, their checksums computed and, with the extent items,
# copied into the log tree), microseconds, in a section the fsyncs of several writers do not
# overlap: the reference matrices' log-append (4 writers, an fsync every 32 buffered 64 KiB
# writes) ran btrfs at 13.1k writes/s on the RAM-backed loop and 11.7k on zram, where ext4
# ran 61k and 20k: a ceiling of its own, near 2.5 ms per 2 MiB fsync on both RAM-fast
# devices. nodatacow ran 16.4k and 11.8k: this is the part it keeps, and the checksums' part
# (BTRFS_FSYNC_CSUM_US_PER_KIB) is what it saves.
BTRFS_FSYNC_US_PER_KIB = 1.0
# Host CPU time per KiB of the checksum part of that section: each buffered data block's
# checksum computed at writeback and its checksum item logged with the extents, which
# nodatacow (nodatasum) has none of. The reference matrices' log-append ran nodatacow at
# x1.11-1.25 btrfs's rate on the RAM-backed loop (1, 2, 4 and 8 writers: 13.1k against
# 16.4k writes/s with 4) and x1.01-1.04 on zram (datasets/reference/runs-mechanisms.csv,
# runs-writers.csv); on the held-out disk-backed loop x1.05-1.16 (fidelity matrices).
BTRFS_FSYNC_CSUM_US_PER_KIB = 0.2
# Host CPU time ext2/3/4's buffered write path spends per filesystem block it writes
# through the page cache, microseconds: a buffer head per block, mapped at write, dirtied,
# and walked again at writeback; XFS maps whole folios through iomap and btrfs through its
# extent maps, without them. The reference matrices' log-append (datasets/reference/
# runs-mechanisms.csv: 64 KiB buffered appends, four writers, an fsync every 32, both cores
# busy, so 2 / rate of CPU per write) put it at
# 0.69 us per block on the RAM-backed loop (ext4 61.0k writes/s, with 1 KiB blocks 30.3k: 48
# more blocks per write) and at 0.58 against XFS (84.9k, 16 blocks per write); on zram
# ext4 ran 19.8k against XFS's 22.7k (0.81 us).
EXT_BUFFERED_US_PER_BLOCK = 0.65
# CPU time btrfs spends verifying one MiB it reads (csum-tree lookups and crc32c of 256 data
# blocks), microseconds: an assumption of its order, scaled by the fitted coefficient.
CSUM_READ_US_PER_MIB = 50.0


@dataclass(frozen=True)
class Ctx:
    """What every mechanism's value is computed from: one configuration's few inputs, the
    workload and the device's (and host's) own figures, worked out once per feature set."""

    fs: str
    nodatacow: bool
    data_journal: bool
    journaled: bool  # False: ext2/3/4 made without a journal (mkfs journal=false)
    sched: str
    w: Workload
    p: Mapping[str, float]
    plp: str
    wf: float  # write share of the data operations
    flush_us: float  # one cache flush on this device (with PLP: the cheap one)
    per_fsync: float  # fsyncs per operation
    t_op: float  # wall time of one operation on the bare device at the workload's concurrency
    cpu_share: float  # 1 / (CPU-sharing threads x t_op), floored: what 1 us of CPU per I/O costs
    host: float  # the host's CPU time per call over the reference machine's
    # The share of an operation's time the CPU is on its critical path (Ctx.cpu_log): 1 in
    # series; for the reads of a deep asynchronous queue on a device whose raw CPU per read
    # was measured, how busy the raw reads kept the busier of the submitting threads and
    # the host's CPUs.
    cpu_critical: float = 1.0
    block_bytes: int = 4096  # the filesystem's block size (mkfs block_size; 4 KiB default)

    @property
    def serial_share(self) -> float:
        """What 1 us of CPU per I/O costs when one thread does it for every writer (a
        journal's commit thread, a log's lock): cpu_share without the threads' sharing,
        floored the same way."""
        return 1.0 / max(self.t_op, CPU_FLOOR_US * self.host)

    def cpu_log(self, us: float) -> float:
        """By how much (log factor) ``us`` more of CPU per I/O stretches an operation's time.
        In series (queue depth 1, a synchronous engine, or no CPU measurement) the op waits
        for it: t_op + us shared by the workload's threads. A read from a deep asynchronous
        queue is mapped and verified while the device serves the others, so only the share
        of that work the rate waits for counts: all of it where the raw reads already kept
        the CPU busy (RAM-backed devices: 90-97% of the host), about a fifth where the device
        is what the queue waits for (the disk-backed loop: 22%; there btrfs, ext4 and XFS
        read within 8% of each other, while CPU priced in series put btrfs at half). A
        first-order interpolation between the two limits (an op that waits for both, and a
        bottleneck device that hides its CPU), so the fitted coefficient still scales CPU
        time where the CPU binds. Writes stay in series: their filesystem work (allocation,
        journal, copy-on-write metadata, completion-side conversion) is ordered with the
        I/O -- on the disk-backed loop, with the host 64% busy at the raw write rate, ext4
        and XFS still wrote 25-33% below it (fidelity.db, 4k-randwrite-qd32: 114.6k raw, 77-85k)."""
        return self.cpu_critical * math.log1p(us * self.cpu_share)


@dataclass(frozen=True)
class Mechanism:
    """One piece of work a filesystem (or scheduler) adds, declared once: its value in this
    device's terms (``value``: None where the workload does not do that work, so the effect
    is exactly zero there), the prior of its coefficient with the reason, and the words and
    citation `recommend` prints. ``per`` "fs": a coefficient shared by every filesystem plus
    each filesystem's deviation (prior ``deviation``, overridden in ``deviations``) and a
    2010-era twin (see :func:`_pooled`); "sched": the same per scheduler, without an era;
    any other: one shared coefficient, with its 2010-era twin.
    ``own_data``: for a workload where it holds, `recommend` counts a filesystem as measured
    only if its own deviation (or its ``fs:<fs>*<fs_term>`` effect) has data.
    ``device_sd``: the prior sd of a measured device's own deviation (``d:<device>|m:...``)
    where it is not priors.toml's "d:|m:" (a level in log units, not a share of a time)."""

    name: str
    value: Callable[[Ctx], float | None]
    prior: tuple[float, float, str]
    text: str
    cite: str
    per: str = ""
    deviation: tuple[float, float, str] | None = None
    deviations: Mapping[str, tuple[float, float, str]] = field(default_factory=dict)
    own_data: Callable[[Workload], bool] | None = None
    fs_term: str = ""
    device_sd: float | None = None


def _data_io(c: Ctx) -> bool:
    return c.w.metadata_frac < 1.0


def _cpu(c: Ctx) -> float | None:
    # CPU work per I/O runs in the submitting thread: numjobs threads share it, up to the
    # host's cores, in the host's own microseconds.
    return -c.cpu_log(FS_CPU_US * c.host) if _data_io(c) else None


def _requests_per_op(c: Ctx) -> float:
    # What passes through the device's request queue per operation: the data request of a
    # direct I/O (buffered I/O reaches the queue at writeback or readahead, merged into
    # requests of about BUFFERED_REQUEST_BYTES) and, per fsync, its flush -- on a filesystem
    # also the inode's write, and with a journal the commit's dependent writes and the
    # commit's own flush (m:fsync, m:flush). On the raw device an fsync is the flush alone.
    w = c.w
    bs = max(w.bs_bytes, 512)
    data = 1.0 if w.direct else min(1.0, bs / BUFFERED_REQUEST_BYTES)
    if c.fs == "raw":
        per_fsync = 1.0
    elif c.journaled:
        per_fsync = 2.0 + COMMIT_ROUND_TRIPS
    else:
        per_fsync = 2.0
    return data + c.per_fsync * per_fsync


def _sched(c: Ctx) -> float | None:
    # The scheduler's work per request (inserting, sorting and dispatching it: SCHED_US),
    # for every request an operation sends: an fsync per write sends several through the
    # queue, so it pays several times what a read does. In series at queue depth 1 (each
    # request inserted and dispatched alone); a deep asynchronous queue hands the block layer
    # its requests in batches (one submit call, one plugged list inserted and dispatched
    # together), so the work per request shrinks with the batch: on the reference RAM-backed
    # loop mq-deadline and kyber cost QD32 reads and writes 0-3% and bfq 5-9%, where an fsync
    # per write lost 6-9% under mq-deadline (datasets/reference/runs-schedulers.csv).
    if not _data_io(c) or c.sched == "none":
        return None
    w = c.w
    batch = float(w.iodepth) if _deep_async(w) else 1.0
    per_request = SCHED_US.get(c.sched, SCHED_US["mq-deadline"])
    return -c.cpu_log(_requests_per_op(c) * per_request * c.host / batch)


def _dispatch(c: Ctx) -> float | None:
    # At a deep asynchronous queue a scheduler holds a batch of requests and dispatches them
    # in its own order (mq-deadline by sector, kyber by its latency domains), where none hands
    # them on as they came. Whether that order serves the device better or worse is the
    # device's own: on the reference RAM-backed loop mq-deadline and kyber moved QD32 random
    # I/O between -3% and +11% of none depending on the filesystem above
    # (datasets/reference/runs-schedulers.csv); later RAM-backed loops served ext4's and XFS's
    # QD32 random writes 8-11% faster under mq-deadline one night and 17-24% slower the next
    # morning (benchmarks/results/adaptive_vs_full-2026-11-30-ram-randwrite-qd32-calib.txt,
    # -dispatch.txt). A level, not a cost: the coefficient is the log change itself. In series
    # (queue depth 1) there is no batch to order and the effect is exactly zero.
    if not _data_io(c) or c.sched == "none" or not _deep_async(c.w):
        return None
    return 1.0


def _meta_share(c: Ctx, share: float) -> float | None:
    # The CPU share of a metadata operation (META_CPU_US of the host's CPU against that plus
    # its commit when fsynced), for ``share`` of the operations.
    if share <= 0:
        return None
    w = c.w
    sync = (
        (c.p["write_latency_us"] + c.flush_us) / w.writes_per_fsync if w.writes_per_fsync else 0.0
    )
    meta_us = META_CPU_US * c.host
    return -share * meta_us / (meta_us + sync)


def _meta_cpu(c: Ctx) -> float | None:
    # The roofline prices a metadata operation at META_CPU_US of the host's CPU (plus a
    # commit when fsynced); the coefficient is the log factor by which the real CPU cost
    # differs, entering in proportion to the CPU share of the op, so a RAM-backed reference
    # device teaches it and an fsync-bound NVMe barely feels it.
    return _meta_share(c, c.w.metadata_frac)


def _deletes(c: Ctx) -> float | None:
    # A delete frees what the file held: ext4 clears bits in a bitmap, XFS returns an extent
    # to its free-space btrees, btrfs drops the extent's references and checksums through its
    # delayed-ref trees. Priced as a metadata operation's CPU share, per filesystem: a create
    # and a delete are not the same work.
    return _meta_share(c, 1.0 if c.w.rw == "filedelete" else c.w.delete_frac)


def _writes_data(c: Ctx) -> bool:
    return c.wf > 0 and _data_io(c)


def _data_write_us(c: Ctx, sequential: bool) -> float:
    return write_time_us(c.p, max(c.w.bs_bytes, 512), sequential=sequential)


def _cow(c: Ctx) -> float | None:
    # Each overwrite rewrites ~16 KiB of tree blocks elsewhere: one more scattered write per
    # data write, priced in this device's own time per op. Random writes only: a sequential
    # stream (an append, a file written whole) extends one extent at a time.
    if not _writes_data(c) or c.fs != "btrfs" or c.nodatacow or not c.w.random:
        return None
    return -math.log1p(c.wf * write_time_us(c.p, COW_META_BYTES) / c.t_op)


def _btrfs_write(c: Ctx) -> float | None:
    # Checksums, extent-tree and delayed-reference work of copy-on-write data, for every
    # direct write request its own ordered extent: host CPU per request and per KiB that the
    # writes wait for (BTRFS_WRITE_US, BTRFS_WRITE_US_PER_KIB, priced as the other CPU work
    # is). nodatacow writes in place without data checksums (or compression): none of it (the
    # reference matrices: 128 KiB direct writes 10-12.7x below ext4 on the RAM-backed loop,
    # nodatacow at 79-94% of ext4). Buffered writes reach btrfs at writeback, merged into large
    # extents whose work many writes share: 64 KiB buffered appends with nodatacow run only
    # x1.26 btrfs's (log-append, same matrices), so this work is not theirs.
    if not _writes_data(c) or c.fs != "btrfs" or c.nodatacow or not c.w.direct:
        return None
    kib = max(c.w.bs_bytes, 512) / 1024
    return -math.log1p(
        c.wf * (BTRFS_WRITE_US + BTRFS_WRITE_US_PER_KIB * kib) * c.host * c.cpu_share
    )


def _btrfs_fsync_serial(c: Ctx) -> float | None:
    # btrfs's fsync of buffered data writes the range back and logs it under the log tree's
    # lock (BTRFS_FSYNC_US_PER_KIB): the other writers' fsyncs wait, so the work is one
    # writer's wall time per operation, not shared by the workload's threads
    # (Ctx.serial_share). Direct writes have no
    # delalloc to write back at fsync (m:btrfs.write prices their CPU).
    w = c.w
    if c.fs != "btrfs" or not c.per_fsync or w.direct or not _writes_data(c):
        return None
    batch_kib = (w.writes_per_fsync or 1) * max(w.bs_bytes, 512) / 1024
    us = c.per_fsync * batch_kib * BTRFS_FSYNC_US_PER_KIB * c.host
    return -math.log1p(us * c.serial_share)


def _btrfs_fsync_csum(c: Ctx) -> float | None:
    # The checksum part of btrfs's fsync section (BTRFS_FSYNC_CSUM_US_PER_KIB), in the same
    # section the other writers' fsyncs wait for. nodatacow has no data checksums.
    w = c.w
    if c.fs != "btrfs" or c.nodatacow or not c.per_fsync or w.direct or not _writes_data(c):
        return None
    batch_kib = (w.writes_per_fsync or 1) * max(w.bs_bytes, 512) / 1024
    us = c.per_fsync * batch_kib * BTRFS_FSYNC_CSUM_US_PER_KIB * c.host
    return -math.log1p(us * c.serial_share)


def _btrfs_csum_read(c: Ctx) -> float | None:
    # btrfs verifies a checksum of every data block it reads: a csum-tree lookup and crc32c,
    # CPU work per byte in the reading thread. nodatacow (nodatasum) has none to verify.
    if c.fs != "btrfs" or c.nodatacow or not _data_io(c) or c.w.read_pct <= 0:
        return None
    us = (c.w.read_pct / 100.0) * max(c.w.bs_bytes, 512) / MIB * CSUM_READ_US_PER_MIB * c.host
    return -c.cpu_log(us)


def _data_journal(c: Ctx) -> float | None:
    # Every data block goes to the journal first (a sequential stream), then home; and the
    # journal's commit handles it once more on the host's CPU: a cost per byte the writes
    # wait for. The commit is the journal's one thread (jbd2), so the workload's writers do
    # not share that work between cores (Ctx.serial_share).
    if not _writes_data(c) or c.fs not in ("ext4", "ext3") or not c.data_journal:
        return None
    kib = max(c.w.bs_bytes, 512) / 1024
    cpu_us = DATA_JOURNAL_US_PER_KIB * kib * c.host
    return -math.log1p(
        c.wf * (_data_write_us(c, sequential=True) / c.t_op + cpu_us * c.serial_share)
    )


def _ext_buffer_heads(c: Ctx) -> float | None:
    # Buffered writes only (direct I/O goes through iomap on ext4 too), a cost per block of
    # each write, shared by the workload's threads as other CPU work is.
    w = c.w
    if c.fs not in ("ext2", "ext3", "ext4") or w.direct or not _writes_data(c):
        return None
    blocks = math.ceil(max(w.bs_bytes, 512) / max(c.block_bytes, 512))
    return -c.cpu_log(c.wf * blocks * EXT_BUFFERED_US_PER_BLOCK * c.host)


def _fsync_base_us(c: Ctx) -> float:
    return max(op_time_us(c.w, c.p), 1e-3) + c.per_fsync * c.flush_us


def _fsync(c: Ctx) -> float | None:
    # The commit write(s) scale with the write latency, the extra flush (below) with the
    # flush latency: cheap with PLP.
    if not c.per_fsync:
        return None
    return -math.log1p(c.per_fsync * c.p["write_latency_us"] / _fsync_base_us(c))


def _fsync_cpu(c: Ctx) -> float | None:
    # The host's CPU per fsync, beside the device time m:fsync and m:flush price: without it
    # the commit write's coefficient, fitted where writes are nearly free, carries the CPU
    # too and overprices every fsync on a device whose writes are not.
    if not c.per_fsync:
        return None
    return -math.log1p(c.per_fsync * FSYNC_CPU_US * c.host / _fsync_base_us(c))


def _fsync_writers(c: Ctx) -> float | None:
    # Several writers fsyncing at once: where a filesystem commits one writer's fsync after
    # another instead of joining them in one commit, each fsync waits for the others'. Of one
    # writer's time per operation, the share ``s`` is its commit (the data written since its
    # last fsync, the log's dependent writes and the flush, in this device's own terms).
    # With n writers it waits for others' commits -- but writers that arrive while a commit
    # is in flight join the next one (btrfs batches its log commits too), so the wait grows
    # with log2(n), not n: 1 + s at two writers, 1 + 2s at four, 1 + 4s at sixteen. Fitted
    # on four writers (the first two reference matrices' log-append) and on 1, 2, 4 and 8
    # (datasets/reference/runs-writers.csv, another host): there no filesystem's appends fell
    # behind with more writers on the RAM-backed classes, btrfs's included.
    w = c.w
    if not c.per_fsync or w.numjobs <= 1:
        return None
    batch = (w.writes_per_fsync or 1) * max(w.bs_bytes, 512)
    commit_us = c.per_fsync * (
        write_time_us(c.p, batch, sequential=True)
        + COMMIT_ROUND_TRIPS * c.p["write_latency_us"]
        + c.flush_us
    )
    share = commit_us / (commit_us + max(op_time_us(w, c.p), 1e-3))
    return -math.log1p(math.log2(w.numjobs) * share)


def _flush(c: Ctx) -> float | None:
    # The journal's (or log's) commit needs its own flush before the commit record; an ext4
    # made without a journal has no commit: its fsync writes the inode in place (m:fsync's
    # write) behind the one flush the bare device's fsync already pays.
    if not c.per_fsync or not c.journaled:
        return None
    return -math.log1p(c.per_fsync * c.flush_us / _fsync_base_us(c))


def _fsyncs(w: Workload) -> bool:
    return w.fsync_every > 0 or w.fsync_mode != "none"


_FS_DEVIATION = "this filesystem's deviation from the shared {}"

# Every mechanism, in the order its features are built.
MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism(
        "m:cpu",
        _cpu,
        (1.0, 0.5, "about 5 us of filesystem code per I/O"),
        "CPU time in the filesystem's code path per I/O: large on RAM-fast devices, "
        "negligible on slow ones",
        "reference matrix (RAM-backed devices), where shipped",
        per="fs",
        deviation=(0.0, 0.3, _FS_DEVIATION.format("CPU cost")),
        deviations={"btrfs": (1.0, 0.5, "btrfs checksums and tree updates on every I/O")},
    ),
    Mechanism(
        "m:sched",
        _sched,
        (1.0, 0.5, "about 2 us of scheduler work per request in series (bfq 8)"),
        "a blk-mq I/O scheduler adds work to every request an operation sends -- an fsync "
        "per write sends several -- noticeable on fast devices, negligible on slow ones",
        "domain notes §5; reference matrix (schedulers on the RAM-backed loop)",
        per="sched",
        deviation=(0.0, 0.3, "this scheduler's deviation from the shared per-request cost"),
        deviations={"bfq": (0.0, 0.5, "bfq's own per-request cost (SCHED_US) is the least known")},
    ),
    Mechanism(
        "m:dispatch",
        _dispatch,
        (0.0, 0.02, "no shared direction: the order serves some devices, costs others"),
        "at a deep queue a scheduler dispatches its batch in its own order, which serves "
        "some devices a few percent better than none and others worse: only a run on the "
        "device says which",
        "reference matrix (schedulers on the RAM-backed loop, QD32: -3% to +11%); live "
        "probes of that class: +11% one night, -17% the next morning",
        per="sched",
        deviation=(0.0, 0.02, "this scheduler's own dispatch order"),
        # Narrow shared terms, a wider device term: what one device's order does says little
        # of another's (the same RAM-backed loop class measured +1.5%, +11% and -17% within
        # a day), so an unmeasured device keeps a few percent either way until its own runs:
        # enough for the adaptive probe to count its mq-deadline cells as contenders
        # (P(best) 0.20-0.22 where they had 0.04-0.06), not so much that every deep-queue
        # probe spends its budget on schedulers.
        device_sd=0.05,
    ),
    Mechanism(
        "m:meta_cpu",
        _meta_cpu,
        (0.0, META_CPU_LOG_SD, "metadata op CPU cost: log factor on META_CPU_US"),
        "a metadata operation without fsync costs CPU and journal work, not device "
        "writes; its CPU cost is fitted",
        "measured on this machine (creates: tens of thousands per second); reference "
        "matrix where shipped",
        per="fs",
        deviation=(0.0, 0.3, _FS_DEVIATION.format("metadata CPU cost")),
        own_data=lambda w: w.metadata_frac > 0,
        fs_term="meta",
    ),
    Mechanism(
        "m:delete",
        _deletes,
        (0.0, 0.3, "a delete costs about what a create does"),
        "a delete frees the file's space -- a bitmap for ext4, free-space btrees for "
        "XFS, extent references and checksums for btrfs -- work a create does not do",
        "reference matrices (meta-delete beside meta-create, RAM-backed loop and zram)",
        per="fs",
        deviation=(0.0, 0.3, _FS_DEVIATION.format("delete cost")),
    ),
    Mechanism(
        "m:cow",
        _cow,
        (1.0, 0.3, "seed 002 allocator section: 16-24 KB of metadata per 4 KB CoW write"),
        "btrfs copy-on-write rewrites extent, checksum and parent tree blocks on every "
        "small overwrite (about 16 KiB of metadata per write); nodatacow avoids it",
        "seed 002, allocator section (16-24 KB per 4 KB); fitted on the reference matrix "
        "where shipped (models/mechanisms_fit.json)",
    ),
    Mechanism(
        "m:btrfs.write",
        _btrfs_write,
        (1.0, 0.5, "about 50 us of CPU per direct write and 1.7 us per KiB"),
        "btrfs's copy-on-write data path (checksums, extent tree, delayed references) "
        "costs CPU work per write and per byte that the writes wait for; nodatacow "
        "skips it",
        "reference matrices: direct writes on the RAM-backed loop (4 KiB at QD32, 128 KiB "
        "at QD8) against ext4; nodatacow at ext4's level there",
    ),
    Mechanism(
        "m:btrfs.fsync_serial",
        _btrfs_fsync_serial,
        (
            1.0,
            0.5,
            "about 1.2 us of host CPU per KiB an fsync writes back and logs, one writer at a time",
        ),
        "btrfs's fsync writes back and logs the buffered data under the log tree's lock: "
        "the other writers' fsyncs wait for that host work, a ceiling of its own on a fast "
        "device",
        "reference matrices (mechanisms): log-append, 4 writers, btrfs at 13.1k writes/s on "
        "the RAM-backed loop and 11.7k on zram against ext4's 61k and 20k (nodatacow "
        "16.4k and 11.8k)",
    ),
    Mechanism(
        "m:btrfs.fsync_csum",
        _btrfs_fsync_csum,
        (1.0, 0.5, "about 0.2 us of host CPU per KiB checksummed and logged at fsync"),
        "btrfs checksums every buffered data block at writeback and logs the checksums "
        "with the extents at fsync, in the section the other writers' fsyncs wait for; "
        "nodatacow has no checksums",
        "btrfs(5) (nodatacow implies nodatasum); reference matrices (mechanisms, writers): "
        "log-append with 1-8 writers, nodatacow x1.11-1.25 btrfs's rate on the RAM-backed "
        "loop, x1.01-1.04 on zram",
    ),
    Mechanism(
        "m:btrfs.csum_read",
        _btrfs_csum_read,
        (1.0, 0.7, "about 50 us of checksum lookup and crc32c per MiB read"),
        "btrfs verifies a checksum of every data block it reads (CPU work per byte, "
        "large for large reads on a fast device); nodatacow has no checksums",
        "btrfs(5) (nodatacow implies nodatasum); reference matrices (mechanisms): 128 KiB "
        "random reads from 4 processes, btrfs about half of ext4's and XFS's rate on "
        "the RAM-backed loop, nodatacow about 1.4x btrfs's",
    ),
    Mechanism(
        "m:data_journal",
        _data_journal,
        (1.0, 0.3, "data=journal writes data twice, and its commit handles each KiB"),
        "data=journal writes every data block twice -- into the journal, then in place -- "
        "and every block passes through the journal's commit, host CPU work the writes "
        "wait for",
        "ext4 documentation; seed 002; reference matrices (RAM-backed loop, zram: "
        "data=journal 1.6-6x below plain ext4 for large writes)",
    ),
    Mechanism(
        "m:ext_buffer_heads",
        _ext_buffer_heads,
        (1.0, 0.5, "about 0.65 us of host CPU per filesystem block of a buffered write"),
        "ext4's buffered writes handle a buffer head for every filesystem block (mapped, "
        "dirtied, written back): host CPU per block that XFS and btrfs do not spend, so "
        "smaller blocks cost more",
        "reference matrices (RAM-backed loop: log-append ext4 61.0k writes/s, 1 KiB blocks "
        "30.3k, XFS 84.9k; zram ext4 19.8k, XFS 22.7k)",
    ),
    Mechanism(
        "m:fsync",
        _fsync,
        (1.0, 0.5, "one journal/log commit write per fsync"),
        "each fsync costs a journal/log commit write, in this device's own write latency",
        "seed 002 (fsync decomposition)",
        per="fs",
        deviation=(0.0, 0.3, _FS_DEVIATION.format("commit cost")),
        # btrfs's own twin is wide: its fsync ran at 0.21x ext4's on one host and 0.54x on
        # another (datasets/reference/runs-writers.csv), so a device's btrfs collapse is
        # btrfs's to take, not the commit cost every filesystem shares.
        deviations={"btrfs": (0.5, 0.8, "btrfs tree log: more than one commit write per fsync")},
        own_data=_fsyncs,
        fs_term="fsync",
    ),
    Mechanism(
        "m:fsync_cpu",
        _fsync_cpu,
        (
            1.0,
            0.5,
            "about 20 us of CPU per fsync (zram: XFS's fsync per write 40 us over the bare device's)",
        ),
        "each fsync costs the host CPU time of handing the commit to the journal's worker "
        "and waking when it is done: large next to a RAM-fast device's writes, small next "
        "to a flush",
        "reference matrices (shm-loop, zram): 4k-randwrite-fsync1 against the raw device",
        per="fs",
        deviation=(0.0, 0.3, _FS_DEVIATION.format("fsync CPU")),
    ),
    Mechanism(
        "m:fsync_writers",
        _fsync_writers,
        (
            0.0,
            0.3,
            "ext4's jbd2 and XFS's log join concurrent writers' fsyncs into one "
            "commit (group commit): no wait for the others",
        ),
        "with several writers fsyncing at once, a filesystem that commits their fsyncs "
        "one after another makes each wait for the others' data and log writes",
        "reference matrices (mechanisms): log-append, 4 writers, on the RAM-backed loop "
        "and zram (btrfs far below ext4 and XFS, with nodatacow and compression too); "
        "(writers): 1, 2, 4 and 8 writers, every filesystem faster with more",
        per="fs",
        deviation=(0.0, 0.3, _FS_DEVIATION.format("commit joining")),
        deviations={
            "btrfs": (1.0, 0.7, "btrfs's tree log syncs concurrent fsyncs largely one at a time")
        },
    ),
    Mechanism(
        "m:flush",
        _flush,
        (1.0, 0.5, "one more cache flush per fsync (journal commit)"),
        "each fsync costs one more device cache flush for the journal commit (cheap "
        "with power-loss protection)",
        "seed 002 (fsync decomposition)",
        per="fs",
        deviation=(0.0, 0.3, _FS_DEVIATION.format("flush cost")),
    ),
)
BY_NAME: dict[str, Mechanism] = {m.name: m for m in MECHANISMS}
_PER_SCHED = frozenset(m.name for m in MECHANISMS if m.per == "sched")


def _priors() -> dict[str, tuple[float, float, str]]:
    out: dict[str, tuple[float, float, str]] = {}
    for m in MECHANISMS:
        out[m.name] = m.prior
        if m.deviation is not None:
            out[m.name + ":"] = m.deviation
        for who, pr in m.deviations.items():
            out[f"{m.name}:{who}"] = pr
    return out


# name -> (prior mean, prior sd, why), derived from MECHANISMS. Prefix match: "m:fsync:"
# covers every filesystem's deviation.
PRIORS: dict[str, tuple[float, float, str]] = _priors()


def describe(feature: str) -> Mechanism | None:
    """The mechanism a model term belongs to: its shared coefficient, a filesystem's or
    scheduler's deviation, their 2010-era twins and power twins."""
    name = feature[4:] if feature.startswith("pwf:") else feature
    name = name.split("@", 1)[0]
    hit = BY_NAME.get(name)
    if hit is None and name.startswith("m:"):
        hit = BY_NAME.get(name.rpartition(":")[0])
    return hit


def own_data_terms(fs: str, w: Workload) -> list[tuple[str, str]]:
    """For a workload: the (fs:<fs>*<term>, m:<mechanism>:<fs>) pairs of which a filesystem
    must have measured at least one for `recommend` to count it as measured (an unmeasured
    filesystem's fsync or metadata cost is the pooled mean of the measured ones)."""
    return [
        (f"fs:{fs}*{m.fs_term}", f"{m.name}:{fs}")
        for m in MECHANISMS
        if m.own_data is not None and m.own_data(w)
    ]


# The 2010-era deviations (see _pooled): wide, so a 2010 table's per-filesystem finding moves
# today's deviation by only 0.3^2 / (0.3^2 + 1.2^2) = 6% of what it shows: its direction
# where nothing today says otherwise, never against the devices measured since
# (settings.ERA_TWIN_WIDTH says what a fifth still let them do).
ERA_2010_SD = 1.2
# spec.ERA_SUFFIX's twin (spec and mechanisms are one layer and import neither the other;
# tests/unit/test_mechanism_registry.py holds them equal)
ERA_SUFFIX = "@2010"


def device_sd(feature: str) -> float | None:
    """The prior sd of a device's own deviation from the mechanism of ``feature`` (an
    ``m:`` name) where the mechanism declares one."""
    m = describe(feature)
    return m.device_sd if m is not None else None


def prior(name: str) -> tuple[float, float] | None:
    if name.endswith(ERA_SUFFIX):
        return (0.0, ERA_2010_SD)
    best = ""
    for prefix in PRIORS:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return (PRIORS[best][0], PRIORS[best][1]) if best else None


def host_factor(p: Mapping[str, float]) -> float:
    """The host's CPU time per call relative to the reference machine's (host/cpu.py): every
    microsecond of CPU work below (FS_CPU_US, SCHED_US, META_CPU_US, CPU_FLOOR_US) is the
    reference machine's and costs this many times as long on the host."""
    return float(p.get("host_cpu_factor", 1.0))


def op_time_us(w: Workload, p: Mapping[str, float]) -> float:
    """The device's own service time of one operation of this mix at queue depth 1."""
    rf = w.read_pct / 100.0
    return rf * p["read_latency_us"] + (1.0 - rf) * p["write_latency_us"]


def _flush_us(p: Mapping[str, float], plp: str) -> float:
    return p["flush_latency_us_plp"] if plp == "yes" else p["flush_latency_us"]


@dataclass(frozen=True)
class _OpTime:
    """One operation of a workload at queue depth 1, in microseconds, as the roofline prices
    it: its data reads, its data writes with their share of the fsyncs' flushes, and (for
    metadata work) one metadata operation with its host CPU part."""

    read_us: float
    write_us: float
    flush_us: float
    meta_us: float
    cpu_us: float
    mf: float

    @property
    def total_us(self) -> float:
        return (1 - self.mf) * (self.read_us + self.write_us) + self.mf * self.meta_us


def _op_time(w: Workload, p: Mapping[str, float], plp: str) -> _OpTime:
    rf = w.read_pct / 100.0
    wf = 1.0 - rf
    flush = _flush_us(p, plp)
    flush_us = (wf / w.writes_per_fsync if w.writes_per_fsync else 0.0) * flush
    meta_us = cpu_us = 0.0
    if w.metadata_frac > 0:
        # A create/stat/delete without fsync is CPU- and journal-bound (tens of thousands per
        # second on this machine), not two synchronous device writes; with fsync it
        # pays a journal commit (one write) and a flush on top.
        cpu_us = META_CPU_US * host_factor(p)
        meta_us = cpu_us + (
            (p["write_latency_us"] + flush) / w.writes_per_fsync if w.writes_per_fsync else 0.0
        )
    return _OpTime(
        rf * p["read_latency_us"],
        wf * p["write_latency_us"] + flush_us,
        flush_us,
        meta_us,
        cpu_us,
        w.metadata_frac,
    )


def host_cpu_share(w: Workload, p: Mapping[str, float], plp: str = "unknown") -> float:
    """The share of an operation's time the roofline prices as host CPU rather than device
    time: a metadata operation's CPU work. A device's level terms (how far its runs sit from
    its figures) apply to the rest only: a create without fsync that never waits for the
    device is not slower because the device's raw I/O ran under its datasheet."""
    t = _op_time(w, p, plp)
    return min(t.mf * t.cpu_us / t.total_us, 1.0) if t.total_us > 0 else 0.0


# How sharply the roofline joins its rates to the bandwidth bound (a soft minimum,
# (a^-4 + b^-4)^(-1/4)): the simulator's knee station joins its time per I/O to the
# bandwidth with the same power, so that the two tell one story for large I/O.
BANDWIDTH_JOIN_POWER = 4.0


def knee_delay_us(latency_us: float, cap_iops: float, power: float) -> float:
    """The part of a queue-depth-1 operation's time that overlaps with the others in flight,
    on a device whose rate at ``c`` in flight is the soft minimum (power ``power``) of c / D
    and its ceiling: D is what makes that rate 1 / latency at c = 1. Power 1 is one server
    behind a fixed delay (every extra I/O in flight adds one ceiling-time: c / (latency +
    (c - 1) / cap)); a large power is ``cap x latency`` independent channels (a sharp
    knee)."""
    floor_us = 1e6 / cap_iops
    if latency_us <= floor_us:
        return latency_us
    return (latency_us**power - floor_us**power) ** (1.0 / power)


def queue_rate(c: float, latency_us: float, cap_iops: float, power: float) -> float:
    """IOPS at ``c`` in flight on a device with this QD1 latency, ceiling and knee shape (the
    roofline's form without a workload: what a calibration's read sweep is fitted to)."""
    d = knee_delay_us(latency_us, cap_iops, power)
    return ((c * 1e6 / d) ** -power + cap_iops**-power) ** (-1.0 / power)


def roofline(w: Workload, p: Mapping[str, float], plp: str = "unknown") -> tuple[float, float]:
    """(iops, share of per-op device latency spent in cache flushes) the bare device could
    sustain for this workload: a soft minimum of the latency-bound (Little's law), IOPS-bound
    and bandwidth-bound rates, on a device with parameters ``p`` (models/devices.toml keys).
    With a measured knee (``knee_power``, a calibration's read sweep) the latency-bound rate
    is the device's own queueing shape (:func:`queue_rate`), anchored at its QD1 latencies.
    Its ceilings are those this workload's submitters see (device_params.for_submitters)."""
    p = for_submitters(p, w)
    rf = w.read_pct / 100.0
    wf = 1.0 - rf
    t = _op_time(w, p, plp)
    c = max(w.concurrency, 1)
    # Buffered writes go to the page cache; the kernel writes them back (its flusher, or the
    # fsync that waits for them) merged and many in flight, whatever the application's own
    # queue depth: the device spends its deep-queue time on them (as write_time_us prices
    # it) -- a random page its share of the IOPS ceiling, a sequential stream only its share
    # of the bandwidth (the bandwidth bound below) -- not a QD1 write latency per write over the
    # application's writers. The flushes stay the application's: each fsync waits for one.
    wb = not w.direct and wf > 0 and w.metadata_frac < 1.0
    wb_us = wf * 1e6 / p["write_iops_cap"] if wb and w.random else 0.0
    k = p.get("knee_power")
    if k:
        # The device's own queueing shape: every I/O's overlapping part over c in flight,
        # joined to the IOPS ceiling with the measured power (metadata keeps the knee).
        dr = knee_delay_us(p["read_latency_us"], p["read_iops_cap"], k) / p["read_latency_us"]
        dw = knee_delay_us(p["write_latency_us"], p["write_iops_cap"], k) / p["write_latency_us"]
        direct_w = 0.0 if wb else (t.write_us - t.flush_us) * dw
        per_op_us = (1 - t.mf) * (
            (t.read_us * dr + direct_w + t.flush_us) / c + wb_us
        ) + t.mf * t.meta_us / min(c, p["parallelism"])
    else:
        # Little's law at the workload's own concurrency, up to the device's parallelism: the
        # read sweep's knee (a calibration fits it) for reads and metadata, and for writes at
        # least what the write ceiling demonstrates in flight (ceiling x QD1 write time): a
        # direct-I/O loop device's QD32 random writes ran at 2.2x what its read knee allows.
        # Joined to the ceiling as sharply as the bandwidth bound is (power 4).
        k = BANDWIDTH_JOIN_POWER
        conc_r = min(c, p["parallelism"])
        conc_w = min(c, max(p["parallelism"], p["write_iops_cap"] * p["write_latency_us"] * 1e-6))
        write_part = t.flush_us / c + wb_us if wb else t.write_us / conc_w
        per_op_us = (1 - t.mf) * (t.read_us / conc_r + write_part) + t.mf * t.meta_us / conc_r
    # The IOPS ceiling bounds the I/O the application issues itself; written-back writes are
    # priced at the deep-queue figures above already.
    inv_cap = rf / p["read_iops_cap"] + (0.0 if wb else wf) / p["write_iops_cap"]
    rates = []
    if per_op_us > 0:
        rates.append(
            ((1e6 / per_op_us) ** -k + inv_cap**k) ** (-1.0 / k) if inv_cap else 1e6 / per_op_us
        )
    if w.metadata_frac < 1.0:
        bw = 1.0 / (rf / p["read_bw_bytes_s"] + wf / p["write_bw_bytes_s"])
        rates.append(bw / max(w.bs_bytes, 512))
    j = BANDWIDTH_JOIN_POWER
    return float(sum(r**-j for r in rates) ** (-1.0 / j)), t.flush_us / t.total_us


def write_time_us(p: Mapping[str, float], nbytes: float, sequential: bool = False) -> float:
    """Device time one write of ``nbytes`` occupies when the device is kept busy (the deep-queue
    figures, not the QD1 latency): its share of the IOPS ceiling or of the bandwidth, whichever
    is larger. A sequential stream (a journal) is merged into large requests, so it pays the
    bandwidth only. This is what makes extra writes cost differently per device: 16 KiB of
    scattered metadata next to a 128 KiB data write is cheap where small random writes run
    at bandwidth speed (RAM) and dear where they do not."""
    by_bw = nbytes / p["write_bw_bytes_s"] * 1e6
    return by_bw if sequential else max(1e6 / p["write_iops_cap"], by_bw)


def features(
    cfg: FsConfig | None,
    w: Workload,
    p: Mapping[str, float],
    plp: str = "unknown",
    era2010: bool = False,
) -> dict[str, float]:
    """The mechanism features of a configuration on a device with parameters ``p``.
    ``era2010``: a row of the 2010-era device kinds (hdd, sata-ssd), whose kernels' per-
    filesystem fsync and metadata paths get their own deviations (see :func:`_pooled`)."""
    if cfg is None:
        return {}
    fs = cfg.fs
    if fs == "raw":
        # The bare device does none of a filesystem's work, but a scheduler still handles
        # its requests: the scheduler's mechanisms and their schedulers' twins only.
        sched = _SCHED_ALIASES.get(cfg.scheduler, cfg.scheduler)
        if sched == "none":
            return {}
        f = _features_of("raw", False, False, False, sched, w, _params_key(p), plp, False, 4096)
        return {k: v for k, v in f.items() if k.partition(":" + sched)[0] in _PER_SCHED}
    # They depend on the configuration only through these six, so a ranking of thousands
    # of candidates computes them a handful of times per workload and device.
    nodatacow = any(m.partition("=")[0] == "nodatacow" for m in cfg.mount)
    sched = _SCHED_ALIASES.get(cfg.scheduler, cfg.scheduler)
    return dict(
        _features_of(
            fs,
            nodatacow,
            "data=journal" in cfg.mount,
            journaled(cfg),
            sched,
            w,
            _params_key(p),
            plp,
            era2010,
            block_bytes(cfg),
        )
    )


def block_bytes(cfg: FsConfig) -> int:
    """The configuration's filesystem block size (mkfs block_size; 4 KiB by default, as
    mkfs.ext4 and mkfs.xfs make it on any device this tool formats)."""
    try:
        return int(cfg.mkfs_dict.get("block_size", 4096))
    except (TypeError, ValueError):  # an unvalidated value from a --config JSON
        return 4096


def journaled(cfg: FsConfig) -> bool:
    """Whether the configuration's filesystem keeps a journal (ext2, and ext3/ext4 made with
    journal=false, do not)."""
    if cfg.fs == "ext2":
        return False
    if cfg.fs not in ("ext3", "ext4"):
        return True
    value = dict(cfg.mkfs).get("journal", True)
    return str(value).lower() not in ("false", "0", "no")


def _params_key(p: Mapping[str, float]) -> tuple:
    # One device's parameters are one dict for a whole ranking: its sorted items are worked
    # out once per dict (kept alive in the memo, so its id is not reused meanwhile).
    hit = _PARAMS_KEYS.get(id(p))
    if hit is not None and hit[0] is p:
        return hit[1]
    if len(_PARAMS_KEYS) > 256:
        _PARAMS_KEYS.clear()
    key = tuple(sorted(p.items()))
    _PARAMS_KEYS[id(p)] = (p, key)
    return key


_PARAMS_KEYS: dict[int, tuple] = {}


@functools.lru_cache(maxsize=4096)
def _features_of(
    fs: str,
    nodatacow: bool,
    data_journal: bool,
    journaled: bool,
    sched: str,
    w: Workload,
    pkey: tuple,
    plp: str,
    era2010: bool,
    block_bytes: int,
) -> dict[str, float]:
    p = dict(pkey)
    wf = 1.0 - w.read_pct / 100.0
    # Wall time of one operation on the bare device at this workload's own concurrency
    # (1 / roofline): what every extra piece of work is a share of. At queue depth 1 it is
    # the service time (plus the flush of an fsync loop); at depth 32 a fraction of it.
    t_op = 1e6 / _roofline_key(w, pkey, plp)
    # The host's own CPU speed and cores (a calibration measures them; otherwise the reference
    # machine's): CPU work is priced in the host's microseconds, so a slow host makes a
    # CPU-heavy filesystem dearer on a fast device and changes nothing where the device is slow.
    h = host_factor(p)
    # Cores that share a workload's per-I/O CPU work (up to its numjobs threads): the host's
    # (a calibration measures them); where the parameters lack them, the reference machine's.
    cores = max(1.0, float(p.get("host_cores", HOST_PRIOR["host_cores"])))
    # numjobs threads share the CPU work per I/O, up to the host's cores, and never less
    # than the reference machine's own per-thread time per raw I/O (CPU_FLOOR_US, in the
    # host's time): the CPU coefficients were learned where an op took that long, and a
    # datasheet's million-IOPS ceiling does not make one thread's filesystem work dearer
    # than anything measured.
    threads = min(max(w.numjobs, 1), cores)
    cpu_share = 1.0 / max(threads * t_op, CPU_FLOOR_US * h)
    c = Ctx(
        fs,
        nodatacow,
        data_journal,
        journaled,
        sched,
        w,
        p,
        plp,
        wf,
        _flush_us(p, plp),
        wf / w.writes_per_fsync if w.writes_per_fsync else 0.0,
        t_op,
        cpu_share,
        h,
        _cpu_critical(w, p, t_op, threads, cores),
        block_bytes,
    )
    f: dict[str, float] = {}
    for m in MECHANISMS:
        x = m.value(c)
        if x is None:
            continue
        if m.per == "fs":
            _pooled(f, m.name, fs, era2010, x)
        elif m.per == "sched":
            _pooled(f, m.name, sched, False, x)
        else:
            # A shared mechanism has its 2010-era twin too: a 2.6.3x kernel on a 2010 disk
            # or SATA SSD (seed 004's data=journal rows) says little of today's kernel on a
            # fast device, so those rows move the shared coefficient only through the share
            # the twin's wide prior leaves, as for a filesystem's own deviation.
            f[m.name] = x
            if era2010:
                f[m.name + ERA_SUFFIX] = x
    return f


# Engines whose thread submits a queue of I/O and reaps completions while the device works.
ASYNC_ENGINES = frozenset({"io_uring", "libaio", "posixaio"})


def _deep_async(w: Workload) -> bool:
    """A deep direct asynchronous queue: requests overlap the device's service of the others
    and reach the block layer in batches, not one after another."""
    return w.direct and w.iodepth > 1 and w.ioengine in ASYNC_ENGINES


def _cpu_critical(
    w: Workload, p: Mapping[str, float], t_op: float, threads: float, cores: float
) -> float:
    """For Ctx.cpu_critical: the read share of the workload times how busy the device's raw
    reads at this workload's rate keep the busier of the submitting threads and the host's
    CPUs (device_params.CPU_KEYS, at most 1), plus the write share in full; 1 unless the
    workload keeps a deep direct asynchronous queue and those figures were measured."""
    if not _deep_async(w) or t_op <= 0:
        return 1.0
    rf = w.read_pct / 100.0
    try:
        thr, host = p["submit_cpu_us_read"], p["host_cpu_us_read"]
    except KeyError:
        return 1.0
    u = min(1.0, max(thr / (threads * t_op), host / (cores * t_op)))
    return rf * u + (1.0 - rf)


@functools.lru_cache(maxsize=1024)
def _roofline_key(w: Workload, items: tuple, plp: str) -> float:
    return roofline(w, dict(items), plp)[0]


def _pooled(f: dict[str, float], name: str, fs: str, era2010: bool, x: float) -> None:
    """A per-filesystem mechanism as a shared coefficient plus this filesystem's deviation
    (prior mean 0 unless stated): what ext4 and xfs show about fsync cost is what an
    unmeasured filesystem inherits, so it never wins on a prior the measured ones lost.
    A 2010-era row (HDD, first SATA SSDs, 2.6.3x kernels) also loads on its own wide era
    deviation ``<name>:<fs>@2010``: XFS's log forces and barrier handling of that era made
    its fsync dear on Sehgal et al.'s disks, which is not today's kernel -- seed 002 measures
    XFS's fsync at 880 us against ext4's 1.16 ms on NVMe, and this machine's reference matrix
    has XFS ahead of ext4 for fsync-per-write on both devices. Old data informs today's
    deviation only through the share its wide prior leaves (ERA_2010_SD)."""
    f[name] = x
    f[f"{name}:{fs}"] = x
    if era2010:
        f[f"{name}:{fs}{ERA_SUFFIX}"] = x
