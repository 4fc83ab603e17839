"""`fsadvisor report`: the evidence for a choice as one self-contained HTML file."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fsadvisor.cli.app import app, domain_errors, emit_json
from fsadvisor.cli.options import (
    DbOpt,
    ProfileOpt,
    ScopeOpt,
    TopOpt,
    with_worth_options,
)
from fsadvisor.service import report as svc
from fsadvisor.service.worth_inputs import NO_LOAD, WorthInputs

# service/report is light to import: the model, the store and the charts load only as it
# builds a report, so --help, shell completion and the man page load none of them.


@app.command()
@domain_errors
@with_worth_options("what the choice is worth per year")
def report(
    profile: ProfileOpt,
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
    top: TopOpt = 5,
    scope: ScopeOpt = "system",
    worth_inputs: WorthInputs = NO_LOAD,  # --load, --price, ...: with_worth_options
    db: DbOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what was written as JSON.")
    ] = False,
) -> None:
    """Write an HTML report: per workload, measured and predicted ops/J, IOPS, MB/s, p99 and
    watts with 95% intervals, the recommendation, and where every number comes from."""
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
        worth_inputs=worth_inputs,
    )
    if as_json:
        emit_json(res)
        return
    for m in res["missing"]:
        typer.echo(f"missing: {m}", err=True)
    for path in res["written"]:
        typer.echo(f"wrote {path}")
