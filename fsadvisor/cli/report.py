"""`fsadvisor report`: the evidence for a choice as one self-contained HTML file."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fsadvisor.cli import app, complete_profile, domain_errors, emit_json, limit_option
from fsadvisor import limits


@app.command()
@domain_errors
def report(
    profile: Annotated[
        str,
        typer.Option(
            "--profile",
            "-p",
            autocompletion=complete_profile,
            help="Preset name or path to a profile TOML.",
        ),
    ],
    matrix: Annotated[
        Optional[str],
        typer.Option(
            "--matrix",
            help="Also show every workload of this probe matrix (id from `fsadvisor probe` / `db info`).",
        ),
    ] = None,
    device: Annotated[
        Optional[str],
        typer.Option(
            "--device",
            "-d",
            help="Target device for the predictions: path, library name or spec (default: the matrix's device, else nvme:1T).",
        ),
    ] = None,
    output: Annotated[
        Optional[str],
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="HTML file to write (default report.html unless only --png is given).",
        ),
    ] = None,
    png: Annotated[
        Optional[str],
        typer.Option("--png", metavar="DIR", help="Write the charts alone as PNG files into DIR."),
    ] = None,
    top: Annotated[
        int,
        typer.Option(
            "--top",
            "-n",
            callback=limit_option("top"),
            help="Recommended configurations to include." + limits.help_range("top"),
        ),
    ] = 5,
    scope: Annotated[
        str, typer.Option("--scope", help="Power scope: system | cpu+dram | drive.")
    ] = "system",
    load: Annotated[
        Optional[float],
        typer.Option(
            "--load",
            callback=limit_option("load"),
            help="Your load: ops/s (MB/s for bandwidth workloads); adds what the choice is worth per year."
            + limits.help_range("load"),
        ),
    ] = None,
    price: Annotated[
        Optional[float],
        typer.Option(
            "--price",
            callback=limit_option("price"),
            help="Electricity price per kWh (with --load)." + limits.help_range("price"),
        ),
    ] = None,
    servers: Annotated[
        int,
        typer.Option(
            "--servers",
            callback=limit_option("servers"),
            help="How many servers run this (with --load)." + limits.help_range("servers"),
        ),
    ] = 1,
    pue: Annotated[
        float,
        typer.Option(
            "--pue",
            callback=limit_option("pue"),
            help="Facility power usage effectiveness (with --load)." + limits.help_range("pue"),
        ),
    ] = 1.0,
    db: Annotated[
        Optional[str],
        typer.Option("--db", help="Store path (default: $FSADVISOR_DB or the XDG data dir)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what was written as JSON.")
    ] = False,
) -> None:
    """Write an HTML report: per workload, measured and predicted ops/J, IOPS, MB/s, p99 and
    watts with 95% intervals, the recommendation, and where every number comes from."""
    from fsadvisor.service import report as svc

    out = output if output is not None or png is None else None
    res = svc.write(
        profile,
        out=out if out is not None or png is not None else "report.html",
        png_dir=png,
        matrix=matrix,
        device=device,
        db=db,
        top=top,
        scope=scope,
        load=load,
        price=price,
        servers=servers,
        pue=pue,
    )
    if as_json:
        emit_json(res)
        return
    for m in res["missing"]:
        typer.echo(f"missing: {m}", err=True)
    for path in res["written"]:
        typer.echo(f"wrote {path}")
