"""`fsadvisor calibrate` and `fsadvisor refit`: the two calibrations, each under its name.

- ``fsadvisor calibrate DEVICE`` / ``--scratch SIZE``: a raw-device probe of at most five
  minutes that learns the device's own parameters (and the host's CPU) and stores them in
  the store (fsadvisor.service.calibration); afterwards ``recommend/predict --device DEVICE``
  use them.
- ``fsadvisor refit``: refit the model's prior width on the store
  (fsadvisor.service.advice.calibrate). ``calibrate`` without a DEVICE is its old spelling,
  kept with a note.

Presentation only."""

from __future__ import annotations

import signal
from typing import Annotated, Optional

import typer

from fsadvisor.cli.app import app, confirm_wipe, domain_errors, emit_json, fail
from fsadvisor.cli.options import DbOpt, ForceOpt, YesWipeOpt, bounded

# The service is imported by the command that calls it, each import saying what it loads
# (start-up): --help, shell completion and the man page import this module without running one.

# How parameters are printed: (key, label, unit scale, unit)
_ROWS = (
    ("read_latency_us", "read service time QD1", 1.0, "us"),
    ("write_latency_us", "write service time QD1", 1.0, "us"),
    ("flush_latency_us", "flush (fsync) cost", 1.0, "us"),
    ("read_iops_cap", "4K random read ceiling", 1.0, "IOPS"),
    ("write_iops_cap", "4K random write ceiling", 1.0, "IOPS"),
    ("read_bw_bytes_s", "128K sequential read", 1e-6, "MB/s"),
    ("write_bw_bytes_s", "128K sequential write", 1e-6, "MB/s"),
    ("parallelism", "internal parallelism", 1.0, "in flight"),
    ("bw_submitters", "throughput grows with submitters up to", 1.0, "jobs (1: the device's own)"),
    ("knee_power", "knee shape of the sweep", 1.0, "1 gradual, 4+ sharp"),
    ("host_cpu_factor", "host CPU time per call", 1.0, "x the reference machine's"),
    ("host_cores", "host CPUs", 1.0, "cores"),
)


# The refit's options, declared once for `refit` and for `calibrate` without a DEVICE.
RefitOutput = Annotated[
    Optional[str],
    typer.Option(
        "--output",
        "-o",
        help="Refit: write the model calibration here instead of beside the "
        "store (<db>.calibration.json).",
    ),
]
RefitFolds = Annotated[
    int, bounded("--folds", help="Refit: cross-validation folds for the prior width.")
]


def _print_params(res) -> None:
    d = res.to_dict()
    typer.echo(f"device {d['device']} ({d['kind']}), identity {d['identity']!r}")
    typer.echo(
        f"{d['n_runs']} runs (matrix {d['matrix_id']}) in {d['wall_s']:.0f} s; {d['source']}"
    )
    typer.echo(f"{'parameter':<26} {'value':>12} {'90% interval':>25}  unit")
    for key, label, scale, unit in _ROWS:
        p = d["params"].get(key)
        if p is None:  # measured only (a knee's shape needs a read sweep): no prior to show
            continue
        lo, hi = (x * scale for x in p["interval_90"])
        tag = "" if p["measured"] else "  (prior, not measured)"
        typer.echo(
            f"{label:<26} {p['value'] * scale:>12,.1f} {lo:>12,.1f}–{hi:<12,.1f} {unit}{tag}"
        )


def _model_calibration(output: Optional[str], folds: int, db: Optional[str], as_json: bool) -> None:
    from fsadvisor.service import advice  # the model (numpy) and the store: on use

    doc = advice.calibrate(db=db, out=output, folds=folds)
    if as_json:
        emit_json(doc)
        return
    typer.echo(
        f"prior scale {doc['prior_scale']} (search: "
        + ", ".join(
            f"{r['prior_scale']}: x{r.get('median_factor', float('nan')):.3f}"
            for r in doc["prior_scale_search"]
        )
        + ")"
    )
    typer.echo(
        f"fitted {len(doc['coefficients'])} coefficients on {doc['observations_used']} "
        f"observations ({doc['fit_seconds']:.1f} s) -> {doc['written_to']}"
    )


def _host_calibration(db: Optional[str], as_json: bool) -> None:
    # the calibration service (and the store) only when a measurement runs (start-up)
    from fsadvisor.service import calibration

    doc = calibration.measure_host(db)
    if as_json:
        emit_json(doc)
        return
    typer.echo(
        f"this host ({doc['hostname']}): {doc['pread_ns']:.0f} ns per {doc['how']} (reference "
        f"machine {doc['reference_pread_ns']:.0f}): host_cpu_factor "
        f"{doc['host_cpu_factor']:.2f}, {doc['host_cores']:.0f} cores; load "
        f"{doc['load_1min']:.2f}"
    )
    typer.echo(
        f"stored in {doc['stored_in']}: this host's devices without a calibration of their own "
        "are predicted at this CPU speed"
    )
    for note in doc["notes"]:
        typer.echo(f"fsadvisor: note: {note}", err=True)


@app.command()
@domain_errors
def calibrate(
    device: Annotated[
        Optional[str],
        typer.Argument(
            metavar="DEVICE",
            help="Block device to WIPE and calibrate (raw-device runs, at most 5 minutes). "
            "Without it (and --scratch): the old spelling of `fsadvisor refit`.",
        ),
    ] = None,
    scratch: Annotated[
        Optional[str],
        typer.Option(
            "--scratch",
            metavar="SIZE",
            help="Calibrate a file-backed loop device of SIZE (e.g. 1G).",
        ),
    ] = None,
    scratch_dir: Annotated[
        Optional[str],
        typer.Option(
            "--scratch-dir",
            metavar="DIR",
            help="Where the scratch backing file goes (default $TMPDIR; /dev/shm makes a ram-loop).",
        ),
    ] = None,
    runtime: Annotated[
        Optional[float],
        bounded(
            "--runtime",
            metavar="SECONDS",
            help="Measurement window per run (default 4; shrunk to fit 5 minutes).",
        ),
    ] = None,
    reps: Annotated[
        Optional[int],
        bounded(
            "--reps", help="Repetitions of the key runs (default 3; the QD sweep gets one fewer)."
        ),
    ] = None,
    plp: Annotated[
        str, typer.Option("--plp", help="Drive has power-loss protection: yes | no | unknown.")
    ] = "unknown",
    force: ForceOpt = False,
    yes_wipe: YesWipeOpt = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print every command it would run and run none (no root needed)."
        ),
    ] = False,
    output: RefitOutput = None,
    folds: RefitFolds = 5,
    host: Annotated[
        bool,
        typer.Option(
            "--host",
            help="Measure only this host's CPU speed (under a second, no device touched) and "
            "store it for its devices that have no calibration of their own.",
        ),
    ] = False,
    db: DbOpt = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the result (parameters with 90% intervals) as JSON."),
    ] = False,
) -> None:
    """Learn DEVICE's own parameters (service times, IOPS and bandwidth ceilings, flush
    cost, parallelism) and this host's CPU speed from a raw-device probe of at most 5
    minutes and store them. DESTROYS ALL DATA on DEVICE. (--host: this host's CPU speed
    alone. Without DEVICE: `fsadvisor refit`, the old spelling.)"""
    # the calibration and the probe service (the runner, fio): on use (see the top)
    from fsadvisor.service import calibration, probing

    if host:
        if device is not None or scratch is not None or output is not None:
            fail("--host measures this host alone: give no DEVICE, --scratch or --output with it")
        _host_calibration(db, as_json)
        return
    if device is None and scratch is None:
        typer.echo(
            "fsadvisor: note: refitting the model is `fsadvisor refit` now; `calibrate` "
            "without a DEVICE still does it",
            err=True,
        )
        _model_calibration(output, folds, db, as_json)
        return
    if output is not None:
        fail(
            "--output applies to the model calibration (no DEVICE); a device's parameters go "
            "to the store"
        )
    not_root = probing.root_problem()
    if not dry_run and not_root:
        fail(not_root)
    if not dry_run:
        report = probing.cleanup_stale_state(db)
        for a in report.actions if report.cleaned else []:
            typer.echo(f"fsadvisor: cleaned up after an earlier probe: {a}", err=True)
    plan = calibration.plan_calibration(
        device,
        scratch=scratch,
        scratch_dir=scratch_dir,
        runtime_s=runtime,
        reps=reps,
        plp=plp,
        force=force,
        db=db,
        dry_run=dry_run,
    )
    if dry_run:
        note = probing.dry_run_verdict(plan)
        # --json: each comment and note one line, its content apart from the layout
        lines = calibration.dry_run(plan, [note] if note else [], folded=not as_json)
        if as_json:
            emit_json(
                {
                    "dry_run": True,
                    "runs": len(plan.cells()),
                    "estimated_s": plan.estimated_seconds(),
                    "commands": lines,
                }
            )
        else:
            for line in lines:
                typer.echo(line)
        return
    probing.check_device(plan)
    confirm = confirm_wipe(plan, yes_wipe)
    typer.echo(f"fsadvisor: {calibration.planned(plan)}", err=True)
    # the probe command's module (and its declared options) only when a calibration runs
    from fsadvisor.cli.probe import ProbeProgress

    try:
        result = calibration.run_calibration(plan, on_progress=ProbeProgress(), confirm=confirm)
    except calibration.CalibrationInterrupted as e:
        # The shell's convention, as probe: 128 + the signal (130 for Ctrl-C, 143 for SIGTERM).
        sig = getattr(signal.Signals, e.signame, None)
        fail(str(e), 128 + sig.value if sig else 130)
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_params(result)


@app.command()
@domain_errors
def refit(
    output: RefitOutput = None,
    folds: RefitFolds = 5,
    db: DbOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the calibration as JSON.")] = False,
) -> None:
    """Refit the model on the store: choose the prior width of the configuration effects by
    cross-validation and write it beside the store (run it after probing). Touches no
    device."""
    _model_calibration(output, folds, db, as_json)
