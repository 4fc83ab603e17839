"""The service layer: the one API both front ends (Typer CLI, Textual TUI) run through.

Functions here take plain values, return domain objects or plain dicts, and raise
:class:`fsadvisor.errors.FsAdvisorError` subclasses for anything the user can fix. They never
print. Sub-modules group them by concern; everything public is re-exported here.
"""
