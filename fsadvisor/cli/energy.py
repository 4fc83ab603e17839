"""`fsadvisor energy check|idle`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fsadvisor.cli import app, domain_errors, emit_json

energy_app = typer.Typer(no_args_is_help=True,
                         help="Energy sources: which work here (RAPL, IPMI, meter log, estimate).")
app.add_typer(energy_app, name="energy")

MeterLogOpt = Annotated[Optional[str], typer.Option(
    "--meter-log", metavar="FILE", help="CSV exported by an external power meter (timestamp, watts).")]
DeviceOpt = Annotated[Optional[str], typer.Option(
    "--device", help="Block device whose utilisation and NVMe power table feed the estimate.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


@energy_app.command("check")
@domain_errors
def check(meter_log: MeterLogOpt = None, device: DeviceOpt = None, as_json: JsonOpt = False) -> None:
    """Show every energy source, whether it works here and why not, and what auto picks."""
    from fsadvisor.service.energy import energy_check

    rows = energy_check(meter_log=meter_log, device=device)
    auto = next((r["name"] for r in rows if r["auto"]), "none")
    if as_json:
        emit_json({"sources": rows, "auto": auto})
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        mark = "ok " if r["ok"] else "no "
        typer.echo(f"{r['name']:<{width}}  {mark} {r['detail']}")
    note = " (a model, not a measurement)" if auto == "estimate" else ""
    typer.echo(f"auto would choose: {auto}{note}")


@energy_app.command("idle")
@domain_errors
def idle(
    seconds: Annotated[float, typer.Option("--seconds", min=0.1, help="How long to sit idle.")] = 10.0,
    source: Annotated[str, typer.Option("--source", help="auto|rapl|ipmi|meter-log|estimate")] = "auto",
    meter_log: MeterLogOpt = None, device: DeviceOpt = None, as_json: JsonOpt = False,
) -> None:
    """Measure idle power (the baseline that active energy is counted above)."""
    from fsadvisor.service.energy import energy_idle

    result = energy_idle(seconds=seconds, source=source, device=device, meter_log=meter_log)
    if as_json:
        emit_json(result)
        return
    kind = "measured" if result["measured"] else "estimated: a model, not a measurement"
    typer.echo(f"idle power: {result['idle_watts']:.1f} W ({kind}; source {result['source']}, "
               f"scope {result['scope']})")
    typer.echo(f"source: {result['why']}")
