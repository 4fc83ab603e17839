"""Which energy sources work on this machine, and why the others do not (service
energy_check). Re-read whenever the tab is opened: loading a module or plugging a meter in
changes the answer. A wrapping table, not a DataTable: the reasons are the point and are
longer than a terminal line."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from fsadvisor.tui.panes import WorkerFailed
from fsadvisor.tui import calls, present


class EnergyPane(VerticalScroll):
    class Checked(Message):
        def __init__(self, sources: list[dict[str, Any]]) -> None:
            super().__init__()
            self.sources = sources

    class Failed(WorkerFailed):
        pass

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.sources: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        yield Static(
            "Energy sources on this machine. 'auto' is what a probe would use; "
            "estimate is a model, never a measurement.",
            classes="section",
        )
        yield Static("checking ...", id="energy-sources")

    def reload(self) -> None:
        self._check()

    @work(thread=True, exclusive=True, group="energy")
    def _check(self) -> None:
        try:
            sources = calls.energy_sources()
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Checked(sources))

    def on_energy_pane_checked(self, event: Checked) -> None:
        self.sources = event.sources
        self.query_one("#energy-sources", Static).update(present.energy_table(event.sources))

    def on_energy_pane_failed(self, event: Failed) -> None:
        self.notify(event.error, title="energy", severity="error", markup=False)
