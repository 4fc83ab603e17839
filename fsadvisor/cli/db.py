"""`fsadvisor db info|export`: what the results store holds, and getting it out."""

from __future__ import annotations

import sys
import time
from typing import Annotated, Optional

import typer

from fsadvisor.cli.app import app, domain_errors, emit_json
from fsadvisor.cli.layout import say
from fsadvisor.cli.options import DbOpt, JsonOpt

# The service is imported by the command that calls it, each import saying what it loads
# (start-up): --help, shell completion and the man page import this module without running one.

db_app = typer.Typer(
    no_args_is_help=True, help="The results store: every probe run, the seed datasets, summaries."
)
app.add_typer(db_app, name="db")


def _human_bytes(n: int) -> str:
    size, unit = float(n), "B"
    for bigger in ("KiB", "MiB", "GiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"


def _when(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


@db_app.command("info")
@domain_errors
def info(
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the store's path, size, schema version, rows per table, seed data, last probe."""
    from fsadvisor.service.store import db_info  # the store: on use (see the top)

    i = db_info(db)
    if as_json:
        emit_json(i)
        return
    say(
        f"store       {i['path']} ({_human_bytes(i['size_bytes'])}, schema v{i['schema_version']})",
        hang=12,
    )
    say("rows        " + ", ".join(f"{t} {n}" for t, n in i["tables"].items()), hang=12)
    if i["runs_by_origin"]:
        say("runs        " + ", ".join(f"{n} {o}" for o, n in i["runs_by_origin"].items()), hang=12)
    ds = i["datasets"]
    if ds:
        say(
            f"seed data   {ds['rows']} rows from {len(ds['files'])} file(s), "
            f"hash {ds['hash'][:12]}, loaded {_when(ds['loaded_at'])}",
            hang=12,
        )
    else:
        typer.echo("seed data   none loaded")
    lp = i["last_probe"]
    if lp:
        say(
            f"last probe  {lp['id']} {lp['status']} on {lp['device']} ({lp['profile']}), "
            f"started {_when(lp['started_at'])}, "
            f"finished {_when(lp['finished_at'])}: {lp['runs_ok']} ok, "
            f"{lp['runs_failed']} failed, {lp['runs_incomplete']} incomplete runs",
            hang=12,
        )
    else:
        typer.echo("last probe  none")


@db_app.command("export")
@domain_errors
def export(
    fmt: Annotated[
        str, typer.Option("--format", help="csv (one flat table) or json (one document).")
    ] = "csv",
    table: Annotated[
        Optional[str],
        typer.Option(
            "--table", help="runs|summaries|measurements (default: runs for csv, all for json)."
        ),
    ] = None,
    output: Annotated[
        Optional[str],
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write here instead of standard output."
        ),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Export runs (joined with configuration, workload, energy), summaries or seed data."""
    from fsadvisor.service.store import db_export  # the store and its exporter: on use

    result = db_export(fmt, output if output is not None else sys.stdout, table=table, db=db)
    if output is not None:
        counts = ", ".join(f"{n} {t}" for t, n in result["tables"].items())
        typer.echo(f"wrote {counts} to {output}")


@db_app.command("merge")
@domain_errors
def merge(
    others: Annotated[
        list[str],
        typer.Argument(metavar="OTHER.db...", help="Stores from other hosts (only read)."),
    ],
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Merge stores from many hosts into this one, each run once (stable run ids), keeping
    each run's host and device."""
    from fsadvisor.service.fleet import merge_stores  # the store: on use (see the top)

    out = merge_stores(others, db=db)
    if as_json:
        emit_json(out)
        return
    for m in out["merged"]:
        typer.echo(
            f"{m['file']}: {m['runs_added']} run(s) added, {m['runs_present']} already "
            f"present; new hosts {m['hosts_added']}, devices {m['devices_added']}"
        )
    typer.echo(f"{out['store']} now holds {out['runs']} run(s)")
