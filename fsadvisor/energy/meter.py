"""The contract every energy source honours, and the sampling thread the counting meters share.

A meter is like a stopwatch clipped to a power cord: ``start()`` before the workload,
``stop()`` after it, and the answer is an :class:`~fsadvisor.records.EnergyReading` that
always says where it came from (``source``) and what it covers (``scope``). A meter never
raises from ``stop()`` because of its source: a probe interrupted by Ctrl-C still gets a
reading, with ``energy_j`` None and ``missing`` saying why, and stores it as such.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, TypeVar

from fsadvisor.records import EnergyReading
from fsadvisor.energy.idle import with_idle
from fsadvisor.errors import EnergyError, one_line
from fsadvisor.host import run as hostrun

T = TypeVar("T")

COMMAND_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str


# Tests inject a Runner that replays recorded tool output (ipmitool, nvme).
Runner = Callable[[list[str]], CommandResult]


def run_command(argv: list[str]) -> CommandResult:
    """Run an argument list; a missing binary is returncode 127 as a shell would say."""
    try:
        p = hostrun.run(argv, timeout_s=COMMAND_TIMEOUT_S)
    except hostrun.CommandNotFound:
        return CommandResult(127, "", f"{argv[0]}: command not found")
    except hostrun.CommandTimedOut:
        return CommandResult(124, "", f"{argv[0]}: no answer within {COMMAND_TIMEOUT_S:g} s")
    return CommandResult(p.returncode, p.stdout, p.stderr)


@dataclass(frozen=True)
class SourceStatus:
    """Whether one energy source works on this machine, and if not, why (one line)."""

    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


class EnergyMeter(ABC):
    """Base of the rapl, ipmi, meter-log and estimate meters.

    Subclasses implement ``unavailable()`` (None when usable, else why not), ``_begin()``
    and ``_finish(duration_s)``. ``idle_watts`` (measured or given by the user) turns every
    reading into total and active energy (seed 004 §4: idle energy is paid whatever the
    filesystem does; only the active part depends on it).
    """

    name: str = ""
    scope: str = "system"
    accuracy: str = "unknown"

    def __init__(
        self,
        idle_watts: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.idle_watts = idle_watts
        self.why = ""  # set by choose_meter: why this source was picked
        self._clock = clock
        self._wall_clock = wall_clock
        self._t0: float | None = None
        self.wall_start: float | None = None
        self.wall_end: float | None = None
        self._reading: EnergyReading | None = None
        self._begin_error: str | None = None
        self._sampler: Sampler | None = None  # the sampling meters keep their thread here

    @abstractmethod
    def unavailable(self) -> str | None:
        """None when this source can measure here, else one line saying why not."""

    @abstractmethod
    def _begin(self) -> None: ...

    @abstractmethod
    def _finish(self, duration_s: float) -> EnergyReading: ...

    @property
    def running(self) -> bool:
        return self._t0 is not None and self._reading is None

    def start(self) -> None:
        """Begin measuring. Problems with the source are kept for ``stop()`` to report."""
        if self.running:
            raise EnergyError(f"{self.name} meter is already running")
        self._reading = None
        self.wall_start, self.wall_end = self._wall_clock(), None
        self._t0 = self._clock()
        self._begin_error = None
        self._sampler = None
        try:
            self._begin()
        except (OSError, ValueError, EnergyError) as e:
            self._begin_error = one_line(e)
        except BaseException:  # Ctrl-C while starting: stop() must still answer
            self._begin_error = f"{self.name} meter interrupted while starting"
            raise

    def stop(self) -> EnergyReading:
        """End measuring and return the reading; safe after an interrupted run and idempotent."""
        if self._reading is not None:
            return self._reading
        if self._t0 is None:
            return self.missing_reading(0.0, f"{self.name} meter was never started")
        duration_s = max(0.0, self._clock() - self._t0)
        self.wall_end = self._wall_clock()
        if self._begin_error is not None:
            if self._sampler is not None:
                self._sampler.stop(final=False)
            reading = self.missing_reading(duration_s, self._begin_error)
        else:
            try:
                reading = self._finish(duration_s)
            except (OSError, ValueError, EnergyError) as e:
                reading = self.missing_reading(duration_s, one_line(e))
        self._reading = reading
        return reading

    def __enter__(self) -> "EnergyMeter":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def live_watts(self) -> float | None:
        """The power right now (the latest sampling interval), for a progress display while
        the meter runs; None when this source has no live figure (meter-log, estimate)."""
        return None

    @property
    def reading(self) -> EnergyReading | None:
        """The reading of the last completed start/stop, None before that."""
        return self._reading

    def make_reading(
        self,
        energy_j: float | None,
        duration_s: float,
        samples: int = 0,
        assumptions: Mapping[str, Any] | None = None,
        missing: str | None = None,
        accuracy: str | None = None,
    ) -> EnergyReading:
        """Build a reading labelled with this meter's source and scope, idle baseline applied."""

        avg = energy_j / duration_s if energy_j is not None and duration_s > 0 else None
        reading = EnergyReading(
            source=self.name,
            scope=self.scope,
            energy_j=energy_j,
            avg_watts=avg,
            duration_s=duration_s,
            samples=samples,
            accuracy=accuracy or self.accuracy,
            assumptions=dict(assumptions or {}),
            missing=missing if energy_j is None else None,
        )
        if self.idle_watts is not None:
            reading = with_idle(reading, self.idle_watts)
        return reading

    def missing_reading(
        self,
        duration_s: float,
        why: str,
        samples: int = 0,
        assumptions: Mapping[str, Any] | None = None,
    ) -> EnergyReading:
        return self.make_reading(
            None, duration_s, samples=samples, assumptions=assumptions, missing=why
        )


class Sampler(Generic[T]):
    """Calls ``sample()`` every ``interval_s`` on a daemon thread between start and stop.

    The first sample is taken in ``start()`` and the last in ``stop()``, so the run is
    bracketed even when it is shorter than one interval. A sample that raises is not kept;
    its error is (counted, first message kept) so the meter can say what went wrong.
    Each sample is stamped with the midpoint of the call, which matters for slow sources
    (an ``ipmitool`` call takes a noticeable part of a second).
    """

    def __init__(
        self,
        sample: Callable[[], T],
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        join_timeout_s: float = 15.0,
    ):
        if interval_s <= 0:
            raise EnergyError(f"sampling interval must be > 0 s, got {interval_s}")
        self._sample = sample
        self.interval_s = interval_s
        self._clock = clock
        self._join_timeout_s = join_timeout_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples: list[tuple[float, T]] = []
        self.errors = 0
        self.first_error: str | None = None

    def _take(self) -> None:
        t_before = self._clock()
        try:
            value = self._sample()
        except (OSError, ValueError, EnergyError) as e:
            with self._lock:
                self.errors += 1
                if self.first_error is None:
                    self.first_error = one_line(e)
            return
        t_mid = (t_before + self._clock()) / 2
        with self._lock:
            self.samples.append((t_mid, value))

    def latest(self, n: int) -> list[tuple[float, T]]:
        """The last ``n`` samples so far (oldest first), while the sampler runs."""
        with self._lock:
            return list(self.samples[-n:])

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._take()

    def start(self) -> None:
        self._take()
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, name="fsadvisor-energy-sampler", daemon=True
        )
        self._thread.start()

    def stop(self, final: bool = True) -> list[tuple[float, T]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._join_timeout_s)
            self._thread = None
        if final:
            self._take()
        with self._lock:
            return sorted(self.samples, key=lambda s: s[0])


def integrate_power(
    samples: list[tuple[float, float]],
    t_start: float,
    t_end: float,
    max_gap_s: float,
    hold_edges: bool,
    fmt_t: Callable[[float], str] | None = None,
) -> tuple[float | None, str | None]:
    """Energy (J) of power samples ``(t, watts)`` over ``[t_start, t_end]``: ``(energy, None)``
    or ``(None, why)``.

    Linear between neighbouring samples (trapezoids, clipped to the window). ``hold_edges``
    holds the nearest reading up to ``max_gap_s`` beyond the first/last sample: right for a
    BMC whose "instantaneous" value is its latest ~1 s reading (domain notes §3), wrong for
    a meter log, which must cover the run itself. A stretch between readings longer than
    ``max_gap_s`` inside the window makes the result missing instead of invented.
    """
    fmt = fmt_t or (lambda t: f"+{t - t_start:.1f} s")
    if t_end < t_start:
        raise ValueError(f"run window ends before it starts ({t_end} < {t_start})")
    pts = sorted(samples)
    if not pts:
        return None, "no power readings"
    (t_first, w_first), (t_last, w_last) = pts[0], pts[-1]
    energy = 0.0
    if t_first > t_start:
        if not hold_edges or t_first - t_start > max_gap_s:
            return None, f"no power reading between {fmt(t_start)} and {fmt(t_first)}"
        energy += w_first * (min(t_first, t_end) - t_start)
    if t_last < t_end:
        if not hold_edges or t_end - t_last > max_gap_s:
            return None, f"no power reading between {fmt(t_last)} and {fmt(t_end)}"
        energy += w_last * (t_end - max(t_last, t_start))
    for (ta, wa), (tb, wb) in zip(pts, pts[1:]):
        lo, hi = max(ta, t_start), min(tb, t_end)
        if hi <= lo:
            continue
        if tb - ta > max_gap_s:
            return None, (
                f"gap of {tb - ta:.1f} s between power readings at {fmt(ta)} and "
                f"{fmt(tb)} (limit {max_gap_s:g} s)"
            )
        slope = (wb - wa) / (tb - ta)
        w_lo, w_hi = wa + slope * (lo - ta), wa + slope * (hi - ta)
        energy += (w_lo + w_hi) / 2 * (hi - lo)
    return energy, None
