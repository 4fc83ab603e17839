"""Planning a device calibration: a short raw-device matrix (no filesystem) from which
``fsadvisor.predict.device_fit.fit_device_params`` learns the device's own parameters.

What each workload pins (models/devices.toml's keys):

- ``4k-randread-qd1`` / ``4k-randwrite-qd1``: read/write service time at QD1
- ``4k-randread-qd32`` / ``4k-randwrite-qd32``: the IOPS ceilings (the micro matrix's deep
  queue, seed 002's QD32 4K random write)
- ``128k-read-qd8`` / ``128k-write-qd8``: sequential bandwidth (the micro matrix's jobs)
- ``4k-randwrite-fsync1``: a QD1 write + fsync per write; minus the plain QD1 write, the
  device's flush cost (seed 002 "4K-randwrite-fsync1")
- ``4k-randread-qd4/16/64`` with QD1 and QD32: the concurrency sweep whose knee is the
  device's internal parallelism
- ``128k-write-qd8-xN``: the 128 KiB writes from N jobs (the host's cores, at most
  MAX_SUBMITTERS) against one: whether the device's throughput is each submitter's own
  work (zram compresses in the writer's context: x2.1 from two jobs on a 2-core host)
  or the device's (bw_submitters)

Short windows (a few seconds) and 2-3 repetitions keep the whole calibration within
:data:`BUDGET_S`; the plan shrinks its windows to fit, or is refused when the user's own
choices cannot. A :class:`CalibrationPlan` is a probe :class:`~fsadvisor.probe.plan.Plan`
with no filesystem configurations, so the probe's runner, safety checks, state file and
cleanup run it unchanged. Pure: nothing here touches a device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from fsadvisor.domain import Workload
from fsadvisor import limits
from fsadvisor.errors import ConfigError
from fsadvisor.probe.plan import KIB, MIB, MICRO_BY_NAME, Cell, Plan, WorkloadSpec, with_ioengine
from fsadvisor.probe.timing import cell_seconds, default_size_bytes

# The calibration promises "a raw-device probe of at most 5 minutes".
BUDGET_S = 300.0
DEFAULT_RUNTIME_S = 4.0
MIN_RUNTIME_S = 1.0
DEFAULT_REPS = 3  # key cells; the sweep's extra depths get one fewer (at least 1)
# Per raw cell outside the window: blkdiscard, sync, drop caches, fio start-up (no mkfs or
# mount). Measured on a 1 GiB direct-I/O loop device here: see the report of this branch.
RAW_CELL_OVERHEAD_S = 1.5
# A small region keeps the fill before each read cell short while still spanning many
# erase blocks of a real SSD; 1/8 of a small device at most (probe.plan.default_size_bytes).
MAX_SIZE_BYTES = 512 * MIB
SCHEDULER = "none"  # the bare device, as NVMe drives default to (domain notes §5)


def _spec(name: str, **kw: Any) -> WorkloadSpec:
    return WorkloadSpec(name=name, workload=Workload(**kw), raw_baseline=True, source="micro")


KEY_WORKLOADS: tuple[WorkloadSpec, ...] = (
    _spec("4k-randread-qd1", rw="randread", bs_bytes=4 * KIB, iodepth=1),
    _spec("4k-randwrite-qd1", rw="randwrite", bs_bytes=4 * KIB, iodepth=1),
    MICRO_BY_NAME["4k-randwrite-fsync1"],
    MICRO_BY_NAME["4k-randread-qd32"],
    MICRO_BY_NAME["4k-randwrite-qd32"],
    MICRO_BY_NAME["128k-read-qd8"],
    MICRO_BY_NAME["128k-write-qd8"],
)
SWEEP_WORKLOADS: tuple[WorkloadSpec, ...] = tuple(
    _spec(f"4k-randread-qd{qd}", rw="randread", bs_bytes=4 * KIB, iodepth=qd) for qd in (4, 16, 64)
)
# Jobs of the submitters cell: the host's cores, up to this many (a many-core server's
# every core would measure the host's memory, not the device).
MAX_SUBMITTERS = 4


def submitter_jobs(cores: int) -> int:
    """The several-job cell's jobs on a host of ``cores``: all of them, up to MAX_SUBMITTERS."""
    return min(max(int(cores), 1), MAX_SUBMITTERS)


def submitters_spec(jobs: int) -> WorkloadSpec:
    """128 KiB sequential writes at QD8 from ``jobs`` jobs: 128k-write-qd8's bandwidth with
    every submitter's own CPU (device_fit's ``bw_submitters``)."""
    return _spec(
        f"{SUBMITTERS_PREFIX}{jobs}", rw="write", bs_bytes=128 * KIB, iodepth=8, numjobs=jobs
    )


SWEEP_NAMES = frozenset(w.name for w in SWEEP_WORKLOADS)
SUBMITTERS_PREFIX = "128k-write-qd8-x"

# What each workload pins (device_fit's keys): a probe that needs only some of them runs only
# those workloads (service/adaptive.calibration_workloads) and leaves the rest at the prior.
# The sweep's depths pin the knee together; the CPU per read comes with the deep reads.
PINS: dict[str, tuple[str, ...]] = {
    "4k-randread-qd1": ("read_latency_us",),
    "4k-randwrite-qd1": ("write_latency_us",),
    "4k-randwrite-fsync1": ("flush_latency_us", "flush_latency_us_plp"),
    "4k-randread-qd32": ("read_iops_cap", "submit_cpu_us_read", "host_cpu_us_read"),
    "4k-randwrite-qd32": ("write_iops_cap",),
    "128k-read-qd8": ("read_bw_bytes_s",),
    "128k-write-qd8": ("write_bw_bytes_s",),
    **{name: ("parallelism", "knee_power") for name in SWEEP_NAMES},
}
# What each measures, in the words a preview uses.
WHAT: dict[str, str] = {
    "4k-randread-qd1": "the QD1 read latency",
    "4k-randwrite-qd1": "the QD1 write latency",
    "4k-randwrite-fsync1": "the flush",
    "4k-randread-qd32": "the random-read ceiling",
    "4k-randwrite-qd32": "the random-write ceiling",
    "128k-read-qd8": "the read bandwidth",
    "128k-write-qd8": "the write bandwidth",
    **{name: "the queue-depth knee" for name in SWEEP_NAMES},
    SUBMITTERS_PREFIX: "the bandwidth of several submitters",
}


def what_of(name: str) -> str:
    return WHAT[SUBMITTERS_PREFIX if name.startswith(SUBMITTERS_PREFIX) else name]


# What a workload's figure is read against: the flush is the fsync'd write's time less the
# plain write's, the knee lies between QD1's latency and the ceiling, and several submitters
# are measured against one.
REQUIRES: dict[str, tuple[str, ...]] = {
    "4k-randwrite-fsync1": ("4k-randwrite-qd1",),
    **{name: ("4k-randread-qd1", "4k-randread-qd32") for name in SWEEP_NAMES},
    SUBMITTERS_PREFIX: ("128k-write-qd8",),
}


def pins_of(name: str) -> tuple[str, ...]:
    """The device parameters the calibration workload ``name`` pins."""
    if name.startswith(SUBMITTERS_PREFIX):
        return ("bw_submitters",)
    return PINS.get(name, ())


def with_requirements(names: Iterable[str]) -> set[str]:
    """``names`` and every workload their figures are read against."""
    out: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        key = SUBMITTERS_PREFIX if name.startswith(SUBMITTERS_PREFIX) else name
        todo.extend(REQUIRES.get(key, ()))
    return out


@dataclass
class CalibrationPlan(Plan):
    """A probe plan of raw-device cells only (``configs`` is empty): every workload on the
    bare device under :data:`SCHEDULER`, repetitions outermost, the sweep's extra depths
    with ``sweep_reps``."""

    sweep_reps: int = 2
    scheduler: str = SCHEDULER
    # The stored runs of the device's earlier calibration that this one completes: the fit
    # reads them with this plan's own runs (service/calibration.run_calibration).
    extends: list[int] = field(default_factory=list)

    @property
    def schedulers(self) -> list[str]:
        return [self.scheduler]

    @property
    def device_key(self) -> str:
        # Never the key a probe of the same device uses: `probe --resume` must not pick up
        # a calibration's entry in the state file as its own unfinished matrix.
        return "calibrate:" + ("scratch" if self.scratch_size_bytes else str(self.device))

    def reps_of(self, spec: WorkloadSpec) -> int:
        # the sweep's extra depths and the several-job cell: fewer repetitions
        fewer = spec.name in SWEEP_NAMES or spec.workload.numjobs > 1
        return self.sweep_reps if fewer else self.reps

    def cells(self) -> list[Cell]:
        return [
            Cell(None, self.scheduler, w, rep)
            for rep in range(1, self.reps + 1)
            for w in self.workloads
            if rep <= self.reps_of(w)
        ]

    def cell_estimate_s(self, cell: Cell) -> float:
        return cell_seconds(
            cell.workload.workload.read_pct,
            self.size_bytes,
            self.runtime_s,
            self.cooldown_s,
            RAW_CELL_OVERHEAD_S,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **super().to_dict(),
            "purpose": "calibration",
            "sweep_reps": self.sweep_reps,
            "scheduler": self.scheduler,
            "budget_s": BUDGET_S,
            "extends": list(self.extends),
        }


def build_calibration_plan(
    device: str | None,
    device_size_bytes: int,
    *,
    runtime_s: float | None = None,
    reps: int | None = None,
    ioengine: str = "io_uring",
    budget_s: float = BUDGET_S,
    cores: int = 1,
    only: Iterable[str] | None = None,
    **extra: Any,
) -> CalibrationPlan:
    """The calibration matrix for ``device``, within ``budget_s``; on a host of several
    ``cores`` it measures the 128 KiB writes from that many jobs too. ``only``: just these
    workloads (by name; a ``128k-write-qd8-x`` name stands for the several-job cell) and
    those they are read against (with_requirements), in the full plan's order. Without an explicit
    ``runtime_s`` the window shrinks (down to MIN_RUNTIME_S) until the estimate fits, then
    without explicit ``reps`` the repetitions go down to 2; what still does not fit (or the
    user's own runtime/reps that do not) is refused in one line, before anything runs."""
    if runtime_s is not None and runtime_s <= 0:
        raise ConfigError(f"--runtime must be positive, not {runtime_s:g}")
    if reps is not None and reps < 1:
        raise ConfigError(f"--reps must be at least 1, not {reps}")
    # within the option's range before a plan is built: a million repetitions would build
    # millions of cells only to be refused by the budget afterwards
    limits.check("reps", reps)
    limits.check("runtime", runtime_s)
    size = min(MAX_SIZE_BYTES, default_size_bytes(device_size_bytes))
    jobs = submitter_jobs(cores)
    extra_cells = (submitters_spec(jobs),) if jobs > 1 else ()
    every = (*KEY_WORKLOADS, *SWEEP_WORKLOADS, *extra_cells)
    if only is not None:
        wanted = with_requirements(
            f"{SUBMITTERS_PREFIX}{jobs}" if n.startswith(SUBMITTERS_PREFIX) else n for n in only
        )
        every = tuple(w for w in every if w.name in wanted)
        if not every:
            raise ConfigError("a calibration of no workload: nothing to measure")
    workloads = [with_ioengine(w, ioengine) for w in every]

    def make(rt: float, n: int) -> CalibrationPlan:
        return CalibrationPlan(
            device=device,
            device_size_bytes=device_size_bytes,
            configs=[],
            workloads=workloads,
            reps=n,
            runtime_s=float(rt),
            cooldown_s=0.0,
            size_bytes=size,
            baseline=True,
            ioengine=ioengine,
            sweep_reps=max(1, n - 1),
            **extra,
        )

    n = reps if reps is not None else DEFAULT_REPS
    rt = runtime_s if runtime_s is not None else DEFAULT_RUNTIME_S
    plan = make(rt, n)
    while plan.estimated_seconds() > budget_s:
        if runtime_s is None and rt > MIN_RUNTIME_S:
            rt = max(MIN_RUNTIME_S, rt - 0.5)
        elif reps is None and n > 2:
            n -= 1
        else:
            raise ConfigError(
                f"this calibration would take about {plan.estimated_seconds():.0f} s, more "
                f"than its {budget_s:.0f} s budget ({len(plan.cells())} runs of "
                f"{plan.runtime_s:g} s); lower --runtime or --reps"
            )
        plan = make(rt, n)
    return plan


class CalibrationPacer:
    """Runs a calibration's cells in the plan's order (every workload's first repetition
    first) and keeps it within ``deadline_s`` of device time from what the device's own
    first runs took, not from the plan's fixed per-run overhead: a slow device's fill and
    discard can take many times RAW_CELL_OVERHEAD_S. Before each further repetition it
    projects that repetition's time from the same workload's first run (its window plus what
    it took outside it); a repetition that would end past the deadline is left out, and so
    are the ones after it. The first repetition of every workload always runs: the fit needs
    each of them once. ``clock`` is the device time spent so far (the runner's wall time).

    Used as MatrixRun's ``cell_source``; ``wall_of`` gives the stored wall time of a cell's
    run once it is done (None before)."""

    def __init__(
        self, plan: CalibrationPlan, deadline_s: float | None, wall_of: Any, note: Any = None
    ):
        self.plan, self.deadline_s = plan, deadline_s
        self.wall_of, self.note = wall_of, note or (lambda message: None)
        self.dropped: list[Cell] = []
        self.reestimated_s: float | None = None

    def _first_walls(self) -> dict[str, float]:
        out = {}
        for w in self.plan.workloads:
            wall = self.wall_of(Cell(None, self.plan.scheduler, w, 1))
            if wall is not None:
                out[w.name] = float(wall)
        return out

    def __call__(self, info: Any, done: set) -> Any:
        cells = self.plan.cells()
        spent = 0.0
        for i, cell in enumerate(cells):
            if cell.rep > 1 and self.deadline_s is not None:
                first = self._first_walls()
                if self.reestimated_s is None:
                    rest = sum(
                        first.get(c.workload.name, self.plan.cell_estimate_s(c)) for c in cells[i:]
                    )
                    self.reestimated_s = spent + rest
                    self.note(
                        f"calibration: the first runs took {spent:.0f} s; all "
                        f"{len(cells)} would take about {self.reestimated_s:.0f} s "
                        f"(planned {self.plan.estimated_seconds():.0f} s)"
                    )
                need = first.get(cell.workload.name, self.plan.cell_estimate_s(cell))
                if spent + need > self.deadline_s:
                    self.dropped = cells[i:]
                    self.note(
                        f"calibration: {len(self.dropped)} further repetitions left out "
                        f"to stay within {self.deadline_s:.0f} s of device time (the "
                        f"first repetition of every workload ran)"
                    )
                    return
            yield cell
            wall = self.wall_of(cell)
            spent += float(wall) if wall is not None else self.plan.cell_estimate_s(cell)
