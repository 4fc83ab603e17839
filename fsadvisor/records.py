"""The records of measurements: a run's energy, one repetition of a probe cell, and one
number the model learns from. They build on :mod:`fsadvisor.domain`'s nouns, which never
import them: a module of their own, so that what needs none of them (a `recommend` from a
cached fit) does not build them (generating their dataclass methods is start-up time)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from fsadvisor.domain import Device, FsConfig, Plp, Workload

__all__ = ["EnergyReading", "Observation", "RunRecord"]


@dataclass(frozen=True)
class EnergyReading:
    """Energy over one run, always with where it came from.

    ``source`` says how it was obtained and ``scope`` what it covers; an ``estimate`` is a
    model, never a measurement. ``energy_j`` is None when the source could not cover the run
    (``missing`` says why)."""

    source: str
    scope: str
    energy_j: float | None
    avg_watts: float | None
    duration_s: float
    samples: int = 0
    accuracy: str = "unknown"  # e.g. "±1% (meter)", "model, ±50%"
    idle_watts: float | None = None
    active_energy_j: float | None = None
    assumptions: Mapping[str, Any] = field(default_factory=dict)
    missing: str | None = None

    @property
    def measured(self) -> bool:
        return self.source != "estimate" and self.energy_j is not None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["assumptions"] = dict(self.assumptions)
        d["measured"] = self.measured
        return d


@dataclass(frozen=True)
class Observation:
    """One number the model can learn from: a stored probe summary or a transcribed figure.

    Absolute observations have ``relative_to`` None. A relative one ("+23% vs default",
    seed 004 Table 2) states value = metric(config) / metric(relative_to) - 1 for the same
    workload and device. ``weight`` expresses how much the source applies to an NVMe today
    (HDD/SATA-era data: small weight, i.e. wide uncertainty)."""

    source: str  # citation, e.g. "seed 004, Table 2" or "probe run 17"
    device_kind: str
    config: FsConfig
    workload: Workload
    metric: str  # iops | ops_per_s | mb_s | p99_latency_us | mean_latency_us | watts | ops_per_joule ...
    value: float
    unit: str
    relative_to: FsConfig | None = None
    power_scope: str | None = None
    energy_source: str | None = None
    weight: float = 1.0
    note: str = ""
    device_plp: Plp = "unknown"  # the measured device's power-loss protection, if stated
    # Which device the number was measured on (the cited drive for seed rows, the store's
    # device identity for probe runs, the backing class for reference runs). The model keeps
    # one device's levels apart from another's by it; "" = unknown (pooled with its kind).
    device_id: str = ""
    # Replicates behind ``value`` (a cell mean) and their sample sd in ``unit`` (None: not
    # stated). The model weighs a mean of n runs as such; one run is never a confident effect.
    n: int = 1
    sd: float | None = None
    # The CPU the measurement used (mean over its replicates; None: not recorded): fio's own
    # threads (usr + sys, % of one CPU, one job) and the whole host (% of all its CPUs).
    # A raw-device cell's figures say how much CPU headroom the device leaves a filesystem.
    thread_cpu_pct: float | None = None
    host_cpu_busy_pct: float | None = None


@dataclass
class RunRecord:
    """One repetition of one probe cell (configuration x workload x repetition), stored the
    moment it finishes. ``metrics`` keys carry units: iops, read_iops, write_iops, mb_s,
    read_mb_s, write_mb_s, mean_latency_us, p50_latency_us, p99_latency_us, p999_latency_us,
    usr_cpu_pct, sys_cpu_pct, host_cpu_busy_pct, dev_read_bytes, dev_write_bytes,
    app_write_bytes, write_amplification, ops, bytes, runtime_s; and, the one entry that is
    not a number, the probe's seconds per step of the cell (probe/cell.py STEP_SECONDS:
    step -> seconds). A failed or incomplete run keeps its error and is never summarised as
    a result."""

    cell_key: str
    device: Device
    config: FsConfig | None  # None for the raw-device baseline
    workload_name: str
    workload: Workload
    rep: int
    status: str
    started_at: float
    wall_s: float
    metrics: dict[str, float | dict[str, float]] = field(default_factory=dict)
    energy: EnergyReading | None = None
    flags: tuple[str, ...] = ()  # FLAG_* in fsadvisor.domain
    error: str | None = None
    tool: str = "fio"  # fio | db_bench | sysbench
    command: tuple[str, ...] = ()
    raw_output: str = ""
    host: dict[str, Any] = field(default_factory=dict)
    matrix_id: str | None = None
    # The profiles a joint probe measured this run for (their workloads are one measurement,
    # stored under the first one's name): each of them counts it. Empty: the run belongs to
    # its workload's profile only.
    profiles: tuple[str, ...] = ()
