"""Service functions for energy sources: what works here, and the idle baseline.

Both front ends call these; they return plain dicts and raise EnergyError (one line).
"""

from __future__ import annotations

from typing import Any

from fsadvisor import energy
from fsadvisor.energy import meterlog
from fsadvisor.errors import EnergyError
from fsadvisor.store import open_store
from fsadvisor import limits


def energy_check(
    meter_log: str | None = None, device: str | None = None, **opts: Any
) -> list[dict[str, Any]]:
    """One dict per source (rapl, ipmi, meter-log, estimate): name, ok, detail, and
    ``auto`` True on the one ``choose_meter("auto")`` would pick."""
    if meter_log is not None:
        # A log the user named that is missing or not a meter log is an error to fix, not a
        # row among the sources that happen not to work here.
        _require_meter_log(meter_log)
    statuses = energy.check(meter_log=meter_log, device=device, **opts)
    chosen = energy.auto_choice(statuses, meter_log_given=meter_log is not None)
    return [dict(s.to_dict(), auto=s.name == chosen) for s in statuses]


def _require_meter_log(path: str) -> None:
    """EnergyError unless ``path`` is a readable power meter log with (timestamp, watts) rows."""
    why = meterlog.MeterLogMeter(path).unavailable()
    if why is not None:
        raise EnergyError(f"{why} (expected a power meter's CSV export: timestamp, watts)")


def energy_idle(
    seconds: float = 10.0, source: str = "auto", device: str | None = None, **opts: Any
) -> dict[str, Any]:
    """Measure idle power with the chosen source: its watts, the reading, and which source."""

    limits.check("seconds", seconds)
    meter = energy.choose_meter(source, device, **opts)
    watts = energy.measure_idle(meter, seconds)
    reading = meter.reading  # what measure_idle's stop() read
    if reading is None:
        raise EnergyError(f"{meter.name} gave no reading of the idle seconds")
    return {
        "idle_watts": watts,
        "source": meter.name,
        "scope": meter.scope,
        "why": meter.why,
        "measured": reading.measured,
        "reading": reading.to_dict(),
    }


def import_meter_log(
    path: str,
    matrix_id: str | None = None,
    clock_offset_s: float = 0.0,
    scope: str = "system",
    idle_watts: float | None = None,
    max_gap_s: float | None = None,
    db: str | None = None,
) -> dict[str, Any]:
    """Attach an external power meter's log (exported after the probe, as seed 000's HOBO
    logger is read out afterwards) to stored runs: each run's energy becomes the log's
    integral over exactly that run's measurement window. A run the log does not cover gets
    its energy marked missing with the reason; nothing is interpolated beyond the log.
    Only runs whose measurement window was recorded can be aligned."""

    if scope not in ("system", "cpu+dram", "drive"):
        raise EnergyError(f"scope must be system, cpu+dram or drive, not {scope!r}")
    limits.check("clock-offset", clock_offset_s)
    limits.check("idle-watts", idle_watts)
    _require_meter_log(path)
    with open_store(db) as store:
        filters: dict[str, Any] = {"status": "ok"}
        if matrix_id:
            filters["matrix_id"] = matrix_id
        runs = store.runs(**filters)
        if matrix_id and not runs:
            raise EnergyError(f"no completed runs of matrix {matrix_id!r} in the store")
        kw: dict[str, Any] = {
            "clock_offset_s": clock_offset_s,
            "scope": scope,
            "idle_watts": idle_watts,
        }
        if max_gap_s is not None:
            kw["max_gap_s"] = max_gap_s
        updated, missing, unaligned = [], [], 0
        for run in runs:
            m = run.get("metrics") or {}
            start, end = m.get("window_start_epoch_s"), m.get("window_end_epoch_s")
            if start is None or end is None:
                unaligned += 1
                continue
            reading = meterlog.reading_for_window(path, float(start), float(end), **kw)
            store.set_energy(int(run["run_id"]), reading)
            if reading.energy_j is None:
                missing.append(
                    {
                        "run_id": run["run_id"],
                        "cell_key": run["cell_key"],
                        "reason": reading.missing,
                    }
                )
            else:
                updated.append(
                    {
                        "run_id": run["run_id"],
                        "cell_key": run["cell_key"],
                        "energy_j": reading.energy_j,
                        "avg_watts": reading.avg_watts,
                    }
                )
    return {
        "log": str(path),
        "runs_considered": len(runs),
        "updated": updated,
        "missing": missing,
        "without_window": unaligned,
        "scope": scope,
        "clock_offset_s": clock_offset_s,
    }
