"""`fsadvisor tui`: the interactive front end. Textual is imported only when it runs."""

from __future__ import annotations


from fsadvisor.cli.app import app, domain_errors
from fsadvisor.cli.options import DbOpt

# The TUI (textual) is imported by the command (start-up): every other command, --help and
# the man page import this module without it.


@app.command()
@domain_errors
def tui(
    db: DbOpt = None,
) -> None:
    """Interactive terminal UI: pick a profile and a device, see ranked configurations with
    their commands, energy sources and past probe runs."""
    from fsadvisor.tui.app import run  # textual: only when the TUI runs

    run(db=db)
