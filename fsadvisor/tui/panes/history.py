"""Past probe runs from the store (service store.history), newest first."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from fsadvisor.tui.panes import WorkerFailed
from fsadvisor.tui import calls, present


class HistoryPane(Vertical):
    class Loaded(Message):
        def __init__(self, matrices: list[dict[str, Any]]) -> None:
            super().__init__()
            self.matrices = matrices

    class Failed(WorkerFailed):
        pass

    def __init__(self, db: str | None = None, **kw) -> None:
        super().__init__(**kw)
        self.db = db

    def compose(self) -> ComposeResult:
        yield Static("Probe runs in the store, newest first.", id="history-note",
                     classes="section")
        table = DataTable(id="history-table", cursor_type="row")
        table.add_columns(*present.HISTORY_COLUMNS)
        yield table

    def reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="history")
    def _load(self) -> None:
        try:
            matrices = calls.history(self.db)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Loaded(matrices))

    def on_history_pane_loaded(self, event: Loaded) -> None:
        table = self.query_one("#history-table", DataTable)
        table.clear()
        for m in event.matrices:
            table.add_row(*present.history_row(m), key=str(m.get("id")))
        self.query_one("#history-note", Static).update(
            f"{len(event.matrices)} probe run(s) in the store, newest first."
            if event.matrices else
            "No probe runs stored yet: `fsadvisor probe DEVICE` (or --scratch 2G) adds them.")

    def on_history_pane_failed(self, event: Failed) -> None:
        self.notify(event.error, title="history", severity="error", markup=False)
