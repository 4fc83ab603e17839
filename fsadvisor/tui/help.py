"""The `?` help: what the current screen shows, what its numbers mean, what to do next.

Text only (present.HELP holds it); this module is the modal that shows it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from fsadvisor.tui import present


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close help")]

    def __init__(self, tab: str) -> None:
        super().__init__()
        self.tab = tab

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(present.help_text(self.tab), id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help-box").focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
