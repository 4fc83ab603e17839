"""Which energy source to use here, and what each one lacks.

Auto picks the best source that works: a meter log when the user has one (a wall meter is
what seeds 000 and 004 used), then RAPL (CPU+DRAM counters), then the BMC (whole system),
then the estimate (a model). RAPL before IPMI because it is precise and cheap to read; its
narrower scope is recorded on every reading, and figures of different scopes are never
ranked together.
"""

from __future__ import annotations

from typing import Any

from fsadvisor.domain import ENERGY_SOURCES
from fsadvisor.energy.estimate import EstimateMeter
from fsadvisor.energy.idle import parse_idle_watts
from fsadvisor.energy.ipmi import IpmiMeter
from fsadvisor.energy.meter import EnergyMeter, SourceStatus
from fsadvisor.energy.meterlog import MeterLogMeter
from fsadvisor.energy.rapl import DEFAULT_ROOT, RaplMeter, pyrapl_status
from fsadvisor.errors import EnergyError

AUTO_ORDER = ("rapl", "ipmi", "estimate")

# Options each meter understands; choose_meter routes **opts by these names.
_OPTS = {
    "rapl": {"sysfs_root": "root", "reader": "reader", "interval_s": "interval_s"},
    "ipmi": {"runner": "runner", "interval_s": "interval_s", "max_gap_s": "max_gap_s"},
    "meter-log": {
        "meter_log": "path",
        "clock_offset_s": "clock_offset_s",
        "max_gap_s": "max_gap_s",
        "meter_scope": "scope",
    },
    "estimate": {
        "proc_root": "proc_root",
        "sys_root": "sys_root",
        "nvme_runner": "nvme_runner",
        "interval_s": "interval_s",
        "core_active_watts": "core_active_watts",
        "drive_idle_watts": "drive_idle_watts",
        "drive_active_watts": "drive_active_watts",
    },
}
_COMMON = {"idle_watts", "clock", "wall_clock"}
_KNOWN = set().union(*(_OPTS[k] for k in _OPTS), _COMMON)


def _build(name: str, device: str | None, opts: dict[str, Any]) -> EnergyMeter:
    kw = {arg: opts[opt] for opt, arg in _OPTS[name].items() if opts.get(opt) is not None}
    kw.update({k: opts[k] for k in _COMMON if opts.get(k) is not None})
    if "idle_watts" in kw:
        kw["idle_watts"] = parse_idle_watts(kw["idle_watts"])
    if name == "rapl":
        return RaplMeter(**kw)
    if name == "ipmi":
        return IpmiMeter(**kw)
    if name == "meter-log":
        return MeterLogMeter(kw.pop("path", None), **kw)
    return EstimateMeter(device=device, **kw)


def choose_meter(source: str = "auto", device: str | None = None, **opts: Any) -> EnergyMeter:
    """A ready-to-start meter. ``meter.why`` says why it was picked.

    Options: meter_log, clock_offset_s, max_gap_s, meter_scope (meter-log); sysfs_root,
    reader (rapl); runner (ipmi); proc_root, sys_root, nvme_runner, core_active_watts,
    drive_idle_watts, drive_active_watts (estimate); interval_s, idle_watts, clock, wall_clock.
    An explicit source that cannot work here raises EnergyError (one line)."""
    unknown = set(opts) - _KNOWN
    if unknown:
        raise TypeError(f"unknown energy option(s): {', '.join(sorted(unknown))}")
    if source != "auto" and source not in ENERGY_SOURCES:
        raise EnergyError(
            f"unknown energy source {source!r}: use auto, {', '.join(ENERGY_SOURCES)}"
        )
    if source != "auto":
        meter = _build(source, device, opts)
        why = meter.unavailable()
        if why:
            raise EnergyError(f"energy source {source} unusable: {why}")
        meter.why = f"{source} requested"
        return meter
    order = (("meter-log",) if opts.get("meter_log") is not None else ()) + AUTO_ORDER
    passed: list[str] = []
    for name in order:
        meter = _build(name, device, opts)
        why = meter.unavailable()
        if why is None:
            meter.why = f"auto chose {name}" + (f" ({'; '.join(passed)})" if passed else "")
            if name == "estimate":
                meter.why += ": a model, not a measurement"
            return meter
        passed.append(f"{name}: {why}")
    raise EnergyError("no energy source works here: " + "; ".join(passed))


def check(
    meter_log: str | None = None, device: str | None = None, **opts: Any
) -> list[SourceStatus]:
    """Status of every source on this machine (rapl, ipmi, meter-log, estimate)."""
    unknown = set(opts) - _KNOWN
    if unknown:
        raise TypeError(f"unknown energy option(s): {', '.join(sorted(unknown))}")
    opts = dict(opts, meter_log=meter_log)
    out = []
    for name in ("rapl", "ipmi", "meter-log", "estimate"):
        meter = _build(name, device, opts)
        why = meter.unavailable()
        if why is None:
            detail = {
                "rapl": "RAPL readable (scope cpu+dram, not the SSD)",
                "ipmi": "BMC answers DCMI power reading (scope whole system)",
                "meter-log": f"meter log {meter_log} readable "
                f"(scope {opts.get('meter_scope') or 'system'})",
                "estimate": "always available: a model, not a measurement",
            }[name]
            if name == "rapl":
                detail += "; " + pyrapl_status(opts.get("sysfs_root") or DEFAULT_ROOT)
            out.append(SourceStatus(name, True, detail))
        else:
            out.append(SourceStatus(name, False, why))
    return out


def auto_choice(statuses: list[SourceStatus], meter_log_given: bool = False) -> str:
    """The source ``choose_meter("auto")`` would pick, given ``check()``'s statuses."""
    ok = {s.name for s in statuses if s.ok}
    order = (("meter-log",) if meter_log_given else ()) + AUTO_ORDER
    return next((n for n in order if n in ok), "none")
