"""Step 3: the recommendations. The ranking runs in a thread worker (a fit from a fresh
store takes a few tenths of a second); the worker only posts messages, the handlers here
fill the table and the detail pane."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from fsadvisor.domain import Profile
from fsadvisor.service.advice import Recommendation
from fsadvisor.tui.panes import WorkerFailed
from fsadvisor.tui import calls, present


class ResultsPane(Vertical):
    class Recommended(Message):
        def __init__(self, recommendation: Recommendation) -> None:
            super().__init__()
            self.recommendation = recommendation

    class Failed(WorkerFailed):
        pass

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.recommendation: Recommendation | None = None

    def compose(self) -> ComposeResult:
        yield Static("No recommendations yet: choose a profile and a device, then press r.",
                     id="summary")
        table = DataTable(id="ranked", cursor_type="row", zebra_stripes=True)
        table.add_columns(*present.TABLE_COLUMNS)
        yield table
        with VerticalScroll(id="detail"):
            yield Static(id="detail-text")

    def start(self, profile: Profile, device: str, top: int, db: str | None) -> None:
        self.query_one("#summary", Static).update(
            Text(f"ranking candidates for {profile.name} on {device} ..."))
        self._recommend(profile, device, top, db)

    @work(thread=True, exclusive=True, group="recommend")
    def _recommend(self, profile: Profile, device: str, top: int, db: str | None) -> None:
        worker = get_current_worker()
        try:
            rec = calls.recommend(profile, device, top=top, db=db)
        except calls.USER_ERRORS as e:
            if not worker.is_cancelled:
                self.post_message(self.Failed(str(e)))
            return
        if not worker.is_cancelled:
            self.post_message(self.Recommended(rec))

    def on_results_pane_recommended(self, event: Recommended) -> None:
        rec = self.recommendation = event.recommendation
        self.query_one("#summary", Static).update(present.summary_text(rec))
        table = self.query_one("#ranked", DataTable)
        table.clear()
        for r in rec.ranked:
            table.add_row(*present.ranked_row(r), key=str(r.rank))
        if rec.ranked:
            table.move_cursor(row=0)
            self._show(0)

    def on_results_pane_failed(self, event: Failed) -> None:
        self.query_one("#summary", Static).update(Text(f"no recommendation: {event.error}"))
        self.notify(event.error, title="recommend", severity="error", markup=False)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show(event.cursor_row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._show(event.cursor_row)

    def _show(self, row: int) -> None:
        rec = self.recommendation
        if rec is None or not 0 <= row < len(rec.ranked):
            return
        self.query_one("#detail-text", Static).update(present.detail_text(rec.ranked[row], rec))
        self.query_one("#detail", VerticalScroll).scroll_home(animate=False)
