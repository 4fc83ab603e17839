"""Energy from an external power meter's log (CSV of timestamp, watts).

The setup of seeds 000 and 004: a meter between the wall and the machine (HOBO logging
every second in seed 000, Watts Up Pro in seed 004) keeps its own log, which is exported
afterwards. We cut the log to the run's wall-clock window and integrate it there. A log is
only trusted where it has readings: if it does not reach both ends of the run, has a hole
longer than ``max_gap_s`` inside it, or has no usable rows, the reading is marked missing
with one line saying what the log covers — it is never extended or interpolated beyond.

Accepted shapes (header names matched loosely, delimiter sniffed among , ; tab):
- HOBOware: a "Plot Title" line, then ``"#","Date Time, GMT-05:00","Active Power, W (LGR ...)"``
  with ``MM/DD/YY hh:mm:ss AM`` times; the header's GMT offset is applied.
- Watts Up export: ``Time,Watts,Volts,Amps,WattHrs,...``.
- Plain ``timestamp,watts`` with ISO 8601 times (offset or local) or epoch seconds
  (values above 1e11 are taken as epoch milliseconds).
Dates are read month first (US exports); day-first dates are not guessed.
Duplicated timestamps keep the first row in file order (a re-exported overlap repeats the
original, it is not a second measurement); rows out of order are sorted.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable

from fsadvisor.domain import POWER_SCOPES
from fsadvisor.records import EnergyReading
from fsadvisor.energy.meter import EnergyMeter, integrate_power
from fsadvisor.errors import EnergyError

# The seeds' meters log once per second (seed 000 HOBO, seed 004 Watts Up): a few lost
# rows are tolerable, a hole of more than 5 s is not measured energy any more.
DEFAULT_MAX_GAP_S = 5.0
# Numeric timestamps below this are not epoch seconds (1973-03-03): relative seconds
# cannot be aligned to a run.
MIN_EPOCH_S = 1e8
MAX_EPOCH_S = 4_102_444_800.0  # 2100-01-01: beyond it a number is no meter's timestamp
# A meter log is read whole: 1 Hz for a year is ~1 GB of CSV at most; beyond that (or a
# device such as /dev/zero, which never ends) it is refused, not read.
MAX_LOG_BYTES = 1 << 30
MS_EPOCH_ABOVE = 1e11
# A reading outside 0..100 kW is a corrupt row, not a measurement: no single server draws
# more, and no wall socket a meter plugs into can deliver it (a 32 A three-phase 400 V
# outlet tops out near 22 kW). Accepting it (e.g. 1e308 W) would swamp a run's energy.
MAX_PLAUSIBLE_WATTS = 100_000.0

_TIME_HEADER = re.compile(r"date|time|stamp|epoch", re.I)
_GMT = re.compile(r"GMT\s*([+-])\s*(\d{1,2}):?(\d{2})", re.I)
_US_FORMATS = (
    "%m/%d/%y %I:%M:%S %p",
    "%m/%d/%Y %I:%M:%S %p",
    "%m/%d/%y %H:%M:%S",
    "%m/%d/%Y %H:%M:%S",
    "%m/%d/%y %I:%M %p",
    "%m/%d/%Y %I:%M %p",
    "%m/%d/%y %H:%M",
    "%m/%d/%Y %H:%M",
)


@dataclass
class MeterLog:
    """Parsed log: ``samples`` are (epoch seconds, watts), sorted, one per timestamp."""

    samples: list[tuple[float, float]] = field(default_factory=list)
    rows_skipped: int = 0
    duplicates: int = 0
    time_column: str = ""
    watts_column: str = ""

    @property
    def covers(self) -> tuple[float, float] | None:
        return (self.samples[0][0], self.samples[-1][0]) if self.samples else None


def _watts_score(name: str) -> int:
    n = name.strip().strip('"').lower()
    if re.search(
        r"\bwh\b|watt[- ]?h|watthr|hour|energy|kwh|factor|reactive|apparent|\bva\b|var\b", n
    ):
        return 0
    if n in ("w", "watts", "watt", "power", "power_w", "power (w)", "watts (w)", "power_watts"):
        return 4
    if "active power" in n:
        return 3
    if "watt" in n:
        return 2
    if "power" in n or re.search(r"\(w\)|,\s*w\b", n):
        return 1
    return 0


def _sniff_delimiter(lines: list[str]) -> str:
    best, best_score = ",", -1
    for d in (",", ";", "\t"):
        try:
            counts = [len(next(csv.reader([ln], delimiter=d))) for ln in lines if ln.strip()]
        except csv.Error:  # e.g. a field over csv.field_size_limit()
            counts = [len(ln.split(d)) for ln in lines]
        score = sum(1 for c in counts if c >= 2)
        if score > best_score:
            best, best_score = d, score
    return best


def parse_number(text: str) -> float | None:
    t = text.strip().strip('"').strip()
    if not t:
        return None
    try:
        v = float(t)
    except ValueError:
        if "," in t and "." not in t:  # decimal comma (European HOBO exports)
            try:
                v = float(t.replace(",", "."))
            except ValueError:
                return None
        else:
            return None
    return v if math.isfinite(v) else None


def parse_timestamp(text: str, tz: timezone | None = None) -> float | None:
    """Epoch seconds from an epoch number, ISO 8601 or US ``MM/DD/YY HH:MM:SS [AM]``.
    Naive times are in ``tz`` (a HOBO header's GMT offset) or else local time."""
    t = text.strip().strip('"').strip()
    if not t:
        return None
    num = parse_number(t) if re.fullmatch(r"[0-9.]+", t) else None
    if num is not None:
        if num > MS_EPOCH_ABOVE:
            num /= 1000.0
        # no meter logged before MIN_EPOCH_S or after MAX_EPOCH_S: a 400-digit "timestamp"
        # is a damaged row, not a date to overflow on
        return num if MIN_EPOCH_S <= num <= MAX_EPOCH_S else None
    dt = None
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        for fmt in _US_FORMATS:
            try:
                dt = datetime.strptime(t, fmt)
                break
            except ValueError:
                continue
    if dt is None:
        return None
    try:
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=tz) if tz is not None else dt.astimezone()
        return dt.timestamp()
    except (OverflowError, OSError, ValueError):
        return None


def _header_tz(name: str) -> timezone | None:
    m = _GMT.search(name)
    if not m:
        return None
    sign = -1 if m.group(1) == "-" else 1
    hours, minutes = int(m.group(2)), int(m.group(3))
    if hours > 14 or minutes > 59:
        return None
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _find_header(rows: list[list[str]]) -> tuple[int, int, int] | None:
    """(row index, time column, watts column) of the first row that names both."""
    for i, row in enumerate(rows[:50]):
        tcols = [j for j, c in enumerate(row) if _TIME_HEADER.search(c) and not _watts_score(c)]
        wcols = sorted(
            ((_watts_score(c), -j) for j, c in enumerate(row) if _watts_score(c)), reverse=True
        )
        if tcols and wcols:
            return i, tcols[0], -wcols[0][1]
    return None


def _guess_columns(rows: list[list[str]]) -> tuple[int, int] | None:
    """Header-less log: the first column holding a timestamp, the next numeric one after it."""
    for row in rows[:50]:
        for j, cell in enumerate(row):
            if parse_timestamp(cell) is not None:
                for k in range(j + 1, len(row)):
                    if parse_number(row[k]) is not None:
                        return j, k
                break
    return None


def parse_log(text: str, clock_offset_s: float = 0.0) -> MeterLog:
    """Parse a meter CSV. Never raises on bad content: unusable rows are counted and skipped.
    ``clock_offset_s`` is added to every log timestamp (meter clock behind the host: > 0)."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines()
    delim = _sniff_delimiter(lines[:50])
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delim))
    except csv.Error:
        rows = [ln.split(delim) for ln in lines]
    log = MeterLog()
    header = _find_header(rows)
    tz = None
    if header is not None:
        hi, tcol, wcol = header
        log.time_column, log.watts_column = rows[hi][tcol].strip(), rows[hi][wcol].strip()
        tz = _header_tz(rows[hi][tcol])
        data = rows[hi + 1 :]
    else:
        guessed = _guess_columns(rows)
        if guessed is None:
            log.rows_skipped = sum(1 for r in rows if any(c.strip() for c in r))
            return log
        tcol, wcol = guessed
        data = rows
    seen: dict[float, float] = {}
    for row in data:
        if not any(c.strip() for c in row):
            continue
        if max(tcol, wcol) >= len(row):
            log.rows_skipped += 1
            continue
        ts = parse_timestamp(row[tcol], tz)
        w = parse_number(row[wcol])
        if ts is None or w is None or not 0.0 <= w <= MAX_PLAUSIBLE_WATTS:
            log.rows_skipped += 1
            continue
        ts += clock_offset_s
        if ts in seen:
            log.duplicates += 1
            continue
        seen[ts] = w
    log.samples = sorted(seen.items())
    return log


def _fmt_clock(ts: list[float]) -> Callable[[float], str]:
    days = {time.strftime("%Y-%m-%d", time.localtime(t)) for t in ts}
    pattern = "%H:%M:%S" if len(days) <= 1 else "%Y-%m-%d %H:%M:%S"
    return lambda t: time.strftime(pattern, time.localtime(t))


def integrate_log(
    log: MeterLog, start_s: float, end_s: float, max_gap_s: float = DEFAULT_MAX_GAP_S
) -> tuple[float | None, str | None]:
    """Energy (J) over the wall-clock window [start_s, end_s] or (None, one line why)."""
    covers = log.covers
    if covers is None:  # no samples
        return None, "meter log has no valid (timestamp, watts) rows"
    lo, hi = covers
    fmt = _fmt_clock([lo, hi, start_s, end_s])
    if lo > start_s or hi < end_s:
        return None, (f"meter log covers {fmt(lo)}–{fmt(hi)}, run was {fmt(start_s)}–{fmt(end_s)}")
    energy, why = integrate_power(
        log.samples, start_s, end_s, max_gap_s, hold_edges=False, fmt_t=fmt
    )
    if why:
        return None, f"meter log: {why}"
    return energy, None


class MeterLogMeter(EnergyMeter):
    """Marks the run's wall-clock window; ``stop()`` integrates whatever the log holds
    for it then. A log exported later can be applied with :func:`reading_for_window`."""

    name = "meter-log"

    def __init__(
        self,
        path: str | os.PathLike | None,
        clock_offset_s: float = 0.0,
        max_gap_s: float = DEFAULT_MAX_GAP_S,
        scope: str = "system",
        idle_watts: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(idle_watts=idle_watts, clock=clock, wall_clock=wall_clock)
        if scope not in POWER_SCOPES:
            raise EnergyError(
                f"meter scope must be one of {', '.join(POWER_SCOPES)}, got {scope!r}"
            )
        self.path = None if path is None else os.fspath(path)
        self.clock_offset_s = clock_offset_s
        self.max_gap_s = max_gap_s
        self.scope = scope
        self.accuracy = (
            "external meter log on the drive's supply (seed 003 style)"
            if scope == "drive"
            else "external wall meter log: whole system; accuracy per meter "
            "(Watts Up Pro ±1.5% +0.3 Wh, seed 004)"
        )

    def load(self) -> MeterLog:
        # the bounded reader only when a meter log is loaded (start-up of the other sources)
        from fsadvisor.infra.readfile import read_bounded

        if self.path is None:
            raise EnergyError("meter-log: give --meter-log FILE")
        raw = read_bounded(self.path, MAX_LOG_BYTES)
        return parse_log(raw.decode("utf-8", errors="replace"), self.clock_offset_s)

    def unavailable(self) -> str | None:
        if self.path is None:
            return "meter-log: give --meter-log FILE"
        if not os.path.lexists(self.path):
            return f"meter log {self.path} not found"
        try:
            log = self.load()
        except OSError as e:
            return f"meter log {self.path}: {e.strerror or e}"
        if not log.samples:
            return f"meter log {self.path} has no valid (timestamp, watts) rows"
        return None

    def _begin(self) -> None:
        if self.path is None:
            raise EnergyError("meter-log: give --meter-log FILE")

    def _finish(self, duration_s: float) -> EnergyReading:
        if self.wall_start is None or self.wall_end is None:  # stop() finishes a started meter
            raise EnergyError("meter-log: the meter was not started")
        return self.reading_for_window(self.wall_start, self.wall_end)

    def reading_for_window(self, start_s: float, end_s: float) -> EnergyReading:
        duration_s = max(0.0, end_s - start_s)
        try:
            log = self.load()
        except OSError as e:
            return self.missing_reading(duration_s, f"meter log {self.path}: {e.strerror or e}")
        energy_j, why = integrate_log(log, start_s, end_s, self.max_gap_s)
        assumptions = {
            "path": self.path,
            "clock_offset_s": self.clock_offset_s,
            "max_gap_s": self.max_gap_s,
            "time_column": log.time_column,
            "watts_column": log.watts_column,
            "rows_skipped": log.rows_skipped,
            "duplicates_dropped": log.duplicates,
            "duplicates": "first row kept",
            "window": [start_s, end_s],
        }
        inside = sum(1 for t, _ in log.samples if start_s <= t <= end_s)
        return self.make_reading(
            energy_j, duration_s, samples=inside, assumptions=assumptions, missing=why
        )


def reading_for_window(
    path: str | os.PathLike,
    start_s: float,
    end_s: float,
    clock_offset_s: float = 0.0,
    max_gap_s: float = DEFAULT_MAX_GAP_S,
    scope: str = "system",
    idle_watts: float | None = None,
) -> EnergyReading:
    """The reading a meter log gives for a past run's wall-clock window."""
    meter = MeterLogMeter(path, clock_offset_s, max_gap_s, scope, idle_watts)
    return meter.reading_for_window(start_s, end_s)
