"""The Textual app: six tabs over fsadvisor.service, and the keys that move between them.

Presentation only. The panes own their widgets and their thread workers; this module wires
"recommend" (profile + device -> results) and "preview a probe" (target + profile), which
need more than one pane. Domain errors become one-line notifications, never a traceback.
"""

from __future__ import annotations

import time

import json
import shlex
from pathlib import Path

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, TabbedContent, TabPane

from fsadvisor.tui import calls
from fsadvisor.tui.help import HelpScreen
from fsadvisor.tui.idle_gc import IdleCollector
from fsadvisor.tui.panes.device import DevicePane
from fsadvisor.tui.panes.energy import EnergyPane
from fsadvisor.tui.panes.history import HistoryPane
from fsadvisor.tui.panes.probe import ProbePane
from fsadvisor.tui.panes.probe_confirm import QuitWhileProbingScreen
from fsadvisor.tui.panes.profile import ProfilePane
from fsadvisor.tui.panes.results import ResultsPane

TABS = (
    ("profile", "Profile"),
    ("device", "Device"),
    ("results", "Recommendations"),
    ("energy", "Energy"),
    ("history", "History"),
    ("probe", "Probe"),
)


class FsAdvisorApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "fsadvisor"
    SUB_TITLE = "filesystem, options, AG count and scheduler by operations per joule"
    # What each key does where: a printable key typed in a text field is text (r, ?, q are
    # letters of a path or device name), so every app key that must also work from inside a
    # field has a control-key or F-key twin with priority. The footer shows, per action, the
    # first of its keys the focused widget leaves to the app (Screen.active_bindings drops
    # the keys a field consumes): "r Recommend ? Help" outside a field, "^r Recommend
    # ^/ Help" in one. The help screen lists the same (present._COMMON_HELP).
    BINDINGS = [
        Binding("r", "recommend", "Recommend"),
        Binding("ctrl+r", "recommend", "Recommend", priority=True),
        Binding("question_mark", "help", "Help"),
        # ctrl+/ reaches a terminal application as ctrl+underscore (0x1f) unless the
        # terminal speaks the kitty keyboard protocol (ctrl+slash; with shift, ctrl+?); F12
        # for a terminal that sends nothing for ctrl+/.
        Binding(
            "ctrl+slash,ctrl+underscore,ctrl+question_mark,f12",
            "help",
            "Help",
            key_display="^/",
            priority=True,
        ),
        Binding("q", "quit", "Quit"),
        # priority: the Screen's own (hidden) tab binding would otherwise win in the footer
        Binding("tab", "focus_next", "Next field", show=True, priority=True),
        Binding("shift+tab", "focus_previous", "Previous field", show=False, priority=True),
        # The F keys are written on the tabs themselves ("F1 Profile"): in the footer they
        # pushed Recommend/Help/Quit off an 80-column screen.
        *(
            Binding(f"f{i}", f"show_tab('{tab}')", label, show=False)
            for i, (tab, label) in enumerate(TABS, 1)
        ),
    ]
    # Narrow (80 columns) and short (24 rows) terminals get a tighter layout (app.tcss).
    # From 100 columns the live ranking has room above the Profile form (app.tcss); below
    # 120 the Profile form's widest row (jobs, QD, request size) fits beside the preset list
    # only with the list as narrow as at 80 columns.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]

    def __init__(self, db: str | None = None) -> None:
        super().__init__()
        self.db = db
        self.whatif = calls.whatif_session(db)
        # Live what-if: one re-rank at a time; edits made while it runs are coalesced into
        # one more run with the form's latest state (a fixed debounce would add its delay to
        # every key press; this adds none when the app is idle).
        self._live_busy = False
        self._live_wanted = False
        self.live_generation = 0  # live rankings shown so far (the latency benchmark waits on it)
        self.live_drawn_at = 0.0  # perf_counter() after the last live table was refreshed
        self._ranked_for: tuple[str, int] | None = None  # device, top N of the last ranking
        self.collector = IdleCollector()  # full garbage collections only in pauses (idle_gc.py)

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(id="tabs", initial="profile"):
            for i, (tab, label) in enumerate(TABS, 1):
                with TabPane(f"F{i} {label}", id=tab):
                    yield self._pane(tab)
        yield Footer()

    def _pane(self, tab: str):
        if tab == "history":
            return HistoryPane(db=self.db, id="history-pane")
        if tab == "results":
            return ResultsPane(db=self.db, id="results-pane")
        return {
            "profile": ProfilePane,
            "device": DevicePane,
            "results": ResultsPane,
            "energy": EnergyPane,
            "probe": ProbePane,
        }[tab](id=f"{tab}-pane")

    def on_mount(self) -> None:
        self.query_one("#presets", OptionList).focus()
        self.set_interval(self.collector.idle_s / 2, self.collector.tick)

    # ------------------------------------------------------------------ discoverability

    @property
    def active_tab(self) -> str:
        return str(self.query_one(TabbedContent).active)

    async def action_quit(self) -> None:
        """``q``: while a probe runs, ask first -- quitting cancels it (ProbePane.on_unmount)."""
        pane = self.query_one(ProbePane)
        if not pane.running:
            self.exit()
            return

        def answered(leave: bool | None) -> None:
            if leave:
                self.exit()

        self.push_screen(QuitWhileProbingScreen(pane.probed_device), answered)

    def action_help(self) -> None:
        """``?`` (outside a text field), ctrl+/ or F12 (anywhere): the help for the tab shown;
        on the help itself the same key closes it."""
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
        else:
            self.push_screen(HelpScreen(self.active_tab))

    def get_system_commands(self, screen: Screen):
        yield SystemCommand(
            "Recommend",
            "Rank the configurations for the profile and device chosen (r)",
            self.action_recommend,
        )
        yield SystemCommand(
            "Probe preview",
            "Dry run of a probe on scratch:1G with this "
            "profile: the cells and commands, nothing executed",
            self.action_probe_preview,
        )
        yield SystemCommand(
            "Copy mkfs and fstab lines",
            "Copy the #1 recommendation's mkfs command and fstab line to the clipboard",
            self.action_copy_commands,
        )
        yield SystemCommand(
            "Export recommendation (JSON)",
            "Write the current recommendation "
            "to fsadvisor-recommendation.json in the working directory",
            self.action_export_json,
        )
        yield SystemCommand(
            "Capture a profile from a device",
            "Sample a running device's /proc/diskstats and load the profile it suggests (ctrl+g)",
            self.action_capture,
        )
        yield SystemCommand(
            "Help for this screen",
            "What the numbers mean and what to do next (?, ctrl+/ or F12)",
            self.action_help,
        )
        yield from super().get_system_commands(screen)

    def _recommendation(self):
        rec = self.query_one(ResultsPane).recommendation
        if rec is None or not rec.ranked:
            self.notify(
                "no recommendation yet: press r first", title="copy/export", severity="warning"
            )
            return None
        return rec

    def command_lines(self) -> str | None:
        """The #1 recommendation's mkfs command and fstab line, as a shell user pastes them."""
        rec = self.query_one(ResultsPane).recommendation
        if rec is None or not rec.ranked:
            return None
        cmds = rec.ranked[0].commands
        return f"{shlex.join(cmds['mkfs'])}\n{cmds['fstab']}\n"

    def action_copy_commands(self) -> None:
        if self._recommendation() is None:
            return
        text = self.command_lines()
        if text is None:  # never after _recommendation(), which refuses the same cases
            return
        self.copy_to_clipboard(text)
        self.notify(text.strip(), title="copied (mkfs, fstab)", markup=False)

    def action_export_json(self, path: str = "fsadvisor-recommendation.json") -> None:
        rec = self._recommendation()
        if rec is None:
            return
        try:
            Path(path).write_text(json.dumps(rec.to_dict(), indent=2, default=str) + "\n")
        except OSError as e:
            self.notify(f"{path}: {e.strerror}", title="export", severity="error", markup=False)
            return
        self.notify(f"wrote {Path(path).resolve()}", title="export", markup=False)

    def action_capture(self) -> None:
        self.action_show_tab("profile")
        self.query_one(ProfilePane).action_capture()

    def action_probe_preview(self) -> None:
        self.action_show_tab("probe")
        self.query_one(ProbePane).request_preview()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self._focus_tab(tab)

    def _focus_tab(self, tab: str) -> None:
        target = {
            "profile": "#presets",
            "device": "#device-spec",
            "results": "#ranked",
            "energy": "#energy-pane",
            "history": "#history-table",
            "probe": "#probe-target",
        }[tab]
        self.query_one(target).focus()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id
        if tab == "energy":
            self.query_one(EnergyPane).reload()
        elif tab == "history":
            self.query_one(HistoryPane).reload()
        elif tab == "results":
            self.query_one(ResultsPane).redraw_if_stale()

    # ------------------------------------------------------------------ cross-pane actions

    def action_recommend(self) -> None:
        try:
            prof = self.query_one(ProfilePane)
            profile, worth_inputs = prof.effective_profile(), prof.worth_choice()
            device, top = self.query_one(DevicePane).choices()
        except calls.USER_ERRORS as e:
            self.notify(str(e), title="recommend", severity="error", markup=False)
            return
        self._ranked_for = (device, top)
        self.action_show_tab("results")
        self.query_one(ResultsPane).start(profile, device, top, self.whatif, worth_inputs)

    def on_profile_pane_recommend_requested(self, _event: ProfilePane.RecommendRequested) -> None:
        self.action_recommend()

    # ------------------------------------------------------------------ live what-if

    def on_profile_pane_edited(self, _event: ProfilePane.Edited) -> None:
        self.query_one(ProbePane).show_profile(self.query_one(ProfilePane).ref)
        # until the live re-rank answers (or when it cannot), the Recommendations tab says
        # that its ranking is for the form as it was
        self.query_one(ResultsPane).mark_stale("the profile form changed; re-ranking ...")
        self._live_wanted = True
        if not self._live_busy:
            self._run_live()

    def _run_live(self) -> None:
        self._live_wanted = False
        prof = self.query_one(ProfilePane)
        if prof.current is None:
            return
        try:
            profile, worth_inputs = prof.effective_profile(), prof.worth_choice()
            device, top = self.query_one(DevicePane).choices()
        except calls.USER_ERRORS as e:
            prof.show_live_error(str(e))
            self.query_one(ResultsPane).mark_stale(
                f"the form has no ranking ({e}); below is the one before"
            )
            self.live_generation += 1  # answered (with the reason), as a ranking would be
            return
        self._live_busy = True
        self._ranked_for = (device, top)
        self.query_one(ResultsPane).start_live(profile, device, top, self.whatif, worth_inputs)

    def _live_done(self) -> None:
        self._live_busy = False
        self.live_generation += 1
        self.call_after_refresh(self._live_drawn)
        if self._live_wanted:
            self._run_live()

    def _live_drawn(self) -> None:
        self.live_drawn_at = time.perf_counter()
        # the first ranking on screen: the session is loaded (idle_gc.py)
        self.collector.start()
        self.collector.activity()

    def on_unmount(self) -> None:
        self.collector.stop()  # an app run in a longer process (tests) leaves nothing pinned

    def on_results_pane_recommended(self, event: ResultsPane.Recommended) -> None:
        if event.live:
            self.query_one(ProfilePane).show_live(event.recommendation, event.yearly)
            self._live_done()

    def on_results_pane_failed(self, event: ResultsPane.Failed) -> None:
        if event.live:
            self.query_one(ProfilePane).show_live_error(event.error)
            self._live_done()

    def on_input_changed(self, event) -> None:
        """The device or top N typed on the Device tab: the ranking shown is for the ones
        it was made with until r (the live re-rank follows the Profile form only)."""
        if event.input.id not in ("device-spec", "top") or self._ranked_for is None:
            return
        try:
            now = self.query_one(DevicePane).choices()
        except calls.USER_ERRORS:
            now = None
        if now != self._ranked_for:  # cleared by the next ranking drawn
            self.query_one(ResultsPane).mark_stale(
                "the device or top N changed since this ranking: press r"
            )

    def on_probe_pane_preview_requested(self, event: ProbePane.PreviewRequested) -> None:
        prof = self.query_one(ProfilePane)
        plp = "unknown"
        try:
            plp = prof.effective_profile().constraints.plp
        except calls.USER_ERRORS:
            pass  # a half-typed number in the form does not matter for a preview
        self.query_one(ProbePane).start(
            event.target, prof.ref if event.with_profile else None, event.quick, plp, self.db
        )

    def on_probe_pane_probe_requested(self, event: ProbePane.ProbeRequested) -> None:
        """A real probe: the profile's workload (with profile) and its PLP answer, and the
        profile and top-N the re-ranking after each measured cell uses."""
        prof = self.query_one(ProfilePane)
        try:
            profile = prof.effective_profile()
            _device, top = self.query_one(DevicePane).choices()
        except calls.USER_ERRORS as e:
            self.notify(str(e), title="probe", severity="error", markup=False)
            return
        self.query_one(ProbePane).prepare(
            event.target,
            prof.ref if event.with_profile else None,
            event.quick,
            profile.constraints.plp,
            self.db,
            rank_profile=profile,
            top=top,
        )

    def on_probe_pane_ranked(self, event: ProbePane.Ranked) -> None:
        # The results tab shows the ranking with the runs measured so far.
        self.query_one(ResultsPane).post_message(ResultsPane.Recommended(event.recommendation))


def run(db: str | None = None) -> None:
    FsAdvisorApp(db=db).run()
