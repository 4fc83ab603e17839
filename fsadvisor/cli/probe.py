"""`fsadvisor probe DEVICE`: measure candidate configurations on a real device (or a scratch
loop device) and store every run. Presentation only; the work is fsadvisor.service.probing."""

from __future__ import annotations

import inspect
import shutil
import signal
import sys
from typing import Annotated, Any, Callable, Optional

import typer

from fsadvisor.cli.app import (
    app,
    complete_profile,
    confirm_wipe,
    domain_errors,
    emit_json,
    fail,
    limit_option,
)
from fsadvisor.domain import FLAG_ESTIMATE
from fsadvisor.service.probe_options import ProbeOptions, RunChoices, cli_order, declared

# Deferred imports, each marked where it stands (start-up): the service's probing (runner,
# fio, device inspection) and adaptive probe (the model: numpy) load when a probe runs, since
# --help, shell completion and the man page import this module without running one, and
# calibrate imports it for its progress display alone.


def clock(seconds: float | None) -> str:
    """service.probing.clock (imported on use: this module loads the service lazily)."""
    from fsadvisor.service.probing import clock as service_clock  # the probe service: see the top

    return service_clock(seconds)


EXIT_INTERRUPTED = 130
# Without a profile there is nothing to decide adaptively; a matrix longer than this is run
# only when asked for (--full): `probe DEVICE` alone plans hundreds of cells.
FULL_ONLY_ABOVE_S = 3600.0
EXIT_CELLS_FAILED = 1


BAR_WIDTH = 24


def progress_bar(done: int, total: int, width: int = BAR_WIDTH, unit: str = "") -> str:
    """``[#########---------------]  3/8  37%`` (ASCII: logs and serial consoles too);
    with ``unit`` "s" the counts are seconds of device time (``120/600 s``)."""
    frac = min(1.0, done / total) if total else 0.0
    filled = int(frac * width)
    suffix = f" {unit}" if unit else ""
    return (
        f"[{'#' * filled}{'-' * (width - filled)}] {done:>{len(str(total))}}/{total}"
        f"{suffix} {frac:4.0%}"
    )


class ProbeProgress:
    """Progress on stderr: a bar with cells done/total, the current cell and the ETA.

    On a terminal the bar is one line redrawn in place, and only failures, skips, notes and
    cleanup stay on screen; redirected to a file or a CI log every event is its own line (a
    carriage return there would leave one unreadable line)."""

    def __init__(self, tty: bool | None = None, out=None, columns: int | None = None) -> None:

        self.out = out or sys.stderr
        self.tty = self.out.isatty() if tty is None else tty
        self.drawn = False  # a bar without a newline is on the terminal's last line
        self.running = ""  # the bar of the cell that runs now (its live samples extend it)
        # a redrawn line longer than the terminal would wrap and "\r" could not erase it
        self.columns = columns or shutil.get_terminal_size().columns

    def _line(self, text: str) -> None:
        if self.drawn:
            self.out.write("\r\033[K")
            self.drawn = False
        self.out.write(text + "\n")
        self.out.flush()

    def _bar(self, text: str) -> None:
        if self.tty:
            self.out.write("\r\033[K" + text)
            self.out.flush()
            self.drawn = True
        else:
            self._line(text)

    def __call__(self, e) -> None:
        unit = getattr(e, "unit", "")
        bar = progress_bar(e.done, e.total or 0, unit=unit)
        # an adaptive probe stops when settled: its budget's remainder is an upper bound
        eta = f"{'at most ' if unit == 's' else ''}ETA {clock(e.eta_s)}"
        if e.kind == "note":
            self._line(f"fsadvisor: {e.message}")
        elif e.kind == "cell-start":
            self.running = f"{bar}  {eta}  running {e.cell}"
            self._bar(self.running)
        elif e.kind == "sample":
            # about once a second: on a terminal the bar says what the device does now; a
            # log gets no line per second (the cell's end has fio's own figures)
            if self.tty and self.running:
                from fsadvisor.service.probing import live_text  # the probe service: see the top

                self._bar(f"{self.running}  now: {live_text(e)}"[: max(20, self.columns - 1)])
        elif e.kind == "cell-end":
            self.running = ""
            if e.status == "ok" and self.tty:
                self._bar(f"{bar}  {eta}  ok {e.cell}")
            else:
                why = f": {e.message}" if e.message and e.status != "ok" else ""
                self._line(f"{bar}  {e.status:<11} {e.cell}{why}")
        elif e.kind == "cleanup":
            self._line(f"fsadvisor: cleanup: {e.message}")
        elif e.kind == "done" and self.drawn:
            self._line(f"{bar}  done")


def _fmt(stat: dict | None, scale: float = 1.0, digits: int = 0) -> str:
    if not stat or stat.get("mean") is None:
        return "-"
    mean = stat["mean"] * scale
    lo, hi = stat.get("ci95_low"), stat.get("ci95_high")
    if lo is None or hi is None:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ±{(hi - lo) * scale / 2:.{digits}f}"


def _print_summary(s) -> None:
    d = s.to_dict()
    c = d["cells"]
    typer.echo(
        f"matrix {d['matrix_id']} on {d['device']} ({d['device_kind']}): "
        f"{c['ok']} ok, {c['failed']} failed, {c['skipped']} skipped, "
        f"{c['already_done']} already done, {c['incomplete']} incomplete "
        f"of {c['total']} cells in {clock(d['wall_s'])}"
    )
    from fsadvisor.service.probing import device_time_line  # the probe service: see the top

    if (line := device_time_line(d)) is not None:
        typer.echo(line)
    for reason, n in d["skipped_reasons"].items():
        typer.echo(f"  skipped {n} cells: {reason}")
    for f in d["failed"]:
        typer.echo(f"  failed: {f['label']}: {f['error']}")
    e = d["energy"]
    if e:
        typer.echo(f"energy: {e.get('source')} (scope {e.get('scope')}; {e.get('why')})")
    if d["results"]:
        typer.echo("")
        typer.echo(
            f"{'configuration':<52} {'workload':<22} {'n':>2} {'IOPS (95% CI)':>18} "
            f"{'MB/s':>14} {'p99 ms':>12} {'ops/J':>14}  notes"
        )
        for r in d["results"]:
            notes = list(r["flags"])
            if not r["ranked"]:
                notes.insert(0, "NOT RANKED")
            if r["n"] == 1:
                notes.insert(0, "1 run — no interval")
            if r.get("vs_raw_iops"):
                notes.append(r.get("vs_raw_note") or f"{r['vs_raw_iops'] * 100:.0f}% of raw device")
            if r.get("energy_source") and FLAG_ESTIMATE not in notes:
                notes.append(f"energy {r['energy_source']}")
            label = r.get("label") or r["config"]
            typer.echo(
                f"{label[:52]:<52} {r['workload'][:22]:<22} {r['n']:>2} "
                f"{_fmt(r['iops']):>18} {_fmt(r['mb_s'], digits=1):>14} "
                f"{_fmt(r['p99_latency_us'], 1e-3, 2):>12} "
                f"{_fmt(r['ops_per_joule'], digits=1):>14}  {', '.join(notes)}"
            )
    if d["interrupted"]:
        typer.echo(f"interrupted by {d['interrupted']}: cleaned up; continue with --resume")


def quick_override_note(quick: bool, reps: int | None, runtime: float | None) -> str | None:
    """--quick sets 1 repetition of 10 s; an explicit --reps/--runtime overrides that part
    only. Said out loud, so `--quick --reps 5` is not a silent surprise either way."""
    if not quick or (reps is None and runtime is None):
        return None
    parts = (
        [f"{reps} repetition{'s' if reps != 1 else ''} per cell (--reps)"]
        if reps is not None
        else []
    ) + ([f"{runtime:g} s runs (--runtime)"] if runtime is not None else [])
    return (
        "fsadvisor: note: --quick with " + " and ".join(parts) + " instead of its 1 rep of "
        "10 s; the rest of --quick (4k randread/randwrite only, no variants) still applies"
    )


DEVICE = Annotated[
    Optional[str],
    typer.Argument(
        metavar="DEVICE",
        help="Block device to WIPE and measure (e.g. /dev/nvme1n1). Omit with --scratch.",
    ),
]


def with_declared_options(
    fn: Callable[..., None], declarations: tuple[type, ...] | None = None
) -> Callable[..., None]:
    """``fn(device, **options)`` as a typer command whose options are the declared ones
    (service.probe_options: ProbeOptions, then RunChoices), in the order --help lists them:
    its signature is built from the declaration, so a new option is a new field there. A
    number's range is checked as it is parsed (limit_option)."""

    params = [
        inspect.Parameter(
            "device", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=DEVICE
        )
    ]
    for d in cli_order(*(declarations or (ProbeOptions, RunChoices))):
        settings: dict[str, Any] = {"help": d.help}
        if d.metavar is not None:
            settings["metavar"] = d.metavar
        if d.limit is not None and d.numeric:
            settings["callback"] = limit_option(d.limit, d.flags[0])
        if d.complete == "profile":
            settings["autocompletion"] = complete_profile
        params.append(
            inspect.Parameter(
                d.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=d.cli_default,
                annotation=Annotated[d.cli_type, typer.Option(d.flag, **settings)],
            )
        )
    # typer reads the parameters from the signature and their types from the annotations
    fn.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    fn.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return fn


@app.command()
@domain_errors
@with_declared_options
def probe(device: str | None = None, **options: Any) -> None:
    """Format DEVICE with each candidate configuration, measure it with fio (and db_bench or
    sysbench for application profiles), and store every run. DESTROYS ALL DATA on DEVICE."""
    from fsadvisor.service import probing  # the probe service: see the top

    # The request's options go to the request as they are; how to run and show it is ours.
    run = {d.name: options.pop(d.name) for d in declared(RunChoices)}
    as_json, plot, yes_wipe = run["as_json"], run["plot"], run["yes_wipe"]
    adaptive, full, budget = run["adaptive"], run["full"], run["budget"]
    target_confidence, profile_weights = run["target_confidence"], run["profile_weights"]
    profiles = options.pop("profile")
    profile = profiles[0] if profiles else None
    dry_run, db, resume = options["dry_run"], options["db"], options["resume"]
    quick, reps, runtime = options["quick"], options["reps"], options["runtime_s"]
    if profiles and len(profiles) > 1 and (full or resume):
        fail(
            "several --profile run as one adaptive probe; --full and --resume take one "
            "--profile (--resume alone continues an interrupted probe of several)"
        )
    weights = _weights(profile_weights, profiles or [])

    not_root = probing.root_problem()
    if not dry_run and not_root:
        fail(not_root)  # before planning: a refused run executes nothing, not even fio's self-test
    if not dry_run:
        report = probing.cleanup_stale_state(db)
        if report.cleaned:
            who = f" (pid {report.owner_pid})" if report.owner_pid and report.owner_pid > 0 else ""
            typer.echo(
                f"fsadvisor: an earlier probe{who} did not finish; cleaned up after it:", err=True
            )
            for a in report.actions or ["nothing was left mounted or attached"]:
                typer.echo(f"  {a}", err=True)
            if report.interrupted_cell:
                typer.echo(
                    f"  its cell {report.interrupted_cell} was not stored; --resume runs it again",
                    err=True,
                )
    elif probing.stale_state_pending(db):
        typer.echo(
            "fsadvisor: an earlier probe did not finish; run probe as root to clean up after it",
            err=True,
        )

    request = probing.ProbeRequest.make(device, profile=profile, **options)
    from fsadvisor.service import adaptive as ad  # the adaptive probe (numpy): see the top

    if adaptive and full:
        fail("--adaptive and --full exclude each other")
    # With a profile the adaptive probe is the default: the model measures what decides,
    # within a budget stated before anything starts. --full runs everything.
    if (
        adaptive
        or ad.resumes_adaptive(request)
        or (profile is not None and not full and not resume)
    ):
        _adaptive(
            request, target_confidence, budget, dry_run, as_json, yes_wipe, profiles or [], weights
        )
        return
    if budget is not None:
        fail("--budget applies to the adaptive probe (--profile without --full)")
    plan = probing.plan_probe(request)
    if (
        profile is None
        and not full
        and not resume
        and not dry_run
        and plan.estimated_seconds() > FULL_ONLY_ABOVE_S
    ):
        fail(
            f"this is the whole matrix: {len(plan.cells())} cells, about "
            f"{clock(plan.estimated_seconds())}; give --profile NAME for an adaptive probe of "
            "your workload, narrow it (--fs, --workloads, --quick), or pass --full"
        )

    if dry_run:
        # --json: each comment and note one line, its content apart from the layout
        shown = probing.preview(request, plan, folded=not as_json)
        if as_json:
            emit_json(
                {
                    "dry_run": True,
                    "cells": shown.cells,
                    "estimated_s": plan.estimated_seconds(),
                    "commands": shown.lines,
                }
            )
        else:
            for line in shown.lines:
                typer.echo(line)
        return

    probing.check_device(plan)
    confirm = confirm_wipe(
        plan, yes_wipe, f" ({len(plan.cells())} cells, about {clock(plan.estimated_seconds())})"
    )

    # on stdout with the plan's own output (stderr stays the one line of any refusal;
    # --json keeps stdout a JSON document: the plan's reps/runtime are in it)
    note = quick_override_note(quick, reps, runtime)
    if note and not as_json:
        typer.echo(note)
    summary = probing.run_probe(plan, on_progress=ProbeProgress(), confirm=confirm)
    if as_json:
        emit_json(summary.to_dict())
    else:
        _print_summary(summary)
        if plot and summary.results:
            from fsadvisor.service.report import plot_probe  # the chart: --plot only

            typer.echo("")
            typer.echo(plot_probe(summary.to_dict()))
    if summary.interrupted:
        # The shell's convention: 128 + the signal (130 for Ctrl-C, 143 for SIGTERM).
        sig = getattr(signal.Signals, summary.interrupted, None)
        raise typer.Exit(128 + sig.value if sig else EXIT_INTERRUPTED)
    if summary.count("failed"):
        raise typer.Exit(EXIT_CELLS_FAILED)


def _weights(text: str | None, profiles: list[str]) -> list[float] | None:
    """--profile-weights 2,1 -> [2.0, 1.0], one per --profile (checked by the service)."""
    if text is None:
        return None
    if len(profiles) < 2:
        fail("--profile-weights weighs several --profile against each other")
    try:
        values = [float(w) for w in text.split(",")]
    except ValueError:
        values = []
    if not values:
        fail(f"--profile-weights {text!r} is not a list of numbers (e.g. 2,1)")
    from fsadvisor.service import adaptive as ad  # the adaptive probe (numpy): see the top

    return ad.check_weights(profiles, values)  # a ConfigError: one line, exit 2


def _adaptive(
    request,
    target: float,
    budget: str | None,
    dry_run: bool,
    as_json: bool,
    yes_wipe: str | None,
    profiles: list[str],
    weights: list[float] | None,
) -> None:
    """probe --adaptive: plan (the budget check refuses before the device is touched), the
    safety verdict as for any probe, then the model-driven run (service/adaptive.py). With
    several --profile it is one probe for all of them: one calibration, one session and
    budget, an answer per profile."""
    # the adaptive probe (numpy) and the probe service: see the top
    from fsadvisor.service import adaptive as ad
    from fsadvisor.service import probing

    if dry_run:
        shown = ad.adaptive_preview(
            request, target, budget, profiles=profiles, weights=weights, folded=not as_json
        )
        if as_json:
            emit_json(
                {
                    "dry_run": True,
                    "adaptive": True,
                    "lines": shown.lines,
                    "profiles": shown.profiles,
                    "budget_s": shown.budget_s,
                    "full_matrix_estimate_s": shown.full_estimate_s,
                    "calibration_estimate_s": shown.calibration_estimate_s,
                }
            )
        else:
            for line in shown.lines:
                typer.echo(line)
        return
    setup = ad.plan_adaptive(request, target, budget, profiles=profiles, weights=weights)
    plan = setup.plan
    probing.check_device(plan)
    confirm = None
    if not plan.scratch_size_bytes:
        confirm = (
            yes_wipe
            if yes_wipe is not None
            else typer.prompt(
                f"This DESTROYS all data on {plan.device}. Type the device path to continue",
                err=True,
            )
        )
        if not probing.confirmation_matches(plan, confirm):
            fail(f"not confirmed ({confirm!r} is not {plan.device}); nothing was touched")
    result = ad.run_adaptive(setup, request.db, on_progress=ProbeProgress(), confirm=confirm)
    s = result.probe
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_summary(s)
        d = result.joint or result.decision
        if d is not None:
            typer.echo("")
            for line in d.outcome_lines():
                typer.echo(line)
    _exit_for(s)


def _exit_for(s) -> None:
    if s is None:
        return
    if s.interrupted:
        sig = getattr(signal.Signals, s.interrupted, None)
        raise typer.Exit(128 + sig.value if sig else EXIT_INTERRUPTED)
    if s.count("failed"):
        raise typer.Exit(EXIT_CELLS_FAILED)
