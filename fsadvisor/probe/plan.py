"""Planning a probe: the matrix of cells, their order and their names.

A *cell* is one configuration (filesystem + mkfs/mount options + scheduler [+ XFS AG count])
x one workload x one repetition; each is formatted, mounted, measured and unmounted on its
own (seed 000 §III: precondition, format, mount, run, unmount, repeated). The raw-device
baseline cells run the same micro workloads on the block device itself, which is what the
filesystem overhead is measured against (seed 002, "Measuring the gap").

Repetitions are the outermost loop, as in seed 000 ("the entire experiment is conducted
10 times"): slow drift of the device (heat, garbage collection) then spreads over every
configuration instead of biasing the ones that happen to run last.

Everything here is pure: building a :class:`Plan` reads the catalog and nothing else, so
``--dry-run`` and the unit tests can enumerate a matrix without a device.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from fsadvisor import catalog
from fsadvisor.domain import FILESYSTEMS, SCHEDULERS, Device, FsConfig, Plp, Workload
from fsadvisor import limits
from fsadvisor.errors import ConfigError

# --fs and --schedulers default to what the declared options say (probe/options.py).
from fsadvisor.probe.options import DEFAULT_FILESYSTEMS, DEFAULT_SCHEDULERS

# The probe's timing (window, cool-down, repetitions, per-cell overhead, fill, data-set size)
# lives in probe/timing.py, which recommend reads without this module.
from fsadvisor.probe.timing import (
    DEFAULT_COOLDOWN_S,
    DEFAULT_REPS,
    DEFAULT_RUNTIME_S,
    QUICK_RUNTIME_S,
    cell_seconds,
    default_size_bytes,
)
from fsadvisor.tools import KIND_DB_BENCH, KIND_FIO, KIND_JOBFILE, KIND_SYSBENCH

PLAN_VERSION = 1
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# Workload kinds (how a cell's workload is run) are the benchmarks' own: fsadvisor/tools.
APP_KINDS = (KIND_DB_BENCH, KIND_SYSBENCH)

UNSUPPORTED_FMT = "{fs}: not supported by this kernel"


@dataclass(frozen=True)
class WorkloadSpec:
    """A named workload of the matrix. ``raw_baseline``: also run on the bare device."""

    name: str
    workload: Workload
    kind: str = KIND_FIO
    jobfile: str | None = None
    app: Mapping[str, Any] = field(
        default_factory=dict
    )  # for the benchmark (db_bench: the profile)
    raw_baseline: bool = False
    source: str = ""  # micro | profile:<name>

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "workload": self.workload.to_dict(),
            "kind": self.kind,
            "jobfile": self.jobfile,
            "app": dict(self.app),
            "raw_baseline": self.raw_baseline,
            "source": self.source,
        }

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "WorkloadSpec":
        return WorkloadSpec(
            name=d["name"],
            workload=Workload(**d["workload"]),
            kind=d.get("kind", KIND_FIO),
            jobfile=d.get("jobfile"),
            app=dict(d.get("app") or {}),
            raw_baseline=bool(d.get("raw_baseline")),
            source=d.get("source", ""),
        )


# The standard micro matrix: one fio job file per workload in runner/probe-micro/ (the
# source; fsadvisor/probe/micro.py says why). Queue depth 32 for the throughput jobs (seed
# 002's QD32 4K random write; seed 000 used 64 on a larger drive), a QD1 fsync-per-write job
# because that is where barrier cost and journal commits show (seed 002
# "4K-randwrite-fsync1"), 128 KiB sequential jobs ranked by bytes, and the file
# create/stat/delete chain (seed 002 "metadata-create"; fio's filecreate/filestat/filedelete
# engines, domain notes §1).
# MICRO and MICRO_BY_NAME are read from those files on first use (PEP 562 __getattr__
# below), not on import: recommend imports this module for the per-cell time of a tie note
# and never needs the micro matrix (parsing the job files would be part of its start-up).
QUICK_MICRO = ("4k-randread-qd32", "4k-randwrite-qd32")


@functools.lru_cache(maxsize=1)
def _micro() -> tuple[tuple[WorkloadSpec, ...], dict[str, WorkloadSpec]]:
    # The job-file reader (probe/micro.py, tools/jobfile.py, configparser) loads here too.
    from fsadvisor.probe.micro import micro_jobs

    specs = tuple(
        WorkloadSpec(name=name, workload=w, raw_baseline=raw, source="micro")
        for name, w, raw in micro_jobs()
    )
    return specs, {w.name: w for w in specs}


def __getattr__(name: str):
    if name == "MICRO":
        return _micro()[0]
    if name == "MICRO_BY_NAME":
        return _micro()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Variants measured by default next to each filesystem's default configuration: the levers
# seed 002 names as recovering most of the filesystem overhead (noatime, data=writeback)
# and each filesystem's characteristic option (XFS log buffers, btrfs compression, f2fs's
# pure log-structured mode). Risky ones are measured all the same; the recommender warns.
VARIANT_MOUNTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "ext4": (("noatime",), ("noatime", "data=writeback")),
    "xfs": (("noatime", "logbufs=8", "logbsize=256k"),),
    "btrfs": (("noatime", "compress=zstd:1"),),
    "f2fs": (("noatime", "mode=lfs"),),
}


def with_ioengine(spec: WorkloadSpec, ioengine: str) -> WorkloadSpec:
    """Micro jobs use the best async engine here (io_uring, else libaio); metadata jobs keep
    their own engine, and a profile's explicit engine is the user's choice."""
    if spec.source != "micro" or spec.workload.rw in ("filecreate", "filestat", "filedelete"):
        return spec
    return replace(spec, workload=replace(spec.workload, ioengine=ioengine))


def micro_workloads(names: Iterable[str] | None = None, quick: bool = False) -> list[WorkloadSpec]:
    if names is None:
        names = QUICK_MICRO if quick else [w.name for w in _micro()[0]]
    out = []
    for n in names:
        by_name = _micro()[1]
        if n not in by_name:
            raise ConfigError(f"unknown micro workload {n!r}; known: {', '.join(by_name)}")
        out.append(by_name[n])
    return out


def profile_workload(profile) -> WorkloadSpec:
    """The user's workload as a cell workload: the profile's runner/ job file when it names
    one, db_bench for key-value ("db_op") profiles, sysbench fileio when the profile is tagged
    for it, else fio built from the Workload."""
    w = profile.workload
    tags = set(getattr(profile, "tags", ()) or ())
    name = f"profile:{profile.name}"
    # A named job file wins: Filebench's OLTP personality counts database operations
    # (op = "db_op") yet is emulated by runner/filebench-oltp.fio, not by RocksDB.
    if profile.fio_job:
        return WorkloadSpec(
            name=name, workload=w, kind=KIND_JOBFILE, jobfile=profile.fio_job, source=name
        )
    if w.op == "db_op":
        return WorkloadSpec(
            name=name,
            workload=w,
            kind=KIND_DB_BENCH,
            app={"profile": profile.name, "tags": sorted(tags)},
            source=name,
        )
    if "sysbench" in tags:
        return WorkloadSpec(
            name=name,
            workload=w,
            kind=KIND_SYSBENCH,
            app={"profile": profile.name, "tags": sorted(tags)},
            source=name,
        )
    return WorkloadSpec(name=name, workload=w, source=name)


@dataclass(frozen=True)
class Cell:
    """One configuration x workload x repetition; ``config`` None is the raw-device baseline."""

    config: FsConfig | None
    scheduler: str
    workload: WorkloadSpec
    rep: int
    skip_reason: str | None = None

    @property
    def config_key(self) -> str:
        return self.config.key() if self.config else f"raw-device {self.scheduler}"

    @property
    def key(self) -> str:
        """The store's cell key (configuration x workload); repetitions share it."""
        return cell_key(self.config, self.scheduler, self.workload.name)

    @property
    def label(self) -> str:
        """What a person reads in progress lines and previews: ``xfs agcount=16, noatime,
        sched none | 4k-randread-qd32 | rep 2`` (``key`` is the store's identity)."""
        return f"{cell_label(self.config, self.scheduler)} | {self.workload.name} | rep {self.rep}"


def cell_label(config: FsConfig | None, scheduler: str, short: bool = False) -> str:
    """``ext4 defaults, sched none``; ``xfs agcount=16, noatime, sched none``; the raw
    baseline as ``raw device (no filesystem), sched none`` (``short``: ``raw device, sched
    none``, for a chart's label column)."""
    if config is None:
        return f"raw device{'' if short else ' (no filesystem)'}, sched {scheduler}"
    return config.with_(scheduler=scheduler).label()


def cell_key(config: FsConfig | None, scheduler: str, workload_name: str) -> str:
    """``<config key> | <workload>``: stable across runs, so --resume can match what the
    store already holds (a run row carries this key and its repetition number)."""
    ck = config.key() if config else f"raw-device {scheduler}"
    return f"{ck} | {workload_name}"


@dataclass
class Plan:
    """A whole probe: what to run on which device and how. ``device`` is None for
    ``--scratch`` until the scratch loop device exists."""

    device: str | None
    device_size_bytes: int
    configs: list[FsConfig]
    workloads: list[WorkloadSpec]
    reps: int = DEFAULT_REPS
    runtime_s: float = DEFAULT_RUNTIME_S
    cooldown_s: float = DEFAULT_COOLDOWN_S
    size_bytes: int = GIB  # per-job data set of the micro workloads
    baseline: bool = True
    ioengine: str = "io_uring"
    unsupported: dict[str, str] = field(default_factory=dict)  # fs -> reason
    scratch_size_bytes: int | None = None
    scratch_dir: str | None = None
    energy: dict[str, Any] = field(default_factory=lambda: {"source": "auto"})
    plp: Plp = "unknown"
    force: bool = False
    db_path: str | None = None
    profile: str | None = None
    matrix_id: str | None = None
    device_info: Device | None = None

    @property
    def schedulers(self) -> list[str]:
        seen: list[str] = []
        for c in self.configs:
            if c.scheduler not in seen:
                seen.append(c.scheduler)
        return seen

    @property
    def device_key(self) -> str:
        """What --resume matches an unfinished matrix on."""
        return "scratch" if self.scratch_size_bytes else str(self.device)

    def cells(self) -> list[Cell]:
        out: list[Cell] = []
        for rep in range(1, self.reps + 1):
            if self.baseline:
                for sched in self.schedulers:
                    for w in self.workloads:
                        if w.raw_baseline:
                            out.append(Cell(None, sched, w, rep))
            for cfg in self.configs:
                skip = self.unsupported.get(cfg.fs)
                for w in self.workloads:
                    out.append(Cell(cfg, cfg.scheduler, w, rep, skip))
        return out

    def estimated_seconds(self) -> float:
        total = 0.0
        for c in self.cells():
            if c.skip_reason:
                continue
            total += self.cell_estimate_s(c)
        return total

    def cell_estimate_s(self, cell: Cell) -> float:
        return cell_seconds(
            cell.workload.workload.read_pct, self.size_bytes, self.runtime_s, self.cooldown_s
        )

    def profiles_of(self, workload: str) -> tuple[str, ...]:
        """The profiles a run of ``workload`` is measured for when the plan serves several
        (a joint adaptive probe: runs.profiles); () here, where a run is its workload's."""
        return ()

    def to_dict(self) -> dict[str, Any]:
        """What the store keeps with the matrix and the state file keeps for --resume."""
        return {
            "version": PLAN_VERSION,
            "device": self.device,
            "device_size_bytes": self.device_size_bytes,
            "configs": [c.to_dict() for c in self.configs],
            "workloads": [w.to_dict() for w in self.workloads],
            "reps": self.reps,
            "runtime_s": self.runtime_s,
            "cooldown_s": self.cooldown_s,
            "size_bytes": self.size_bytes,
            "baseline": self.baseline,
            "ioengine": self.ioengine,
            "unsupported": dict(self.unsupported),
            "scratch_size_bytes": self.scratch_size_bytes,
            "scratch_dir": self.scratch_dir,
            "energy": dict(self.energy),
            "plp": self.plp,
            "force": self.force,
            "db_path": self.db_path,
            "profile": self.profile,
            "cells": len(self.cells()),
        }

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "Plan":
        if d.get("version") != PLAN_VERSION:
            raise ConfigError(f"cannot resume a probe plan of version {d.get('version')!r}")
        configs = [
            FsConfig.make(
                c["filesystem"],
                c.get("mkfs") or {},
                c.get("mount") or (),
                c.get("scheduler") or "none",
                c.get("ag_count"),
            )
            for c in d["configs"]
        ]
        return Plan(
            device=d.get("device"),
            device_size_bytes=int(d["device_size_bytes"]),
            configs=configs,
            workloads=[WorkloadSpec.from_dict(w) for w in d["workloads"]],
            reps=int(d["reps"]),
            runtime_s=float(d["runtime_s"]),
            cooldown_s=float(d["cooldown_s"]),
            size_bytes=int(d["size_bytes"]),
            baseline=bool(d["baseline"]),
            ioengine=d.get("ioengine", "io_uring"),
            unsupported=dict(d.get("unsupported") or {}),
            scratch_size_bytes=d.get("scratch_size_bytes"),
            scratch_dir=d.get("scratch_dir"),
            energy=dict(d.get("energy") or {"source": "auto"}),
            plp=d.get("plp", "unknown"),
            force=bool(d.get("force")),
            db_path=d.get("db_path"),
            profile=d.get("profile"),
        )

    def fingerprint(self) -> str:
        """Short hash of the plan's content (not of the device it ran on)."""
        d = self.to_dict()
        for k in ("device", "db_path", "force"):
            d.pop(k, None)
        import hashlib  # lazily: OpenSSL's import would be part of every `recommend`

        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:12]


def parse_csv(text: str | Sequence[str] | None) -> list[str]:
    if text is None:
        return []
    items = text.split(",") if isinstance(text, str) else [p for t in text for p in t.split(",")]
    return [p.strip() for p in items if p.strip()]


def check_choice(kind: str, values: Iterable[str], allowed: Sequence[str]) -> list[str]:
    out = []
    for v in values:
        if v not in allowed:
            raise ConfigError(f"unknown {kind} {v!r}; choose from {', '.join(allowed)}")
        if v not in out:
            out.append(v)
    return out


def config_sets(
    filesystems: Sequence[str],
    schedulers: Sequence[str],
    device_size_bytes: int,
    agcounts: Sequence[int] = (),
    explicit: Sequence[Mapping[str, Any]] = (),
    variants: bool = True,
) -> list[FsConfig]:
    """The configurations of a matrix, each crossed with every scheduler.

    Explicit ``--config`` dicts replace the default set; one that names a scheduler is run
    with that scheduler only. Otherwise each filesystem gets its catalog default plus
    :data:`VARIANT_MOUNTS`, and XFS one default configuration per ``--agcounts`` value."""
    out: list[FsConfig] = []
    if agcounts and (explicit or "xfs" not in filesystems):
        raise ConfigError(
            "--agcounts applies to xfs: add xfs to --fs (explicit --config "
            "entries give their own ag_count)"
        )

    def add(cfg: FsConfig) -> None:
        if cfg not in out:
            out.append(cfg)

    if explicit:
        for d in explicit:
            base = catalog.config_from_dict(dict(d))
            scheds = [base.scheduler] if "scheduler" in d else list(schedulers)
            for s in scheds:
                add(base.with_(scheduler=s))
        return out
    for fs in filesystems:
        for s in schedulers:
            default = catalog.default_config(fs, device_size_bytes, scheduler=s)
            add(default)
            if fs == "xfs":
                lo, hi = catalog.ag_count_range(device_size_bytes)
                for n in agcounts:
                    if not lo <= n <= hi:
                        raise ConfigError(
                            f"--agcounts {n} is outside {lo}..{hi} for a "
                            f"{device_size_bytes >> 20} MiB device"
                        )
                    cfg = catalog.canonical(default.with_(ag_count=n))
                    catalog.validate(cfg, device_size_bytes)
                    add(cfg)
            if not variants:
                continue
            for extra in VARIANT_MOUNTS.get(fs, ()):
                mount = list(default.mount) + [o for o in extra if o not in default.mount]
                cfg = catalog.canonical(default.with_(mount=tuple(mount)))
                catalog.validate(cfg, device_size_bytes)
                add(cfg)
    return out


def build_plan(
    device: str | None,
    device_size_bytes: int,
    *,
    filesystems: Sequence[str] = DEFAULT_FILESYSTEMS,
    schedulers: Sequence[str] = DEFAULT_SCHEDULERS,
    agcounts: Sequence[int] = (),
    explicit_configs: Sequence[Mapping[str, Any]] = (),
    variants: bool = True,
    profile=None,
    micro: bool = True,
    micro_names: Sequence[str] | None = None,
    quick: bool = False,
    reps: int | None = None,
    runtime_s: float | None = None,
    cooldown_s: float | None = None,
    size_bytes: int | None = None,
    baseline: bool = True,
    ioengine: str = "io_uring",
    kernel_supports=None,
    **extra: Any,
) -> Plan:
    """Assemble a :class:`Plan`; raises ConfigError for anything the user can fix."""
    filesystems = check_choice("filesystem", filesystems, FILESYSTEMS)
    schedulers = check_choice("scheduler", schedulers, SCHEDULERS)
    if not filesystems and not explicit_configs:
        raise ConfigError("no filesystem to probe (--fs is empty)")
    if not schedulers:
        raise ConfigError("no scheduler to probe (--schedulers is empty)")
    # The ranges are fsadvisor.limits' (one table for the CLI, the TUI and API callers).
    reps = limits.check("reps", reps if reps is not None else (1 if quick else DEFAULT_REPS))
    runtime_s = limits.check(
        "runtime",
        runtime_s if runtime_s is not None else (QUICK_RUNTIME_S if quick else DEFAULT_RUNTIME_S),
    )
    cooldown_s = limits.check(
        "cooldown", cooldown_s if cooldown_s is not None else (0.0 if quick else DEFAULT_COOLDOWN_S)
    )
    configs = config_sets(
        filesystems,
        schedulers,
        device_size_bytes,
        agcounts,
        explicit_configs,
        variants and not quick,
    )
    workloads: list[WorkloadSpec] = []
    if profile is not None:
        workloads.append(profile_workload(profile))
    if micro:
        workloads += micro_workloads(micro_names, quick)
    if not workloads:
        raise ConfigError("nothing to run: no --profile and --no-micro")
    workloads = [with_ioengine(w, ioengine) for w in workloads]
    supports = kernel_supports or catalog.kernel_supports
    unsupported = {
        fs: UNSUPPORTED_FMT.format(fs=fs)
        for fs in sorted({c.fs for c in configs})
        if not supports(fs)
    }
    size = size_bytes or default_size_bytes(device_size_bytes)
    if size > device_size_bytes // 2 and device_size_bytes:
        raise ConfigError(
            f"--size {size >> 20} MiB is more than half of the {device_size_bytes >> 20} MiB device"
        )
    return Plan(
        device=device,
        device_size_bytes=device_size_bytes,
        configs=configs,
        workloads=workloads,
        reps=reps,
        runtime_s=float(runtime_s),
        cooldown_s=float(cooldown_s),
        size_bytes=size,
        baseline=baseline,
        ioengine=ioengine,
        unsupported=unsupported,
        profile=profile.name if profile is not None else None,
        **extra,
    )
