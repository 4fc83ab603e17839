"""Step 1: the workload profile. Pick a preset (or load a TOML file, or capture one from a
running device: ctrl+g), read its workload and constraints, and adjust the constraints the
ranking is filtered by."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, DataTable, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from fsadvisor.domain import Profile
from fsadvisor.errors import FsAdvisorError
from fsadvisor.tui import calls, present
from fsadvisor.tui.panes import WorkerFailed
from fsadvisor.tui.widgets import Box, NumberInput

FEATURES = ("snapshots", "checksums", "compression")
# The form's plain number fields: widget id -> the name its error gives.
NUMBER_FIELDS = {
    "min-iops": "min IOPS",
    "max-p99": "max p99 ms",
    "load": "load ops/s",
    "price": "price per kWh",
}
PLP_CHOICES = (("unknown", "unknown"), ("yes", "yes"), ("no", "no"))
FSYNC_CHOICES = tuple((p, p) for p in calls.FSYNC_POLICIES)
# The workload knobs of the what-if form: widget id -> edit_workload keyword.
WORKLOAD_FIELDS = {
    "wl-jobs": "jobs",
    "wl-iodepth": "iodepth",
    "wl-bs": "bs",
    "wl-read": "read_pct",
    "wl-fsync-every": "fsync_every",
    "wl-ws": "working_set",
}
LIVE_ROWS = 5  # the live table shows the top five, as recommend does by default
DEFAULT_PRESET = "oltp"  # the README's quick-start example
# The preset list is 42 columns wide (app.tcss), less border and padding (38) and its
# scrollbar (2): a longer prompt wraps or not depending on whether the list had its
# scrollbar when the options were measured, which moved the whole list by 18 lines.
PROMPT_WIDTH = 36


@dataclass
class Loaded:
    profile: Profile
    ref: str  # what load_profile/probe accept: the preset name or the TOML path
    origin: str  # shown to the user: "preset" or "file <path>"


class ProfilePane(Horizontal):
    """Preset list on the left; the chosen profile and the constraints form on the right."""

    class RecommendRequested(Message):
        """The user asked for recommendations from inside the form (button or Enter)."""

    class Edited(Message):
        """Something in the what-if form (or the chosen profile) changed: re-rank live."""

    class PresetsLoaded(Message):
        def __init__(self, presets: list[Profile]) -> None:
            super().__init__()
            self.presets = presets

    class FileLoaded(Message):
        def __init__(self, path: str, profile: Profile) -> None:
            super().__init__()
            self.path, self.profile = path, profile

    class Failed(WorkerFailed):
        def __init__(self, error: str, title: str) -> None:
            super().__init__(error)
            self.title = title

    class Captured(Message):
        def __init__(self, result: dict) -> None:
            super().__init__()
            self.result = result

    # ctrl+g: Input keeps ctrl+k (delete to the end); off the footer, which is full at 80
    # columns; the palette and ? name it.
    BINDINGS = [
        Binding("ctrl+g", "capture", "Capture profile", show=False),
        # priority: acts while a field has focus (the letter would be typed)
        Binding("ctrl+l", "toggle_live", "Live ranking", show=False, priority=True),
    ]

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.loaded: dict[str, Loaded] = {}
        self._live_ranked: list = []  # the live table's rows, kept to refold on a resize
        self._live_width = 0
        self.current: Loaded | None = None
        # What show() last put in each workload field: only a field the user changed is
        # applied, so a preset's own encoding (e.g. fsync_every with mode "none") survives.
        self._shown: dict[str, str] = {}
        self._plp_shown = "unknown"
        self.plp_choice: str | None = None  # the user's PLP answer: it outlives a preset change
        # Captured profiles' assumptions (what /proc/diskstats cannot tell), by file path:
        # shown with the profile until the user has read and confirmed them.
        self.assumptions: dict[str, list[str]] = {}

    def compose(self) -> ComposeResult:
        yield OptionList(id="presets")
        with Vertical(id="profile-main"):
            # The live ranking sits above the form, outside its scrolling, so it stays in
            # view whichever field is being typed into. At 80 columns the form needs the
            # room: the table is then behind ctrl+l and only its one-line status shows.
            with Vertical(id="live-box"):
                yield Static("live ranking: waiting for the presets ...", id="live-status")
                live: DataTable[str] = DataTable(
                    id="live-ranked", cursor_type="row", zebra_stripes=True
                )
                live.add_columns(*present.LIVE_COLUMNS)
                yield live
                yield Static("", id="live-worth")
                yield Static("ctrl+l shows the live ranking here", id="live-key")
            yield from self._form()

    def _form(self) -> ComposeResult:
        # The form waits for the presets (read in a worker): showing the default preset
        # resets it, which must not wipe what someone typed meanwhile.
        with VerticalScroll(id="profile-side", disabled=True):
            yield Static(id="profile-info")
            yield Label(
                "Workload (what-if: the ranking above follows as you type)", classes="section"
            )
            with Horizontal(classes="form-row"):
                yield Label("jobs", classes="field")
                yield NumberInput(id="wl-jobs", classes="num")
                yield Label("QD", classes="field")
                yield NumberInput(id="wl-iodepth", classes="num")
                yield Label("req size", classes="field")
                yield NumberInput(id="wl-bs", classes="num")
            with Horizontal(classes="form-row"):
                yield Label("read %", classes="field")
                yield NumberInput(id="wl-read", classes="num")
                yield Label("work set", classes="field")
                yield NumberInput(id="wl-ws", classes="num")
            with Horizontal(classes="form-row"):
                yield Label("fsync", classes="field")
                yield Select(FSYNC_CHOICES, value="none", allow_blank=False, id="wl-fsync")
                yield Label("per fsync", classes="field")
                yield NumberInput(id="wl-fsync-every", classes="num")
            yield Label("Constraints (r, ctrl+r or Enter: full results)", classes="section")
            with Horizontal(classes="form-row"):
                yield Label("PLP", classes="field")
                yield Select(PLP_CHOICES, value="unknown", allow_blank=False, id="plp")
                yield Label("durability", classes="field", id="durability-label")
                yield Box(
                    "required",
                    value=True,
                    id="durability",
                    tooltip="fsync'd data must survive a power loss",
                )
            with Horizontal(classes="form-row"):
                yield Label("features", classes="field", id="features-label")
                # its own container: one row of boxes, or a column where a row would be cut
                # off at the right (80 columns, app.tcss), taking a box's label with it
                with Horizontal(id="features"):
                    for f in FEATURES:
                        yield Box(f, id=f"feat-{f}")
            with Horizontal(classes="form-row"):
                yield Label("min IOPS", classes="field")
                yield NumberInput(placeholder="no min", id="min-iops")
                yield Label("max p99 ms", classes="field")
                yield NumberInput(placeholder="no max", id="max-p99")
            with Horizontal(classes="form-row"):
                # What the choice is worth per year (recommend --load/--price)
                yield Label("load ops/s", classes="field")
                yield NumberInput(placeholder="no load", id="load")
                # words, not "price/kWh": one word that the narrow label column folds
                yield Label("price per kWh", classes="field")
                yield NumberInput(placeholder="no price", id="price")
            # A row of its own, under the last field the ranking reads: beside the fields it
            # ran past the form's right edge at 80 columns and was cut off with its label.
            with Horizontal(classes="form-row", id="recommend-row"):
                yield Button("Recommend (r)", id="recommend", variant="primary")
            with Horizontal(classes="form-row"):
                yield Label("TOML file", classes="field")
                yield Input(placeholder="path/to/profile.toml, Enter to load", id="profile-path")
            # A field's error, moved under the row of the field it is about.
            yield Static("", id="field-error")

    def on_mount(self) -> None:
        # The form scrolls, but is not a Tab stop of its own: the first Tab from the preset
        # list lands on the first field, which the user can see and type into.
        self.query_one("#profile-side").can_focus = False
        self._load_presets()

    @work(thread=True, exclusive=True, group="presets")
    def _load_presets(self) -> None:
        try:
            presets = calls.list_profiles()
        except calls.USER_ERRORS as e:  # a broken preset file: the TOML path still works
            self.post_message(self.Failed(str(e), "presets"))
            return
        self.post_message(self.PresetsLoaded(presets))

    def on_profile_pane_failed(self, event: Failed) -> None:
        if event.title == "presets":
            self.query_one("#profile-side").disabled = False  # a TOML file still works
        self.notify(event.error, title=event.title, severity="error", markup=False)

    def on_profile_pane_presets_loaded(self, event: PresetsLoaded) -> None:
        options = self.query_one("#presets", OptionList)
        for p in event.presets:
            self.loaded[p.name] = Loaded(p, p.name, "preset")
            options.add_option(Option(self._prompt(p), id=p.name))
        self.query_one("#profile-side").disabled = False
        names = [o for o in self.loaded]
        if names and self.current is None:  # a profile chosen meanwhile (a TOML file) stays
            index = names.index(DEFAULT_PRESET) if DEFAULT_PRESET in names else 0
            options.highlighted = index
            # Scroll again once the new options are laid out (a scrollbar appearing changes
            # their width and so their wrapped heights): the same place, however late the
            # worker's message arrived.
            self.call_after_refresh(options.scroll_to_highlight)

    @staticmethod
    def _prompt(p: Profile) -> present.PresetPrompt:
        # One line of description keeps some fifty presets scannable.
        return present.PresetPrompt(p.name, p.description, PROMPT_WIDTH)

    # ------------------------------------------------------------------ choosing a profile

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id in self.loaded:
            self.show(self.loaded[event.option.id])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        # Enter on a preset: the obvious next step is its recommendation
        if event.option.id in self.loaded:
            event.stop()
            self.post_message(self.RecommendRequested())

    def show(self, item: Loaded) -> None:
        """Show ``item`` and reset the form to its own constraints."""
        self.current = item
        c = item.profile.constraints
        w = item.profile.workload
        info = present.profile_text(item.profile, item.origin)
        if item.ref in self.assumptions:
            info.append_text(present.assumptions_text(self.assumptions[item.ref]))
        self.query_one("#profile-info", Static).update(info)
        self._plp_shown = self.plp_choice or c.plp
        self.query_one("#plp", Select).value = self._plp_shown
        self._shown = {
            "wl-jobs": str(w.numjobs),
            "wl-iodepth": str(w.iodepth),
            "wl-bs": calls.format_size(w.bs_bytes),
            "wl-read": str(w.read_pct),
            "wl-fsync-every": str(w.fsync_every),
            "wl-ws": calls.format_size(w.working_set_bytes),
        }
        for wid, text in self._shown.items():
            self.query_one(f"#{wid}", Input).value = text
        self.query_one("#wl-fsync", Select).value = w.fsync_mode
        self.query_one("#durability", Checkbox).value = c.durability
        for f in FEATURES:
            self.query_one(f"#feat-{f}", Checkbox).value = f in c.features
        self.query_one("#min-iops", Input).value = "" if c.min_iops is None else f"{c.min_iops:g}"
        self.query_one("#max-p99", Input).value = (
            "" if c.max_p99_ms is None else f"{c.max_p99_ms:g}"
        )

    def select(self, name: str) -> None:
        """Highlight the profile with option id ``name`` (a preset name or a loaded path)."""
        options = self.query_one("#presets", OptionList)
        options.highlighted = options.get_option_index(name)

    def load_path(self, path: str) -> None:
        """Load a profile TOML in a worker; a file that cannot be read is a notification."""
        self._load_file(path)

    @work(thread=True, exclusive=True, group="profile-file")
    def _load_file(self, path: str) -> None:
        try:
            prof = calls.get_profile(path)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e), "profile"))
            return
        self.post_message(self.FileLoaded(path.strip(), prof))

    def on_profile_pane_file_loaded(self, event: FileLoaded) -> None:
        path, prof = event.path, event.profile
        key = f"file:{path}"
        options = self.query_one("#presets", OptionList)
        if key not in self.loaded:
            options.add_option(Option(self._prompt(prof), id=key))
        self.loaded[key] = Loaded(prof, path, f"file {path}")
        self.select(key)
        self.show(self.loaded[key])

    # ------------------------------------------------------------------ capture

    def action_capture(self) -> None:
        self.app.push_screen(CaptureScreen(), self._capture_chosen)

    def _capture_chosen(self, choice: tuple[str, str, str] | None) -> None:
        if choice is None:
            return
        device, seconds, out = choice
        try:
            secs = float(seconds.strip())
        except ValueError:
            self.notify(
                f"seconds must be a number, not {seconds.strip()[:40]!r}",
                title="capture",
                severity="error",
                markup=False,
            )
            return
        self.notify(f"sampling {device.strip()} for {secs:g} s ...", title="capture", markup=False)
        self._capture(device, secs, out)

    @work(thread=True, exclusive=True, group="capture")
    def _capture(self, device: str, seconds: float, out: str) -> None:
        try:
            result = calls.capture(device, seconds, out)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e), "capture"))
            return
        self.post_message(self.Captured(result))

    def on_profile_pane_captured(self, event: Captured) -> None:
        r = event.result
        self.assumptions[r["written"]] = list(r["assumptions"])
        self.notify(
            f"{r['device']}: {r['iops']:,.0f} IOPS, {r['read_pct']}% reads over "
            f"{r['seconds']:.1f} s; wrote {r['written']} — confirm the assumptions "
            "listed with the profile",
            title="captured",
            markup=False,
        )
        self.load_path(r["written"])

    # ------------------------------------------------------------------ live what-if

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "profile-path":
            self.post_message(self.Edited())

    def action_toggle_live(self) -> None:
        """ctrl+l: the live table above the form, where the screen is too small to keep it
        there always (app.tcss hides it at 80 columns; wider but short, it shows its first rows)."""
        self.toggle_class("-show-live")
        self.call_after_refresh(self._refold_live)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "plp" and self.current is not None:
            if str(event.value) != self._plp_shown:  # the user's answer, not show()'s
                self.plp_choice = self._plp_shown = str(event.value)
        self.post_message(self.Edited())

    def on_checkbox_changed(self, _event: Checkbox.Changed) -> None:
        self.post_message(self.Edited())

    def show_live(self, rec, yearly: dict | None = None) -> None:
        """The top of a live ranking, above the form, and with a load what #1 is worth."""
        self._field_error(None)
        self._live_ranked = rec.ranked[:LIVE_ROWS]
        self._fill_live()
        self._live_line(present.live_status(rec))
        worth = self.query_one("#live-worth", Static)
        yearly_line, summary_lines = calls.worth_lines()
        text = (
            present.worth_text(yearly, yearly_line, summary_lines, basis=False)
            if yearly
            else Text("")
        )
        if str(worth.content) != str(text):
            worth.update(text)
        worth.set_class(bool(yearly), "-has")  # shown where the table is (app.tcss)

    def _fill_live(self) -> None:
        """The live rows, their options folded to the width the table has now (none while
        it is hidden: then at the narrowest, and again when ctrl+l or a resize shows it)."""
        table = self.query_one("#live-ranked", DataTable)
        width = self._live_width = self._options_width(table)
        # the columns too: an auto-width column only ever widens, and a refold narrower
        # must narrow it
        table.clear(columns=True)
        table.add_columns(*present.LIVE_COLUMNS)
        for r in self._live_ranked:
            table.add_row(*present.live_row(r, width), key=str(r.rank), height=None)

    def _options_width(self, table: DataTable) -> int:
        """The options column's width in the live table as it is now: its width for columns
        (0 while hidden) less a vertical scrollbar's (a short screen shows the first rows
        only, and scrolls to the rest) and the other columns'."""
        room = table.content_size.width - table.styles.scrollbar_size_vertical
        room = max(0, room) if table.display else 0
        return present.live_options_width(self._live_ranked, room, table.cell_padding)

    def _refold_live(self) -> None:
        table = self.query_one("#live-ranked", DataTable)
        if self._live_ranked and table.display:
            if self._options_width(table) != self._live_width:
                self._fill_live()

    def on_resize(self) -> None:
        self.call_after_refresh(self._refold_live)

    def show_live_error(self, error: str) -> None:
        """A live re-rank that has no answer (a half-typed number, nothing qualifies): one
        line over the table instead of a notification per key press, and under the field it
        is about when it is about one; the table is emptied so no stale ranking stands next
        to the new question."""
        self.query_one("#live-ranked", DataTable).clear()
        self.query_one("#live-worth", Static).remove_class("-has")
        self._live_line(Text(f"no ranking: {error}", style="bold red"))
        self._field_error(self.invalid_field())

    def invalid_field(self) -> tuple[Input, str] | None:
        """The form's first field whose text cannot be read, with why: each field is read on
        its own, so the error goes to the field that has it, wherever the cursor went since."""
        if self.current is None:
            return None
        w = self.current.profile.workload
        for wid, kw in WORKLOAD_FIELDS.items():
            box = self.query_one(f"#{wid}", Input)
            if box.value.strip() == self._shown.get(wid):
                continue
            try:
                calls.edit_workload(w, **{kw: box.value})
            except calls.USER_ERRORS as e:
                return box, str(e)
        for wid, what in NUMBER_FIELDS.items():
            box = self.query_one(f"#{wid}", Input)
            try:
                _number(box.value, what)
            except FsAdvisorError as e:
                return box, str(e)
        return None

    def _field_error(self, found: tuple[Input, str] | None) -> None:
        """Show ``found``'s error right under its field's row, the field marked invalid; or
        (None) clear both. Nothing is redrawn when nothing changes (a key press's budget)."""
        note = self.query_one("#field-error", Static)
        for box in self.query("#profile-side Input.-invalid"):
            if found is None or box is not found[0]:
                box.remove_class("-invalid")
        if found is None:
            if note.display:
                note.display = False
            return
        box, error = found
        box.add_class("-invalid")
        side = self.query_one("#profile-side")
        row = box.parent
        assert isinstance(row, Widget)  # a field's box sits in its row of the form
        if side.children.index(note) != side.children.index(row) + 1:
            side.move_child(note, after=row)
        text = Text(f"^ {error}", style="bold red")
        if str(note.content) != str(text):
            note.update(text)
        note.display = True

    def worth_choice(self) -> calls.WorthInputs:
        """The load and price typed, for the yearly figures (none without a load);
        FsAdvisorError on a bad number, or a price with no load to cost."""
        load = _number(self.query_one("#load", Input).value, "load")
        price = _number(self.query_one("#price", Input).value, "price")
        if load is None and price is not None:
            raise FsAdvisorError("a price needs a load (the work per second to cost)")
        return calls.WorthInputs(load=load, price=price)

    def _live_line(self, text: Text) -> None:
        """The line over the live table. Only a text that wraps to another number of lines
        needs a layout pass: otherwise repainting the line is enough, and a key press costs
        one screen layout (the Input's own) instead of two (each a noticeable share of the
        key-press budget, benchmarks/tui_latency.py)."""
        box = self.query_one("#live-status", Static)
        width, height = box.content_size
        same = width > 0 and len(text.wrap(self.app.console, width)) == height
        box.update(text, layout=not same)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "profile-path":
            self.load_path(event.value)
        else:
            self.post_message(self.RecommendRequested())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "recommend":
            event.stop()
            self.post_message(self.RecommendRequested())

    # ------------------------------------------------------------------ the edited profile

    def effective_profile(self) -> Profile:
        """The chosen profile with the form's constraints; FsAdvisorError on a bad number."""
        if self.current is None:
            raise FsAdvisorError("no profile chosen: pick a preset or load a TOML file")
        features = tuple(f for f in FEATURES if self.query_one(f"#feat-{f}", Checkbox).value)
        w = self.current.profile.workload
        edits = {
            kw: self.query_one(f"#{wid}", Input).value
            for wid, kw in WORKLOAD_FIELDS.items()
            if self.query_one(f"#{wid}", Input).value.strip() != self._shown.get(wid)
        }
        fsync = str(self.query_one("#wl-fsync", Select).value)
        if fsync != w.fsync_mode:
            edits["fsync"] = fsync
        profile = calls.with_workload(self.current.profile, calls.edit_workload(w, **edits))
        return calls.with_constraints(
            profile,
            plp=str(self.query_one("#plp", Select).value),
            durability=self.query_one("#durability", Checkbox).value,
            features=features,
            min_iops=_number(self.query_one("#min-iops", Input).value, "min IOPS"),
            max_p99_ms=_number(self.query_one("#max-p99", Input).value, "max p99 ms"),
        )

    @property
    def ref(self) -> str | None:
        return self.current.ref if self.current else None


def _number(text: str, what: str) -> float | None:
    text = text.strip().replace(",", "").replace("_", "")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise FsAdvisorError(f"{what} must be a number, not {text[:40]!r}") from None
    if not value > 0 or value == float("inf"):
        raise FsAdvisorError(f"{what} must be a positive number, not {text[:40]!r}")
    return value


class CaptureScreen(ModalScreen["tuple[str, str, str] | None"]):
    """Which device to sample, for how long, and where the profile TOML goes; Enter in any
    field captures, Esc cancels. Read-only: /proc/diskstats is all that is read."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_SECONDS = "10"  # as `fsadvisor profiles capture`

    def compose(self) -> ComposeResult:
        with Vertical(id="capture-box"):
            yield Static(
                "Capture a profile from a running device: its read/write mix, request "
                "sizes, IOPS and queue depth from /proc/diskstats (read-only). Run it "
                "while the application works.",
                classes="hint-box",
            )
            with Horizontal(classes="form-row"):
                yield Label("device", classes="field")
                yield Input(placeholder="/dev/nvme0n1 or sda", id="cap-device")
            with Horizontal(classes="form-row"):
                yield Label("seconds", classes="field")
                yield Input(self.DEFAULT_SECONDS, id="cap-seconds", classes="num")
            with Horizontal(classes="form-row"):
                yield Label("write to", classes="field")
                yield Input(placeholder="captured-DEVICE.toml", id="cap-out")
            yield Static("Enter captures, Esc cancels", classes="hint-box")

    def on_mount(self) -> None:
        self.query_one("#cap-device", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        device = self.query_one("#cap-device", Input).value.strip()
        out = self.query_one("#cap-out", Input).value.strip() or (
            f"captured-{device.rsplit('/', 1)[-1]}.toml" if device else ""
        )
        self.dismiss((device, self.query_one("#cap-seconds", Input).value, out))

    def action_cancel(self) -> None:
        self.dismiss(None)
