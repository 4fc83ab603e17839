"""The reference matrices (``datasets/reference/runs*.csv``) as model observations.

The matrix was measured on this machine's RAM-backed device classes (a direct-I/O loop device
on /dev/shm, a zram device) with every repetition kept, one CSV row per repetition (the
contract is datasets/reference/collect.sh + export.py). The model learns from *cells*: one
observation per (device, configuration, workload, metric) with the mean over the cell's ok
repetitions, their count ``n`` and sample sd, so three agreeing runs weigh as three and one
run never poses as a measured effect.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import statistics
from pathlib import Path
from typing import Any, Iterable

from fsadvisor.domain import FLAG_DIRECT_IO, TIMING_ONLY, FsConfig
from fsadvisor.records import Observation
from fsadvisor.errors import FsAdvisorError
from fsadvisor.store.observations import workload_from_params
from fsadvisor.infra.resources import data_dir


class DatasetError(FsAdvisorError):
    """The reference matrix does not follow its contract (datasets/reference/)."""


# device_class -> the device kind the model keys its priors on (models/devices.toml).
KINDS = {"shm-loop": "ram-loop", "zram": "zram"}
# CSV column -> (observation metric, unit). Latencies stay in microseconds (as the seeds).
METRICS = (
    ("iops", "iops", "IOPS"),
    ("mb_s", "mb_s", "MB/s"),
    ("mean_latency_us", "mean_latency_us", "us"),
    ("p99_latency_us", "p99_latency_us", "us"),
)
REQUIRED = (
    "device_class",
    "device",
    "host",
    "filesystem",
    "mkfs_options",
    "mount_options",
    "scheduler",
    "ag_count",
    "workload",
    "workload_params",
    "rep",
    "status",
    "flags",
    "iops",
)


# The shipped matrices, each with the words that name it in its observations' source and the
# suffix of its device identities: the first (13 configurations x the micro workloads) and
# the second, measured for the mechanisms the first cannot show (collect.sh
# MATRIX=mechanisms). A cell of one matrix is never averaged with the same cell of the other.
# Both are one study of one device class ("reference matrix, zram"): cross-validation by
# source table holds a class's two matrices out together (predict/fit.source_group).
SHIPPED = (
    ("runs.csv", "", ""),
    ("runs-mechanisms.csv", "mechanisms matrix; ", "/quiet"),
    ("runs-writers.csv", "writers matrix; ", "/writers"),
    ("runs-schedulers.csv", "schedulers matrix; ", "/schedulers"),
)
# A RAM-backed device's speed is the host's CPU: the first matrix ran beside other jobs
# (load average median 4.5, rep-to-rep CV 19-32%), the second on a quiet host (CV 2-9%), and
# the same cells differ between them by up to x1.8 (zram ext4 4k random writes: 63k against
# 112k IOPS). One identity for both would read that as noise and blur every cell of the
# device; each matrix is therefore its own device for levels (the identity gets the suffix),
# while the mechanisms, shared by every device, learn from both. The third (fsync from 1, 2,
# 4 and 8 writers, collect.sh MATRIX=writers) ran on another host (an Intel VM); it is its
# own device for levels too, and its runs are priced with the reference machine's CPU
# figures: that host's 4 KiB pread takes 0.62-0.65x the reference machine's time, yet its
# filesystems are not uniformly faster (ext4's appends 0.6x, btrfs's 1.6x the reference
# machine's rate), and the held-out figures of the other devices are better without the
# factor than with it (README, "Fsync from several writers"). The fourth (the blk-mq
# schedulers on the RAM-backed loop, collect.sh MATRIX=schedulers) ran on that Intel host
# too, on another day: a device of its own, priced the same way, and loaded as what it
# measures, each scheduler's ratio to none (scheduler_ratios), not as levels.


def shipped_paths() -> list[tuple[Path, str, str]]:
    """(path, source words, identity suffix) of every shipped matrix present."""

    here = data_dir("datasets") / "reference"
    return [
        (here / name, words, suffix) for name, words, suffix in SHIPPED if (here / name).is_file()
    ]


def _value(text: str) -> Any:
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    try:
        return int(t)
    except ValueError:
        return t


def config_of(row: dict[str, str]) -> FsConfig:
    fs = row["filesystem"].strip()
    sched = row["scheduler"].strip() or "none"
    mkfs = {}
    for part in filter(None, (p.strip() for p in row["mkfs_options"].split(";"))):
        k, sep, v = part.partition("=")
        if not sep:
            raise DatasetError(f"mkfs_options item {part!r} is not key=value")
        mkfs[k.strip()] = _value(v)
    mount = tuple(filter(None, (m.strip() for m in row["mount_options"].split(","))))
    ag = row["ag_count"].strip()
    return FsConfig.make(fs, mkfs, mount, sched, int(ag) if ag else None)


def _num(text: str | None) -> float | None:
    try:
        v = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return v if v is not None and math.isfinite(v) and v > 0 else None


def device_id_of(row: dict[str, str], suffix: str = "") -> str:
    """The backing class on this host is the device: every shm-loop run on one host shares
    its levels, a zram device has its own (``suffix``: the matrix's, see SHIPPED)."""
    kind = KINDS.get(row["device_class"], row["device_class"])
    return f"{kind}:{row['device']}@{row['host']}{suffix}"


def load_rows(path: str | Path) -> list[dict[str, str]]:
    p = Path(path)
    with open(p, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise DatasetError(f"{p.name}: missing column(s) {', '.join(missing)}")
        return list(reader)


def observations(
    rows: Iterable[dict[str, str]], matrix: str = "", suffix: str = ""
) -> list[Observation]:
    """Cell means over ok repetitions (rows whose direct I/O was not honoured are left out,
    as in probe summaries)."""
    cells: dict[tuple, list[dict[str, str]]] = {}
    for r in rows:
        if r["status"] != "ok" or FLAG_DIRECT_IO in r["flags"].split(";"):
            continue
        if r["device_class"] not in KINDS:
            raise DatasetError(
                f"device_class {r['device_class']!r} is not one of " + ", ".join(KINDS)
            )
        key = (
            device_id_of(r, suffix),
            config_of(r).key(),
            r["workload"],
            json.dumps(json.loads(r["workload_params"] or "{}"), sort_keys=True),
            r.get("energy_source", ""),
            r.get("power_scope", ""),
        )
        cells.setdefault(key, []).append(r)
    out: list[Observation] = []
    for (dev_id, _, wname, params, esrc, scope), members in cells.items():
        first = members[0]
        cfg = config_of(first)
        w = workload_from_params(json.loads(params))
        kind = KINDS[first["device_class"]]
        runs = ",".join(m.get("run_id", "") for m in members)
        series: list[tuple[str, str, list[float], str | None, str | None]] = []
        for col, metric, unit in METRICS:
            series.append(
                (
                    metric,
                    unit,
                    [v for m in members if (v := _num(m.get(col))) is not None],
                    None,
                    None,
                )
            )
        # ops/J from each repetition's own IOPS and watts: energy joins perf only here.
        opj = [
            i / wt for m in members if (i := _num(m.get("iops"))) and (wt := _num(m.get("watts")))
        ]
        if opj and esrc:
            series.append(("ops_per_joule", "ops/J", opj, esrc, scope or "system"))
            series.append(
                (
                    "watts",
                    "W",
                    [v for m in members if (v := _num(m.get("watts")))],
                    esrc,
                    scope or "system",
                )
            )
        thread_cpu = _mean(
            [
                u + y
                for m in members
                if (u := _num(m.get("cpu_usr_pct"))) is not None
                and (y := _num(m.get("cpu_sys_pct"))) is not None
            ]
        )
        host_cpu = _mean(
            [v for m in members if (v := _num(m.get("host_cpu_busy_pct"))) is not None]
        )
        for metric, unit, vals, e_src, e_scope in series:
            if not vals:
                continue
            mean = statistics.fmean(vals)
            sd = _stdev(vals, mean) if len(vals) > 1 else None
            out.append(
                Observation(
                    source=f"reference matrix, {first['device_class']} ({matrix}{wname}; "
                    f"runs {runs})",
                    device_kind=kind,
                    config=cfg,
                    workload=w,
                    metric=metric,
                    value=mean,
                    unit=unit,
                    power_scope=e_scope,
                    energy_source=e_src,
                    note=f"n={len(vals)}" + (f", sd={sd:.4g}" if sd is not None else ""),
                    device_plp="unknown",
                    device_id=dev_id,
                    n=len(vals),
                    sd=sd,
                    thread_cpu_pct=thread_cpu,
                    host_cpu_busy_pct=host_cpu,
                )
            )
    return out


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _stdev(values: list[float], mean: float) -> float:
    # The sample sd in floats (fsum): statistics.stdev sums exact fractions, a tenth of a
    # millisecond a cell and most of the time the reference matrices take to load, for
    # digits past the 15th of a figure whose runs scatter by percent.
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def scheduler_ratios(obs: list[Observation]) -> list[Observation]:
    """A schedulers matrix as what it was measured to show: each configuration's IOPS under
    a scheduler as a ratio to the same configuration's under none on the same device (a
    within-matrix ratio, in which the device's and the filesystem's levels cancel, so the rows
    teach the scheduler's mechanism and nothing else), with the raw device's cells under none
    marked TIMING_ONLY: they give the device its own times per operation, which price the
    scheduler's work, and are no equation of the fit. As levels, the filesystems' cells moved
    the mechanisms every device shares and the raw cells the RAM-backed loop's shared shape
    (an io_uring fsync on this host takes a worker thread's hand-off), and both made other
    devices' held-out figures worse (datasets/reference/README.md, fourth matrix)."""
    none = {
        (o.device_id, o.config.key(), o.workload, o.metric): o
        for o in obs
        if o.config.scheduler == "none"
    }
    out = [
        dataclasses.replace(o, note=f"{o.note} {TIMING_ONLY}")
        for o in obs
        if o.config.scheduler == "none" and o.config.fs == "raw"
    ]
    for o in obs:
        if o.config.scheduler == "none" or o.metric != "iops":
            continue
        base_cfg = o.config.with_(scheduler="none")
        base = none.get((o.device_id, base_cfg.key(), o.workload, o.metric))
        if base is None or base.value <= 0:
            continue
        out.append(
            dataclasses.replace(
                o,
                value=o.value / base.value - 1.0,
                unit="ratio",
                relative_to=base_cfg,
                note=f"{o.note}; against none: {base.note}",
            )
        )
    return out


# Shipped matrices loaded as scheduler ratios (scheduler_ratios), not as levels.
AS_SCHEDULER_RATIOS = frozenset({"runs-schedulers.csv"})


def load_observations(path: str | Path | None = None) -> list[Observation]:
    """Observations from one reference matrix file, or (no path) from every shipped one
    (a schedulers matrix as its ratios); none when none is there."""
    if path is None:
        out: list[Observation] = []
        for p, words, suffix in shipped_paths():
            obs = observations(load_rows(p), words, suffix)
            out += scheduler_ratios(obs) if p.name in AS_SCHEDULER_RATIOS else obs
        return out
    p = Path(path)
    if not p.is_file():
        return []
    return observations(load_rows(p))
