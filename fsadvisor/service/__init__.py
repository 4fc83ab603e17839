"""The service layer: the one API both front ends (Typer CLI, Textual TUI) run through.

Functions here take plain values, return domain objects or plain dicts, and raise
:class:`fsadvisor.errors.FsAdvisorError` subclasses for anything the user can fix. They never
print. Modules group them by concern — :mod:`.advice` (profiles, recommend, predict,
calibrate), :mod:`.probing` with :mod:`.request` (the probe's one validated request),
:mod:`.simulate`, :mod:`.energy`, :mod:`.store` — and re-export the result types a front end
displays, so the front ends import nothing else of the core (tests/unit/test_front_end_imports.py).
Nothing is imported here: `recommend` loads only what it needs.
"""
