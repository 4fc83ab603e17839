"""Past probe runs from the store (service store.history), newest first. Enter on a matrix
opens its measured cells (service matrix_results); c, j and h export them as CSV, JSON and
the HTML report."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
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

    class Opened(Message):
        def __init__(self, doc: dict[str, Any]) -> None:
            super().__init__()
            self.doc = doc

    class Exported(Message):
        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    BINDINGS = [Binding("c", "export('csv')", "Export CSV"),
                Binding("j", "export('json')", "Export JSON"),
                Binding("h", "export('html')", "HTML report")]

    def __init__(self, db: str | None = None, **kw) -> None:
        super().__init__(**kw)
        self.db = db
        self.opened: dict[str, Any] | None = None  # the matrix shown under the list

    def compose(self) -> ComposeResult:
        yield Static("Probe runs in the store, newest first.", id="history-note",
                     classes="section")
        table = DataTable(id="history-table", cursor_type="row")
        table.add_columns(*present.HISTORY_COLUMNS)
        yield table
        yield Static("Enter on a matrix shows its measured results per cell.", id="matrix-note")
        cells = DataTable(id="matrix-cells", cursor_type="row", zebra_stripes=True)
        cells.add_columns(*present.MATRIX_COLUMNS)
        yield cells

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "history-table" and event.row_key.value:
            event.stop()
            self._open(event.row_key.value)

    @work(thread=True, exclusive=True, group="matrix")
    def _open(self, matrix_id: str) -> None:
        try:
            doc = calls.matrix_cells(matrix_id, self.db)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Opened(doc))

    def on_history_pane_opened(self, event: Opened) -> None:
        self.opened = event.doc
        m = event.doc["matrix"]
        cells = self.query_one("#matrix-cells", DataTable)
        cells.clear()
        for c in event.doc["cells"]:
            cells.add_row(*present.matrix_row(c))
        self.query_one("#matrix-note", Static).update(
            f"matrix {m['id']} ({m['profile'] or 'no profile'} on {m['device']}): "
            f"{len(event.doc['cells'])} cell(s), measured, mean (95% interval) over n runs; "
            "c CSV, j JSON, h HTML report")

    def action_export(self, fmt: str) -> None:
        if self.opened is None:
            self.notify("open a matrix first (Enter on its row)", title="export",
                        severity="warning")
            return
        mid = self.opened["matrix"]["id"]
        self._export(mid, fmt, f"fsadvisor-{mid}.{fmt}")

    @work(thread=True, group="export")
    def _export(self, matrix_id: str, fmt: str, out: str) -> None:
        try:
            path = calls.export_matrix(matrix_id, fmt, out, self.db)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Exported(str(path)))

    def on_history_pane_exported(self, event: Exported) -> None:
        self.notify(f"wrote {event.path}", title="export", markup=False)

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
