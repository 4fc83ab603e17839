"""`fsadvisor compare`: configurations or probe matrices side by side, with a verdict."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fsadvisor.cli.app import app, domain_errors, emit_json
from fsadvisor.cli.layout import say
from fsadvisor.cli.options import (
    DbOpt,
    JsonOpt,
    PlotOpt,
    ScopeOpt,
    TargetDeviceOpt,
    WorkloadOpt,
    profile_option,
    with_worth_options,
)
from fsadvisor.domain import run_ids_text
from fsadvisor.service import compare as svc
from fsadvisor.service.worth_inputs import NO_LOAD, WorthInputs

# service/compare is light to import (the model, the store and the charts load as it
# compares); the yearly cost, which loads the model at import, is imported by the command,
# so --help, shell completion and the man page load none of them.


def _num(x: float) -> str:
    # thousands from 10,000 up ("14.81k"): the threshold is not the divisor there
    for at, f, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(x) >= at:
            return f"{x / f:,.2f}{suffix}"
    return f"{x:,.1f}"


def _fmt(st) -> str:
    if not st:
        return "-"
    if st.get("low") is None:
        return _num(st["mean"])
    return f"{_num(st['mean'])} [{_num(st['low'])} – {_num(st['high'])}]"


@app.command()
@domain_errors
@with_worth_options("yearly energy and cost per configuration")
def compare(
    items: Annotated[
        list[str],
        typer.Argument(
            metavar="ITEM...",
            help="Configurations as JSON, or ranks with --profile (1 2), or two matrix ids with --matrix. The first is the baseline.",
        ),
    ],
    profile: Annotated[
        Optional[str],
        profile_option("Workload profile (and the recommendation ranks refer to)."),
    ] = None,
    workload: WorkloadOpt = None,
    device: TargetDeviceOpt = None,
    matrix: Annotated[
        bool,
        typer.Option(
            "--matrix", help="The ITEMs are two probe matrix ids: compare every cell both measured."
        ),
    ] = False,
    scope: ScopeOpt = "system",
    worth_inputs: WorthInputs = NO_LOAD,  # --load, --price, ...: with_worth_options
    plot: PlotOpt = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare configurations (measured where measured, predicted otherwise) or two probe
    matrices: the difference with its 95% interval and a plain verdict."""
    from fsadvisor.service import worth  # the yearly cost (the model: numpy): see the top

    doc = svc.compare(
        items,
        profile=profile,
        workload=workload,
        device=device,
        matrices=matrix,
        db=db,
        scope=scope,
        worth_inputs=worth_inputs,
    )
    if as_json:
        emit_json(doc)
        return
    if doc["mode"] == "configurations":
        yw = (
            {**doc["yearly_basis"], "entries": [e["yearly"] for e in doc["entries"]]}
            if "yearly_basis" in doc
            else None
        )
        typer.echo(
            f"{doc['unit']} for {doc['profile'] or 'the workload'} "
            f"({doc['power_scope']} scope; 95% intervals)"
        )
        for i, e in enumerate(doc["entries"]):
            typer.echo(f"{e['name']:>3}  {e['label']}")
            say(
                f"     predicted {_fmt(e['predicted'])}"
                + (
                    f"   measured {_fmt(e['measured'])} (runs {run_ids_text(e['measured_on']['run_ids'])},"
                    f" {e['measured_on']['energy_source']})"
                    if e["measured"]
                    else ""
                ),
                hang=15,
            )
            if yw is not None:
                say(f"     per year: {worth.yearly_line(yw, i)}", hang=15)
        for d in doc["differences"]:
            say(f"{d['b']} vs {d['a']}: {d['verdict']}  [{d['basis']}]", hang=4)
        for line in worth.summary_lines(yw) if yw is not None else []:
            say(line, hang=4)
    else:
        typer.echo(f"matrix A {doc['a']} vs matrix B {doc['b']} (95% Welch intervals)")
        for p in doc["pairs"]:
            say(f"{p['label']} | {p['workload']}  ({p['metric']})", hang=4)
            say(f"   A {_fmt(p['a'])}   B {_fmt(p['b'])}", hang=5)
            say(f"   {p['difference']['verdict'] if p['difference'] else p['verdict']}", hang=5)
        for k in doc["only_in_a"]:
            typer.echo(f"only in A: {k}")
        for k in doc["only_in_b"]:
            typer.echo(f"only in B: {k}")
    if plot:
        typer.echo("")
        typer.echo(svc.plot(doc))
