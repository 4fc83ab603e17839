"""`fsadvisor devices list|show`: the device library (datasets/devices/)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fsadvisor.cli.app import app, domain_errors, emit_json
from fsadvisor.cli.layout import Column, say, table
from fsadvisor.cli.options import DbOpt, JsonOpt

# The service is imported by the command that calls it, each import saying what it loads
# (start-up): --help, shell completion and the man page import this module without running one.

devices_app = typer.Typer(
    no_args_is_help=True, help="Named drives with cited datasheet figures (the device library)."
)
app.add_typer(devices_app, name="devices")


def _n(v, fmt: str = ",.0f") -> str:
    return "-" if v is None else format(v, fmt)


# Where a figure's value starts ("  seq_read_mb_s      "): its wrapped lines go on there.
FIGURE = 21


def _figure(v) -> str:
    """A datasheet figure as a person reads it: yes/no, not Python's True/False; numbers
    with thousands separators, as devices list prints them."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return format(v, ",") if isinstance(v, (int, float)) else str(v)


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
    from fsadvisor.service import devices  # the device library and the store: on use

    listing = devices.list_rows(kind, db)
    rows, measured = listing["drives"], listing["measured"]
    if as_json:
        emit_json(rows if not measured else rows + [{**m, "measured": True} for m in measured])
        return
    cols = [
        Column("name", "<"),
        Column("kind", "<", gap=2),
        Column("class", "<"),
        Column("GB"),
        Column("seq R/W MB/s", gap=2),
        Column("4K R/W IOPS", gap=2),
        Column("idle/act W", gap=2),
        Column("PLP", "<", gap=2),
        Column("source kinds", "<", gap=2),
    ]
    cells = [
        [
            r["name"],
            r["kind"],
            r["class"],
            f"{r['capacity_gb']:,.0f}",
            f"{_n(r['seq_read_mb_s'])}/{_n(r['seq_write_mb_s'])}",
            f"{_n(r['rand_read_iops'])}/{_n(r['rand_write_iops'])}",
            f"{_n(r['idle_power_w'], '.2g')}/{_n(r['active_power_w'], '.2g')}",
            r["plp"],
            ", ".join(r["source_kinds"]),
        ]
        for r in rows
    ]
    for line in table(cols, cells):
        typer.echo(line)
    say(
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
            say(
                f"  {m['model']} ({m['kind']}, {m['runs']} runs): {figs}"
                + (f"  [library: {m['library']}]" if m["library"] else ""),
                hang=4,
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
    from fsadvisor.service import devices  # the device library and the store: on use

    doc = devices.show_device(name, db=db)
    if as_json:
        emit_json(doc)
        return
    say(
        f"{doc['name']}: {doc['model']} ({doc['kind']}, {doc['class']}, "
        f"{doc['capacity_gb']:,.0f} GB)"
        + (f"  part {', '.join(doc['part_numbers'])}" if doc["part_numbers"] else ""),
        hang=2,
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
        say(f"  {key:<18} {_figure(value)}  <- {f['source']}{extra}{mark}", hang=FIGURE)
        for d in f.get("disagrees", []):
            say(
                f"  {'':<18} disagrees: {_figure(d['value'])} <- {d['source']} "
                f"({d['source_kind']})" + (f"; {d['note']}" if d["note"] else ""),
                hang=FIGURE,
            )
    for n in doc["notes"]:
        say(f"note: {n}", hang=6)
    if doc["measured"]:
        typer.echo("measured (raw device) against the datasheet:")
        for m in doc["measured"]:
            ratio = (
                ""
                if m["measured_over_datasheet"] is None
                else f" = {m['measured_over_datasheet']:.2f} x datasheet {m['datasheet']:,}"
            )
            say(
                f"  {m['figure']:<18} {m['measured']:,.0f} ({m['conditions']}){ratio}  "
                f"<- {m['source']}",
                hang=FIGURE,
            )
    typer.echo("sources:")
    for s in doc["sources"]:
        say(f"  {s['id']}: {s['title']} ({s['date']}; {s['kind']}) {s['url']}", hang=4)
    say(f"prior for the model: {doc['prior']['source']}", hang=2)
