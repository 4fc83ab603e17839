"""Every numeric option's allowed range, in one table.

A number from the command line, the TUI or an API caller is checked here once, at the
edge, before it reaches a clock, a file size or a loop: ``inf`` as a runtime, ``nan`` as a
cooldown or ``1e17`` s as a clock offset are refused with one line saying the range,
instead of surfacing later as a traceback or a raw OS message. The CLI shows each range in
the option's help (``help_range``) and the README lists the table (``rows``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fsadvisor.errors import ConfigError
from fsadvisor.sizes import format_size

MIB, TIB = 1 << 20, 1 << 40
LOAD_COMMANDS = ("recommend", "compare", "report")


@dataclass(frozen=True)
class Limit:
    """One numeric option's allowed range [lo, hi] in ``unit``, why those bounds, and
    which commands take it."""

    lo: float
    hi: float
    unit: str  # "s", "W", "bytes", or "" for a count
    why: str
    whole: bool = False  # a count: no fractions
    commands: tuple[str, ...] = ("probe",)  # where the option is, for the README table

    def text(self, value: float) -> str:
        if self.unit == "bytes":
            n = int(value)
            return f"{n >> 50}p" if n >= 1 << 50 and n % (1 << 50) == 0 else format_size(n)
        if isinstance(value, int):
            return f"{value:,}"
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"

    @property
    def unit_text(self) -> str:
        return "" if self.unit in ("", "bytes") else f" {self.unit}"

    @property
    def range_text(self) -> str:
        return f"{self.text(self.lo)}–{self.text(self.hi)}{self.unit_text}"

    @property
    def between_text(self) -> str:
        return f"between {self.text(self.lo)} and {self.text(self.hi)}{self.unit_text}"


# name -> range. Names are the CLI options without dashes.
LIMITS: dict[str, Limit] = {
    "runtime": Limit(
        0.1,
        86_400,
        "s",
        "fio gets whole milliseconds (below 1 ms it would get 0 = no limit) and a "
        "tenth of a second is already mostly start-up; a run over a day makes a "
        "matrix of dozens of cells take months",
        commands=("probe", "calibrate"),
    ),
    "cooldown": Limit(
        0, 3_600, "s", "seed 000 found 30 s between runs enough; an hour is far beyond it"
    ),
    "reps": Limit(
        1,
        100,
        "",
        "repetitions per cell; 100 already gives a 95% CI far narrower than run-to-run drift",
        whole=True,
        commands=("probe", "calibrate"),
    ),
    "idle-watts": Limit(
        0,
        100_000,
        "W",
        "no single server draws more than 100 kW (energy.meterlog MAX_PLAUSIBLE_WATTS)",
        commands=("probe", "energy import-log"),
    ),
    "idle-seconds": Limit(0, 3_600, "s", "an hour of idle is plenty for a baseline (0: none)"),
    "seconds": Limit(
        0.1,
        3_600,
        "s",
        "below 0.1 s no meter or counter has updated; an hour is plenty",
        commands=("energy idle", "profiles capture"),
    ),
    "clock-offset": Limit(
        -1e9,
        1e9,
        "s",
        "about 31 years either way: a meter clock reset to its factory "
        "date still aligns; more would move timestamps beyond the dates "
        "a log can hold",
        commands=("probe", "energy import-log"),
    ),
    "scratch": Limit(
        320 * MIB,
        16 * TIB,
        "bytes",
        "btrfs and xfs need ~300 MiB; ext4's largest file (4 KiB blocks) is "
        "16 TiB, so the backing file cannot be larger there",
    ),
    "size": Limit(
        1 * MIB,
        1 << 50,
        "bytes",
        "at least one 1 MiB block of the sequential workloads; at most half the "
        "device, which is checked too (no SSD holds 2 PiB)",
    ),
    "top": Limit(
        1,
        1_000,
        "",
        "a ranking of more lines is not read by anyone; --json holds the same",
        whole=True,
        commands=("recommend", "report", "fleet recommend"),
    ),
    "rank": Limit(
        1,
        1_000,
        "",
        "a place in recommend's list, which shows at most 1,000",
        whole=True,
        commands=("apply",),
    ),
    "load": Limit(
        0,
        1e12,
        "",
        "your work per second (ops/s, or MB/s for bandwidth workloads); "
        "a trillion is beyond any one server's drives",
        commands=LOAD_COMMANDS,
    ),
    "price": Limit(
        0,
        1e7,
        "",
        "per kWh in your currency's unit; ten million covers the smallest currency units",
        commands=LOAD_COMMANDS,
    ),
    "servers": Limit(
        1,
        10_000_000,
        "",
        "servers running this workload; ten million is more than any one fleet",
        whole=True,
        commands=LOAD_COMMANDS,
    ),
    "pue": Limit(
        1,
        5,
        "",
        "facility power / IT power: 1 is no overhead, most facilities "
        "run between 1.1 and 2, and 5 is beyond any working one",
        commands=LOAD_COMMANDS,
    ),
    "budget": Limit(
        1,
        30 * 86_400,
        "s",
        "device time an adaptive probe may spend; a month "
        "is beyond any probe worth planning (the whole matrix takes hours)",
    ),
    "target-confidence": Limit(
        0.5,
        0.999,
        "",
        "P(the leader is the best) at which the "
        "adaptive probe stops: below 0.5 the leader is a coin toss; "
        "above 0.999 no budget gets there through run-to-run noise",
    ),
    "folds": Limit(
        2,
        50,
        "",
        "cross-validation needs 2 folds; 50 already refits the model 50 times per prior width",
        whole=True,
        commands=("validate", "calibrate"),
    ),
    "requests": Limit(
        100,
        5_000_000,
        "",
        "simulated requests per variant (fsadvisor.predict.sim MIN_REQUESTS, "
        "MAX_REQUESTS: about 0.1 s per 10,000 here)",
        whole=True,
        commands=("simulate",),
    ),
    "sigma": Limit(
        0,
        3,
        "",
        "log-sd of service times (fsadvisor.predict.sim; 3 puts the p99 at ~1,000x the median)",
        commands=("simulate",),
    ),
    "seed": Limit(
        0, 2**63 - 1, "", "a non-negative 64-bit seed", whole=True, commands=("simulate",)
    ),
}


# name -> (the allowed values, what they are): the numeric options that take one of a few.
CHOICES: dict[str, tuple[tuple[int, ...], str]] = {
    "sector-size": ((512, 4096), "the logical sector sizes drives report"),
}


def check(name: str, value: Any, option: str | None = None) -> Any:
    """``value`` if it is a finite number inside ``LIMITS[name]`` (or one of ``CHOICES[name]``);
    ConfigError otherwise. ``None`` (the option was not given) passes."""
    if value is None:
        return None
    if name in CHOICES:
        allowed, what = CHOICES[name]
        if isinstance(value, bool) or value not in allowed:
            listed = " or ".join(str(a) for a in allowed)
            raise ConfigError(
                f"{option or '--' + name} must be {listed} ({what}), not {str(value)[:40]}"
            )
        return value
    lim = LIMITS[name]
    opt = option or f"--{name}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{opt} must be a number {lim.between_text}, not {str(value)[:40]!r}")
    if lim.whole and not float(value).is_integer():
        raise ConfigError(f"{opt} must be a whole number {lim.between_text}, not {value!r}")
    if not math.isfinite(value) or not lim.lo <= value <= lim.hi:
        shown = (
            lim.text(value) if math.isfinite(value) and abs(value) < 1e15 else repr(float(value))
        )
        raise ConfigError(f"{opt} must be {lim.between_text}, not {shown}")
    return value


def help_range(name: str) -> str:
    """`` Range: 1–86,400 s.`` for an option's help text."""
    return f" Range: {LIMITS[name].range_text}."


def rows() -> list[tuple[str, str, str, str]]:
    """(option, commands, range, why) for the README's table."""
    return [
        (f"--{name}", ", ".join(lim.commands), lim.range_text, lim.why)
        for name, lim in LIMITS.items()
    ] + [
        (f"--{name}", "recommend", " or ".join(map(str, allowed)), what)
        for name, (allowed, what) in CHOICES.items()
    ]


def readme_table() -> str:
    """The README's option-range table, generated (a test compares the README with it)."""
    head = "| option | command | range | why this range |\n|---|---|---|---|\n"
    return head + "".join(f"| `{o}` | {c} | {r} | {w} |\n" for o, c, r, w in rows())
