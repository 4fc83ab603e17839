"""Step 3: the recommendations. The ranking runs in a thread worker (a fit from a fresh
store takes a few tenths of a second); the worker only posts messages, the handlers here
fill the table and the detail pane."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker
from textual_plotext import PlotextPlot

from fsadvisor.domain import Profile
from fsadvisor.service.advice import Recommendation
from fsadvisor.tui.panes import WorkerFailed
from fsadvisor.tui import calls, present


class ResultsPane(Vertical):
    class Recommended(Message):
        def __init__(
            self, recommendation: Recommendation, live: bool = False, yearly: dict | None = None
        ) -> None:
            super().__init__()
            self.recommendation = recommendation
            self.live = live  # a what-if re-rank (as the user types), not an explicit r
            self.yearly = yearly  # service.worth's figures when the form has a load

    class Failed(WorkerFailed):
        def __init__(self, error: str, live: bool = False) -> None:
            super().__init__(error)
            self.live = live

    class Plotted(Message):
        def __init__(self, chart, recommendation: Recommendation) -> None:
            super().__init__()
            self.chart, self.recommendation = chart, recommendation

    BINDINGS = [Binding("p", "toggle_plot", "Plot ops/J")]

    def __init__(self, db: str | None = None, **kw) -> None:
        super().__init__(**kw)
        self.db = db  # the store the plot reads measured runs from
        self.recommendation: Recommendation | None = None
        self.yearly: dict | None = None
        self.plotting = False  # the detail area shows the ops/J bars instead of one row
        self.explicit_runs = 0  # recommendations asked for (r, Enter), not live re-ranks
        # A live re-rank while this tab is hidden only keeps the answer; it is drawn when the
        # tab is shown (redraw_if_stale): no table refill or plot per key press unseen.
        self.stale = False
        self.draws = 0  # tables drawn (the per-key work test counts them)

    def compose(self) -> ComposeResult:
        # The headline and confidence come first and may run longer than a short screen
        # allows: the box scrolls, and is a Tab stop (shift+Tab from the table) so the
        # keyboard can scroll it at 80x24.
        # Said above everything while the ranking below answers an older form than the one
        # on the Profile/Device tabs (an edit not ranked yet, or one that cannot be ranked).
        yield Static("", id="stale-note")
        with VerticalScroll(id="summary-box"):
            yield Static(
                "No recommendations yet: choose a profile and a device, then press r.", id="summary"
            )
        table: DataTable[str] = DataTable(id="ranked", cursor_type="row", zebra_stripes=True)
        table.add_columns(*present.TABLE_COLUMNS)
        yield table
        with VerticalScroll(id="detail"):
            yield PlotextPlot(id="detail-plot")  # shown by p, above the bars' figures
            yield Static(id="detail-text")

    def start(
        self,
        profile: Profile,
        device: str,
        top: int,
        session: calls.WhatIf,
        worth_inputs: calls.WorthInputs | None = None,
    ) -> None:
        """An explicit recommendation (r, Enter, the palette): the previous one is cancelled.
        ``worth_inputs``: the load (and price) for the yearly figures."""
        self.explicit_runs += 1
        self.query_one("#summary", Static).update(
            Text(f"ranking candidates for {profile.name} on {device} ...")
        )
        self._recommend(profile, device, top, session, worth_inputs)

    def start_live(
        self,
        profile: Profile,
        device: str,
        top: int,
        session: calls.WhatIf,
        worth_inputs: calls.WorthInputs | None = None,
    ) -> None:
        """A what-if re-rank. Never cancelled (the app runs one at a time and coalesces the
        edits made meanwhile), so every start is answered by exactly one message."""
        self._live(profile, device, top, session, worth_inputs)

    def _ranked(self, profile, device, top, session, worth_inputs):
        rec = calls.live_recommend(session, profile, device, top=top)
        yearly = (
            calls.yearly_worth(rec, worth_inputs, self.db)
            if worth_inputs is not None and worth_inputs.given and rec.ranked
            else None
        )
        return rec, yearly

    @work(thread=True, exclusive=True, group="recommend")
    def _recommend(
        self, profile: Profile, device: str, top: int, session: calls.WhatIf, worth_inputs=None
    ) -> None:
        worker = get_current_worker()
        try:
            rec, yearly = self._ranked(profile, device, top, session, worth_inputs)
        except calls.USER_ERRORS as e:
            if not worker.is_cancelled:
                self.post_message(self.Failed(str(e)))
            return
        if not worker.is_cancelled:
            self.post_message(self.Recommended(rec, yearly=yearly))

    @work(thread=True, group="live")
    def _live(
        self, profile: Profile, device: str, top: int, session: calls.WhatIf, worth_inputs=None
    ) -> None:
        try:
            rec, yearly = self._ranked(profile, device, top, session, worth_inputs)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e), live=True))
            return
        self.post_message(self.Recommended(rec, live=True, yearly=yearly))

    def mark_stale(self, why: str | None) -> None:
        """Say (``why``) that the ranking shown is not the form's, or (None) that it is."""
        note = self.query_one("#stale-note", Static)
        text = Text(f"STALE: {why}", style="bold black on yellow") if why else Text("")
        if str(note.content) != str(text):
            note.update(text)
        note.display = bool(why)

    def on_results_pane_recommended(self, event: Recommended) -> None:
        self.recommendation = event.recommendation
        self.yearly = event.yearly
        if event.live and not self.shown:
            self.stale = True
            return
        self._draw()

    @property
    def shown(self) -> bool:
        """Whether this pane is on screen (its tab is the active one)."""
        return all(w.display for w in self.ancestors_with_self if hasattr(w, "display"))

    def redraw_if_stale(self) -> None:
        if self.stale:
            self._draw()

    def _draw(self) -> None:
        self.stale = False
        self.draws += 1
        rec = self.recommendation
        if rec is None:  # drawn only once a recommendation has arrived
            return
        self.mark_stale(None)
        summary = present.summary_text(rec)
        if self.yearly:
            summary.append("\n")
            summary.append_text(present.worth_text(self.yearly, *calls.worth_lines()))
        self.query_one("#summary", Static).update(summary)
        self.query_one("#summary-box", VerticalScroll).scroll_home(animate=False)
        table = self.query_one("#ranked", DataTable)
        table.clear()
        for r in rec.ranked:
            table.add_row(*present.ranked_row(r), key=str(r.rank))
        if rec.ranked:
            table.move_cursor(row=0)
            self._show(0)

    def on_results_pane_failed(self, event: Failed) -> None:
        if event.live:
            # the table below still holds the last ranking: the note says it is not this form's
            self.mark_stale(f"the form has no ranking ({event.error}); below is the one before")
            return
        self.query_one("#summary", Static).update(Text(f"no recommendation: {event.error}"))
        if not event.live:  # a live re-rank says it under the form, not once per key press
            self.notify(event.error, title="recommend", severity="error", markup=False)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show(event.cursor_row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._show(event.cursor_row)

    # ------------------------------------------------------------------ the ops/J plot

    def action_toggle_plot(self) -> None:
        self.plotting = not self.plotting
        if self.plotting:
            self._replot()
        else:
            self._show(self.query_one("#ranked", DataTable).cursor_row)

    def _replot(self) -> None:
        if self.recommendation is not None:
            self._plot(self.recommendation)

    @work(thread=True, exclusive=True, group="plot")
    def _plot(self, rec: Recommendation) -> None:
        # a worker: the measured bars come from the store
        try:
            chart = calls.recommendation_chart(rec, self.db)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Plotted(chart, rec))

    @property
    def plot_width(self) -> int:
        """The plot's columns: the detail box's, less its scroll bar."""
        return max(self.query_one("#detail").size.width - 2, 40)

    def on_results_pane_plotted(self, event: Plotted) -> None:
        if not (self.plotting and event.recommendation is self.recommendation):
            return
        chart, width = event.chart, self.plot_width
        plot = self.query_one("#detail-plot", PlotextPlot)
        if chart.items:
            plot.plt.clear_figure()
            chart.draw(plot.plt, width)
            # exactly the chart's height: its bars are laid out one to a row, and a widget
            # of another height would squeeze or stretch them
            plot.styles.height = chart.height()
            plot.display = True
            plot.refresh()
            legend = chart.legend(width)
        else:
            plot.display = False
            legend = ["nothing to plot: no ranked configuration"]
        self.query_one("#detail-text", Static).update(Text("\n".join(legend)))
        self.query_one("#detail", VerticalScroll).scroll_home(animate=False)

    def _show(self, row: int) -> None:
        rec = self.recommendation
        if self.plotting:
            self._replot()
            return
        self.query_one("#detail-plot", PlotextPlot).display = False
        if rec is None or not 0 <= row < len(rec.ranked):
            return
        self.query_one("#detail-text", Static).update(present.detail_text(rec.ranked[row], rec))
        self.query_one("#detail", VerticalScroll).scroll_home(animate=False)
