"""`fsadvisor tui`: the interactive front end. Textual is imported only when it runs."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fsadvisor.cli import app, domain_errors


@app.command()
@domain_errors
def tui(
    db: Annotated[
        Optional[str],
        typer.Option(
            "--db",
            metavar="PATH",
            help="Store file (default: $FSADVISOR_DB, else the user data dir).",
        ),
    ] = None,
) -> None:
    """Interactive terminal UI: pick a profile and a device, see ranked configurations with
    their commands, energy sources and past probe runs."""
    from fsadvisor.tui.app import run

    run(db=db)
