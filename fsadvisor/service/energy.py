"""Service functions for energy sources: what works here, and the idle baseline.

Both front ends call these; they return plain dicts and raise EnergyError (one line).
"""

from __future__ import annotations

from typing import Any

from fsadvisor import energy


def energy_check(meter_log: str | None = None, device: str | None = None,
                 **opts: Any) -> list[dict[str, Any]]:
    """One dict per source (rapl, ipmi, meter-log, estimate): name, ok, detail, and
    ``auto`` True on the one ``choose_meter("auto")`` would pick."""
    statuses = energy.check(meter_log=meter_log, device=device, **opts)
    chosen = energy.auto_choice(statuses, meter_log_given=meter_log is not None)
    return [dict(s.to_dict(), auto=s.name == chosen) for s in statuses]


def energy_idle(seconds: float = 10.0, source: str = "auto", device: str | None = None,
                **opts: Any) -> dict[str, Any]:
    """Measure idle power with the chosen source: its watts, the reading, and which source."""
    meter = energy.choose_meter(source, device, **opts)
    watts = energy.measure_idle(meter, seconds)
    return {"idle_watts": watts, "source": meter.name, "scope": meter.scope,
            "why": meter.why, "measured": meter.reading.measured,
            "reading": meter.reading.to_dict()}
