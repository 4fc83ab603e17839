"""RAPL energy counters read through the powercap sysfs tree (CPU package + DRAM).

Picture a row of odometers, one per CPU socket and one per memory controller, each
counting microjoules and rolling over at ``max_energy_range_uj``. We read them every second
while the workload runs, add up what each one travelled (rollovers included) and never read
the same odometer twice under two names.

Why not pyRAPL for the measurement (it is installed and is the project's declared choice):
pyRAPL 0.2.3.1 reads only at begin and end and ignores ``max_energy_range_uj``, so one wrap
during a run gives a wrong number, and AMD counters can wrap within minutes (domain notes
§3); it hard-codes ``/sys/class/powercap/intel-rapl/...`` (no injectable root, no tests
without real hardware) and refuses machines whose package zones differ from the socket
count. We therefore read powercap directly and consult pyRAPL only as a second opinion in
``energy check`` when the standard layout exists.

Not the SSD: RAPL covers CPU and DRAM only (domain notes §3).
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from typing import Callable

from fsadvisor.records import EnergyReading
from fsadvisor.energy.meter import EnergyMeter, Sampler
from fsadvisor.errors import EnergyError

DEFAULT_ROOT = "/sys/class/powercap"
# energy_uj became root-only with the PLATYPUS fix (CVE-2020-8694, domain notes §3).
ROOT_ONLY = "energy_uj needs root (root-only since CVE-2020-8694)"

Reader = Callable[[str], str]

_ZONE_DIR = re.compile(r"^intel-rapl(-mmio)?:(\d+)(?::(\d+))?$")
_PACKAGE = re.compile(r"^package-(\d+)(?:-die-(\d+))?$")


def _read_file(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


@dataclass(frozen=True)
class Zone:
    """One counter we sum: a package (socket or die) or a DRAM domain."""

    label: str  # directory name, e.g. "intel-rapl:0:2"
    name: str  # powercap ``name``, e.g. "package-0", "dram"
    path: str
    max_range_uj: int  # 0: the kernel does not know the range, a wrap cannot be corrected
    package: str  # the package this counter belongs to ("" for a top-level dram zone)


def _zone_dirs(root: str) -> dict[str, str]:
    """label -> directory, from the flat class links and the nested control-type tree."""
    found: dict[str, str] = {}

    def visit(d: str, depth: int) -> None:
        try:
            entries = sorted(os.listdir(d))
        except OSError:
            return
        for e in entries:
            p = os.path.join(d, e)
            if not os.path.isdir(p):
                continue
            if _ZONE_DIR.match(e):
                found.setdefault(e, p)
                if depth < 2:
                    visit(p, depth + 1)
            elif depth == 0 and e in ("intel-rapl", "intel-rapl-mmio"):
                visit(p, depth + 1)

    visit(root, 0)
    return found


def discover(root: str = DEFAULT_ROOT, read: Reader = _read_file) -> tuple[list[Zone], list[str]]:
    """The zones whose sum is CPU-package + DRAM energy, and notes on what was left out.

    Left out, so nothing is counted twice: ``psys`` (the platform domain includes the
    package), ``intel-rapl-mmio`` (the same package counter through MMIO), ``core``/
    ``uncore`` subzones (inside the package), repeated zone names.
    """
    dirs = _zone_dirs(root)
    zones: list[Zone] = []
    notes: list[str] = []
    seen: set[tuple[str, str]] = set()

    def zone_name(label: str) -> str:
        return read(os.path.join(dirs[label], "name")).strip()

    def max_range(label: str) -> int:
        try:
            return int(read(os.path.join(dirs[label], "max_energy_range_uj")).strip())
        except (OSError, ValueError):
            return 0

    def key(label: str) -> tuple[int, int, int]:
        m = _ZONE_DIR.match(label)
        assert m is not None  # _zone_dirs keeps only the names _ZONE_DIR matches
        return (1 if m.group(1) else 0, int(m.group(2)), int(m.group(3) or -1))

    for label in sorted(dirs, key=key):
        m = _ZONE_DIR.match(label)
        assert m is not None
        try:
            name = zone_name(label)
        except OSError as e:
            notes.append(f"{label}: unreadable name ({e.strerror or e})")
            continue
        if m.group(1):
            notes.append(f"{label} ({name}) skipped: intel-rapl-mmio repeats the package counter")
            continue
        sub = m.group(3) is not None
        parent_name = ""
        if sub:
            parent = f"intel-rapl:{m.group(2)}"
            try:
                parent_name = zone_name(parent) if parent in dirs else ""
            except OSError:
                parent_name = ""
        if name == "psys":
            notes.append(f"{label} (psys) skipped: the platform domain includes the package")
            continue
        if name in ("core", "uncore"):
            notes.append(f"{label} ({name}) skipped: inside {parent_name or 'its package'}")
            continue
        if _PACKAGE.match(name) and not sub:
            ident = (name, "package")
            package = name
        elif name == "dram":
            ident = (parent_name, "dram")
            package = parent_name
        else:
            notes.append(f"{label} ({name}) skipped: not a package or DRAM domain")
            continue
        if ident in seen:
            notes.append(f"{label} ({name}) skipped: repeats a zone already counted")
            continue
        seen.add(ident)
        zones.append(
            Zone(
                label=label,
                name=name,
                path=dirs[label],
                max_range_uj=max_range(label),
                package=package,
            )
        )
    return zones, notes


def read_counters(zones: list[Zone], read: Reader = _read_file) -> dict[str, int]:
    """label -> energy_uj now. PermissionError becomes the one-line "needs root" error."""
    out: dict[str, int] = {}
    for z in zones:
        path = os.path.join(z.path, "energy_uj")
        try:
            out[z.label] = int(read(path).strip())
        except PermissionError:
            raise EnergyError(ROOT_ONLY) from None
    return out


def drop_mirrored_dies(zones: list[Zone], first: dict[str, int]) -> tuple[list[Zone], list[str]]:
    """Multi-die AMD Zen exposes one zone per die that all mirror the package counter
    (domain notes §3): identical readings at the same instant mean one counter. Intel
    multi-die parts have real per-die counters, which differ, and are all kept."""
    by_package: dict[str, list[Zone]] = {}
    for z in zones:
        m = _PACKAGE.match(z.name)
        if m and m.group(2) is not None:
            by_package.setdefault(m.group(1), []).append(z)
    drop: set[str] = set()
    notes: list[str] = []
    for pkg, dies in by_package.items():
        values = {first.get(z.label) for z in dies}
        if len(dies) > 1 and len(values) == 1:
            drop.update(z.label for z in dies[1:])
            notes.append(f"package-{pkg}: {len(dies)} die zones mirror one counter, counted once")
    return [z for z in zones if z.label not in drop], notes


def counter_delta_uj(e1: int, e2: int, max_range_uj: int) -> int | None:
    """Microjoules between two readings of one counter; None when it wrapped and the
    range is unknown (``max_energy_range_uj`` 0, seen on some systems)."""
    if e2 >= e1:
        return e2 - e1
    if max_range_uj <= 0 or e1 > max_range_uj:
        return None
    return (max_range_uj - e1) + e2


def accumulate(
    zones: list[Zone], samples: list[dict[str, int]]
) -> tuple[float | None, int, str | None]:
    """(energy_j, wraps, why-missing) from counter snapshots taken in order."""
    total_uj = 0
    wraps = 0
    for z in zones:
        values = [s[z.label] for s in samples if z.label in s]
        for e1, e2 in zip(values, values[1:]):
            d = counter_delta_uj(e1, e2, z.max_range_uj)
            if d is None:
                return (
                    None,
                    wraps,
                    (
                        f"RAPL {z.label} ({z.name}) wrapped with max_energy_range_uj "
                        f"{z.max_range_uj} (unknown range): energy cannot be corrected"
                    ),
                )
            if e2 < e1:
                wraps += 1
            total_uj += d
    return total_uj / 1e6, wraps, None


def _import_pyrapl():
    # pyRAPL's import calls logging.warning() about pymongo/pandas, which would configure
    # the root logger and print to the user's terminal; a temporary handler absorbs it.
    root = logging.getLogger()
    guard = None
    if not root.handlers:
        guard = logging.NullHandler()
        root.addHandler(guard)
    try:
        # optional dependency: absent on most hosts, imported only when RAPL is asked for
        import pyRAPL
    finally:
        if guard is not None:
            root.removeHandler(guard)
    return pyRAPL


def pyrapl_status(root: str = DEFAULT_ROOT) -> str:
    """pyRAPL's opinion of this machine (a cross-check only; see the module docstring)."""
    standard = os.path.join(DEFAULT_ROOT, "intel-rapl")
    if os.path.realpath(root) != os.path.realpath(DEFAULT_ROOT) or not os.path.isdir(standard):
        return "pyRAPL not consulted (it only knows /sys/class/powercap/intel-rapl)"
    try:
        pyRAPL = _import_pyrapl()
    except ImportError:
        return "pyRAPL not installed"
    try:
        pyRAPL.setup()
        sockets = len(pyRAPL._sensor._socket_ids)
    # pyRAPL raises its own exception types, and OSError/IndexError on unusual layouts;
    # any of them only means "no second opinion", never a failed measurement.
    except Exception as e:  # noqa: BLE001
        return f"pyRAPL cannot set up ({e.__class__.__name__}); powercap is read directly"
    return f"pyRAPL agrees ({sockets} socket(s))"


class RaplMeter(EnergyMeter):
    name = "rapl"
    scope = "cpu+dram"
    accuracy = "RAPL counters: CPU package + DRAM only, excludes the SSD and the rest of the system"

    def __init__(
        self,
        root: str = DEFAULT_ROOT,
        reader: Reader | None = None,
        interval_s: float = 1.0,
        idle_watts: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(idle_watts=idle_watts, clock=clock, wall_clock=wall_clock)
        self.root = root
        self.read = reader or _read_file
        self.interval_s = interval_s
        self._zones: list[Zone] = []
        self._notes: list[str] = []

    def unavailable(self) -> str | None:
        if not os.path.isdir(self.root):
            return f"{self.root} absent (no powercap/RAPL on this machine)"
        zones, _ = discover(self.root, self.read)
        if not zones:
            return f"no RAPL package zone under {self.root}"
        try:
            read_counters(zones, self.read)
        except EnergyError as e:
            return str(e)
        except (OSError, ValueError) as e:
            return f"cannot read energy_uj: {e}"
        return None

    def _begin(self) -> None:
        why = self.unavailable()
        if why:
            raise EnergyError(why)
        zones, notes = discover(self.root, self.read)
        zones, die_notes = drop_mirrored_dies(zones, read_counters(zones, self.read))
        self._zones, self._notes = zones, notes + die_notes
        # Sampling every second, not just begin/end, catches each wrap of counters that can
        # roll over within minutes (domain notes §3).
        self._sampler = Sampler(
            lambda: read_counters(self._zones, self.read), self.interval_s, self._clock
        )
        self._sampler.start()

    def live_watts(self) -> float | None:
        """Energy between the last two counter readings over their interval (wraps handled
        as for the whole run, fsadvisor.energy.rapl.accumulate)."""
        last = self._sampler.latest(2) if self.running and self._sampler else []
        if len(last) < 2 or last[1][0] <= last[0][0]:
            return None
        energy_j, _wraps, why = accumulate(self._zones, [v for _, v in last])
        return None if energy_j is None or why else energy_j / (last[1][0] - last[0][0])

    def _finish(self, duration_s: float) -> EnergyReading:
        sampler = self._sampler
        assert sampler is not None  # stop() calls _finish only after _begin made it
        samples = [v for _, v in sampler.stop()]
        assumptions = {
            "zones": [f"{z.label} {z.name}" for z in self._zones],
            "skipped": list(self._notes),
            "interval_s": self.interval_s,
        }
        unknown = [z.label for z in self._zones if z.max_range_uj <= 0]
        if unknown:
            assumptions["unknown_range_zones"] = unknown
        if sampler.errors:
            assumptions["sample_errors"] = sampler.errors
        if len(samples) < 2:
            reason = sampler.first_error or "fewer than two RAPL readings"
            return self.missing_reading(duration_s, reason, len(samples), assumptions)
        energy_j, wraps, why = accumulate(self._zones, samples)
        assumptions["wraps"] = wraps
        accuracy = self.accuracy
        if not any(z.name == "dram" for z in self._zones):
            accuracy = (
                "RAPL counters: CPU package only (no DRAM domain), excludes the SSD "
                "and the rest of the system"
            )
            assumptions["dram"] = "absent"
        return self.make_reading(
            energy_j,
            duration_s,
            samples=len(samples),
            assumptions=assumptions,
            missing=why,
            accuracy=accuracy,
        )
