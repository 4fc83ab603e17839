"""Service functions for probing a device: plan, preview, run, clean up.

Both front ends call only these. ``plan_probe`` turns user choices into a
:class:`~fsadvisor.probe.Plan` (reading the device, never writing it); ``dry_run`` lists the
commands a run would execute; ``check_device`` is the safety verdict a front end shows
before it asks for confirmation; ``run_probe`` executes the plan with progress going to a
callback; ``cleanup_stale_state`` undoes what a probe that was killed left behind.
Nothing here prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from fsadvisor import energy as energymod
from fsadvisor import limits
from fsadvisor.infra import xdg
from fsadvisor.infra.scripttext import COLUMNS, UNFOLDED
from fsadvisor.energy import parse_idle_watts
from fsadvisor.errors import ConfigError, DeviceRefused, FsAdvisorError
from fsadvisor.host import device as devmod
from fsadvisor.probe import plan as planmod
from fsadvisor.probe.options import plan_kwargs
from fsadvisor.probe.report import ProbeSummary, ProgressEvent, dry_run_lines, results_from_store
from fsadvisor.probe.run import Interruptions, MatrixRun, scratch_space_problem
from fsadvisor.probe.state import (
    CleanupReport,
    StateFile,
    StateFileError,
    cleanup_stale,
    live_owner,
    recorded_signature,
    state_path_for,
)
from fsadvisor.profiles import load_profile
from fsadvisor.service.request import MIN_SCRATCH_BYTES, ProbeRequest
from fsadvisor.store import open_store
from fsadvisor.tools import KIND_FIO, fio

PathLike = str | os.PathLike[str]
Plan = planmod.Plan

__all__ = [
    "ProbeRequest",
    "ProbePreview",
    "MIN_SCRATCH_BYTES",
    "plan_probe",
    "dry_run",
    "preview",
    "check_device",
    "run_probe",
    "cleanup_stale_state",
    "root_problem",
    "store_path",
    "Plan",
    "ProbeSummary",
    "ProgressEvent",
    "CleanupReport",
    "BlockDevice",
    "block_devices",
    "block_device",
    "device_confirmed",
    "run_request",
    "Interruptions",
    "live_text",
    "si_number",
    "clock",
    "before_a_probe",
    "dry_run_verdict",
]


def clock(seconds: float | None) -> str:
    """A probe's elapsed or remaining time as a clock reads it: "45s", "3m05s", "1h02m"
    ("?" when unknown), the same in the CLI's bar and summary and the TUI's status line."""
    if seconds is None:
        return "?"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def si_number(x: float) -> str:
    """71234 -> "71.2k", 1.2e6 -> "1.20M", 950 -> "950": three digits at most (a status
    line's width), rounding that reaches the next thousand moving to the next unit."""
    if abs(x) < 999.5:
        return f"{x:.0f}"
    for mult, suffix in ((1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T")):
        v = x / mult
        if abs(v) < 999.5 or suffix == "T":
            return (
                f"{v:.2f}" if abs(v) < 9.995 else f"{v:.1f}" if abs(v) < 99.95 else f"{v:.0f}"
            ) + suffix
    raise AssertionError("unreachable")


def live_text(e: ProgressEvent) -> str:
    """A "sample" event in words, the same for the CLI's bar and the TUI's status line:
    ``71.2k IOPS, 292 MB/s (block layer, /sys/block/loop3/stat), 41.5 W (rapl, cpu+dram)``.
    Said to be the block layer's (completions the kernel counted: journal and metadata
    I/O included, merged requests once), not fio's own count; "no meter" when the probe
    has none that reads live (an estimate is computed after the cell)."""
    rate = f"{si_number(e.iops or 0.0)} IOPS"
    if e.bw_bytes_s is not None:
        rate += f", {e.bw_bytes_s / 1e6:,.0f} MB/s"
    where = f"block layer, {e.sample_source}" if e.sample_source else "block layer"
    if e.watts is not None:
        scope = f", {e.energy_scope}" if e.energy_scope else ""
        energy = f"{e.watts:.1f} W ({e.energy_source}{scope})"
    elif e.energy_source in (None, "estimate"):
        energy = "no meter"
    else:
        energy = f"no live watts ({e.energy_source})"
    return f"{rate} ({where}), {energy}"


def store_path(db: PathLike | None = None) -> Path:
    if db is not None and str(db) == ":memory:":
        raise ConfigError(
            "a probe needs a store file (its state file lives next to it), not :memory:"
        )
    return Path(db).expanduser() if db is not None else xdg.default_store_path()


def state_file_for(db: PathLike | None) -> StateFile:
    return StateFile(state_path_for(store_path(db)))


def root_problem() -> str | None:
    """Why this process cannot probe (not root), or None."""
    return devmod.needs_root()


def plan_probe(request: ProbeRequest) -> Plan:
    """Build the plan for ``request`` (its device, or a scratch loop device of its size).

    With ``resume`` the last unfinished matrix of that device (or of ``--scratch``) is
    continued as it was planned; the other choices are ignored except ``force``. With
    ``dry_run`` nothing is executed at all, not even fio's io_uring self-test."""
    r = request
    db_path = store_path(r.db)
    dev_info = r.device_info
    if r.device is not None and dev_info is None:
        dev_info = ProbeRequest.make(r.device, plp=r.plp).device_info  # built without make()
    if r.resume:
        key = "scratch" if r.scratch is not None else str(r.device)
        entry = state_file_for(r.db).load().matrices.get(key)
        if not entry:
            raise FsAdvisorError(
                f"no unfinished probe of {key} recorded next to {db_path}; "
                "start one without --resume"
            )
        if entry["plan"].get("purpose") == "adaptive":
            # its cells() are every configuration x the adaptive ceiling of repetitions:
            # resumed as a full matrix it would measure all of them (service/adaptive.py)
            raise ConfigError(
                f"the unfinished probe of {key} is adaptive: resume it "
                "adaptively (probe --resume does; service.adaptive)"
            )
        plan = Plan.from_dict(entry["plan"])
        plan.matrix_id = entry["matrix_id"]
        plan.force = r.force
        plan.db_path = str(db_path)
        if r.scratch is None and dev_info is not None:  # a device's: it has one
            plan.device_info = replace(dev_info, plp=plan.plp)
        return plan

    if r.scratch_bytes is not None:
        size_bytes = r.scratch_bytes
    elif dev_info is not None:
        size_bytes = dev_info.size_bytes
    else:  # ProbeRequest.validate refuses a request with neither
        raise ConfigError("give either a DEVICE or --scratch SIZE")
    prof = None
    if r.profile is not None:
        prof = load_profile(r.profile)
    energy_opts: dict[str, Any] = {"source": r.energy}
    if r.meter_log is not None:
        energy_opts["meter_log"] = r.meter_log
        energy_opts["clock_offset_s"] = float(r.clock_offset_s)
    if r.idle_watts is not None:
        energy_opts["idle_watts"] = limits.check("idle-watts", parse_idle_watts(r.idle_watts))
    if r.idle_seconds:
        energy_opts["idle_seconds"] = float(r.idle_seconds)
    # Every option declared to reach the plan (probe/options.py) goes as it is; the profile,
    # the energy source and the store are resolved here first.
    plan = planmod.build_plan(
        r.device if r.scratch_bytes is None else None,
        size_bytes,
        **dict(plan_kwargs(r)),
        profile=prof,
        ioengine=ioengine_guess() if r.dry_run else fio.best_ioengine(),
        energy=energy_opts,
        db_path=str(db_path),
    )
    plan.device_info = None if r.scratch_bytes is not None else dev_info
    _check_profile_workloads(plan)
    if not r.dry_run:
        # An explicit source that cannot work here is refused before anything is touched.
        energymod.choose_meter(
            r.energy,
            device=None,
            **{
                k: v
                for k, v in energy_opts.items()
                if k in ("meter_log", "clock_offset_s", "idle_watts")
            },
        )
    return plan


def _check_profile_workloads(plan: Plan) -> None:
    """A profile fio cannot express on one command line (data I/O mixed with file
    create/stat/delete, without a runner/ job file) is refused now, not in every cell."""
    for spec in plan.workloads:
        if spec.kind != KIND_FIO or spec.source == "micro":
            continue
        try:
            fio.workload_argv(spec.workload, "/nonexistent/probe-check", 1.0, name="check")
        except FsAdvisorError as e:
            raise ConfigError(f"profile {plan.profile}: {e}") from None


def ioengine_guess() -> str:
    """io_uring unless the kernel disables it (kernel.io_uring_disabled=2, Linux 6.6+); a
    real run asks fio itself (fio.best_ioengine), which a dry run must not execute."""
    try:
        disabled = Path("/proc/sys/kernel/io_uring_disabled").read_text().strip()
    except OSError:
        disabled = "0"
    return "libaio" if disabled == "2" else "io_uring"


def dry_run(plan: Plan, notes: Sequence[str] = (), folded: bool = True) -> list[str]:
    """The shell lines a run would execute, in order (comments start with #), ``notes``
    under the header, then the resume note when it resumes a matrix; comments folded to 80
    columns for a person, or (not ``folded``, for --json) each one line."""
    if plan.matrix_id:
        notes = [*notes, f"resuming matrix {plan.matrix_id}: cells already stored are skipped"]
    return dry_run_lines(plan, notes=notes, width=COLUMNS if folded else UNFOLDED)


@dataclass(frozen=True)
class ProbePreview:
    """What a dry run shows: the command that runs the probe for real, the lines it would
    execute (comments start with #), how many cells and about how long."""

    command: str
    lines: list[str]
    cells: int
    estimated_s: float
    # probe --adaptive: ``cells`` is the configurations it chooses among and ``estimated_s``
    # its budget of device time (it stops earlier once the answer is settled)
    adaptive: bool = False

    @property
    def plan_text(self) -> str:
        """``12 cells, about 3 min`` or, adaptive, ``adaptive among 12 configurations, at
        most 3 min of device time``."""
        minutes = max(1, round(self.estimated_s / 60))
        if self.adaptive:
            return (
                f"adaptive among {self.cells} configurations, at most {minutes} min of device time"
            )
        return f"{self.cells} cells, about {minutes} min"


def preview(request: ProbeRequest, plan: Plan | None = None, folded: bool = True) -> ProbePreview:
    """The dry run of ``request`` (planned here unless ``plan`` is given): the safety
    verdict's note, if any, goes right under the header; ``folded`` as for ``dry_run``.
    Executes nothing."""
    if not request.dry_run:
        request = replace(request, dry_run=True)
    plan = plan if plan is not None else plan_probe(request)
    note = dry_run_verdict(plan)
    lines = dry_run(plan, [note] if note else [], folded)
    # The command shown is the real run's (without --dry-run): the one to type in a root shell.
    return ProbePreview(
        command=replace(request, dry_run=False).command_line(),
        lines=lines,
        cells=len(plan.cells()),
        estimated_s=float(plan.estimated_seconds()),
    )


def own_signature(plan: Plan) -> dict[str, str] | None:
    """The filesystem (blkid TYPE/UUID) an unfinished probe of this device recorded right
    after its own mkfs: finding exactly that on the device needs no --force (a SIGKILL left
    it there, no later cleanup may wipe it). None for --scratch or when nothing is recorded."""
    if plan.scratch_size_bytes or plan.device is None:
        return None
    try:
        state = StateFile(state_path_for(store_path(plan.db_path))).load()
    except (StateFileError, ConfigError):
        return None
    return recorded_signature(state, plan.device_key, str(plan.device))


def check_device(plan: Plan) -> str | None:
    """The resolved device path when it may be formatted (None for --scratch, created at run
    time); DeviceRefused with the one-line reason otherwise."""
    if plan.scratch_size_bytes:
        if why := scratch_space_problem(plan):
            raise ConfigError(why)
        return None
    return devmod.require_safe(
        str(plan.device), force=plan.force, own_signature=own_signature(plan)
    )


def dry_run_verdict(plan: Plan) -> str | None:
    """For a dry run: None when the device would be accepted or could not be judged only for
    lack of privileges (the reason is then returned as a note); DeviceRefused otherwise."""
    if plan.scratch_size_bytes:
        return None
    own = own_signature(plan)
    verdict = devmod.safety_verdict(str(plan.device), force=plan.force, own_signature=own)
    if verdict.ok:
        if verdict.own_signature and own:
            return (
                f"the {own.get('TYPE')} signature on {plan.device} (UUID {own.get('UUID')}) "
                "is the one an unfinished probe made; formatting it needs no --force"
            )
        return None
    if devmod.ROOT_HINT in (verdict.reason or "") and root_problem():
        return f"safety check needs root: {verdict.reason}"
    raise DeviceRefused(verdict.reason or f"{plan.device}: refused")


def confirmation_matches(plan: Plan, typed: str | None) -> bool:
    """A destructive run needs the device typed back exactly (as given or resolved)."""
    if plan.scratch_size_bytes:
        return True
    return device_confirmed(str(plan.device), typed)


def device_confirmed(device: str, typed: str | None) -> bool:
    """Was ``device`` typed back exactly (as given or resolved)? Shared by every command
    that destroys a device: probe, calibrate, apply --execute."""
    if typed is None:
        return False
    return typed in (device, os.path.realpath(device))


def device_time_line(summary: dict[str, Any]) -> str | None:
    """Where a finished probe's device time went, in one line: ``device time: 62% inside
    the benchmarks' measured windows (100 s of 161 s in cells); outside them: fill 15%, ...``
    (from ProbeSummary.to_dict()'s ``device_time``)."""
    d = summary.get("device_time")
    if not d:
        return None
    total = d["cells_s"]
    parts = ", ".join(
        f"{k} {v / total:.0%}" for k, v in d["outside_s"].items() if v / total >= 0.005
    )
    return (
        f"device time: {d['window_share']:.0%} inside the benchmarks' measured windows "
        f"({d['window_s']:.0f} s of {total:.0f} s in cells)"
        + (f"; outside them: {parts}" if parts else "")
    )


def run_probe(
    plan: Plan,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    confirm: str | None = None,
    interruptions: Interruptions | None = None,
) -> ProbeSummary:
    """Run ``plan``. ``confirm`` must repeat the device exactly (not needed for --scratch).
    Interruptions by SIGINT/SIGTERM return a summary with ``interrupted`` set after the
    cleanup; ``interruptions.cancel()`` does the same from another thread."""

    why = root_problem()
    if why:
        raise DeviceRefused(why)
    if not confirmation_matches(plan, confirm):
        raise DeviceRefused(
            f"not confirmed: type the device exactly as {plan.device} "
            "(or pass --yes-wipe with it) to let the probe wipe it"
        )
    db_path = store_path(plan.db_path)
    with open_store(db_path) as store:
        store.require_writable()  # before a scratch loop device is attached or a disk formatted
        store.require_intact()
        run = MatrixRun(
            plan,
            store,
            StateFile(state_path_for(db_path)),
            on_progress,
            interruptions=interruptions,
        )
        summary = run.execute()
        if summary.matrix_id:
            summary.results = results_from_store(store, summary.matrix_id, plan)
    return summary


def cleanup_stale_state(db: PathLike | None = None) -> CleanupReport:
    """Undo what a killed probe left behind (mounts, scheduler, scratch loop device and
    file, a benchmark still running); a no-op when there is nothing or its owner lives."""
    return cleanup_stale(state_file_for(db))


def stale_state_pending(db: PathLike | None = None) -> bool:
    """Whether a dead probe left something to clean up (for callers that cannot, e.g. a
    dry run without root)."""

    sf = state_file_for(db)
    if not sf.exists():
        return False
    state = sf.load()
    return state.has_live_resources and live_owner(sf) is None


# --------------------------------------------------------------------------- choosing a device


@dataclass(frozen=True)
class BlockDevice:
    """One of the machine's block devices as a front end lists it for a probe: the safety
    verdict (``allowed``, else ``reason``) and what formatting it would destroy."""

    path: str
    size_bytes: int
    kind: str
    model: str
    allowed: bool
    reason: str | None
    # Filesystem/RAID/partition-table signatures (blkid -p and wipefs, when the verdict got
    # that far) and udev's FSTYPE/LABEL (lsblk), which need no root.
    signatures: tuple[str, ...] = ()
    fstype: str | None = None
    label: str | None = None

    @property
    def contents(self) -> str:
        """What a probe destroys, in words."""
        found = list(dict.fromkeys([*self.signatures, *([self.fstype] if self.fstype else [])]))
        if not found:
            return (
                "no filesystem, partition table or RAID signature found (blkid, wipefs, "
                "lsblk); any other data on it is lost too"
            )
        label = f" labelled {self.label!r}" if self.label else ""
        return f"the {', '.join(found)} data{label} on it: every file, beyond recovery"


def block_devices(force: bool = False) -> list[BlockDevice]:
    """Every top-level block device of this machine with the same safety verdict a probe
    gets (``force`` as ``--force``). Reads only; without root most are refused for that."""
    return [_block_device(n, force) for n in devmod.list_block_devices()]


def block_device(path: str, force: bool = False) -> BlockDevice:
    """One device as :func:`block_devices` lists it (what a confirmation names)."""
    return _block_device(devmod.lsblk(path, columns=devmod.LIST_COLUMNS), force, path)


def _block_device(n: dict, force: bool, given: str | None = None) -> BlockDevice:
    path = given or n.get("path") or f"/dev/{n['name']}"
    verdict = devmod.safety_verdict(path, force=force)
    reason = verdict.reason
    if reason and devmod.ROOT_HINT in reason and root_problem():
        reason = f"not judged: {devmod.ROOT_HINT}"
    return BlockDevice(
        path=path,
        size_bytes=int(n.get("size") or 0),
        kind=devmod.device_kind(n["name"], bool(n.get("rota")), n.get("tran")),
        model=str(n.get("model") or "").strip(),
        allowed=verdict.ok,
        reason=reason,
        signatures=tuple(verdict.signatures),
        fstype=n.get("fstype") or None,
        # udev's label (lsblk) if it has one, else blkid's, read only where the verdict
        # found a signature (and so could read the device)
        label=n.get("label")
        or (devmod.read_label(verdict.resolved_path or path) if verdict.signatures else None),
    )


def before_a_probe(
    request: ProbeRequest, on_progress: Callable[[ProgressEvent], None] | None
) -> None:
    """What every probe a front end starts does first: refused without root, before
    anything runs; then the cleanup after a killed probe, each action reported."""
    why = root_problem()
    if why:
        raise DeviceRefused(why)
    notify = on_progress or (lambda e: None)
    report = cleanup_stale_state(request.db)
    for action in report.actions if report.cleaned else []:
        notify(ProgressEvent("note", 0, 0, message=f"cleaned up after an earlier probe: {action}"))


def run_request(
    request: ProbeRequest,
    confirm: str | None = None,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    interruptions: Interruptions | None = None,
) -> ProbeSummary:
    """What ``fsadvisor probe`` does once its user confirmed, for a front end that asked
    itself (the TUI, from a thread worker): refused without root, before anything runs;
    cleanup after a killed probe; plan; safety verdict; run. ``interruptions.cancel()``
    from another thread stops it with Ctrl-C's cleanup (unmount, scheduler back, scratch
    loop device detached, the unfinished matrix kept for --resume)."""
    before_a_probe(request, on_progress)
    plan = plan_probe(replace(request, dry_run=False))
    check_device(plan)
    return run_probe(plan, on_progress=on_progress, confirm=confirm, interruptions=interruptions)
