"""The ``fsadvisor`` console script (pyproject's [project.scripts]): the CLI, with Python's
cyclic garbage collector paused while the program loads.

Why. Loading the CLI, typer, numpy and the service and answering leaves ~57,000 objects for
the collector to track (26,000 once the CLI is loaded), nearly all of them alive to the end,
yet it ran 65 times in a `recommend` (59 young and 6 middle-generation passes): 6.8-8.5 ms
of a ~120 ms command, to free 478 objects in all (measured in-process with gc.callbacks,
2026-11-25). A whole `recommend` with the collector off leaves 531 unreachable objects
(93 KB) and peaks at 44.3 MB RSS against 43.9 MB with it: the process ends long before any
of that would matter, and the OS takes it back at exit.

So the collector is paused here, before anything is imported, and the CLI resumes it as
the command starts (fsadvisor/cli/__init__.py, ``main``) for every command whose work grows
with its input or runs for long (probe, tui, predict --batch, simulate, ...). Only the
bounded one-shot answers, `recommend` and a single `predict`, run to the end without it;
tests/unit/test_gc_policy.py holds each of them under a bound of unreachable objects, so a
change that makes them build cyclic garbage fails there first.

An in-process caller of ``fsadvisor.cli.main`` (tests, scripts) keeps its own collector
settings and SIGINT handling until the command starts: only this entry point pauses the
collector and ends a Ctrl-C during loading in one line.
"""

from __future__ import annotations

import gc
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
    # ~10 ms), the interpreter's default handling applies.
    signal.signal(signal.SIGINT, _interrupted_while_loading)
    gc.disable()
    try:
        from fsadvisor.cli import main as cli_main

        cli_main(collector_paused=True)
    except KeyboardInterrupt:
        from fsadvisor.errors import exit_interrupted
        exit_interrupted()
