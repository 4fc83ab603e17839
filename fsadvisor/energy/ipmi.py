"""Whole-system power from the BMC: ``ipmitool dcmi power reading``, sampled and integrated.

The BMC is a small computer inside the server that watches the power supply and answers
"how many watts right now?" about once a second (domain notes §3). We ask it every
``interval_s`` while the workload runs and add up the trapezoids. It is whole-box power,
like the wall meters of seeds 000 (HOBO, 1 s) and 004 (Watts Up), not the SSD alone.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable

from fsadvisor.records import EnergyReading
from fsadvisor.energy.meter import (
    CommandResult,
    EnergyMeter,
    Runner,
    Sampler,
    integrate_power,
    run_command,
)
from fsadvisor.errors import EnergyError

IPMI_ARGV = ("ipmitool", "dcmi", "power", "reading")
# DCMI readings refresh about once per second (domain notes §3); sampling faster only
# repeats values, slower widens the trapezoids.
DEFAULT_INTERVAL_S = 1.0
DEFAULT_MAX_GAP_S = 5.0

_POWER = re.compile(r"Instantaneous power reading\s*:\s*([0-9]+(?:\.[0-9]+)?)\s*Watts", re.I)
_STATE = re.compile(r"Power reading state is\s*:\s*(\w+)", re.I)


@dataclass(frozen=True)
class DcmiReading:
    watts: float | None
    active: bool  # "Power reading state is: activated"; deactivated readings are discarded


def parse_dcmi(text: str) -> DcmiReading:
    """Parse ``ipmitool dcmi power reading`` output. A missing state line counts as
    activated (older BMCs omit it); an explicit "deactivated" makes the value meaningless."""
    m = _POWER.search(text)
    watts = float(m.group(1)) if m else None
    s = _STATE.search(text)
    active = True if s is None else s.group(1).lower() == "activated"
    return DcmiReading(watts, active)


def explain_failure(result: CommandResult) -> str:
    """One line for a failed ``ipmitool`` call."""
    text = (result.stderr + "\n" + result.stdout).strip()
    if result.returncode == 127:
        return "ipmitool not installed"
    if "Could not open device" in text:
        return "ipmitool: no BMC (could not open /dev/ipmi0; no BMC or ipmi_si/ipmi_devintf not loaded)"
    if result.returncode == 124:
        return "ipmitool: BMC did not answer"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if "DCMI request failed" in text or "Invalid command" in text:
        return f"ipmitool: BMC does not support DCMI power reading ({first})"
    if result.returncode == 0:
        return "ipmitool printed no 'Instantaneous power reading'"
    return f"ipmitool failed (exit {result.returncode}): {first or 'no output'}"


class IpmiMeter(EnergyMeter):
    name = "ipmi"
    scope = "system"
    accuracy = "BMC DCMI power reading: whole system, ~1 s resolution, accuracy per BMC (often ±5%)"

    def __init__(
        self,
        runner: Runner | None = None,
        interval_s: float = DEFAULT_INTERVAL_S,
        max_gap_s: float = DEFAULT_MAX_GAP_S,
        idle_watts: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(idle_watts=idle_watts, clock=clock, wall_clock=wall_clock)
        self.runner = runner or run_command
        self.interval_s = interval_s
        self.max_gap_s = max_gap_s
        self._discarded = 0

    def read_watts(self) -> float:
        """One reading; raises EnergyError with the reason when there is none."""
        result = self.runner(list(IPMI_ARGV))
        r = parse_dcmi(result.stdout)
        # Some ipmitool versions exit 0 after "DCMI request failed because: ..." with no
        # reading: a missing value is a failure, never 0 W.
        if result.returncode != 0 or r.watts is None:
            raise EnergyError(explain_failure(result))
        if not r.active:
            self._discarded += 1
            raise EnergyError("ipmitool: DCMI power reading deactivated")
        return r.watts

    def unavailable(self) -> str | None:
        try:
            self.read_watts()
        except EnergyError as e:
            return str(e)
        return None

    def _begin(self) -> None:
        self._discarded = 0
        self._sampler = Sampler(self.read_watts, self.interval_s, self._clock)
        self._t_begin = self._t0
        self._sampler.start()

    def live_watts(self) -> float | None:
        """The BMC's latest reading (itself a ~1 s average, domain notes §3)."""
        last = self._sampler.latest(1) if self.running and self._sampler else []
        return last[0][1] if last else None

    def _finish(self, duration_s: float) -> EnergyReading:
        sampler, t_begin = self._sampler, self._t_begin
        if sampler is None or t_begin is None:  # stop() finishes only a started meter
            raise EnergyError("ipmi: the meter was not started")
        t_end = t_begin + duration_s
        samples = sampler.stop()
        assumptions = {
            "interval_s": self.interval_s,
            "max_gap_s": self.max_gap_s,
            "discarded_deactivated": self._discarded,
            "failed_calls": sampler.errors - self._discarded,
        }
        if not samples:
            return self.missing_reading(
                duration_s, sampler.first_error or "no IPMI power reading", 0, assumptions
            )
        energy_j, why = integrate_power(samples, t_begin, t_end, self.max_gap_s, hold_edges=True)
        if why:
            why = f"ipmi: {why}" + (f"; {sampler.first_error}" if sampler.first_error else "")
        return self.make_reading(
            energy_j, duration_s, samples=len(samples), assumptions=assumptions, missing=why
        )
