"""Learning a device's parameters (catalog/device_params.py's DeviceParams) from its own
raw-device runs: what ``fsadvisor calibrate`` and a probe's baseline measured, one
repetition per RawRun, each parameter with its interval from the repetitions."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

from fsadvisor.catalog.device_params import (
    CPU_KEYS,
    HOST_KEYS,
    HOST_MEASURED_LOG_SD,
    PARAM_KEYS,
    PRIOR_LOG_SD,
    SHAPE_KEYS,
    DeviceParams,
    prior_params,
)
from fsadvisor.predict.fit_version import fit_version
from fsadvisor.predict.mechanisms import queue_rate

# A repetition's spread says how well a cell's mean is known: sd(log values) / sqrt(n). Two
# floors keep that honest. LOG_SD_FLOOR: three reps that agree to 0.1% do not make a device
# parameter known to 0.1% (drift between a 5-minute calibration and the user's workload,
# temperature, GC: assumption, ~3%). SINGLE_RUN_LOG_SD: one run says nothing about its own
# noise; rep-to-rep differences of 10-20% were seen on this machine's loop devices (single-
# run noise was once learned as a real effect, noatime +15%), so one run gets 0.2.
LOG_SD_FLOOR = 0.03
SINGLE_RUN_LOG_SD = 0.2
# 4K-class random I/O (what the IOPS and latency keys mean) vs 128K-class sequential I/O
# (what the bandwidth keys mean): block sizes up to SMALL_BS_BYTES count as the former,
# from LARGE_BS_BYTES on as the latter.
SMALL_BS_BYTES = 16 << 10
LARGE_BS_BYTES = 64 << 10
# A cell whose concurrency (iodepth x numjobs) is at least this is "deep-queue": its IOPS
# are a candidate for the device's ceiling (the micro matrix's QD32, seed 002).
DEEP_CONCURRENCY = 8
# How far a measured knee's ceiling may lie beyond its best deep cell (its asymptote): the
# disk-backed loop's reads reached 94% of theirs by QD64 and its writes 70% by QD32 (its
# calibration in benchmarks/data/fidelity-diskloop.sql.gz, refitted with this code).
MAX_LIFT = 1.5
# The soft minimum the model's roofline uses (mechanisms.roofline: sum r**-4): the same shape
# here, so the fitted parallelism means what the model reads it as.
SOFTMIN_POWER = 4.0
# The knee shapes a read sweep is tried against (mechanisms.queue_rate's power): from one
# server behind a delay (1) to nearly independent channels (8).
KNEE_POWERS = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
# Concurrency sweep grid for the knee (parallelism), log-spaced.
_PARALLELISM_GRID = tuple(2 ** (i / 16) for i in range(0, 16 * 13 + 1))  # 1 .. 8192


@dataclass(frozen=True)
class RawRun:
    """One repetition of a raw-device run (no filesystem), as plain numbers: the workload's
    shape and what it measured. ``bw_bytes_s`` may be None (then iops x bs)."""

    rw: str
    bs_bytes: int
    iops: float
    iodepth: int = 1
    numjobs: int = 1
    fsync_every: int = 0
    mean_latency_us: float | None = None
    bw_bytes_s: float | None = None
    run_id: int | None = None
    # The CPU it used: fio's threads (usr + sys, % of one CPU per job) and the whole host's
    # (% of all its CPUs); None where not recorded.
    thread_cpu_pct: float | None = None
    host_cpu_busy_pct: float | None = None

    @property
    def concurrency(self) -> int:
        return max(1, int(self.iodepth)) * max(1, int(self.numjobs))

    @property
    def bandwidth(self) -> float:
        return self.bw_bytes_s if self.bw_bytes_s else self.iops * self.bs_bytes

    @staticmethod
    def from_store_row(row: dict) -> "RawRun | None":
        """A row of ``Store.runs()`` (raw-device, status ok) as a RawRun; None when it is
        not usable (a filesystem run, no IOPS, an unknown workload shape)."""
        w = row.get("workload") or {}
        if row.get("configuration_id") is not None or not isinstance(w, dict):
            return None
        iops = row.get("iops")
        if not iops or iops <= 0 or "rw" not in w:
            return None
        mb_s = row.get("mb_s")
        return RawRun(
            rw=str(w["rw"]),
            bs_bytes=int(w.get("bs_bytes") or 4096),
            iops=float(iops),
            iodepth=int(w.get("iodepth") or 1),
            numjobs=int(w.get("numjobs") or 1),
            fsync_every=int(w.get("fsync_every") or 0),
            mean_latency_us=row.get("mean_latency_us"),
            bw_bytes_s=float(mb_s) * 1e6 if mb_s else None,
            run_id=row.get("run_id"),
            thread_cpu_pct=_sum_or_none(row.get("usr_cpu_pct"), row.get("sys_cpu_pct")),
            host_cpu_busy_pct=row.get("host_cpu_busy_pct"),
        )


def _sum_or_none(a: float | None, b: float | None) -> float | None:
    return a + b if a is not None and b is not None else None


@dataclass
class _Estimate:
    value: float
    log_sd: float
    n: int
    cell: str
    run_ids: list[int]


def _geo(values: list[float]) -> tuple[float, float]:
    """Geometric mean and the log-scale sd of that mean (floored; see LOG_SD_FLOOR)."""
    logs = [math.log(v) for v in values]
    n = len(logs)
    mean = sum(logs) / n
    if n == 1:
        return math.exp(mean), SINGLE_RUN_LOG_SD
    sd = (sum((x - mean) ** 2 for x in logs) / (n - 1)) ** 0.5
    return math.exp(mean), max(sd / n**0.5, LOG_SD_FLOOR)


def _estimate(runs: list[RawRun], metric, cell: str) -> _Estimate | None:
    vals = [(metric(r), r.run_id) for r in runs]
    vals = [(v, i) for v, i in vals if v is not None and v > 0]
    if not vals:
        return None
    value, sd = _geo([v for v, _ in vals])
    return _Estimate(value, sd, len(vals), cell, [i for _, i in vals if i is not None])


def _small(r: RawRun) -> bool:
    return r.bs_bytes <= SMALL_BS_BYTES


def _cells(runs: list[RawRun], rw: str, fsync: bool) -> dict[int, list[RawRun]]:
    """Small-block runs of ``rw`` (with or without an fsync after every write), by concurrency."""
    out: dict[int, list[RawRun]] = {}
    for r in runs:
        if r.rw == rw and _small(r) and (r.fsync_every == 1 if fsync else r.fsync_every == 0):
            out.setdefault(r.concurrency, []).append(r)
    return out


def _per_op_us(r: RawRun) -> float:
    """Time one operation occupies the device at concurrency c (Little's law: c / IOPS)."""
    return r.concurrency / r.iops * 1e6


def _ceiling(cells: dict[int, list[RawRun]], label: str) -> tuple[_Estimate, int] | None:
    """The highest deep-queue cell mean and its depth: the device's ceiling for that I/O. A
    maximum, so that a higher measured rate can only raise it (never average a ceiling down
    with a queue depth that did not reach it)."""
    best: tuple[_Estimate, int] | None = None
    for conc, rs in sorted(cells.items()):
        if conc < DEEP_CONCURRENCY:
            continue
        e = _estimate(rs, lambda r: r.iops, f"{label} QD{conc}")
        if e is not None and (best is None or e.value > best[0].value):
            best = (e, conc)
    return best


def _asymptote(rate: float, conc: int, latency_us: float, power: float) -> float:
    """The ceiling whose curve (:func:`queue_rate`, this QD1 latency and knee shape) runs at
    ``rate`` with ``conc`` in flight: on a gradual knee the best deep cell is still below the
    ceiling it tends to, and a curve capped at that cell could never reach it (a disk-backed
    loop's QD32 writes: 22% under what was measured). At most MAX_LIFT x ``rate``: a sweep
    that has not bent by its deepest cell does not say where its ceiling is, and
    extrapolating a straight line would put it anywhere; continuous in ``rate`` (the
    bound where the curve cannot reach it, ``rate`` where the cell is no faster than one
    I/O at a time)."""
    if rate * latency_us <= 1e6:
        return rate
    lo, hi = rate, rate * MAX_LIFT
    if queue_rate(conc, latency_us, hi, power) < rate:
        return hi
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        if queue_rate(conc, latency_us, mid, power) < rate:
            lo = mid
        else:
            hi = mid
    return hi


def _cpu_per_op(cells: dict[int, list[RawRun]], label: str, cores: float) -> dict[str, _Estimate]:
    """CPU microseconds one I/O of the ceiling cell (the deep-queue cell with the highest mean
    IOPS) took in fio's submitting thread (``submit``) and on the whole host (``host``: the
    busy share of all ``cores``). One job only: fio's CPU figure of a group of jobs is not
    one thread's."""
    deep = {c: rs for c, rs in cells.items() if c >= DEEP_CONCURRENCY}
    if not deep:
        return {}
    conc = max(deep, key=lambda c: sum(r.iops for r in deep[c]) / len(deep[c]))
    rs = [r for r in deep[conc] if r.numjobs == 1]
    out = {}
    for name, metric in (
        ("submit", lambda r: r.thread_cpu_pct / 100 * 1e6 / r.iops if r.thread_cpu_pct else None),
        (
            "host",
            lambda r: (
                r.host_cpu_busy_pct / 100 * cores * 1e6 / r.iops if r.host_cpu_busy_pct else None
            ),
        ),
    ):
        e = _estimate(rs, metric, f"{label} QD{conc}: {name} CPU per I/O")
        if e is not None:
            out[name] = e
    return out


def _bandwidth(runs: list[RawRun], rw: str, jobs: int = 1) -> _Estimate | None:
    """The best large-block cell of one direction from ``jobs`` submitting jobs (one: the
    device's figure per submitter, which bw_submitters multiplies)."""
    by_conc: dict[int, list[RawRun]] = {}
    for r in runs:
        if (
            r.rw == rw
            and r.bs_bytes >= LARGE_BS_BYTES
            and r.fsync_every == 0
            and max(1, r.numjobs) == jobs
        ):
            by_conc.setdefault(r.concurrency, []).append(r)
    best = None
    for conc, rs in sorted(by_conc.items()):
        label = f"{rw} {rs[0].bs_bytes >> 10}K QD{conc // jobs}" + (
            f" x{jobs} jobs" if jobs > 1 else ""
        )
        e = _estimate(rs, lambda r: r.bandwidth, label)
        if e is not None and (best is None or e.value > best.value):
            best = e
    return best


def _submitters(runs: list[RawRun], one: _Estimate | None) -> _Estimate | None:
    """bw_submitters: the large-block writes from several jobs against one job's (never
    below 1: a device with its own limit moves no more for more submitters). None without
    both cells."""
    if one is None:
        return None
    best = None
    for jobs in sorted({max(1, r.numjobs) for r in runs if r.numjobs > 1}):
        many = _bandwidth(runs, "write", jobs)
        if many is None:
            continue
        ratio = max(many.value / one.value, 1.0)
        e = _Estimate(
            ratio,
            max(math.hypot(many.log_sd, one.log_sd), LOG_SD_FLOOR),
            many.n,
            f"{many.cell} against {one.cell}",
            many.run_ids + one.run_ids,
        )
        if best is None or e.value > best.value:
            best = e
    return best


def _parallelism(cells: dict[int, list[RawRun]]) -> _Estimate | None:
    """The knee of the concurrency sweep: iops(c) = C * ((P/c)^4 + 1)^(-1/4), the soft
    minimum of c/latency and the cap C, with P = C x latency the device's internal
    parallelism. For each P on a log grid the best log C is closed-form; P minimises the
    squared log error. Its sd is the half-width of the profile where the error rises by
    one residual variance (Delta chi^2 = 1). None with fewer than three concurrency levels
    (two parameters) or a sweep that never bends (no knee: P is not determined)."""
    pts = [(c, math.log(r.iops), r.run_id) for c, rs in cells.items() for r in rs if r.iops > 0]
    levels = sorted({c for c, _, _ in pts})
    if len(levels) < 3:
        return None
    ys = [y for _, y, _ in pts]

    def sse(p: float) -> float:
        shape = [-math.log1p((p / c) ** SOFTMIN_POWER) / SOFTMIN_POWER for c, _, _ in pts]
        log_c = sum(y - s for y, s in zip(ys, shape)) / len(ys)
        return sum((y - log_c - s) ** 2 for y, s in zip(ys, shape))

    grid = [p for p in _PARALLELISM_GRID if p <= 4 * levels[-1]]
    errs = [sse(p) for p in grid]
    i = min(range(len(grid)), key=errs.__getitem__)
    if i == len(grid) - 1:
        return None  # still rising at 4x the deepest queue: no knee in the data
    dof = max(len(pts) - 2, 1)
    var = max(errs[i] / dof, LOG_SD_FLOOR**2)
    inside = [math.log(grid[j]) for j, e in enumerate(errs) if e - errs[i] <= var]
    half = (max(inside) - min(inside)) / 2
    return _Estimate(
        grid[i],
        max(half, LOG_SD_FLOOR),
        len(pts),
        "random read sweep QD" + ",".join(str(c) for c in levels),
        [r for _, _, r in pts if r is not None],
    )


def _knee_power(
    cells: dict[int, list[RawRun]], latency: _Estimate | None, cap: tuple[_Estimate, int] | None
) -> _Estimate | None:
    """The sweep's shape between its QD1 latency and its ceiling: the power of KNEE_POWERS
    whose queue_rate curve, through the QD1 latency and the best deep cell as measured (its
    ceiling the asymptote that passes there, :func:`_asymptote`), leaves the least squared
    log error over every repetition. Its sd is the half-width (log) of the powers within one
    residual variance of the best. None without a QD1 cell, a ceiling and two levels in
    between (a shape needs points off both ends)."""
    if latency is None or cap is None or 1 not in cells:
        return None
    pts = [(c, math.log(r.iops), r.run_id) for c, rs in cells.items() for r in rs if r.iops > 0]
    levels = sorted({c for c, _, _ in pts})
    if len(levels) < 4:
        return None

    def sse(k: float) -> float:
        top = _asymptote(cap[0].value, cap[1], latency.value, k)
        return sum((y - math.log(queue_rate(c, latency.value, top, k))) ** 2 for c, y, _ in pts)

    errs = [sse(k) for k in KNEE_POWERS]
    i = min(range(len(errs)), key=errs.__getitem__)
    var = max(errs[i] / max(len(pts) - 1, 1), LOG_SD_FLOOR**2)
    inside = [math.log(KNEE_POWERS[j]) for j, e in enumerate(errs) if e - errs[i] <= var]
    return _Estimate(
        KNEE_POWERS[i],
        max((max(inside) - min(inside)) / 2, LOG_SD_FLOOR),
        len(pts),
        "random read sweep QD" + ",".join(str(c) for c in levels) + ": its knee's shape",
        [r for _, _, r in pts if r is not None],
    )


def fit_device_params(
    runs: "list[RawRun]",
    kind: str,
    devices: dict[str, dict[str, float]],
    device_id: str = "",
    host: Mapping[str, float] | None = None,
) -> DeviceParams:
    """Fit one device's parameters from its raw-device runs (every repetition, plain
    numbers). What the runs determine is replaced, with an sd from the repetitions; the rest
    stays at the kind's prior (``prior_params``) with its wide sd, and ``source`` and
    ``details["measured"]`` say which keys were measured.

    - read/write_latency_us: QD1 small-block random read/write, per-op time (1 / IOPS)
    - read/write_iops_cap: the best deep-queue (>= QD8) small random read/write cell
    - read/write_bw_bytes_s: the best large-block (>= 64K) sequential read/write cell of one
      job
    - bw_submitters: the large-block writes from several jobs against one job's (_submitters)
    - flush_latency_us (and _plp, the same measured flush): QD1 write + fsync per write,
      per-op time minus the plain QD1 write's (floored at 1 us: a flush the device
      acknowledges at once costs nothing measurable)
    - parallelism: the knee of the random read concurrency sweep (_parallelism)
    - host_cpu_factor, host_cores: ``host``, the figures of the host the runs were made on
      (fsadvisor/host/cpu.py measures them), with HOST_MEASURED_LOG_SD
    """
    prior = prior_params(kind, devices, device_id)
    values, log_sd = dict(prior.values), dict(prior.log_sd)
    est: dict[str, _Estimate] = {}
    runs = [r for r in runs if r.iops > 0]
    reads, writes = _cells(runs, "randread", False), _cells(runs, "randwrite", False)
    syncs = {**_cells(runs, "write", True)}
    for c, rs in _cells(runs, "randwrite", True).items():
        syncs.setdefault(c, []).extend(rs)

    for key, cells, label in (
        ("read_latency_us", reads, "random read QD1"),
        ("write_latency_us", writes, "random write QD1"),
    ):
        e = _estimate(cells[1], _per_op_us, label) if 1 in cells else None
        if e is not None:
            est[key] = e
    ceilings = {
        key: _ceiling(cells, label)
        for key, cells, label in (
            ("read_iops_cap", reads, "random read"),
            ("write_iops_cap", writes, "random write"),
        )
    }
    for key, best in ceilings.items():
        if best is not None:
            est[key] = best[0]
    for key, rw in (("read_bw_bytes_s", "read"), ("write_bw_bytes_s", "write")):
        e = _bandwidth(runs, rw)
        if e is not None:
            est[key] = e
    subs = _submitters(runs, est.get("write_bw_bytes_s"))
    if subs is not None:
        est["bw_submitters"] = subs
    if 1 in syncs and est.get("write_latency_us"):
        total = _estimate(syncs[1], _per_op_us, "write + fsync QD1")
        plain = est["write_latency_us"]
        if total is not None:
            flush = max(total.value - plain.value, 1.0)
            # sd of a difference of two log-normal means, in linear terms, back to log scale
            abs_sd = math.hypot(total.value * total.log_sd, plain.value * plain.log_sd)
            sd = min(max(abs_sd / flush, LOG_SD_FLOOR), PRIOR_LOG_SD)
            e = _Estimate(
                flush,
                sd,
                total.n,
                "write + fsync QD1 minus write QD1",
                total.run_ids + plain.run_ids,
            )
            est["flush_latency_us"] = e
            est["flush_latency_us_plp"] = e
    par = _parallelism(reads)
    if par is not None:
        est["parallelism"] = par
    knee = _knee_power(reads, est.get("read_latency_us"), ceilings["read_iops_cap"])
    if knee is not None:
        est["knee_power"] = knee
        # A measured knee's ceilings are its asymptotes, so that its curve passes through the
        # best deep cell it was measured at; the write sweep is two points, so writes take the
        # reads' shape (a sharp knee needs no lift: its curve is at its ceiling by then).
        for key, lat_key in (
            ("read_iops_cap", "read_latency_us"),
            ("write_iops_cap", "write_latency_us"),
        ):
            best, lat = ceilings[key], est.get(lat_key)
            if best is not None and lat is not None:
                e = best[0]
                top = _asymptote(e.value, best[1], lat.value, knee.value)
                if top > e.value * (1 + LOG_SD_FLOOR):
                    # an extrapolation: as uncertain as the cell and as far as it reaches
                    est[key] = replace(
                        e,
                        value=top,
                        log_sd=math.hypot(e.log_sd, math.log(top / e.value)),
                        cell=f"{e.cell}, lifted to its knee's asymptote",
                    )
    cores = float(host["host_cores"]) if host and host.get("host_cores") else values["host_cores"]
    for name, e in _cpu_per_op(reads, "random read", cores).items():
        est[f"{name}_cpu_us_read"] = e
    for k in HOST_KEYS:
        if host and host.get(k) and host[k] > 0:
            est[k] = _Estimate(
                float(host[k]),
                HOST_MEASURED_LOG_SD,
                1,
                "this host: 4 KiB pread of a tmpfs file, best of 7 rounds"
                if k == "host_cpu_factor"
                else "this host: usable CPUs",
                [],
            )

    not_measured = sorted(k for k in PARAM_KEYS if k not in est)
    for k, e in est.items():
        values[k], log_sd[k] = float(e.value), float(min(e.log_sd, PRIOR_LOG_SD))
    used = sorted({i for e in est.values() for i in e.run_ids})
    details: dict[str, object] = {
        "measured": sorted(est),
        "not_measured": not_measured,
        "cells": {
            k: {"cell": e.cell, "n": e.n, "run_ids": sorted(set(e.run_ids))} for k, e in est.items()
        },
        "run_ids": used,
        # which fit made these figures: a stored calibration of another is refitted
        "fit_version": fit_version(),
    }
    if not est:
        return DeviceParams(
            prior.device_id, kind, prior.values, prior.log_sd, prior.source, details=details
        )
    rest = [k for k in not_measured if k not in HOST_KEYS]
    n_device = sum(1 for k in est if k not in HOST_KEYS + CPU_KEYS + SHAPE_KEYS)
    host_measured = all(k in est for k in HOST_KEYS)
    source = (
        f"calibrated: {n_device} of {len(PARAM_KEYS) - len(HOST_KEYS)} device parameters "
        f"fitted on {len(used) or len(runs)} raw-device runs"
        + (
            "; host CPU measured"
            if host_measured
            else "; host CPU: the reference machine's (not measured)"
        )
        + ("; CPU per raw read measured" if any(k in est for k in CPU_KEYS) else "")
        + ("; queueing shape measured" if any(k in est for k in SHAPE_KEYS) else "")
        + (
            f"; prior ({prior.source.removeprefix('prior: ')}) for {', '.join(rest)}"
            if rest
            else ""
        )
    )
    return DeviceParams(
        device_id=device_id or prior.device_id,
        kind=kind,
        values=values,
        log_sd=log_sd,
        source=source,
        n_runs=len(used) or len(runs),
        details=details,
    )
