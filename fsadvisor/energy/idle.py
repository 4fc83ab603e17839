"""Idle baseline, total vs active energy, and operations per joule.

Seed 004 §4 splits a node's energy into idle (passive: paid even when nothing runs) and
active (the extra drawn while working). A filesystem can only change the active part, yet
users pay the total, so both are kept: ``energy_j`` is the total, ``active_energy_j`` =
total − idle_watts × duration. Seeds 000 and 004 rank by total (ops/joule of the whole
system); ``basis="active"`` answers "what did the work itself cost".
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from typing import Callable

from fsadvisor.records import EnergyReading
from fsadvisor.errors import EnergyError


def parse_idle_watts(value: str | float | int) -> float:
    """A user-given idle power: ``45``, ``45.5``, ``"45 W"``."""
    if isinstance(value, (int, float)):
        w = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(?:w|watts?)?\s*", value, re.I)
        if not m:
            raise EnergyError(f"idle power must be watts like 45 or '45 W', got {value!r}")
        w = float(m.group(1))
    if not math.isfinite(w) or w < 0:
        raise EnergyError(f"idle power must be a finite number of watts >= 0, got {value!r}")
    return w


def with_idle(reading: EnergyReading, idle_watts: float) -> EnergyReading:
    """The reading with its idle baseline and active energy filled in.

    An idle baseline above the run's average power makes active energy negative, which
    means the baseline was wrong (measured on a warmer/busier machine): active energy is
    then left None and the reason kept in ``assumptions`` rather than clamped to zero.
    """
    idle_watts = parse_idle_watts(idle_watts)
    assumptions = dict(reading.assumptions)
    active = None
    if reading.energy_j is not None:
        active = reading.energy_j - idle_watts * reading.duration_s
        if active < 0:
            assumptions["active_energy"] = (
                f"idle baseline {idle_watts:g} W exceeds the run's average "
                f"{reading.avg_watts or 0:.1f} W: active energy undefined"
            )
            active = None
    return dataclasses.replace(
        reading, idle_watts=idle_watts, active_energy_j=active, assumptions=assumptions
    )


def ops_per_joule(ops: float, reading: EnergyReading, basis: str = "total") -> float | None:
    """Operations per joule on total or active energy; None when that energy is missing."""
    if basis not in ("total", "active"):
        raise EnergyError(f"ops/joule basis must be 'total' or 'active', got {basis!r}")
    if basis == "active" and reading.idle_watts is None and reading.energy_j is not None:
        raise EnergyError(
            "ops/joule on active energy needs an idle baseline: "
            "measure one (fsadvisor energy idle) or give --idle-watts"
        )
    energy = reading.energy_j if basis == "total" else reading.active_energy_j
    if energy is None or energy <= 0:
        return None
    return ops / energy


def measure_idle(meter, seconds: float, sleep: Callable[[float], None] = time.sleep) -> float:
    """Average watts the meter sees over ``seconds`` of doing nothing.

    Run it on a quiet machine (seed 000 let the system cool for 30 s between tests): any
    background work ends up in the baseline and shrinks every active-energy figure."""
    if seconds <= 0:
        raise EnergyError(f"idle measurement needs a duration > 0 s, got {seconds}")
    meter.start()
    try:
        sleep(seconds)
    finally:
        reading = meter.stop()
    if reading.energy_j is None or reading.avg_watts is None:
        raise EnergyError(f"idle power not measured: {reading.missing or 'no energy reading'}")
    return reading.avg_watts
