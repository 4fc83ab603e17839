"""What a configuration's efficiency is worth per year, at the user's load and price.

A server rarely runs flat out. At a load below a configuration's capacity it spends part of
its time doing the work and the rest idle, so its average draw is the idle power plus the
busy surplus in proportion to how busy it is:

    P_avg = P_idle + (P_busy - P_idle) * min(load / capacity, 1)

(the linear utilisation model: power grows with the share of time the device is busy; seed
004 separates idle and active energy the same way). A configuration with more capacity for
the same busy power is busy for less of the year and draws less. ``load`` and ``capacity``
share a unit: operations/s, or MB/s for a bandwidth workload. A load above the capacity
cannot be sustained: the configuration is marked so and its power is the busy power.

Per year: kWh = P_avg * HOURS_PER_YEAR / 1000 * servers * PUE; cost = kWh * price. The
prediction's 90% intervals travel through: the low end pairs the low busy power with the high
capacity, the high end the high busy power with the low capacity (P_avg rises with P_busy and
falls with capacity, so these are the extremes).

Pure arithmetic: no model, no I/O. The inputs are checked where they are made
(fsadvisor/service/worth_inputs.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


HOURS_PER_YEAR = 8766.0  # 365.25 days x 24 h: the mean calendar year, leap years included


@dataclass(frozen=True)
class Tariff:
    """The user's side: load (ops/s or MB/s), price per kWh (None: energy only), servers, PUE."""

    load: float
    price_per_kwh: float | None = None
    servers: int = 1
    pue: float = 1.0


def average_power_w(
    idle_w: float, busy_w: float, capacity: float, load: float
) -> tuple[float, float, bool]:
    """(average watts, utilisation 0..1, sustains) for one device at ``load``. A busy power
    below the idle power (a model's tail) is taken as the idle power: work never saves energy."""
    if capacity <= 0 or not math.isfinite(capacity):
        return max(busy_w, idle_w), 1.0, False
    share = load / capacity
    sustains = share <= 1.0
    util = min(share, 1.0)
    return idle_w + (max(busy_w, idle_w) - idle_w) * util, util, sustains


def kwh_per_year(avg_w: float, servers: int = 1, pue: float = 1.0) -> float:
    return avg_w * HOURS_PER_YEAR / 1000.0 * servers * pue


@dataclass(frozen=True)
class Yearly:
    avg_watts: float
    avg_watts_90: tuple[float, float]
    utilisation: float
    sustains: bool
    kwh: float
    kwh_90: tuple[float, float]
    cost: float | None
    cost_90: tuple[float, float] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "avg_watts": self.avg_watts,
            "avg_watts_90": list(self.avg_watts_90),
            "utilisation": self.utilisation,
            "sustains_load": self.sustains,
            "kwh_per_year": self.kwh,
            "kwh_per_year_90": list(self.kwh_90),
            "cost_per_year": self.cost,
            "cost_per_year_90": None if self.cost_90 is None else list(self.cost_90),
        }


def yearly(
    idle_w: float,
    busy_w: float,
    busy_w_90: tuple[float, float],
    capacity: float,
    capacity_90: tuple[float, float],
    tariff: Tariff,
) -> Yearly:
    """One configuration's year at ``tariff.load``, with the interval carried through."""
    p, util, ok = average_power_w(idle_w, busy_w, capacity, tariff.load)
    p_lo, _, _ = average_power_w(idle_w, min(busy_w_90), max(capacity_90), tariff.load)
    p_hi, _, _ = average_power_w(idle_w, max(busy_w_90), min(capacity_90), tariff.load)
    p_lo, p_hi = min(p_lo, p), max(p_hi, p)
    k = [kwh_per_year(x, tariff.servers, tariff.pue) for x in (p, p_lo, p_hi)]
    price = tariff.price_per_kwh
    return Yearly(
        avg_watts=p,
        avg_watts_90=(p_lo, p_hi),
        utilisation=util,
        sustains=ok,
        kwh=k[0],
        kwh_90=(k[1], k[2]),
        cost=None if price is None else k[0] * price,
        cost_90=None if price is None else (k[1] * price, k[2] * price),
    )


def saving(other: Yearly, this: Yearly) -> dict[str, Any]:
    """What ``this`` saves per year against ``other`` (positive: this uses less). The range
    pairs the intervals' opposite ends — conservative: it treats the two predictions'
    errors as unrelated, where in truth shared terms cancel and the difference is narrower."""
    out: dict[str, Any] = {
        "kwh_per_year": other.kwh - this.kwh,
        "kwh_per_year_range": [other.kwh_90[0] - this.kwh_90[1], other.kwh_90[1] - this.kwh_90[0]],
    }
    # a cost and its interval are both there (a price was given) or both None
    if (
        this.cost is not None
        and other.cost is not None
        and this.cost_90 is not None
        and other.cost_90 is not None
    ):
        out["cost_per_year"] = other.cost - this.cost
        out["cost_per_year_range"] = [
            other.cost_90[0] - this.cost_90[1],
            other.cost_90[1] - this.cost_90[0],
        ]
    return out
