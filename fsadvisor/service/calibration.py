"""Service functions for calibrating one device: plan, preview, run, fit, store.

``fsadvisor calibrate DEVICE`` (and ``--scratch SIZE``) runs a short raw-device matrix
(fsadvisor.probe.calibration_plan) through the probe's own runner, with the probe's safety
verdict, confirmation, state file and cleanup, stores every repetition like a probe does,
then fits the device's parameters (fsadvisor.catalog.device_params) and stores them under
the device's identity. The parameters are saved only after every step succeeded and the fit
is complete: a calibration that fails or is interrupted leaves no device_params row and
says which step failed. What predict/recommend look up is service/device_figures.py.
Nothing here prints.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from fsadvisor.errors import ConfigError, DeviceRefused, FsAdvisorError, StoreError
from fsadvisor.infra.scripttext import COLUMNS, UNFOLDED, comment
from fsadvisor.catalog.device_params import HOST_KEYS, DeviceParams, calibrated_at, devices_table

# What predict/recommend look up (a device's parameters, the line that says where they come
# from) is service/device_figures.py, which loads this module only to refit a calibration
# made by another version's fit: they must start fast. It imports this module, never the
# other way round.

# The probe's planning, running and state, the device inspection and the fit are imported by
# the step that uses them, each with its reason: this module is also loaded to refit a stored
# calibration (service/device_figures.py) and for adaptive's plan, which need none of them.
if TYPE_CHECKING:
    from fsadvisor.probe.calibration_plan import CalibrationPlan
    from fsadvisor.probe.report import ProgressEvent
from fsadvisor.sizes import parse_size

Z90 = 1.6448536269514722  # two-sided 90% normal quantile, as the model's intervals use


class CalibrationFailed(FsAdvisorError):
    """A step of the calibration failed; no device parameters were saved."""


class CalibrationInterrupted(CalibrationFailed):
    """SIGINT/SIGTERM (or a cancel) stopped the calibration after the probe's cleanup."""

    def __init__(self, message: str, signame: str):
        super().__init__(message)
        self.signame = signame


# --------------------------------------------------------------------------- planning


def plan_calibration(
    device: str | None = None,
    *,
    scratch: str | int | None = None,
    scratch_dir: str | os.PathLike[str] | None = None,
    runtime_s: float | None = None,
    reps: int | None = None,
    plp: str = "unknown",
    force: bool = False,
    db: str | None = None,
    dry_run: bool = False,
    only: Sequence[str] | None = None,
    extends: Sequence[int] = (),
) -> CalibrationPlan:
    """The calibration plan for ``device`` (or a scratch loop device of ``scratch`` bytes),
    within the 5-minute budget (see build_calibration_plan). ``only``: just those workloads
    (and what they are read against); ``extends``: the stored runs of an earlier calibration
    of the device that this one completes (fitted together). Reads the device, never writes
    it; with ``dry_run`` executes nothing at all."""
    # device inspection (sysfs, udev), the probe's planning and its safety checks
    # (service/probing.py loads the runner): all heavy, only when a calibration is planned
    from fsadvisor.host import cpu, device as devmod
    from fsadvisor.probe.calibration_plan import build_calibration_plan
    from fsadvisor.service import probing

    if (device is None) == (scratch is None):
        raise ConfigError("give either a DEVICE or --scratch SIZE")
    if plp not in ("yes", "no", "unknown"):
        raise ConfigError(f"--plp must be yes, no or unknown, not {plp!r}")
    db_path = probing.store_path(db)
    if scratch is not None:
        try:
            size = parse_size(scratch)
        except ValueError:
            raise ConfigError(f"--scratch {scratch!r} is not a size (e.g. 1G)") from None
        if size < probing.MIN_SCRATCH_BYTES:
            raise ConfigError(f"--scratch must be at least {probing.MIN_SCRATCH_BYTES >> 20}M")
        info = None
    else:
        info = devmod.inspect(str(device), plp=plp)
        size = info.size_bytes
    if dry_run:
        ioengine = probing.ioengine_guess()
    else:
        # fio's adapter (its parsers) only for a run: a dry run guesses the engine
        from fsadvisor.tools import fio

        ioengine = fio.best_ioengine()
    plan = build_calibration_plan(
        str(device) if scratch is None else None,
        size,
        runtime_s=runtime_s,
        reps=reps,
        ioengine=ioengine,
        cores=cpu.cores(),
        only=only,
        scratch_size_bytes=size if scratch is not None else None,
        scratch_dir=os.fspath(scratch_dir) if scratch_dir is not None else None,
        plp=plp,
        force=force,
        db_path=str(db_path),
    )
    plan.device_info = info
    plan.extends = sorted({int(i) for i in extends})
    return plan


def dry_run(plan: CalibrationPlan, notes: Sequence[str] = (), folded: bool = True) -> list[str]:
    """The shell lines a calibration would execute, ``notes`` (comments' texts) under the
    header; comments folded to 80 columns for a person, or (not ``folded``, for --json)
    each one line."""
    # the probe's planning and its report (the plan's whole module tree): for a dry run only
    from fsadvisor.probe.calibration_plan import BUDGET_S
    from fsadvisor.probe.report import dry_run_lines

    width = COLUMNS if folded else UNFOLDED
    lines = dry_run_lines(
        plan,
        header=f"fsadvisor calibrate --dry-run: {len(plan.cells())} raw-device runs of "
        f"{plan.runtime_s:g} s, about {plan.estimated_seconds():.0f} s (budget "
        f"{BUDGET_S:.0f} s); nothing below is executed",
        notes=notes,
        width=width,
    )
    return lines + comment(
        "then: fit the device parameters from these runs and store them with the device's identity",
        width=width,
    )


def planned(plan: CalibrationPlan) -> str:
    """The one line a front end shows before starting."""
    from fsadvisor.probe.calibration_plan import BUDGET_S  # the probe's planning: heavy

    target = "a scratch loop device" if plan.scratch_size_bytes else str(plan.device)
    return (
        f"calibrating {target}: {len(plan.cells())} raw-device runs of {plan.runtime_s:g} s "
        f"({plan.reps} reps, sweep {plan.sweep_reps}), about {plan.estimated_seconds():.0f} s "
        f"of the {BUDGET_S:.0f} s budget"
    )


# --------------------------------------------------------------------------- running


@dataclass
class CalibrationResult:
    params: DeviceParams
    device: str
    identity: str
    matrix_id: str
    run_ids: list[int]
    wall_s: float
    notes: list[str] = field(default_factory=list)
    cleanup: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "identity": self.identity,
            "kind": self.params.kind,
            "matrix_id": self.matrix_id,
            "n_runs": self.params.n_runs,
            "run_ids": self.run_ids,
            "wall_s": round(self.wall_s, 3),
            "source": self.params.source,
            "params": params_table(self.params),
            "notes": self.notes,
            "cleanup": self.cleanup,
        }


def params_table(p: DeviceParams) -> dict[str, dict[str, Any]]:
    """Each parameter with its log-scale sd, 90% interval and whether it was measured."""
    listed = p.details.get("measured") if p.measured else None
    measured = set(listed) if isinstance(listed, (list, tuple, set)) else set()
    out = {}
    for k, v in p.values.items():
        sd = p.log_sd.get(k, 0.0)
        out[k] = {
            "value": v,
            "log_sd": sd,
            "interval_90": [v * math.exp(-Z90 * sd), v * math.exp(Z90 * sd)],
            "measured": k in measured,
        }
    return out


class _StopAtFailure(Exception):
    """Raised from the progress callback: a failed run ends the calibration at once (the
    runner's cleanup still runs), since a fit without that cell would be half a fit."""

    def __init__(self, cell: str, error: str):
        super().__init__(f"{cell}: {error}")
        self.cell, self.error = cell, error


def run_calibration(
    plan: CalibrationPlan,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    confirm: str | None = None,
    interruptions: Any = None,
    deadline_s: float | None = None,
) -> CalibrationResult:
    """Run ``plan`` (``confirm`` repeats the device, as for a probe), fit, store. Raises
    DeviceRefused like a probe; CalibrationFailed naming the step when a run fails, the
    runner stops, the run is interrupted, or the fit cannot use the runs — in every case
    with no device_params row written. ``deadline_s`` (never more than the calibration's own
    budget) is the most device time it may take, judged from its own first runs
    (CalibrationPacer): further repetitions that would pass it are left out, and said."""
    # the probe's planning, report and runner: a calibration that runs needs them, a refit
    # or a plan does not (each a heavy tree)
    from fsadvisor.probe.calibration_plan import BUDGET_S, CalibrationPacer
    from fsadvisor.probe.report import ProgressEvent as Event
    from fsadvisor.probe.run import MatrixRun

    # its state file, safety checks and the store's writer (sqlite-utils): as heavy, as rare
    from fsadvisor.probe.state import StateFile, state_path_for
    from fsadvisor.service import probing
    from fsadvisor.store import open_store

    why = probing.root_problem()
    if why:
        raise DeviceRefused(why)
    if not probing.confirmation_matches(plan, confirm):
        raise DeviceRefused(
            f"not confirmed: type the device exactly as {plan.device} "
            "(or pass --yes-wipe with it) to let the calibration wipe it"
        )
    forward = on_progress or (lambda e: None)

    def progress(e: ProgressEvent) -> None:
        forward(e)
        if e.kind == "cell-end" and e.status in ("failed", "skipped"):
            raise _StopAtFailure(e.cell or "?", e.message or e.status)

    db_path = probing.store_path(plan.db_path)
    with open_store(db_path) as store:
        store.require_intact()  # a damaged store is refused before the device is touched

        def wall_of(cell: Any) -> float | None:
            return next(
                (o.wall_s for o in run.summary.outcomes if o.key == cell.key and o.rep == cell.rep),
                None,
            )

        pacer = CalibrationPacer(
            plan,
            BUDGET_S if deadline_s is None else min(BUDGET_S, deadline_s),
            wall_of,
            lambda m: forward(Event("note", 0, 0, message=m)),
        )
        run = MatrixRun(
            plan,
            store,
            StateFile(state_path_for(db_path)),
            progress,
            interruptions=interruptions,
            cell_source=pacer,
        )
        try:
            summary = run.execute()
        except _StopAtFailure as e:
            _forget(run, plan)
            raise CalibrationFailed(
                f"calibration failed at step {e.cell}: {e.error}; no device parameters were "
                f"saved (the {run.summary.count('ok')} runs before it are stored, matrix "
                f"{plan.matrix_id})"
            ) from None
        except FsAdvisorError as e:
            if isinstance(e, DeviceRefused):
                raise
            step = run.state.current_cell or "setting up the device"
            _forget(run, plan)
            raise CalibrationFailed(
                f"calibration failed at step {step}: {e}; no device parameters were saved"
            ) from None
        if summary.interrupted:
            _forget(run, plan)
            cell = next(
                (o.label for o in reversed(summary.outcomes) if o.status == "incomplete"),
                "between runs",
            )
            raise CalibrationInterrupted(
                f"calibration interrupted by {summary.interrupted} at step {cell}; no device "
                "parameters were saved (run it again)",
                summary.interrupted,
            )
        rows = store.runs(matrix_id=summary.matrix_id, status="ok")
        if not rows:
            raise CalibrationFailed(
                "calibration stored no successful run; no device parameters were saved"
            )
        if plan.extends:
            # completing an earlier calibration of this device: its runs are fitted with these
            rows += [
                r
                for r in ok_runs(store, plan.extends)
                if r["device_identity"] == rows[0]["device_identity"]
            ]
        identity, kind = rows[0]["device_identity"], rows[0]["device_kind"]
        from fsadvisor.host import cpu as host_cpu  # the host's measurement: after a run only

        try:
            # the host's CPU, measured after the device runs (nothing else of ours is busy):
            # the model prices filesystem, scheduler and metadata work with it
            host = host_cpu.measurement()
            params = _fit(rows, kind, identity, host)
        except (ArithmeticError, ValueError) as e:
            raise CalibrationFailed(
                f"calibration failed at step fit: {e}; no device parameters were saved"
            ) from None
        if params is None or not params.measured:
            raise CalibrationFailed(
                "calibration failed at step fit: the runs determined no "
                "parameter; no device parameters were saved"
            )
        run_ids = [int(r["run_id"]) for r in rows]
        store.save_device_params(params, run_ids=run_ids)
        # and as this host's: its other devices, not calibrated, are priced with it too
        store.save_host_figures(host)
        saved = store.device_params(identity)
    notes = list(summary.notes)
    if pacer.dropped:
        notes.append(
            f"{len(pacer.dropped)} repetitions left out to stay within "
            f"{pacer.deadline_s:.0f} s of device time"
        )
    return CalibrationResult(
        params=saved,
        device=summary.device or "",
        identity=identity,
        matrix_id=summary.matrix_id or "",
        run_ids=run_ids,
        wall_s=summary.wall_s,
        notes=notes,
        cleanup=list(summary.cleanup),
    )


def measure_host(db: str | None = None) -> dict[str, Any]:
    """Measure this host's CPU figures (host/cpu.py: a tmpfs pread loop, under a second; no
    device is touched) and store them: predictions for this host's devices that have no
    calibration of their own price filesystem and metadata CPU work with them. Returns the
    stored figures, the store's path and a note when the host was busy beside them."""
    # as run_calibration's: the measurement, the probe's store path and the store on use
    from fsadvisor.host import cpu as host_cpu
    from fsadvisor.service import probing
    from fsadvisor.store import open_store

    doc = host_cpu.measurement()
    with open_store(db) as store:
        store.save_host_figures(doc)
    notes = []
    load, cores = float(doc["load_1min"]), float(doc["host_cores"])
    if load > BUSY_LOAD_PER_CORE * cores:
        notes.append(
            f"measured beside other work (load {load:.2f} on {cores:.0f} cores): a busy host "
            "measures slower than it is; run it again when the host is quiet"
        )
    return {**doc, "stored_in": str(probing.store_path(db)), "notes": notes}


# A host measurement beside more than this load per core is reported as made on a busy host.
BUSY_LOAD_PER_CORE = 0.5


def _forget(run: Any, plan: CalibrationPlan) -> None:
    """A calibration is not resumable: drop its unfinished-matrix entry from the state file,
    so the next one does not report it as something --resume could continue."""
    # as run_calibration's (loaded by then): the probe's state file and safety checks
    from fsadvisor.probe.state import StateFile, StateFileError, state_path_for
    from fsadvisor.service import probing

    try:
        sf = StateFile(state_path_for(probing.store_path(plan.db_path)))
        state = sf.load()
        if state.matrices.pop(plan.device_key, None) is not None:
            sf.save(state)
    except (StateFileError, OSError):
        pass  # only a stale note for the next run is at stake


def refitted_calibration(store: Any, identity: str) -> DeviceParams | None:
    """What `calibrate` would store for ``identity`` with this code: the runs the stored
    calibration was fitted on (its ``run_ids``) and the host figures it measured, fitted
    again (None without a stored calibration or its runs). A benchmark that judges today's
    model on a shipped store needs today's fit of the same measurements; `recommend` and
    `predict` get it stored by refit_stored."""
    stored = store.device_params(identity)
    if stored is None:
        return None
    return _refit(stored, _stored_rows(store, stored))


def refit_stored(store: Any, stored: DeviceParams) -> tuple[DeviceParams | None, str]:
    """Replace ``stored``, a calibration made by another version's fit, with this version's
    fit of the same runs and host figures (same identity, runs and calibration date; the old
    fit's version kept in ``details["refitted_from"]``). Returns what the store now holds
    and "", or None and why not, with nothing written: then the old parameters stand. A
    store that refuses the write keeps the old row; the refit is returned with the reason."""
    ids = _run_ids(stored)
    rows = _stored_rows(store, stored)
    if not ids or len(rows) < len(set(ids)):
        return None, "its runs are not in the store"
    try:
        params = _refit(stored, rows)
    except (ArithmeticError, ValueError) as e:
        return None, f"its runs could not be refitted ({e})"
    if params is None or not params.measured:
        return None, "its runs no longer determine a parameter"
    # the date the device was measured stays the calibration's date through every refit
    measured_at = calibrated_at(stored.details)
    refit = replace(
        params,
        details={
            **params.details,
            "run_ids": ids,
            "refitted_from": {
                "fit_version": stored.details.get("fit_version"),
                "calibrated_at": measured_at,
            },
        },
    )
    try:
        store.save_device_params(refit, run_ids=ids)
    except StoreError as e:  # e.g. a read-only store: this output still uses the refit
        return refit, f"not stored: {e}"
    return store.device_params(stored.device_id), ""


def _run_ids(p: DeviceParams) -> list[int]:
    """The runs a stored calibration was made from (the store's ``run_ids`` column)."""
    listed = p.details.get("run_ids")
    return [int(i) for i in listed] if isinstance(listed, (list, tuple)) else []


def _stored_rows(store: Any, stored: DeviceParams) -> list[dict]:
    """The successful runs a stored calibration names (those still in the store)."""
    return ok_runs(store, _run_ids(stored))


def ok_runs(store: Any, run_ids: Iterable[int]) -> list[dict]:
    """The successful runs among ``run_ids`` that are still in the store."""
    ids = set(run_ids)
    return [r for r in store.runs(status="ok") if r["run_id"] in ids]


def _refit(stored: DeviceParams, rows: list[dict]) -> DeviceParams | None:
    listed = stored.details.get("measured")
    measured = set(listed) if isinstance(listed, (list, tuple)) else set()
    host = {k: stored.values[k] for k in HOST_KEYS if k in measured}
    return _fit(rows, stored.kind, stored.device_id, host or None)


def _fit(rows: list[dict], kind: str, identity: str, host: Any) -> DeviceParams | None:
    """`calibrate`'s fit of its stored raw-device rows, with the host's CPU figures (None
    when no row is a raw-device run it can read)."""
    # Imported here: only a calibration fits (a warm `recommend` never loads the fit).
    from fsadvisor.predict.device_fit import RawRun, fit_device_params

    raw = [r for r in (RawRun.from_store_row(row) for row in rows) if r is not None]
    if not raw:
        return None
    return fit_device_params(raw, kind, devices_table(), device_id=identity, host=host)
