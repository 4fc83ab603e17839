"""One small interface for the benchmarks a probe cell runs: fio, db_bench, sysbench.

A probe cell asks a :class:`Benchmark` for the commands that run a job (``invocations``:
what to prepare, unmeasured, and the one measured command), runs them (``run``; the probe
runs them through its own executor, which tracks process groups for cleanup) and hands the
measured command's output back to ``parse``, which returns the metrics (names as in
:mod:`fsadvisor.tools.fio`: iops, mb_s, p99_latency_us ...), or why the run failed, and the
flags its figures need. The cell never branches on which tool it is, the way the energy
sources sit behind :class:`fsadvisor.energy.EnergyMeter`. Which adapter runs which kind of
workload is :mod:`fsadvisor.tools.registry`'s table, apart from this base so the base does not
import its subclasses.
"""

from __future__ import annotations

import math
import re
import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from fsadvisor.domain import Workload
from fsadvisor.errors import FsAdvisorError, NotSupported
from fsadvisor.host import run as hostrun
from fsadvisor.host.run import CommandResult
from fsadvisor.tools import KIND_FIO

MIB_TO_MB = (
    1.048576  # db_bench and sysbench print MiB/s as "MB/s"/"MiB/s"; fsadvisor uses 10^6 bytes
)
# Debian packages of the application benchmarks, for "not installed" messages.
PACKAGES = {"db_bench": "rocksdb-tools", "sysbench": "sysbench"}


class AppBenchParseError(FsAdvisorError):
    """Benchmark output could not be read (one-line message)."""


class AppBenchRunError(FsAdvisorError):
    """A benchmark could not be run or failed (one-line message)."""


@dataclass(frozen=True)
class BenchJob:
    """What a probe cell asks a benchmark to run, in the benchmark's terms."""

    name: str  # the workload's name (fio job names and file names derive from it)
    workload: Workload  # as it will run (many-file workloads already fitted to the budget)
    runtime_s: float  # measurement window
    device: str  # the block device under test
    target_dir: str | None  # the mounted filesystem; None runs on the raw device
    size_bytes: int  # the data set of one job
    budget_bytes: int  # the plan's per-job data-set budget (--size)
    kind: str = KIND_FIO
    jobfile: str | None = None  # runner/ job file name (kind "jobfile")
    app: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"profile": "rocksdb-ycsb-a"}


@dataclass(frozen=True)
class Invocation:
    """One command: the argument list, what it adds to the environment, where it runs."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Invocations:
    prepare: tuple[Invocation, ...]  # lay out, fill or load: run first, never measured
    measure: Invocation


@dataclass(frozen=True)
class Measurement:
    """What ``parse`` made of a run: its metrics, or why it failed (one line), and flags."""

    metrics: dict[str, float]
    error: str | None = None
    flags: tuple[str, ...] = ()

    @staticmethod
    def failed(error: str) -> "Measurement":
        return Measurement({}, error)


class Benchmark(ABC):
    """A benchmark tool. ``tool`` names it in the store (RunRecord.tool) and in the steps."""

    tool: str = ""

    @abstractmethod
    def invocations(self, job: BenchJob) -> Invocations:
        """The commands that run ``job``: pure (nothing is executed; --dry-run prints them)."""

    @abstractmethod
    def parse(self, result: CommandResult) -> Measurement:
        """Metrics from the measured command's result (a failed exit is a failed Measurement)."""

    def run(self, invocation: Invocation, timeout_s: float | None = None) -> CommandResult:
        """Run one of this benchmark's commands through the shared runner."""
        return hostrun.run(
            invocation.argv,
            env=dict(invocation.env) or None,
            cwd=invocation.cwd,
            timeout_s=timeout_s,
        )


# ---------------------------------------------------------------- running app benchmarks


def finite_float(text: str) -> float:
    """A number a tool printed; ValueError for nan/inf (never stored as a metric)."""
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(text)
    return v


def app_measurement(tool: str, result: CommandResult, metrics_of) -> Measurement:
    """db_bench's and sysbench's parse: a failed exit, unreadable output or no operations
    is a failed Measurement naming why."""
    if not result.ok:
        return Measurement.failed(result.one_line_error())
    try:
        metrics = metrics_of(result)
    except FsAdvisorError as e:
        return Measurement.failed(str(e))
    if not metrics.get("iops"):
        return Measurement.failed(f"{tool} completed no operations")
    return Measurement(metrics)


def run_checked(
    argv: Sequence[str], cwd: str | None, timeout_s: float | None, tool: str
) -> CommandResult:
    """Run an application benchmark's command; a missing tool is NotSupported, a failure or
    a timeout AppBenchRunError naming the line that explains it."""
    if not shutil.which(argv[0]):
        pkg = PACKAGES.get(tool, tool)
        raise NotSupported(f"{tool} is not installed (Debian package '{pkg}')")
    try:
        proc = hostrun.run(argv, cwd=cwd, timeout_s=timeout_s)
    except hostrun.CommandTimedOut:
        raise AppBenchRunError(f"{tool} did not finish within {timeout_s} s") from None
    if proc.returncode != 0:
        raise AppBenchRunError(f"{tool} exited {proc.returncode}: {failure_line(proc)[:200]}")
    return proc


def failure_line(proc: CommandResult) -> str:
    """The line that explains a failure: the last one mentioning an error (db_bench prints
    its version banner first and "open error: ..." last), else the last line."""
    lines = [ln.strip() for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"error|fatal|invalid", ln, re.IGNORECASE)]
    return (errors or lines or ["no output"])[-1]
