"""The ``fsadvisor`` command line: the console script (:mod:`.entry`), the Typer application
(:mod:`.app`) and one module per group of commands.

Empty on purpose: the console script's Ctrl-C handler is set in :mod:`.entry` before the
application (typer, click and most of the loading) is imported, and importing a module of
this package runs this file first.
"""
