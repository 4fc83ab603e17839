"""Past probe runs from the store (service store.history), newest first. Enter on a matrix
opens its measured cells (service matrix_results); c, j and h export them as CSV, JSON and
the HTML report; space marks two cells to see them side by side (B − A by Welch, service
compare's verdict); g charts the highlighted matrix's device over time."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.message import Message
from textual.widgets import DataTable, Static
from textual_plotext import PlotextPlot

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

    class Compared(Message):
        def __init__(self, doc: dict[str, Any]) -> None:
            super().__init__()
            self.doc = doc

    class Charted(Message):
        def __init__(self, device: str, chart, rows: int) -> None:
            super().__init__()
            self.device, self.chart, self.rows = device, chart, rows

    # c, j, h and space act on an opened matrix, whose note lists them: in the footer too,
    # they pushed Help, Recommend and Quit off an 80-column screen.
    BINDINGS = [
        Binding("c", "export('csv')", "Export CSV", show=False),
        Binding("j", "export('json')", "Export JSON", show=False),
        Binding("h", "export('html')", "HTML report", show=False),
        Binding("space", "mark", "Mark to compare", show=False),
        Binding("g", "chart", "Device chart"),
    ]

    def __init__(self, db: str | None = None, **kw) -> None:
        super().__init__(**kw)
        self.db = db
        self.opened: dict[str, Any] | None = None  # the matrix shown under the list
        self.marked: list[int] = []  # indexes of opened cells marked to compare (at most 2)
        self.compared: dict[str, Any] | None = None  # the last side-by-side shown
        self.matrices: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        yield Static("Probe runs in the store, newest first.", id="history-note", classes="section")
        table: DataTable[str] = DataTable(id="history-table", cursor_type="row")
        table.add_columns(*present.HISTORY_COLUMNS)
        yield table
        yield Static("Enter on a matrix shows its measured results per cell.", id="matrix-note")
        cells: DataTable[str] = DataTable(id="matrix-cells", cursor_type="row", zebra_stripes=True)
        cells.add_columns(*present.MATRIX_COLUMNS)
        yield cells
        yield Static("", id="compare-view")

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
        self.marked, self.compared = [], None
        self.query_one("#compare-view", Static).update("")
        m = event.doc["matrix"]
        cells = self.query_one("#matrix-cells", DataTable)
        cells.clear()
        for c in event.doc["cells"]:
            cells.add_row(*present.matrix_row(c))
        self.query_one("#matrix-note", Static).update(
            f"matrix {m['id']} ({m['profile'] or 'no profile'} on {m['device']}): "
            f"{len(event.doc['cells'])} cell(s), measured, mean (95% interval) over n runs; "
            "space marks two cells to compare; c CSV, j JSON, h HTML report"
        )

    def action_export(self, fmt: str) -> None:
        if self.opened is None:
            self.notify(
                "open a matrix first (Enter on its row)", title="export", severity="warning"
            )
            return
        mid = self.opened["matrix"]["id"]
        # A matrix of micro workloads names no profile: its report is then for the one
        # chosen on the Profile tab, as `fsadvisor report --profile P --matrix M` would be.
        profiles = self.app.query("#profile-pane")
        chosen = getattr(profiles.first(), "ref", None) if profiles else None
        self._export(mid, fmt, f"fsadvisor-{mid}.{fmt}", chosen)

    @work(thread=True, group="export")
    def _export(self, matrix_id: str, fmt: str, out: str, profile: str | None = None) -> None:
        try:
            path = calls.export_matrix(matrix_id, fmt, out, self.db, profile)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Exported(str(path)))

    # ------------------------------------------------------------------ side by side

    def action_mark(self) -> None:
        if self.opened is None:
            self.notify(
                "open a matrix first (Enter on its row)", title="compare", severity="warning"
            )
            return
        cells = self.query_one("#matrix-cells", DataTable)
        if not cells.row_count:
            return
        row = cells.cursor_row
        if row in self.marked:
            self.marked.remove(row)
        else:
            self.marked = (self.marked + [row])[-2:]
        view = self.query_one("#compare-view", Static)
        if len(self.marked) == 2:
            self._compare(self.opened, *self.marked)
        else:
            self.compared = None
            view.update(present.marked_text(self.opened, self.marked))

    @work(thread=True, exclusive=True, group="compare")
    def _compare(self, doc: dict[str, Any], a: int, b: int) -> None:
        try:
            out = calls.compare_cells(doc, a, b)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Compared(out))

    def on_history_pane_compared(self, event: Compared) -> None:
        self.compared = event.doc
        self.query_one("#compare-view", Static).update(present.comparison_text(event.doc))

    # ------------------------------------------------------------------ device chart

    def action_chart(self) -> None:
        table = self.query_one("#history-table", DataTable)
        if not self.matrices or not 0 <= table.cursor_row < len(self.matrices):
            self.notify("no probe runs to chart yet", title="chart", severity="warning")
            return
        device = self.matrices[table.cursor_row].get("device")
        if not device:
            self.notify("this matrix names no device", title="chart", severity="warning")
            return
        # the chart box takes 95% x 90% of the screen (app.tcss #chart-box); the legend
        # under the axes needs up to HISTORY_SERIES + 2 lines
        self._chart(str(device), max(self.app.size.height * 9 // 10 - 10, 8))

    @work(thread=True, exclusive=True, group="chart")
    def _chart(self, device: str, rows: int) -> None:
        try:
            chart = calls.device_history_chart(device, self.db)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Charted(device, chart, rows))

    def on_history_pane_charted(self, event: Charted) -> None:
        self.app.push_screen(ChartScreen(event.device, event.chart, event.rows))

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
        self.matrices = list(event.matrices)
        for m in event.matrices:
            table.add_row(*present.history_row(m), key=str(m.get("id")))
        self.query_one("#history-note", Static).update(
            f"{len(event.matrices)} probe run(s) in the store, newest first."
            if event.matrices
            else "No probe runs stored yet: `fsadvisor probe DEVICE` (or --scratch 2G) adds them."
        )

    def on_history_pane_failed(self, event: Failed) -> None:
        self.notify(event.error, title="history", severity="error", markup=False)


class ChartScreen(ModalScreen[None]):
    """A device's history chart over the History tab, ``rows`` high, its legend under it;
    Esc (or g, q) closes it."""

    BINDINGS = [Binding("escape,q,g", "dismiss", "Close chart")]

    def __init__(self, device: str, chart, rows: int) -> None:
        super().__init__()
        self.device, self.chart, self.rows = device, chart, rows

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="chart-box"):
            yield PlotextPlot(id="chart-plot")
            yield Static(id="chart-legend")

    def on_mount(self) -> None:
        plot = self.query_one("#chart-plot", PlotextPlot)
        legend = self.query_one("#chart-legend", Static)
        if self.chart is None:
            plot.display = False
            legend.update(Text(f"no measured runs of {self.device} in the store"))
        else:
            # the box is 95% of the screen, less its border, padding and scroll bar
            width = max(self.app.size.width * 95 // 100 - 6, 40)
            self.chart.draw(plot.plt, width)
            plot.styles.height = self.rows
            legend.update(Text("\n".join(self.chart.legend(width))))
        self.query_one("#chart-box").focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
