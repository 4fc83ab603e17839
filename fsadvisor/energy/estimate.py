"""A power model for machines with no meter at all: an estimate, never a measurement.

    P(t) = idle + busy_cores(t) × core_active_w + (drive_active_w − drive_idle_w) × drive_util(t)

``busy_cores`` comes from /proc/stat deltas (busy jiffies / all jiffies × cores), the drive
utilisation from the ``io_ticks`` delta of /sys/block/X/stat over the elapsed time, and the
drive's powers from its NVMe power-state table (``nvme id-ctrl -o json``, PS0). ``idle``
is the whole machine at rest, drive idle included, which is why only the drive's increase
above idle is added (domain notes §3: P ≈ idle + (active − idle) × utilisation).

Every number we did not get from this machine is an assumption and is written into the
reading (``assumptions``, ``accuracy``) so no one mistakes the result for a measurement.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Callable

from fsadvisor.domain import ASSUMED_DRIVE_ACTIVE_W, ASSUMED_DRIVE_IDLE_W
from fsadvisor.records import EnergyReading
from fsadvisor.energy.meter import EnergyMeter, Runner, Sampler, run_command
from fsadvisor.errors import EnergyError

# Defaults used only when nothing better is known; each one used is recorded as assumed.
DEFAULT_IDLE_W = 40.0  # a small 1-socket server at rest, drive included (assumption)
DEFAULT_CORE_ACTIVE_W = 5.0  # extra watts per fully busy core (assumption)
ASSUMED = "assumed default"

# NVMe power scales (NVMe base spec, Power State Descriptor): MXPS bit 0 of the flags
# byte selects 0.0001 W instead of 0.01 W; IPS/APS 1 = 0.0001 W, 2 = 0.01 W, 0 = not reported.
_SCALE_W = {1: 0.0001, 2: 0.01}


@dataclass(frozen=True)
class PowerState:
    max_w: float
    idle_w: float | None
    active_w: float | None
    operational: bool


def parse_power_states(text: str) -> list[PowerState]:
    """``psds`` of ``nvme id-ctrl DEV -o json``. nvme-cli 2.3 (here) prints a raw ``flags``
    byte; later versions print ``max_power_scale`` and ``non-operational_state``."""
    try:
        doc = json.loads(text[text.index("{") :])
    except (ValueError, RecursionError) as e:
        raise EnergyError(f"nvme id-ctrl output is not JSON: {_first_line(e)}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("psds"), list):
        raise EnergyError("nvme id-ctrl output has no psds[] power-state table")
    states = []
    for psd in doc["psds"]:
        try:
            states.append(_power_state(psd))
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError):
            continue  # a malformed descriptor is skipped, the others still count
    return states


def _first_line(e: BaseException) -> str:
    return (str(e).splitlines() or [e.__class__.__name__])[0]


def _power_state(psd: dict) -> PowerState:
    flags = int(psd.get("flags", 0) or 0)
    mxps = int(psd.get("max_power_scale", flags & 0x1))
    nops = int(psd.get("non-operational_state", (flags & 0x2) >> 1))
    max_w = float(psd["max_power"]) * (0.0001 if mxps else 0.01)

    def scaled(value_key: str, scale_key: str) -> float | None:
        scale = _SCALE_W.get(int(psd.get(scale_key, 0) or 0))
        value = psd.get(value_key)
        watts = float(value) * scale if scale and value else None
        return watts if watts is not None and 0 <= watts < 1e6 else None

    if not (max_w >= 0 and max_w < 1e6):
        raise ValueError(f"implausible max_power {psd['max_power']!r}")
    return PowerState(
        max_w, scaled("idle_power", "idle_scale"), scaled("active_power", "active_scale"), not nops
    )


def drive_powers(states: list[PowerState]) -> tuple[float, float, str] | None:
    """(idle W, active W, where from) from the table: PS0 is the state a drive runs I/O in
    (APST only steps down when idle); its reported active power, else its maximum, is the
    active figure; its reported idle power, else the default, the idle one."""
    ops = [s for s in states if s.operational]
    if not ops:
        return None
    ps0 = ops[0]
    active = ps0.active_w or ps0.max_w
    if ps0.idle_w is not None and ps0.idle_w > active:
        active = ps0.idle_w  # an inconsistent table must not give negative active power
    if ps0.idle_w is not None:
        idle, src = ps0.idle_w, "nvme id-ctrl PS0"
    else:
        idle = min(ASSUMED_DRIVE_IDLE_W, active)
        src = "nvme id-ctrl PS0 (idle power not reported: default idle assumed)"
    return idle, active, src


def block_name(device: str) -> str:
    return os.path.basename(os.path.realpath(device)) if device.startswith("/") else device


@dataclass(frozen=True)
class Snapshot:
    busy_jiffies: int
    total_jiffies: int
    io_ticks_ms: int | None


def read_cpu(proc_root: str) -> tuple[int, int, int]:
    """(busy jiffies, all jiffies, cores) from /proc/stat. iowait counts as idle (the CPU
    is not working); guest time is already inside user time."""
    with open(os.path.join(proc_root, "stat"), encoding="ascii") as f:
        lines = f.read().splitlines()
    cores = sum(1 for ln in lines if ln.startswith("cpu") and ln[3:4].isdigit())
    head = next((ln for ln in lines if ln.startswith("cpu ")), None)
    if head is None:
        raise EnergyError(f"{proc_root}/stat has no aggregate 'cpu' line")
    v = [int(x) for x in head.split()[1:]] + [0] * 8
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait, max(cores, 1)


def stat_path(sys_root: str, name: str) -> str | None:
    for p in (
        os.path.join(sys_root, "block", name, "stat"),
        os.path.join(sys_root, "class", "block", name, "stat"),
    ):
        if os.path.isfile(p):
            return p
    return None


def read_io_ticks_ms(path: str) -> int:
    """Field 10 of /sys/block/X/stat: milliseconds the device had I/O in flight."""
    with open(path, encoding="ascii") as f:
        fields = f.read().split()
    if len(fields) < 10:
        raise EnergyError(f"{path}: {len(fields)} fields, io_ticks needs 10")
    return int(fields[9])


class EstimateMeter(EnergyMeter):
    name = "estimate"
    scope = "system"

    def __init__(
        self,
        device: str | None = None,
        proc_root: str = "/proc",
        sys_root: str = "/sys",
        idle_watts: float | None = None,
        core_active_watts: float | None = None,
        drive_idle_watts: float | None = None,
        drive_active_watts: float | None = None,
        nvme_runner: Runner | None = None,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        model_idle = DEFAULT_IDLE_W if idle_watts is None else idle_watts
        # The model's idle is also the reading's idle baseline, so active energy is the
        # modelled CPU + drive work.
        super().__init__(idle_watts=model_idle, clock=clock, wall_clock=wall_clock)
        self.device = device
        self.proc_root, self.sys_root = proc_root, sys_root
        self.interval_s = interval_s
        self.nvme_runner = nvme_runner or run_command
        self.params: dict[str, Any] = {
            "idle_watts": model_idle,
            "idle_watts_from": ASSUMED if idle_watts is None else "given",
            "core_active_watts": DEFAULT_CORE_ACTIVE_W
            if core_active_watts is None
            else core_active_watts,
            "core_active_watts_from": ASSUMED if core_active_watts is None else "given",
        }
        self._given_drive = (drive_idle_watts, drive_active_watts)
        self._stat: str | None = None

    def unavailable(self) -> str | None:
        try:
            read_cpu(self.proc_root)
        except (OSError, ValueError, EnergyError) as e:
            return f"cannot read {self.proc_root}/stat: {e}"
        return None

    def _drive_params(self) -> dict[str, Any]:
        if self.device is None:
            return {"device": None, "drive_term": "no device given: drive power inside idle only"}
        name = block_name(self.device)
        out: dict[str, Any] = {"device": name}
        self._stat = stat_path(self.sys_root, name)
        if self._stat is None:
            out["drive_term"] = (
                f"no {self.sys_root}/block/{name}/stat: drive utilisation unknown, term omitted"
            )
        given_idle, given_active = self._given_drive
        idle, active, src = ASSUMED_DRIVE_IDLE_W, ASSUMED_DRIVE_ACTIVE_W, ASSUMED
        if name.startswith("nvme"):
            dev_path = self.device if self.device.startswith("/") else f"/dev/{name}"
            result = self.nvme_runner(["nvme", "id-ctrl", dev_path, "-o", "json"])
            if result.returncode == 0:
                try:
                    table = drive_powers(parse_power_states(result.stdout))
                except EnergyError as e:
                    table, out["nvme_id_ctrl"] = None, str(e)
                if table:
                    idle, active, src = table
            else:
                lines = (result.stderr or result.stdout).strip().splitlines()
                out["nvme_id_ctrl"] = lines[0] if lines else f"exit {result.returncode}"
        else:
            out["nvme_id_ctrl"] = "not an NVMe device: no power-state table"
        if given_idle is not None or given_active is not None:
            idle = idle if given_idle is None else given_idle
            active = active if given_active is None else given_active
            src = "given"
        out.update(drive_idle_watts=idle, drive_active_watts=active, drive_power_from=src)
        return out

    def _snapshot(self) -> Snapshot:
        busy, total, _ = read_cpu(self.proc_root)
        io = read_io_ticks_ms(self._stat) if self._stat else None
        return Snapshot(busy, total, io)

    def _begin(self) -> None:
        _, _, cores = read_cpu(self.proc_root)
        self.params["cores"] = cores
        self.params.update(self._drive_params())
        self._sampler = Sampler(self._snapshot, self.interval_s, self._clock)
        self._sampler.start()

    def _accuracy(self) -> str:
        p = self.params
        parts = [
            f"idle {p['idle_watts']:g} W ({p['idle_watts_from']})",
            f"{p['core_active_watts']:g} W per busy core ({p['core_active_watts_from']})",
        ]
        if "drive_idle_watts" in p:
            parts.append(
                f"drive {p['drive_idle_watts']:g}–{p['drive_active_watts']:g} W "
                f"({p['drive_power_from']})"
            )
        return "model, not a measurement: " + ", ".join(parts)

    def _finish(self, duration_s: float) -> EnergyReading:
        sampler = self._sampler
        assert sampler is not None  # stop() calls _finish only after _begin made it
        samples = sampler.stop()
        p = dict(self.params)
        p["model"] = (
            "P = idle + busy_cores x core_active_w + (drive_active_w - drive_idle_w) x drive_util"
        )
        if sampler.errors:
            p["sample_errors"] = sampler.errors
        if len(samples) < 2:
            why = sampler.first_error or "fewer than two /proc/stat snapshots"
            return self.missing_reading(duration_s, why, len(samples), p)
        busy_core_s = 0.0
        drive_busy_s = 0.0
        drive_delta_w = p.get("drive_active_watts", 0.0) - p.get("drive_idle_watts", 0.0)
        for (ta, a), (tb, b) in zip(samples, samples[1:]):
            dt = tb - ta
            d_total = b.total_jiffies - a.total_jiffies
            if dt <= 0 or d_total <= 0:
                continue
            frac = min(1.0, max(0.0, (b.busy_jiffies - a.busy_jiffies) / d_total))
            busy_core_s += frac * p["cores"] * dt
            if a.io_ticks_ms is not None and b.io_ticks_ms is not None:
                util = min(1.0, max(0.0, (b.io_ticks_ms - a.io_ticks_ms) / 1000.0 / dt))
                drive_busy_s += util * dt
        energy_j = (
            p["idle_watts"] * duration_s
            + p["core_active_watts"] * busy_core_s
            + drive_delta_w * drive_busy_s
        )
        p.update(cpu_busy_core_s=round(busy_core_s, 6), drive_busy_s=round(drive_busy_s, 6))
        return self.make_reading(
            energy_j, duration_s, samples=len(samples), assumptions=p, accuracy=self._accuracy()
        )
