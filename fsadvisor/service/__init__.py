"""The service layer: the one API both front ends (Typer CLI, Textual TUI) run through.

Functions here take plain values, return domain objects or plain dicts, and raise
:class:`fsadvisor.errors.FsAdvisorError` subclasses for anything the user can fix. They never
print. Modules group them by concern (advice, probing, energy, store); the front ends import the module they need.
"""
