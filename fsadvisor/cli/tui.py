"""`fsadvisor tui`: the interactive front end. Textual is imported only when it runs."""

from __future__ import annotations


from fsadvisor.cli import app, domain_errors
from fsadvisor.cli.options import DbOpt


@app.command()
@domain_errors
def tui(
    db: DbOpt = None,
) -> None:
    """Interactive terminal UI: pick a profile and a device, see ranked configurations with
    their commands, energy sources and past probe runs."""
    from fsadvisor.tui.app import run

    run(db=db)
