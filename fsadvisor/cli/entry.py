"""The ``fsadvisor`` console script (pyproject's [project.scripts]): the CLI, with a Ctrl-C
while the program loads ending in one line.

An in-process caller of ``fsadvisor.cli.app.main`` (tests, scripts) keeps its own SIGINT
handling until the command starts: only this entry point handles a Ctrl-C during loading.

The package's ``__init__`` is empty so that importing this module loads nothing else: the
handler below is set before the application (typer, click, most of the loading) is
imported.
"""

from __future__ import annotations

import os
import signal


def _interrupted_while_loading(signum: int, frame: object) -> None:
    # Nothing is written while the program loads, so it can end at once; no import here,
    # a second Ctrl-C must not land in one.
    os.write(2, b"fsadvisor: interrupted\n")
    os._exit(130)


def main() -> None:
    # First, so that a Ctrl-C from here until the CLI installs its own handler (as the
    # command starts) is one line and exit 130, not a traceback from inside an import.
    # Earlier than this, in Python's start-up and the launcher's own `import re` (the first
    # a few milliseconds), the interpreter's default handling applies.
    signal.signal(signal.SIGINT, _interrupted_while_loading)
    # after the handler above: Ctrl-C while the CLI loads gets one line
    from fsadvisor.cli.app import main as cli_main

    cli_main()
