"""Service functions for probing a device: plan, preview, run, clean up.

Both front ends call only these. ``plan_probe`` turns user choices into a
:class:`~fsadvisor.probe.Plan` (reading the device, never writing it); ``dry_run`` lists the
commands a run would execute; ``check_device`` is the safety verdict a front end shows
before it asks for confirmation; ``run_probe`` executes the plan with progress going to a
callback; ``cleanup_stale_state`` undoes what a probe that was killed left behind.
Nothing here prints.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from fsadvisor import limits
from fsadvisor.errors import ConfigError, DeviceRefused, FsAdvisorError
from fsadvisor.probe import plan as planmod
from fsadvisor.probe.report import ProbeSummary, ProgressEvent, dry_run_lines, results_from_store
from fsadvisor.probe.run import Interruptions, MatrixRun
from fsadvisor.probe.state import (CleanupReport, StateFile, StateFileError, cleanup_stale,
                                   recorded_signature, state_path_for)
from fsadvisor.sizes import parse_size

PathLike = str | os.PathLike[str]
Plan = planmod.Plan
# The smallest scratch device every filesystem here formats (btrfs and xfs want ~300 MiB).
MIN_SCRATCH_BYTES = int(limits.LIMITS["scratch"].lo)

__all__ = ["plan_probe", "dry_run", "check_device", "run_probe", "cleanup_stale_state",
           "root_problem", "store_path", "Plan", "ProbeSummary", "ProgressEvent",
           "CleanupReport"]


def store_path(db: PathLike | None = None) -> Path:
    from fsadvisor.store import default_path

    if db is not None and str(db) == ":memory:":
        raise ConfigError("a probe needs a store file (its state file lives next to it), "
                          "not :memory:")
    return Path(db).expanduser() if db is not None else default_path()


def _state_file(db: PathLike | None) -> StateFile:
    return StateFile(state_path_for(store_path(db)))


def root_problem() -> str | None:
    """Why this process cannot probe (not root), or None."""
    from fsadvisor.host import device
    return device.needs_root()


def _configs(configs: Sequence[str | Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for c in configs:
        if isinstance(c, Mapping):
            out.append(dict(c))
            continue
        try:
            d = json.loads(c)
        except ValueError as e:
            raise ConfigError(f"--config is not JSON: {e.msg} in {c[:80]!r}") from None
        if not isinstance(d, dict):
            raise ConfigError(f"--config must be a JSON object, not {c[:80]!r}")
        out.append(d)
    return out


def plan_probe(device: str | None = None, *, scratch: str | int | None = None,
               scratch_dir: PathLike | None = None,
               filesystems: Sequence[str] = ("ext4", "xfs", "btrfs", "f2fs"),
               configs: Sequence[str | Mapping[str, Any]] = (), agcounts: Sequence[int] = (),
               schedulers: Sequence[str] = planmod.DEFAULT_SCHEDULERS,
               profile: str | None = None, micro: bool = True,
               workloads: Sequence[str] | None = None, reps: int | None = None,
               runtime_s: float | None = None, cooldown_s: float | None = None,
               size: str | int | None = None, quick: bool = False, baseline: bool = True,
               variants: bool = True, energy: str = "auto", meter_log: PathLike | None = None,
               clock_offset_s: float = 0.0, idle_watts: float | str | None = None, idle_seconds: float | None = None,
               plp: str = "unknown", force: bool = False, db: PathLike | None = None,
               resume: bool = False, dry_run: bool = False) -> Plan:
    """Build the plan for ``device`` (or a ``scratch`` loop device of that size).

    With ``resume`` the last unfinished matrix of that device (or of ``--scratch``) is
    continued as it was planned; the other choices are ignored except ``force``. With
    ``dry_run`` nothing is executed at all, not even fio's io_uring self-test."""
    from fsadvisor.host import device as devmod
    from fsadvisor.tools import fio
    if (device is None) == (scratch is None):
        raise ConfigError("give either a DEVICE or --scratch SIZE")
    if plp not in ("yes", "no", "unknown"):
        raise ConfigError(f"--plp must be yes, no or unknown, not {plp!r}")
    if energy != "auto" and energy not in ("rapl", "ipmi", "meter-log", "estimate"):
        raise ConfigError(f"unknown --energy {energy!r}: use auto, rapl, ipmi, meter-log or estimate")
    if energy == "meter-log" and meter_log is None:
        raise ConfigError("--energy meter-log needs --meter-log FILE")
    if scratch_dir is not None and (why := devmod.control_character_refusal(
            os.fspath(scratch_dir), "--scratch-dir")):
        raise ConfigError(why)
    db_path = store_path(db)
    scratch_bytes = None
    if scratch is not None:
        try:
            scratch_bytes = parse_size(scratch)
        except ValueError:
            raise ConfigError(f"--scratch {scratch!r} is not a size (e.g. 2G)") from None
        if scratch_bytes < MIN_SCRATCH_BYTES:
            raise ConfigError(f"--scratch must be at least {MIN_SCRATCH_BYTES >> 20}M "
                              "(the smallest device every filesystem here formats)")
        limits.check("scratch", scratch_bytes)
    if resume:
        key = "scratch" if scratch is not None else str(device)
        entry = _state_file(db).load().matrices.get(key)
        if not entry:
            raise FsAdvisorError(f"no unfinished probe of {key} recorded next to {db_path}; "
                                 "start one without --resume")
        plan = Plan.from_dict(entry["plan"])
        plan.matrix_id = entry["matrix_id"]
        plan.force = force
        plan.db_path = str(db_path)
        if scratch is None:
            plan.device_info = devmod.inspect(str(device), plp=plan.plp)
        return plan

    if scratch_bytes is not None:
        size_bytes, dev_info = scratch_bytes, None
    else:
        dev_info = devmod.inspect(str(device), plp=plp)
        size_bytes = dev_info.size_bytes
    prof = None
    if profile is not None:
        from fsadvisor.profiles import load_profile

        prof = load_profile(profile)
    size_bytes_job = None
    if size is not None:
        try:
            size_bytes_job = parse_size(size)
        except ValueError:
            raise ConfigError(f"--size {size!r} is not a size (e.g. 1G)") from None
        limits.check("size", size_bytes_job)
    limits.check("clock-offset", clock_offset_s)
    limits.check("idle-seconds", idle_seconds)
    energy_opts: dict[str, Any] = {"source": energy}
    if meter_log is not None:
        energy_opts["meter_log"] = os.fspath(meter_log)
        energy_opts["clock_offset_s"] = float(clock_offset_s)
    elif clock_offset_s:
        raise ConfigError("--clock-offset applies to --meter-log only")
    if idle_watts is not None:
        from fsadvisor.energy import parse_idle_watts

        energy_opts["idle_watts"] = limits.check("idle-watts", parse_idle_watts(idle_watts))
    if idle_seconds:
        energy_opts["idle_seconds"] = float(idle_seconds)
    plan = planmod.build_plan(
        device if scratch_bytes is None else None, size_bytes,
        filesystems=filesystems, schedulers=schedulers, agcounts=agcounts,
        explicit_configs=_configs(configs), variants=variants, profile=prof, micro=micro,
        micro_names=workloads, quick=quick, reps=reps, runtime_s=runtime_s,
        cooldown_s=cooldown_s, size_bytes=size_bytes_job, baseline=baseline,
        ioengine=_ioengine_guess() if dry_run else fio.best_ioengine(),
        scratch_size_bytes=scratch_bytes,
        scratch_dir=os.fspath(scratch_dir) if scratch_dir is not None else None,
        energy=energy_opts, plp=plp, force=force, db_path=str(db_path))
    plan.device_info = dev_info
    _check_profile_workloads(plan)
    if not dry_run:
        # An explicit source that cannot work here is refused before anything is touched.
        from fsadvisor import energy as energymod
        energymod.choose_meter(energy, device=None,
                               **{k: v for k, v in energy_opts.items()
                                  if k in ("meter_log", "clock_offset_s", "idle_watts")})
    return plan


def _check_profile_workloads(plan: Plan) -> None:
    """A profile fio cannot express on one command line (data I/O mixed with file
    create/stat/delete, without a runner/ job file) is refused now, not in every cell."""
    from fsadvisor.tools import fio
    for spec in plan.workloads:
        if spec.kind != planmod.KIND_FIO or spec.source == "micro":
            continue
        try:
            fio.workload_argv(spec.workload, "/nonexistent/probe-check", 1.0, name="check")
        except FsAdvisorError as e:
            raise ConfigError(f"profile {plan.profile}: {e}") from None


def _ioengine_guess() -> str:
    """io_uring unless the kernel disables it (kernel.io_uring_disabled=2, Linux 6.6+); a
    real run asks fio itself (fio.best_ioengine), which a dry run must not execute."""
    try:
        disabled = Path("/proc/sys/kernel/io_uring_disabled").read_text().strip()
    except OSError:
        disabled = "0"
    return "libaio" if disabled == "2" else "io_uring"


def dry_run(plan: Plan) -> list[str]:
    """The shell lines a run would execute, in order (comments start with #)."""
    lines = dry_run_lines(plan)
    if plan.matrix_id:
        lines.insert(1, f"# resuming matrix {plan.matrix_id}: cells already stored are skipped")
    return lines


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
    from fsadvisor.host import device as devmod
    if plan.scratch_size_bytes:
        return None
    return devmod.require_safe(str(plan.device), force=plan.force,
                               own_signature=own_signature(plan))


def dry_run_verdict(plan: Plan) -> str | None:
    """For a dry run: None when the device would be accepted or could not be judged only for
    lack of privileges (the reason is then returned as a note); DeviceRefused otherwise."""
    from fsadvisor.host import device as devmod
    if plan.scratch_size_bytes:
        return None
    own = own_signature(plan)
    verdict = devmod.safety_verdict(str(plan.device), force=plan.force, own_signature=own)
    if verdict.ok:
        if verdict.own_signature and own:
            return (f"the {own.get('TYPE')} signature on {plan.device} (UUID {own.get('UUID')}) "
                    "is the one an unfinished probe made; formatting it needs no --force")
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


def run_probe(plan: Plan, on_progress: Callable[[ProgressEvent], None] | None = None,
              confirm: str | None = None,
              interruptions: Interruptions | None = None) -> ProbeSummary:
    """Run ``plan``. ``confirm`` must repeat the device exactly (not needed for --scratch).
    Interruptions by SIGINT/SIGTERM return a summary with ``interrupted`` set after the
    cleanup; ``interruptions.cancel()`` does the same from another thread."""
    from fsadvisor.store import open_store

    why = root_problem()
    if why:
        raise DeviceRefused(why)
    if not confirmation_matches(plan, confirm):
        raise DeviceRefused(f"not confirmed: type the device exactly as {plan.device} "
                            "(or pass --yes-wipe with it) to let the probe wipe it")
    db_path = store_path(plan.db_path)
    with open_store(db_path) as store:
        store.require_writable()  # before a scratch loop device is attached or a disk formatted
        run = MatrixRun(plan, store, StateFile(state_path_for(db_path)), on_progress,
                        interruptions=interruptions)
        summary = run.execute()
        if summary.matrix_id:
            summary.results = results_from_store(store, summary.matrix_id, plan)
    return summary


def cleanup_stale_state(db: PathLike | None = None) -> CleanupReport:
    """Undo what a killed probe left behind (mounts, scheduler, scratch loop device and
    file, a benchmark still running); a no-op when there is nothing or its owner lives."""
    return cleanup_stale(_state_file(db))


def stale_state_pending(db: PathLike | None = None) -> bool:
    """Whether a dead probe left something to clean up (for callers that cannot, e.g. a
    dry run without root)."""
    from fsadvisor.probe.state import live_owner

    sf = _state_file(db)
    if not sf.exists():
        return False
    state = sf.load()
    return state.has_live_resources and live_owner(sf) is None
