"""One probe cell, step by step: precondition, mkfs, mount, scheduler, fill, drop caches,
measure, cool down, unmount.

The steps are built first (pure: :meth:`CellRunner.steps`) and executed second, so
``--dry-run`` prints exactly the argument lists a real run executes. Preconditioning follows
seed 000 §III (blkdiscard before formatting; the device is being wiped anyway). A read job
first writes its whole data set: reads of never-written blocks never reach the flash and
come back impossibly fast (285k vs 59k IOPS on a loop device, domain notes §5). Layout and
fill happen *before* the block-layer snapshot, so write amplification counts only the
measured run (domain notes §5: "exclude layout").
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from fsadvisor import catalog
from fsadvisor.domain import (
    FLAG_DIRECT_IO,
    FLAG_ESTIMATE,
    FLAG_LOOP,
    METADATA_MODES,
    Device,
    Workload,
)
from fsadvisor.records import RunRecord
from fsadvisor.errors import FsAdvisorError, one_line
from fsadvisor.host import blockstat
from fsadvisor.host import device as devmod
from fsadvisor.probe import measure
from fsadvisor.probe.commands import CommandFailed, CommandResult, Executor, display
from fsadvisor.probe.plan import MIB, Cell, Plan
from fsadvisor.probe.state import SystemOps
from fsadvisor.tools import registry
from fsadvisor.tools.benchmark import BenchJob, Invocation

DROP_CACHES = "/proc/sys/vm/drop_caches"
FLAG_NO_DISCARD = "no-discard"
# A benchmark gets its runtime plus this much (layout, ramp-down) before it is stopped.
MEASURE_GRACE_S = 300.0
ERROR_CHARS = 400  # a stored error is one line, at most this long
SETUP_TIMEOUT_S = 3600.0  # mkfs/fill of a large drive
# A run's seconds per phase are kept in its metrics under this key; the phase of each step
# role (fill: laying out the files a read workload reads; measure: the benchmark process,
# its measured window and its start and end).
STEP_SECONDS = "step_seconds"
STEP_PHASES = {
    "scheduler": "mount",
    "prepare": "fill",
    "sync": "cache drop",
    "drop-caches": "cache drop",
    "cooldown": "cool-down",
}
# After the last cell: the probe's own filesystem signature goes, so that a rerun or
# --resume finds the device as empty as the user handed it over (no --force needed).
WIPE_ARGV = ["wipefs", "--all", "--quiet"]


@dataclass(frozen=True)
class Step:
    """One thing a cell does. ``argv`` steps are executed; the others are Python actions
    (scheduler, sync, drop caches, sleep) shown as their shell equivalent in a dry run."""

    role: str  # discard mkfs mount scheduler prepare sync drop-caches measure cooldown umount
    argv: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    value: str = ""
    seconds: float = 0.0
    optional: bool = False
    tool: str = "fio"
    note: str = ""
    cwd: str | None = None

    def display(self, device: str = "", sys_name: str | None = None) -> str:
        """The step as one shell line, every word quoted (``shlex``). ``sys_name`` is the
        kernel's name for the disk whose queue holds the scheduler (a symlink such as
        /dev/disk/by-id/x or a partition has another); without it, the device's basename."""
        prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in self.env)
        if self.cwd:
            prefix = f"cd {shlex.quote(self.cwd)} && " + prefix
        if self.argv:
            return prefix + display(self.argv) + (f"  # {self.note}" if self.note else "")
        if self.role == "scheduler":
            name = sys_name or Path(device).name or "DEV"
            return (
                f"echo {shlex.quote(self.value)} > "
                f"{shlex.quote(f'/sys/block/{name}/queue/scheduler')}"
            )
        if self.role == "sync":
            return "sync"
        if self.role == "drop-caches":
            return f"echo 3 > {DROP_CACHES}"
        if self.role == "cooldown":
            return f"sleep {self.seconds:g}  # cool-down"
        return f"# {self.role}"


def data_set_bytes(plan: Plan, w: Workload, micro: bool) -> int:
    """The bytes one fio job's files (or raw region) hold: the plan's per-job size for micro
    jobs, the profile's working set capped by that size otherwise. In a directory, every
    job of numjobs gets files of its own (fio names them job.N.M), so a many-file profile's
    budget is shared out among its jobs; one named file is shared by all of them."""
    total = plan.size_bytes if micro else max(MIB, min(w.working_set_bytes, plan.size_bytes))
    if w.nrfiles > 1 and w.numjobs > 1:
        total = max(w.nrfiles * w.bs_bytes, total // w.numjobs)
    return total


def fitted_workload(plan: Plan, cell: Cell) -> Workload:
    """The workload as it will run: many-file workloads scaled down to the data set."""
    w = cell.workload.workload
    size = data_set_bytes(plan, w, cell.workload.source == "micro")
    if w.rw not in METADATA_MODES and w.nrfiles > 1 and w.nrfiles * w.file_size_bytes > size:
        per_file = max(w.bs_bytes, size // w.nrfiles // w.bs_bytes * w.bs_bytes)
        w = replace(w, file_size_bytes=per_file, file_size_max_bytes=None)
    return w


def bench_job(plan: Plan, cell: Cell, target_dir: str | None, device: str) -> BenchJob:
    """What the cell's benchmark runs: the fitted workload and its data set, on the
    filesystem at ``target_dir`` (None: on the raw ``device``)."""
    spec = cell.workload
    w = fitted_workload(plan, cell)
    return BenchJob(
        name=spec.name,
        workload=w,
        runtime_s=plan.runtime_s,
        device=device,
        target_dir=target_dir,
        size_bytes=data_set_bytes(plan, w, spec.source == "micro"),
        budget_bytes=plan.size_bytes,
        kind=spec.kind,
        jobfile=spec.jobfile,
        app=spec.app,
    )


@dataclass(frozen=True)
class LiveSample:
    """About once a second while a cell's benchmark runs (not stored, shown only): the
    block layer's completions over the last interval, read from ``stat_file``, and the
    energy meter's latest watts (None: no live figure) with its source and scope."""

    rate: blockstat.BlockRate
    stat_file: str
    watts: float | None
    energy_source: str | None
    energy_scope: str | None


@dataclass
class CellHooks:
    """How the matrix runner keeps its state file in step with the cell."""

    before_mount: Callable[[str, str], None] = lambda dev, mnt: None
    after_umount: Callable[[str], None] = lambda mnt: None


@dataclass
class CellRunner:
    """Runs cells of ``plan`` on ``device`` (the resolved block device)."""

    plan: Plan
    device: str
    device_info: Device
    mountpoint: str
    executor: Executor
    meter: Any = None  # fsadvisor.energy.EnergyMeter
    host: dict[str, Any] = field(default_factory=dict)
    matrix_id: str | None = None
    hooks: CellHooks = field(default_factory=CellHooks)
    block_stat: Callable[[str], dict[str, int]] | None = None
    set_scheduler: Callable[[str, str], str] | None = None
    sleep: Callable[[float], None] = time.sleep
    # Live readings while the benchmark runs (a thread calls it; the sampler stops with
    # the measurement, also when it is interrupted).
    on_sample: Callable[[LiveSample], None] | None = None
    sample_interval_s: float = blockstat.DEFAULT_INTERVAL_S
    mounted: bool = False
    fatal: str | None = None  # set when the device is left in a state no later cell can use

    # ------------------------------------------------------------ steps (pure)
    def steps(self, cell: Cell) -> list[Step]:
        dev, mnt = self.device, self.mountpoint
        out = [
            Step(
                "discard",
                ("blkdiscard", "-f", dev),
                optional=True,
                note="precondition (seed 000); skipped if the device cannot discard",
            )
        ]
        if cell.config is not None:
            out += [
                Step("mkfs", tuple(catalog.mkfs_argv(cell.config, dev))),
                Step("mount", tuple(catalog.mount_argv(cell.config, dev, mnt))),
            ]
        out.append(Step("scheduler", value=cell.scheduler))
        out += self._workload_steps(cell)
        out.append(Step("cooldown", seconds=self.plan.cooldown_s))
        if cell.config is not None:
            out.append(Step("umount", ("umount", mnt)))
        return out

    def _workload_steps(self, cell: Cell) -> list[Step]:
        bench = registry.for_kind(cell.workload.kind)
        target_dir = None if cell.config is None else self.mountpoint
        todo = bench.invocations(bench_job(self.plan, cell, target_dir, self.device))

        def step(role: str, inv: Invocation) -> Step:
            return Step(role, inv.argv, env=inv.env, tool=bench.tool, note=inv.note, cwd=inv.cwd)

        return [
            *(step("prepare", inv) for inv in todo.prepare),
            Step("sync"),
            Step("drop-caches"),
            step("measure", todo.measure),
        ]

    # ------------------------------------------------------------ execution
    def run(self, cell: Cell, on_step: Callable[[Step], None] | None = None) -> RunRecord:
        """Execute ``cell``; a failing step gives a ``failed`` record (the matrix goes on).
        Interruptions (BaseException) propagate after the cell has been unmounted."""
        started, t0 = time.time(), time.monotonic()
        flags: list[str] = []
        if self.device_info.kind in ("loop", "ram-loop"):
            flags.append(FLAG_LOOP)
        record = RunRecord(
            cell_key=cell.key,
            device=self.device_info,
            config=cell.config,
            workload_name=cell.workload.name,
            workload=fitted_workload(self.plan, cell),
            rep=cell.rep,
            status="failed",
            started_at=started,
            wall_s=0.0,
            host=dict(self.host),
            matrix_id=self.matrix_id,
            profiles=self.plan.profiles_of(cell.workload.name),
        )
        self.fatal = None
        # Where the cell's device time goes, by step (what a probe spends outside fio's
        # measured window is what a smaller matrix or a longer window would save).
        spent: dict[str, float] = {}
        try:
            for step in self.steps(cell):
                if on_step:
                    on_step(step)
                t_step = time.monotonic()
                try:
                    if step.role == "measure":
                        self._measure(step, cell, record, flags)
                    else:
                        self._do(step, flags)
                finally:
                    phase = STEP_PHASES.get(step.role, step.role)
                    spent[phase] = spent.get(phase, 0.0) + time.monotonic() - t_step
                if step.role == "measure" and record.status != "ok":
                    break
        except (FsAdvisorError, OSError) as e:
            record.status, record.error = "failed", one_line(e, ERROR_CHARS)
        except BaseException:
            # Interrupted: unmount if we can; the matrix cleanup retries whatever is left.
            if self.mounted:
                with contextlib.suppress(Exception):
                    self.umount()
            raise
        finally:
            record.wall_s = time.monotonic() - t0
            record.flags = tuple(dict.fromkeys(flags))
            record.metrics = {
                **dict(record.metrics or {}),
                STEP_SECONDS: {k: round(v, 3) for k, v in spent.items()},
            }
        if self.mounted:
            try:
                self.umount()
            except (FsAdvisorError, OSError) as e:
                # Every later cell would fail on a busy device: the matrix must stop.
                self.fatal = f"cannot unmount {self.mountpoint}: {one_line(e, ERROR_CHARS)}"
                record.status = "failed"
                record.error = record.error or self.fatal
        return record

    def _do(self, step: Step, flags: list[str]) -> None:
        if step.role == "scheduler":
            (self.set_scheduler or devmod.set_scheduler)(self.device, step.value)
        elif step.role == "sync":
            os.sync()
        elif step.role == "drop-caches":
            Path(DROP_CACHES).write_text("3\n")
        elif step.role == "cooldown":
            if step.seconds > 0:
                self.sleep(step.seconds)
        elif step.role == "mount":
            self.hooks.before_mount(self.device, self.mountpoint)
            self.mounted = True
            try:
                self.executor.run(step.argv, timeout_s=120)
            except CommandFailed as e:
                self.mounted = _is_mounted(self.mountpoint)
                raise CommandFailed(f"mount: {e}", e.result) from None
            except BaseException:
                self.mounted = _is_mounted(self.mountpoint)
                raise
        elif step.role == "umount":
            self.umount()
        else:
            try:
                self.executor.run(
                    step.argv, env=dict(step.env) or None, cwd=step.cwd, timeout_s=SETUP_TIMEOUT_S
                )
            except CommandFailed as e:
                if not step.optional:
                    raise CommandFailed(f"{step.role}: {e}", e.result) from None
                if step.role == "discard":
                    flags.append(FLAG_NO_DISCARD)

    def umount(self) -> None:
        result = None
        for _ in range(10):
            result = self.executor.run(["umount", self.mountpoint], check=False, timeout_s=120)
            if result.ok or not _is_mounted(self.mountpoint):
                break
            time.sleep(0.3)  # a benchmark stopped a moment ago may still hold it
        if _is_mounted(self.mountpoint):
            raise CommandFailed(f"umount: {result.one_line_error() if result else 'failed'}")
        self.mounted = False
        self.hooks.after_umount(self.mountpoint)

    def _measure(self, step: Step, cell: Cell, record: RunRecord, flags: list[str]) -> None:
        stat = self.block_stat or devmod.block_stat
        before_blk = stat(self.device)
        before_cpu = measure.CpuTimes.now()
        if self.meter is not None:
            self.meter.start()
        # Wall-clock window of the measurement, kept with the run so an external meter's log
        # exported later (`fsadvisor energy import-log`) can be aligned to exactly this span.
        window_start = time.time()
        live = self._live_sampler()
        try:
            result = self.executor.run(
                step.argv,
                env=dict(step.env) or None,
                cwd=step.cwd,
                check=False,
                timeout_s=self.plan.runtime_s + MEASURE_GRACE_S,
            )
        finally:
            window_end = time.time()
            if live is not None:
                live.stop()
            energy = self.meter.stop() if self.meter is not None else None
        after_cpu = measure.CpuTimes.now()
        os.sync()  # flush what the run left dirty, so the device counters include it
        after_blk = stat(self.device)
        record.command = result.argv
        record.raw_output = result.stdout
        record.tool = step.tool
        record.energy = energy
        metrics, error, parse_flags = self._parse(step, result)
        if error:
            record.status, record.error = "failed", error
            return
        flags += parse_flags
        metrics.update(measure.host_cpu_metrics(before_cpu, after_cpu))
        metrics.update(measure.device_metrics(measure.block_delta(before_blk, after_blk), metrics))
        metrics["window_start_epoch_s"] = window_start
        metrics["window_end_epoch_s"] = window_end
        w = record.workload
        if w.rw not in METADATA_MODES and measure.direct_io_not_honoured(
            w.direct, metrics.get("app_read_bytes"), metrics.get("dev_read_bytes")
        ):
            flags.append(FLAG_DIRECT_IO)
        if energy is not None and energy.source == "estimate":
            flags.append(FLAG_ESTIMATE)
        record.metrics = dict(metrics)
        record.status = "ok"

    def _live_sampler(self) -> blockstat.BlockStatSampler | None:
        """Started here, stopped in _measure's finally: None without a listener or when the
        device has no readable stat file (the measurement itself does not need one)."""
        if self.on_sample is None:
            return None
        try:
            path, label = blockstat.stat_file(self.device)
        except (FsAdvisorError, OSError):
            return None
        meter, listener = self.meter, self.on_sample

        def sampled(rate: blockstat.BlockRate) -> None:
            watts = meter.live_watts() if meter is not None else None
            listener(
                LiveSample(
                    rate, label, watts, getattr(meter, "name", None), getattr(meter, "scope", None)
                )
            )

        sampler = blockstat.BlockStatSampler(path, sampled, self.sample_interval_s)
        sampler.start()
        return sampler

    def _parse(
        self,
        step: Step,
        result: CommandResult,
    ) -> tuple[dict[str, float], str | None, list[str]]:
        """The run's metrics, or why it failed, and the flags its figures need."""
        m = registry.for_kind(step.tool).parse(result)
        return m.metrics, m.error, list(m.flags)


def _is_mounted(mountpoint: str) -> bool:
    return SystemOps().is_mounted(mountpoint)
