"""`fsadvisor energy check|idle`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fsadvisor.cli.app import app, domain_errors, emit_json
from fsadvisor.cli.layout import say
from fsadvisor.cli.options import DbOpt, JsonOpt, bounded

# The service is imported by the command that calls it, each import saying what it loads
# (start-up): --help, shell completion and the man page import this module without running one.

energy_app = typer.Typer(
    no_args_is_help=True, help="Energy sources: which work here (RAPL, IPMI, meter log, estimate)."
)
app.add_typer(energy_app, name="energy")

MeterLogOpt = Annotated[
    Optional[str],
    typer.Option(
        "--meter-log",
        metavar="FILE",
        help="CSV exported by an external power meter (timestamp, watts).",
    ),
]
DeviceOpt = Annotated[
    Optional[str],
    typer.Option(
        "--device", help="Block device whose utilisation and NVMe power table feed the estimate."
    ),
]


@energy_app.command("check")
@domain_errors
def check(
    meter_log: MeterLogOpt = None, device: DeviceOpt = None, as_json: JsonOpt = False
) -> None:
    """Show every energy source, whether it works here and why not, and what auto picks."""
    from fsadvisor.service.energy import energy_check  # the energy sources: on use (see the top)

    rows = energy_check(meter_log=meter_log, device=device)
    auto = next((r["name"] for r in rows if r["auto"]), "none")
    if as_json:
        emit_json({"sources": rows, "auto": auto})
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        mark = "ok " if r["ok"] else "no "
        say(f"{r['name']:<{width}}  {mark} {r['detail']}", hang=width + 6)
    note = " (a model, not a measurement)" if auto == "estimate" else ""
    typer.echo(f"auto would choose: {auto}{note}")


@energy_app.command("idle")
@domain_errors
def idle(
    seconds: Annotated[float, bounded("--seconds", help="How long to sit idle.")] = 10.0,
    source: Annotated[
        str, typer.Option("--source", help="auto|rapl|ipmi|meter-log|estimate")
    ] = "auto",
    meter_log: MeterLogOpt = None,
    device: DeviceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure idle power (the baseline that active energy is counted above)."""
    from fsadvisor.service.energy import energy_idle  # the energy sources: on use (see the top)

    result = energy_idle(seconds=seconds, source=source, device=device, meter_log=meter_log)
    if as_json:
        emit_json(result)
        return
    kind = "measured" if result["measured"] else "estimated: a model, not a measurement"
    typer.echo(
        f"idle power: {result['idle_watts']:.1f} W ({kind}; source {result['source']}, "
        f"scope {result['scope']})"
    )
    typer.echo(f"source: {result['why']}")


@energy_app.command("import-log")
@domain_errors
def import_log(
    log: Annotated[
        str,
        typer.Argument(metavar="FILE", help="CSV of an external power meter (timestamp, watts)."),
    ],
    matrix: Annotated[
        Optional[str],
        typer.Option(
            "--matrix", help="Only runs of this probe matrix (default: every stored run)."
        ),
    ] = None,
    clock_offset: Annotated[
        float,
        bounded(
            "--clock-offset",
            metavar="SECONDS",
            help="Add to the log's timestamps to align the meter's clock with this host's.",
        ),
    ] = 0.0,
    scope: Annotated[
        str, typer.Option("--scope", help="What the meter measured: system | cpu+dram | drive.")
    ] = "system",
    idle_watts: Annotated[
        Optional[float],
        bounded("--idle-watts", metavar="W", help="Idle power, for active energy."),
    ] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Attach a power meter's log to stored runs, aligned to each run's measurement window."""
    # the energy sources and the store: on use (see the top)
    from fsadvisor.service.energy import import_meter_log

    rep = import_meter_log(
        log,
        matrix_id=matrix,
        clock_offset_s=clock_offset,
        scope=scope,
        idle_watts=idle_watts,
        db=db,
    )
    if as_json:
        emit_json(rep)
        return
    typer.echo(
        f"{len(rep['updated'])} of {rep['runs_considered']} runs now carry meter-log "
        f"energy ({rep['scope']} scope)"
    )
    for m in rep["missing"]:
        typer.echo(
            f"fsadvisor: warning: run {m['run_id']} ({m['cell_key']}): energy missing: "
            f"{m['reason']}",
            err=True,
        )
    if rep["without_window"]:
        typer.echo(
            f"fsadvisor: warning: {rep['without_window']} runs have no recorded "
            "measurement window and were left as they were",
            err=True,
        )
