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

- ``m:cow``        btrfs copy-on-write of data: a small overwrite rewrites the extent, checksum
                   and parent tree blocks, ~16 KiB of metadata per write (seed 002, allocator
                   section: "16-24 KB per 4 KB"): x = -log(1 + wf * t_w(16 KiB) / t_op).
                   nodatacow removes it.
- ``m:btrfs.write`` btrfs's write path beyond CoW (checksums, extent tree, delayed refs), in
                   proportion to the device time spent writing data: x = -min(1, wf * t_w(bs) /
                   t_op). Prior mean 0.7 (a factor 2): the issue's probe of this machine
                   measured btrfs ~3x below ext4/xfs for large sequential writes, where CoW
                   amplification is small.
- ``m:data_journal`` ext4 data=journal writes every data block twice (a sequential journal
                   stream, then in place): x = -log(1 + wf * t_seq(bs) / t_op) -- a 128 KiB
                   stream that saturates the bandwidth halves, scattered 4 KiB writes bound by
                   the IOPS ceiling barely notice.
- ``m:fsync:<fs>``, ``m:flush:<fs>`` per-filesystem fsync cost in device terms: a journal/log
                   commit writes about one more block and issues one more cache flush per fsync,
                   so x = -log(1 + fsyncs per op * write latency / op time) and
                   -log(1 + fsyncs per op * flush latency / op time) of *this* device (a PLP
                   drive's cheap flush makes the second vanish). Prior mean 1 for every
                   filesystem but btrfs's commit writes (tree log: 1.5); an unmeasured
                   filesystem never gets a cheaper fsync from a prior alone.
- ``m:cpu:<fs>``   CPU time per operation in the filesystem's code path, which dominates on
                   RAM-backed devices and vanishes on slow ones: x = -log(1 + 5 us / (k t_op)),
                   k = min(numjobs, CPU_CORES) threads sharing it. Prior mean 1 for ext4/xfs
                   (about 5 us per 4K I/O), 2 for btrfs.

- ``m:sched``      a blk-mq scheduler's CPU work per request: x = -log(1 + 2 us / (k t_op)),
                   pooled across schedulers (bfq expected dearer); "none" costs nothing.
- ``m:meta_cpu``   metadata operations (create/stat/delete) without fsync are CPU- and
                   journal-bound, not two device writes each: the roofline prices one at
                   META_CPU_US; this coefficient is the log factor of the real cost, weighted by
                   the CPU share of the op (pooled across filesystems like the fsync costs).
Fitted values replace the priors in ``models/mechanisms_fit.json`` (see :func:`load_fit`).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Mapping

from fsadvisor.domain import FsConfig, Workload

# Reference per-op CPU cost of a filesystem's I/O path, microseconds (the unit m:cpu scales).
FS_CPU_US = 5.0
# CPU time a blk-mq I/O scheduler adds per request, microseconds (an assumption of the order
# of mq-deadline's per-request work; the fitted coefficient scales it, bfq's deviation is
# expected to be larger). It matters on RAM-fast devices and vanishes on an HDD.
SCHED_US = 2.0
# Cores that share a workload's per-I/O CPU work (up to its numjobs threads): the host's
# (a calibration measures them); where the parameters lack them, the reference matrix's
# machine's 2 (device_params.HOST_PRIOR holds the same figure: this module may not import it).
CPU_CORES = 2
# One submitting thread's wall time per raw 4K I/O on that machine, microseconds: the RAM-backed
# loop device ran ~200k IOPS at QD32 with one job (datasets/reference/runs.csv, shm-loop raw
# 4k-randread-qd32: 213k-218k), i.e. ~5 us per I/O. Below it the CPU share is not extrapolated.
CPU_FLOOR_US = 5.0
# seed 003's CFQ/Deadline/NOOP map onto blk-mq's bfq/mq-deadline/none (as in features.py).
_SCHED_ALIASES = {"cfq": "bfq", "deadline": "mq-deadline", "noop": "none", "": "none"}
# Metadata written per small CoW overwrite (seed 002: 16-24 KB per 4 KB write; lower end).
COW_META_BYTES = 16 << 10
# CPU time of one metadata operation (create/stat/delete) without fsync, microseconds: the
# issue measured creates "tens of thousands per second" on this machine; 50 us = 20k/s per core.
META_CPU_US = 50.0
META_CPU_LOG_SD = 0.7

# name -> (prior mean, prior sd, why). Prefix match: "m:fsync:" covers every filesystem.
PRIORS: dict[str, tuple[float, float, str]] = {
    "m:cow": (1.0, 0.3, "seed 002 allocator section: 16-24 KB of metadata per 4 KB CoW write"),
    "m:btrfs.write": (0.7, 0.5, "btrfs ~3x below ext4/xfs for large sequential "
                                "writes on this machine's probe"),
    "m:data_journal": (1.0, 0.3, "ext4 documentation: data=journal writes data twice"),
    # Shared across filesystems (m:fsync, m:flush, m:cpu), then each filesystem's deviation.
    "m:fsync": (1.0, 0.5, "one journal/log commit write per fsync"),
    "m:fsync:": (0.0, 0.3, "this filesystem's deviation from the shared commit cost"),
    "m:fsync:btrfs": (0.5, 0.5, "btrfs tree log: more than one commit write per fsync"),
    "m:flush": (1.0, 0.5, "one more cache flush per fsync (journal commit)"),
    "m:flush:": (0.0, 0.3, "this filesystem's deviation from the shared flush cost"),
    "m:cpu": (1.0, 0.5, "about 5 us of filesystem code per I/O"),
    "m:sched": (1.0, 0.5, "about 2 us of scheduler work per request"),
    "m:sched:": (0.0, 0.3, "this scheduler's deviation from the shared per-request cost"),
    "m:sched:bfq": (1.0, 0.5, "bfq's fairness bookkeeping costs more per request"),
    "m:meta_cpu": (0.0, META_CPU_LOG_SD, "metadata op CPU cost: log factor on META_CPU_US"),
    "m:meta_cpu:": (0.0, 0.3, "this filesystem's deviation from the shared metadata CPU cost"),
    "m:cpu:": (0.0, 0.3, "this filesystem's deviation from the shared CPU cost"),
    "m:cpu:btrfs": (1.0, 0.5, "btrfs checksums and tree updates on every I/O"),
}
# The 2010-era deviations (see _pooled): wide, so a 2010 table's per-filesystem finding moves
# today's deviation by only 0.3^2 / (0.3^2 + 0.6^2) = 20% of what it shows.
ERA_2010_SD = 0.6


def prior(name: str) -> tuple[float, float] | None:
    if name.endswith("@2010"):
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


def roofline(w: Workload, p: Mapping[str, float], plp: str = "unknown") -> tuple[float, float]:
    """(iops, share of per-op device latency spent in cache flushes) the bare device could
    sustain for this workload: a soft minimum of the latency-bound (Little's law), IOPS-bound
    and bandwidth-bound rates, on a device with parameters ``p`` (models/devices.toml keys)."""
    rf = w.read_pct / 100.0
    wf = 1.0 - rf
    conc = min(max(w.concurrency, 1), p["parallelism"])
    flush = _flush_us(p, plp)
    flush_us = (wf / w.writes_per_fsync if w.writes_per_fsync else 0.0) * flush
    lat_us = rf * p["read_latency_us"] + wf * p["write_latency_us"] + flush_us
    if w.metadata_frac > 0:
        # A create/stat/delete without fsync is CPU- and journal-bound (tens of thousands per
        # second on this machine), not two synchronous device writes; with fsync it
        # pays a journal commit (one write) and a flush on top.
        meta_us = META_CPU_US * host_factor(p) + (
            (p["write_latency_us"] + flush) / w.writes_per_fsync if w.writes_per_fsync else 0.0)
        lat_us = (1 - w.metadata_frac) * lat_us + w.metadata_frac * meta_us
    rates = [conc / (lat_us * 1e-6),
             1.0 / (rf / p["read_iops_cap"] + wf / p["write_iops_cap"])]
    if w.metadata_frac < 1.0:
        bw = 1.0 / (rf / p["read_bw_bytes_s"] + wf / p["write_bw_bytes_s"])
        rates.append(bw / max(w.bs_bytes, 512))
    return float(sum(r ** -4 for r in rates) ** -0.25), flush_us / lat_us


def write_time_us(p: Mapping[str, float], nbytes: float, sequential: bool = False) -> float:
    """Device time one write of ``nbytes`` occupies when the device is kept busy (the deep-queue
    figures, not the QD1 latency): its share of the IOPS ceiling or of the bandwidth, whichever
    is larger. A sequential stream (a journal) is merged into large requests, so it pays the
    bandwidth only. This is what makes extra writes cost differently per device: 16 KiB of
    scattered metadata next to a 128 KiB data write is cheap where small random writes run
    at bandwidth speed (RAM) and dear where they do not."""
    by_bw = nbytes / p["write_bw_bytes_s"] * 1e6
    return by_bw if sequential else max(1e6 / p["write_iops_cap"], by_bw)


def features(cfg: FsConfig | None, w: Workload, p: Mapping[str, float],
             plp: str = "unknown", era2010: bool = False) -> dict[str, float]:
    """The mechanism features of a configuration on a device with parameters ``p``.
    ``era2010``: a row of the 2010-era device kinds (hdd, sata-ssd), whose kernels' per-
    filesystem fsync and metadata paths get their own deviations (see :func:`_pooled`)."""
    fs = cfg.fs if cfg is not None else "raw"
    if fs == "raw":
        return {}
    # They depend on the configuration only through these four, so a ranking of thousands
    # of candidates computes them a handful of times per workload and device.
    nodatacow = any(m.partition("=")[0] == "nodatacow" for m in cfg.mount)
    sched = _SCHED_ALIASES.get(cfg.scheduler, cfg.scheduler)
    return dict(_features_of(fs, nodatacow, "data=journal" in cfg.mount, sched, w,
                             _params_key(p), plp, era2010))


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
def _features_of(fs: str, nodatacow: bool, data_journal: bool, sched: str, w: Workload,
                 pkey: tuple, plp: str, era2010: bool) -> dict[str, float]:
    p = dict(pkey)
    f: dict[str, float] = {}
    wf = 1.0 - w.read_pct / 100.0
    flush = _flush_us(p, plp)
    per_fsync = wf / w.writes_per_fsync if w.writes_per_fsync else 0.0
    # Wall time of one operation on the bare device at this workload's own concurrency
    # (1 / roofline): what every extra piece of work is a share of. At queue depth 1 it is
    # the service time (plus the flush of an fsync loop); at depth 32 a fraction of it.
    t_op = 1e6 / _roofline_key(w, pkey, plp)
    # The host's own CPU speed and cores (a calibration measures them; otherwise the reference
    # machine's): CPU work is priced in the host's microseconds, so a slow host makes a
    # CPU-heavy filesystem dearer on a fast device and changes nothing where the device is slow.
    h = host_factor(p)
    cores = max(1.0, float(p.get("host_cores", CPU_CORES)))
    if w.metadata_frac < 1.0:
        # CPU work per I/O runs in the submitting thread: numjobs threads share it, up to
        # the host's cores.
        # ... and never less than the reference machine's own per-thread time per raw I/O
        # (CPU_FLOOR_US, in the host's time): the CPU coefficients were learned where an op
        # took that long, and a datasheet's million-IOPS ceiling does not make one thread's
        # filesystem work dearer than anything measured.
        cpu_share = 1.0 / max(min(max(w.numjobs, 1), cores) * t_op, CPU_FLOOR_US * h)
        _pooled(f, "m:cpu", fs, era2010, -math.log1p(FS_CPU_US * h * cpu_share))
        if sched != "none":
            _pooled(f, "m:sched", sched, False, -math.log1p(SCHED_US * h * cpu_share))
    if w.metadata_frac > 0:
        # The roofline prices a metadata operation at META_CPU_US of the host's CPU (plus a
        # commit when fsynced); the coefficient is the log factor by which the real CPU cost
        # differs, entering in proportion to the CPU share of the op, so a RAM-backed
        # reference device teaches it and an fsync-bound NVMe barely feels it.
        sync = (p["write_latency_us"] + flush) / w.writes_per_fsync if w.writes_per_fsync else 0.0
        meta_us = META_CPU_US * h
        _pooled(f, "m:meta_cpu", fs, era2010, -w.metadata_frac * meta_us / (meta_us + sync))
    if wf > 0 and w.metadata_frac < 1.0:
        data_w = write_time_us(p, max(w.bs_bytes, 512), sequential=not w.random)
        if fs == "btrfs" and not nodatacow:
            # Each overwrite rewrites ~16 KiB of tree blocks elsewhere: one more scattered
            # write per data write, priced in this device's own time per op.
            f["m:cow"] = -math.log1p(wf * write_time_us(p, COW_META_BYTES) / t_op)
        if fs == "btrfs":
            # Checksums and tree updates beyond CoW: in proportion to the data written.
            f["m:btrfs.write"] = -min(1.0, wf * data_w / t_op)
        if fs in ("ext4", "ext3") and data_journal:
            # Every data block goes to the journal first (a sequential stream), then home.
            f["m:data_journal"] = -math.log1p(
                wf * write_time_us(p, max(w.bs_bytes, 512), sequential=True) / t_op)
    if per_fsync:
        # Split so each part scales with its own device time: the commit write(s) with the
        # write latency, the extra cache flush with the flush latency (cheap with PLP).
        t_base = max(op_time_us(w, p), 1e-3) + per_fsync * flush
        _pooled(f, "m:fsync", fs, era2010, -math.log1p(per_fsync * p["write_latency_us"] / t_base))
        _pooled(f, "m:flush", fs, era2010, -math.log1p(per_fsync * flush / t_base))
    return f


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
        f[f"{name}:{fs}@2010"] = x
