"""The Textual front end (``fsadvisor tui``): a thin layer over fsadvisor.service.

Importing fsadvisor or its service layer never imports this package, so the core runs
without textual; ``fsadvisor.cli.tui`` imports it only when the command runs.
"""
