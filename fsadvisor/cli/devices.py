"""`fsadvisor devices list|show`: the device library (datasets/devices/)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fsadvisor.cli import app, domain_errors, emit_json
from fsadvisor.cli.options import DbOpt, JsonOpt

# The service is imported inside the commands: --help, shell completion and the man page
# import this module without running one, and a command loads only what it calls (start-up).

devices_app = typer.Typer(
    no_args_is_help=True, help="Named drives with cited datasheet figures (the device library)."
)
app.add_typer(devices_app, name="devices")


def _n(v, fmt: str = ",.0f") -> str:
    return "-" if v is None else format(v, fmt)


@devices_app.command("list")
@domain_errors
def list_(
    kind: Annotated[
        Optional[str], typer.Option("--kind", help="Only this kind: nvme | sata-ssd.")
    ] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List the drives in the device library with their headline datasheet figures, and the
    devices your probes measured raw."""
    from fsadvisor.service import devices

    listing = devices.list_rows(kind, db)
    rows, measured = listing["drives"], listing["measured"]
    if as_json:
        emit_json(rows if not measured else rows + [{**m, "measured": True} for m in measured])
        return
    width = max(len(r["name"]) for r in rows)
    typer.echo(
        f"{'name':<{width}}  {'kind':<8} {'class':<11} {'GB':>6} {'seq R/W MB/s':>13} "
        f"{'4K R/W IOPS':>17} {'idle/act W':>10}  PLP      source kinds"
    )
    for r in rows:
        typer.echo(
            f"{r['name']:<{width}}  {r['kind']:<8} {r['class']:<11} {r['capacity_gb']:>6,.0f} "
            f"{_n(r['seq_read_mb_s']):>6}/{_n(r['seq_write_mb_s']):<6} "
            f"{_n(r['rand_read_iops']):>8}/{_n(r['rand_write_iops']):<8} "
            f"{_n(r['idle_power_w'], '.2g'):>4}/{_n(r['active_power_w'], '.2g'):<5}  "
            f"{r['plp']:<8} {', '.join(r['source_kinds'])}"
        )
    typer.echo(
        f"{len(rows)} drives; datasheet figures are best cases "
        "('fsadvisor devices show NAME' cites each one)"
    )
    if measured:
        typer.echo("measured by your probes (raw-device baselines in the store):")
        for m in measured:
            figs = (
                ", ".join(f"{k} {v:,.0f}" for k, v in sorted(m["figures"].items()))
                or "no datasheet-comparable workload"
            )
            typer.echo(
                f"  {m['model']} ({m['kind']}, {m['runs']} runs): {figs}"
                + (f"  [library: {m['library']}]" if m["library"] else "")
            )


@devices_app.command("show")
@domain_errors
def show(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="Drive name, or an unambiguous prefix of one.")
    ],
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one drive: every figure with its source, disagreements, and the prior it gives."""
    from fsadvisor.service import devices

    doc = devices.show_device(name, db=db)
    if as_json:
        emit_json(doc)
        return
    typer.echo(
        f"{doc['name']}: {doc['model']} ({doc['kind']}, {doc['class']}, "
        f"{doc['capacity_gb']:,.0f} GB)"
        + (f"  part {', '.join(doc['part_numbers'])}" if doc["part_numbers"] else "")
    )
    typer.echo(f"PLP: {doc['plp']}")
    for key, f in doc["figures"].items():
        mark = (
            ""
            if not f.get("not_manufacturer")
            else f"  [{f['source_kind']}, not the manufacturer's text]"
        )
        extra = "".join(
            f"; {x}"
            for x in (f.get("note"), f"QD{f['queue_depth']}" if "queue_depth" in f else None)
            if x
        )
        value = f["value"]
        if key == "power_states":
            value = ", ".join(
                f"PS{ps['ps']} {ps['max_w']:g} W" + ("" if ps["op"] else " (non-op)")
                for ps in value
            )
        typer.echo(f"  {key:<18} {value}  <- {f['source']}{extra}{mark}")
        for d in f.get("disagrees", []):
            typer.echo(
                f"  {'':<18} disagrees: {d['value']} <- {d['source']} ({d['source_kind']})"
                + (f"; {d['note']}" if d["note"] else "")
            )
    for n in doc["notes"]:
        typer.echo(f"note: {n}")
    if doc["measured"]:
        typer.echo("measured (raw device) against the datasheet:")
        for m in doc["measured"]:
            ratio = (
                ""
                if m["measured_over_datasheet"] is None
                else f" = {m['measured_over_datasheet']:.2f} x datasheet {m['datasheet']:,}"
            )
            typer.echo(
                f"  {m['figure']:<18} {m['measured']:,.0f} ({m['conditions']}){ratio}  <- {m['source']}"
            )
    typer.echo("sources:")
    for s in doc["sources"]:
        typer.echo(f"  {s['id']}: {s['title']} ({s['date']}; {s['kind']}) {s['url']}")
    typer.echo(f"prior for the model: {doc['prior']['source']}")
