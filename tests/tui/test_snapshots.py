"""What the screens look like at 120x40 and at 80x24, compared with the accepted SVGs in
__snapshots__/ (pytest-textual-snapshot; `python -m pytest tests/tui --snapshot-update`
accepts a change after looking at it). The recommendation numbers are deterministic: a
fresh store holds only the shipped seed data, and the model fitted on it has no randomness.

The SVGs depend on how Textual draws (borders, scrollbars, colours): they were recorded
with the Textual version in __snapshots__/textual-version.txt, and under another version
these comparisons are skipped (with the reason) rather than failing on drawing changes or
passing after a blind --snapshot-update. Write the new version there when re-recording."""

from __future__ import annotations

from pathlib import Path

import pytest
import textual
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Button, DataTable, Input, Label, OptionList, Static

from _screen import driven, screen_lines, screen_text, toasts
from fsadvisor.domain import FILESYSTEMS
from fsadvisor.service import advice
from fsadvisor.tui.app import FsAdvisorApp

SIZE = (120, 40)
SMALL = (80, 24)
BOTH = pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
RECORDED_WITH = (
    (Path(__file__).parent / "__snapshots__" / "textual-version.txt").read_text().strip()
)

# Only the SVG comparisons depend on how this Textual draws; the behavioural Pilot test beside
# each one (``*_pilot``) runs on any version.
snapshot = pytest.mark.skipif(
    textual.__version__ != RECORDED_WITH,
    reason=f"snapshots recorded with Textual {RECORDED_WITH}, this is {textual.__version__}",
)


def tab(app) -> str:
    return app.query_one("TabbedContent").active


def fits(app, text: str) -> None:
    """``text`` is drawn whole on one row: on the screen, neither wrapped nor cut at this width."""
    rows = screen_lines(app)
    assert any(text in " ".join(row.split()) for row in rows), (text, rows)


def shown(app, *selectors: str) -> None:
    """Each widget is displayed and drawn within the screen in the last update."""
    for sel in selectors:
        w = app.screen.query_one(sel)
        assert w.display and w.is_on_screen, sel
        assert w.region.overlaps(app.screen.region), (sel, w.region)


async def _settle(pilot) -> None:
    # The presets are read in a worker, and showing the default preset starts a live
    # ranking (another worker, maybe a second one for the edits coalesced meanwhile): the
    # screenshot waits for all of them, the messages they posted and the scrolling.
    app = pilot.app
    for _ in range(100):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not app._live_busy and not app._live_wanted:
            break
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


async def _recommend(pilot) -> None:
    # Pressed here rather than with press=[...]: the screenshot must wait for the worker.
    await _settle(pilot)
    await pilot.press("r")
    await _settle(pilot)


async def _help(pilot) -> None:
    await _settle(pilot)
    await pilot.press("question_mark")
    await _settle(pilot)


@snapshot
def test_start_screen(snap_compare):
    """The preset list with oltp chosen, its workload, the what-if form and its live table."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_settle)


@snapshot
def test_start_screen_80x24(snap_compare):
    """The same start at 80x24: the form fits beside the list, the commands are visible."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_settle)


@pytest.mark.asyncio
@BOTH
async def test_start_screen_pilot(size):
    """Beside test_start_screen(_80x24): the profile tab opens on oltp, its workload is in
    the form, and the live ranking under it is filled with real filesystems."""
    async with driven(_settle, size) as app:
        assert tab(app) == "profile"
        presets = app.query_one("#presets", OptionList)
        assert presets.get_option_at_index(presets.highlighted).id == "oltp"
        assert app.query_one("#wl-jobs", Input).value == "16"
        assert app.query_one("#wl-bs", Input).value == "8k"
        live = app.query_one("#live-ranked", DataTable)
        assert live.row_count > 0
        # the live table's "fs, scheduler" column
        assert all(
            str(live.get_row_at(i)[2]).split(",")[0] in FILESYSTEMS for i in range(live.row_count)
        )
        shown(app, "#presets", "#wl-jobs", "#wl-bs")
        fits(app, "oltp (preset)")
        fits(app, "Postgres-style OLTP: 8 KB pages, 70% random")


@snapshot
def test_recommendation_screen(snap_compare):
    """oltp on the default nvme:1T: summary, notes, the ranked table and #1's commands."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_recommend)


@snapshot
def test_recommendation_screen_80x24(snap_compare):
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_recommend)


@pytest.mark.asyncio
@BOTH
async def test_recommendation_screen_pilot(size):
    """Beside test_recommendation_screen(_80x24): r opens the results with recommend's own
    headline on screen, the ranked table's first row is its #1, and the detail shows #1's
    mkfs command and one P (within 1% of the best) in [0, 1]."""
    expected = advice.recommend("oltp", top=5)
    top = expected.ranked[0]
    async with driven(_recommend, size) as app:
        assert tab(app) == "results"
        summary = str(app.query_one("#summary", Static).content)
        # what matters first, then what to use
        assert summary.startswith("What matters: ")
        assert summary.splitlines()[1].startswith(f"Recommended: {top.config.label()} — ")
        fits(app, f"Recommended: {top.config.label()}")
        shown(app, "#summary", "#ranked", "#detail-text")
        table = app.query_one("#ranked", DataTable)
        assert table.row_count == len(expected.ranked)
        labels = [str(c.label) for c in table.columns.values()]
        assert labels[1:3] == ["filesystem", "scheduler"] and "ops/J (90% interval)" in labels
        assert str(table.get_row_at(0)[1]) == top.config.fs
        detail = str(app.query_one("#detail-text", Static).content)
        assert " ".join(top.commands["mkfs"]) in detail
        what = expected.confidence.what  # "P(within 1% of the best)"
        p = [ln for ln in detail.splitlines() if ln.startswith(what)]
        assert len(p) == 1
        assert 0.0 <= float(p[0].removeprefix(what).split()[0].rstrip(",")) <= 1.0


@snapshot
def test_help_screen_80x24(snap_compare):
    """? on the profile tab: what ops/J and the intervals mean, what to do next."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_help)


@pytest.mark.asyncio
async def test_help_screen_80x24_pilot():
    """Beside test_help_screen_80x24: ? opens the profile tab's help over it, and its text
    (what the form does, what to do next) fits the 80-column screen."""
    async with driven(_help, SMALL) as app:
        assert type(app.screen).__name__ == "HelpScreen"
        fits(app, "Profile: what the application does")
        fits(app, "press r")


def test_the_version_guard_reads_a_version():
    assert RECORDED_WITH.count(".") == 2 and all(p.isdigit() for p in RECORDED_WITH.split("."))


# ---------------------------------------------------------------------- error toasts, per screen


def _typed_then_enter(selector: str, text: str):
    async def run(pilot) -> None:
        await _settle(pilot)
        box = pilot.app.query_one(selector)
        box.focus()
        box.value = text
        await pilot.press("enter")
        await _settle(pilot)

    return run


async def _capture_missing_device(pilot) -> None:
    await _settle(pilot)
    await pilot.press("ctrl+g")
    await pilot.pause()
    pilot.app.screen.query_one("#cap-device").value = "/dev/no-such-disk"
    pilot.app.screen.query_one("#cap-seconds").value = "0.2"
    await pilot.press("enter")
    await _settle(pilot)


async def _capture_dialog(pilot) -> None:
    await _settle(pilot)
    await pilot.press("ctrl+g")
    await _settle(pilot)


async def _export_unwritable(pilot) -> None:
    await _recommend(pilot)
    pilot.app.action_export_json("/no-such-directory/fsadvisor-recommendation.json")
    await _settle(pilot)


async def _history_export_nothing_open(pilot) -> None:
    await _settle(pilot)
    await pilot.press("f5")
    await _settle(pilot)
    await pilot.press("c")
    await _settle(pilot)


@snapshot
def test_toast_bad_profile_path_80x24(snap_compare):
    """Profile tab: a TOML path that does not exist is one error toast, the form unchanged."""
    assert snap_compare(
        FsAdvisorApp(),
        terminal_size=SMALL,
        run_before=_typed_then_enter("#profile-path", "no-such-profile.toml"),
    )


@pytest.mark.asyncio
async def test_toast_bad_profile_path_80x24_pilot():
    """Beside test_toast_bad_profile_path_80x24: one error naming the path and why; the
    profile shown is still oltp."""
    async with driven(_typed_then_enter("#profile-path", "no-such-profile.toml"), SMALL) as app:
        notes = toasts(app)
        assert len(notes) == 1 and "no-such-profile.toml" in notes[0]
        assert "No such file or directory" in notes[0]
        presets = app.query_one("#presets", OptionList)
        assert presets.get_option_at_index(presets.highlighted).id == "oltp"


@snapshot
def test_toast_capture_missing_device_80x24(snap_compare):
    """Profile tab: capturing a device /proc/diskstats does not list names it, once."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_capture_missing_device)


@pytest.mark.asyncio
async def test_toast_capture_missing_device_80x24_pilot():
    """Beside test_toast_capture_missing_device_80x24: the dialog closes, and one error says
    the device is not in /proc/diskstats and what to give instead."""
    async with driven(_capture_missing_device, SMALL) as app:
        assert type(app.screen).__name__ != "CaptureScreen"
        errors = [t for t in toasts(app) if "not in /proc/diskstats" in t]
        assert len(errors) == 1 and "no-such-disk" in errors[0]
        assert "give a block device such as /dev/nvme0n1 or sda" in errors[0]


@snapshot
def test_capture_dialog_80x24(snap_compare):
    """ctrl+g: device, seconds (10 by default) and the file the profile goes to."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_capture_dialog)


@pytest.mark.asyncio
async def test_capture_dialog_80x24_pilot():
    """Beside test_capture_dialog_80x24: ctrl+g asks for the device (focused, empty), the
    seconds (10) and the output file (by default named after the device), and says how to
    go on."""
    async with driven(_capture_dialog, SMALL) as app:
        assert type(app.screen).__name__ == "CaptureScreen"
        device = app.screen.query_one("#cap-device", Input)
        assert app.focused is device and device.value == ""
        shown(app, "#cap-device", "#cap-seconds", "#cap-out")
        assert app.screen.query_one("#cap-seconds", Input).value == "10"
        out = app.screen.query_one("#cap-out", Input)  # empty: named after the device
        assert out.value == "" and out.placeholder.endswith(".toml")
        fits(app, "Enter captures, Esc cancels")


@snapshot
def test_toast_export_unwritable_80x24(snap_compare):
    """Recommendations: exporting to a directory that does not exist says why, in one line."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_export_unwritable)


@snapshot
def test_toast_export_unwritable(snap_compare):
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_export_unwritable)


@pytest.mark.asyncio
@BOTH
async def test_toast_export_unwritable_pilot(size):
    """Beside test_toast_export_unwritable(_80x24): one error naming the file and why; the
    recommendation stays on screen."""
    async with driven(_export_unwritable, size) as app:
        notes = toasts(app)
        assert len(notes) == 1 and "/no-such-directory/" in notes[0]
        assert "No such file or directory" in notes[0]
        assert tab(app) == "results" and app.query_one("#ranked", DataTable).row_count > 0


@snapshot
def test_toast_history_export_before_opening_80x24(snap_compare):
    """History (empty store): c before a matrix is opened says what to do first."""
    assert snap_compare(
        FsAdvisorApp(), terminal_size=SMALL, run_before=_history_export_nothing_open
    )


@pytest.mark.asyncio
async def test_toast_history_export_before_opening_80x24_pilot(monkeypatch):
    """Beside test_toast_history_export_before_opening_80x24: c on an empty history says
    what to do first, and exports nothing."""
    from fsadvisor.tui import calls

    exported = []
    real = calls.export_matrix
    monkeypatch.setattr(calls, "export_matrix", lambda *a, **k: exported.append(a) or real(*a, **k))
    async with driven(_history_export_nothing_open, SMALL) as app:
        assert tab(app) == "history"
        fits(app, "No probe runs stored yet")
        assert toasts(app) == ["export open a matrix first (Enter on its row)"]
        assert exported == [] and app.query_one("#matrix-cells", DataTable).row_count == 0


# ---------------------------------------------------------------------- history: side by side, chart


@pytest.fixture
def dated_store(request, monkeypatch):
    """probed_store with fixed matrix times (an hour apart) shown in UTC, so the History
    table's dates and the chart's axis are the same on every run and machine."""
    import itertools
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    request.addfinalizer(time.tzset)  # after monkeypatch restored TZ (finalizers run LIFO)
    clock = itertools.count(1_790_000_000.0, 3600.0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(time, "time", lambda: next(clock))
        return request.getfixturevalue("probed_store")


async def _compare_two_cells(pilot) -> None:
    await _settle(pilot)
    await pilot.press("f5")
    await _settle(pilot)
    await pilot.press("enter")  # the newest matrix, m-new
    await _settle(pilot)
    pilot.app.query_one("#matrix-cells").focus()
    await pilot.pause()  # its focus messages first (test_tui.py's _in_jobs)
    await pilot.press("space", "down", "space")
    await _settle(pilot)


async def _device_chart(pilot) -> None:
    await _settle(pilot)
    await pilot.press("f5")
    await _settle(pilot)
    await pilot.press("g")
    await _settle(pilot)


@snapshot
def test_history_two_cells_side_by_side_80x24(snap_compare, dated_store):
    """m-new opened, xfs and ext4 marked: means, intervals, n, B − A and 'separable'."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_compare_two_cells)


@pytest.mark.asyncio
async def test_history_two_cells_side_by_side_80x24_pilot(dated_store):
    """Beside test_history_two_cells_side_by_side_80x24: the two marked cells of m-new are
    compared with B − A, its Welch interval and the verdict, all on the 80x24 screen."""
    async with driven(_compare_two_cells, SMALL) as app:
        assert tab(app) == "history"
        assert app.query_one("#matrix-cells", DataTable).row_count == 2
        fits(app, "matrix m-new (oltp on /dev/loop9)")
        fits(app, "A xfs -o noatime (profile:oltp): 300 ops/J")
        fits(app, "B ext4 (profile:oltp): 201 ops/J")
        fits(app, "B − A: -99 ops/J")
        assert "significant" in screen_text(app)


@snapshot
def test_history_device_chart(snap_compare, dated_store):
    """g on /dev/loop9's matrix: ops/J per configuration across its two matrices."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_device_chart)


@snapshot
def test_history_device_chart_80x24(snap_compare, dated_store):
    """The same chart on an 80x24 screen: narrower, the legend under it."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_device_chart)


@pytest.mark.asyncio
async def test_history_device_chart_pilot(dated_store):
    """Beside test_history_device_chart: g charts /dev/loop9's measured ops/J per matrix,
    one labelled series per configuration with its last value."""
    async with driven(_device_chart, SIZE) as app:
        fits(app, "/dev/loop9: measured ops/J per matrix")
        fits(app, "xfs -o noatime profile:oltp: last 300 ops/J (2 matrices)")
        fits(app, "ext4 profile:oltp: last 201 ops/J (2 matrices)")


async def _plot_with_measured_runs(pilot) -> None:
    from fsadvisor.domain import Device
    from fsadvisor.service import advice
    from fsadvisor.tui.panes.results import ResultsPane

    await _recommend(pilot)
    dev = Device(path="/dev/loop9", size_bytes=8 << 30, kind="loop", model="loop on ext4 (test)")
    # as if the device pane had named /dev/loop9 (a path is inspected, and the fixture's
    # loop device exists only in the store)
    pane = pilot.app.query_one(ResultsPane)
    pane.post_message(ResultsPane.Recommended(advice.recommend("oltp", device=dev, top=5)))
    await _settle(pilot)
    await pilot.press("p")
    await _settle(pilot)


@snapshot
def test_plot_marks_measured_runs(snap_compare, dated_store):
    """p with runs of oltp on /dev/loop9 in the store: M bars beside the P bars, and where
    and how many runs each measured bar rests on."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_plot_with_measured_runs)


@snapshot
def test_plot_marks_measured_runs_80x24(snap_compare, dated_store):
    """The same plot on an 80x24 screen: the top of the chart in the detail box, which
    scrolls to the rest."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_plot_with_measured_runs)


@pytest.mark.asyncio
async def test_plot_marks_measured_runs_pilot(dated_store):
    """Beside test_plot_marks_measured_runs: p plots ops/J with the bar measured on
    /dev/loop9 marked M beside the predicted P bars, and the headline says measured."""
    async with driven(_plot_with_measured_runs, SIZE) as app:
        text = screen_text(app)
        assert "oltp: ops/J" in text and "measured on this device" in text
        rows = screen_lines(app)
        assert any(r.lstrip().startswith("M #") for r in rows)
        assert any(r.lstrip().startswith("P #1") for r in rows)


# ---------------------------------------------------------------------- every tab, both sizes


async def _no_blink(pilot) -> None:
    # a focused Input is drawn with or without its cursor depending on the moment
    for w in pilot.app.screen.query(Input):
        w.cursor_blink = False
    await pilot.pause()


def _on_tab(key: str, *then: str):
    async def run(pilot) -> None:
        await _settle(pilot)
        await pilot.press(key, *then)
        await _settle(pilot)
        await _no_blink(pilot)

    return run


async def _stale(pilot) -> None:
    await _recommend(pilot)
    await pilot.press("f1")
    pilot.app.query_one("#wl-jobs").focus()
    await pilot.pause()  # its focus messages first (test_tui.py's _in_jobs)
    await pilot.press("end", "x")
    await _settle(pilot)
    await pilot.press("f3")
    await _settle(pilot)


async def _live_80x24(pilot) -> None:
    await _settle(pilot)
    await pilot.press("ctrl+l")
    await _settle(pilot)


async def _with_load(pilot) -> None:
    await _settle(pilot)
    pilot.app.query_one("#load").value = "20000"
    await _settle(pilot)
    pilot.app.query_one("#presets").focus()
    await _settle(pilot)


ENERGY = [
    {"name": "rapl", "ok": False, "auto": True, "detail": "no /sys/class/powercap (test)"},
    {"name": "ipmi", "ok": False, "auto": True, "detail": "ipmitool not found (test)"},
    {"name": "estimate", "ok": True, "auto": True, "detail": "the model's assumed power"},
]


@snapshot
@BOTH
def test_device_tab(snap_compare, size):
    """F2: the spec field, Inspect and top N."""
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_on_tab("f2"))


@snapshot
@BOTH
def test_energy_tab(snap_compare, monkeypatch, size):
    """F4 with a fixed list of sources (this machine's would differ from another's)."""
    from fsadvisor.tui import calls

    monkeypatch.setattr(calls, "energy_sources", lambda: ENERGY)
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_on_tab("f4"))


@snapshot
@BOTH
def test_history_tab_opened(snap_compare, dated_store, size):
    """F5, m-new opened: the matrices, then its cells with their scheduler column."""
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_on_tab("f5", "enter"))


@snapshot
@BOTH
def test_recommendations_marked_stale(snap_compare, size):
    """r, then a jobs value that cannot be read: the Recommendations tab says its ranking is
    the one before."""
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_stale)


async def _constraint_boxes(pilot) -> None:
    await _settle(pilot)
    app = pilot.app
    app.query_one("#durability").value = False
    app.query_one("#feat-snapshots").value = True
    await _settle(pilot)
    app.query_one("#durability").focus()  # scrolled into view
    await _settle(pilot)


@snapshot
@BOTH
def test_constraint_boxes(snap_compare, size):
    """The Profile form's booleans in both states: durability off (an empty box), snapshots
    ticked (an X), the other features off; each state readable without colour."""
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_constraint_boxes)


@pytest.mark.asyncio
@BOTH
async def test_constraint_boxes_pilot(size):
    app = FsAdvisorApp()
    async with app.run_test(size=size) as pilot:
        await _constraint_boxes(pilot)
        shown(app, "#durability", "#feat-snapshots")
        side = app.query_one("#profile-side")
        boxes = list(app.query_one("#profile-pane").query("Box"))
        assert len(boxes) == 4
        for box in boxes:  # whole within the form's width: no box cut off with its label
            assert box.region.right <= side.scrollable_content_region.right, box.id
        assert app.query_one("#durability").render().plain.strip() == "▐ ▌ required"
        assert app.query_one("#feat-snapshots").render().plain.strip() == "▐X▌ snapshots"


@snapshot
def test_live_ranking_shown_80x24(snap_compare):
    """ctrl+l at 80x24: the live table above the form, its columns whole."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_live_80x24)


@snapshot
def test_start_screen_with_a_load(snap_compare):
    """A load of 20,000 ops/s: what #1 is worth per year, under the live ranking."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_with_load)


@snapshot
def test_start_screen_with_a_load_80x24(snap_compare):
    """The same load at 80x24: the form needs the room, so the worth line is behind ctrl+l
    with the live table, and the one-line status says where."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_with_load)


@snapshot
def test_help_screen(snap_compare):
    """? at 120x40, the keys that act from inside a field listed."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_help)


@pytest.mark.asyncio
@BOTH
async def test_every_tab_is_drawn_within_the_screen(size, monkeypatch):
    """Beside the tab snapshots: each tab's first field or table is on screen at both sizes."""
    from fsadvisor.tui import calls

    monkeypatch.setattr(calls, "energy_sources", lambda: ENERGY)
    for key, sel in (
        ("f2", "#device-spec"),
        ("f4", "#energy-sources"),
        ("f5", "#history-table"),
        ("f6", "#probe-target"),
    ):
        async with driven(_on_tab(key), size) as app:
            shown(app, sel)


# ---------------------------------------------------------------------- nothing cut off


def _clipped(widget) -> list[str]:
    """How ``widget`` is cut off where it stands: past the edge of a container that does
    not scroll that way (what is past it is never drawn), a button narrower than its label,
    or a label with a word folded over two lines."""
    out = []
    for node in (widget, *widget.ancestors):
        parent = node.parent
        if not isinstance(parent, Widget):
            break
        inner = parent.scrollable_content_region
        scrolls_x = parent.styles.overflow_x in ("auto", "scroll") and parent.max_scroll_x > 0
        scrolls_y = parent.styles.overflow_y in ("auto", "scroll")
        if node.region.right > inner.right and not scrolls_x:
            out.append(f"{node!r} ends at x={node.region.right}, {parent!r} at {inner.right}")
        if node.region.bottom > inner.bottom and not scrolls_y:
            out.append(f"{node!r} ends at y={node.region.bottom}, {parent!r} at {inner.bottom}")
    width = widget.content_region.width
    if isinstance(widget, Button) and width < len(str(widget.label)):
        out.append(f"{widget!r}: {width} columns for {widget.label}")
    if isinstance(widget, Label):
        text = str(widget.content)
        lines = [line.plain for line in Content(text).wrap(width)]
        drawn = {word for line in lines for word in line.split()}
        out += [
            f"{widget!r}: {word!r} folded in {lines}" for word in text.split() if word not in drawn
        ]
    if isinstance(widget, OptionList):
        out += _options_folded(widget)
    return out


def _option_lines(options: OptionList) -> dict[int, list[str]]:
    """Each option's rows as the list draws them at its width (scrolled or not), by index."""
    drawn: dict[int, list[str]] = {}
    for y in range(options.virtual_size.height):
        strip = options.render_line(y - options.scroll_offset.y)
        index = next(
            (
                s.style.meta["option"]
                for s in strip
                if s.style is not None and "option" in s.style.meta
            ),
            None,
        )
        if index is not None:
            drawn.setdefault(index, []).append(strip.text.strip())
    return drawn


def _options_folded(options: OptionList) -> list[str]:
    """Where an option's rows break its text other than at a space, a line's end or after a
    hyphen: a preset name folded at the list's edge ('fs-overhead-randwrit' over 'e-4k-...')."""
    out = []
    drawn = _option_lines(options)
    assert len(drawn) == options.option_count, (len(drawn), options.option_count)
    for index, rows in drawn.items():
        text = options.get_option_at_index(index).prompt.plain
        at = 0
        for row in rows:
            while at < len(text) and text[at].isspace():
                at += 1
            if text[at : at + len(row)] != row:
                out.append(f"{text!r}: row {row!r} is not its text at {at}")
                break
            at += len(row)
            if at < len(text) and not text[at].isspace() and text[at - 1] != "-":
                out.append(f"{text!r}: broken inside a word, after {text[:at]!r}")
    return out


async def _form_scrolled_to(pilot, selector: str):
    widget = pilot.app.query_one(selector)
    widget.scroll_visible(animate=False)
    await _settle(pilot)
    return widget


async def _form_end(pilot) -> None:
    await _settle(pilot)
    await _form_scrolled_to(pilot, "#recommend")


@snapshot
@BOTH
def test_profile_form_end(snap_compare, size):
    """The Profile form scrolled to its end: min IOPS, max p99, the load and price with
    their hints whole, and the Recommend button on a row of its own under them."""
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_form_end)


@pytest.mark.asyncio
@BOTH
async def test_the_recommend_button_is_whole_within_the_form(size):
    """Beside test_profile_form_end: the Profile form's Recommend button, scrolled into
    view, is inside its row and the form, on the screen, and wide enough for its label: at
    80x24 it stood past the form's right edge, cut to 'Recommend (r'."""
    app = FsAdvisorApp()
    async with app.run_test(size=size) as pilot:
        await _form_end(pilot)
        button = app.query_one("#recommend", Button)
        form = app.query_one("#profile-side")
        assert _clipped(button) == []
        assert button.parent.content_region.contains_region(button.region), (
            button.region,
            button.parent.content_region,
        )
        assert form.scrollable_content_region.contains_region(button.region), (
            button.region,
            form.scrollable_content_region,
        )
        assert app.screen.region.contains_region(button.region)
        fits(app, "Recommend (r)")


TABS = (
    ("f1", "profile"),
    ("f2", "device"),
    ("f3", "results"),
    ("f4", "energy"),
    ("f5", "history"),
    ("f6", "probe"),
)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [SIZE, (100, 30), SMALL], ids=["120x40", "100x30", "80x24"])
async def test_every_control_of_every_tab_is_whole(size, monkeypatch):
    """Each tab's labels, fields, boxes, buttons and tables lie within their containers (or within
    one that scrolls to them), a button's label fits the button, a label's words are whole,
    a field's grey hint fits its one line (it is cut at the field's edge, not wrapped), and
    every preset in the list is drawn with its name broken only after a hyphen: at 80
    columns the Device tab's heading ran past the screen's edge, the Profile form's hints
    read 'no' and its price label 'price/k Wh', and the list read 'fs-overhead-randwrit' over
    'e-4k-fsync1', and at 100 columns the request size field stood past the form's edge."""
    from fsadvisor.tui import calls

    monkeypatch.setattr(calls, "energy_sources", lambda: ENERGY)
    app = FsAdvisorApp()
    async with app.run_test(size=size) as pilot:
        await _settle(pilot)
        for key, tab in TABS:
            await pilot.press(key)
            await _settle(pilot)
            controls = [
                w
                for w in app.query_one(f"#{tab}").query(
                    "Label, Button, Input, Select, Checkbox, DataTable, OptionList"
                )
                if all(n.display for n in w.ancestors_with_self if isinstance(n, Widget))
            ]
            assert controls or tab == "energy", tab  # energy: text only
            for w in controls:
                assert _clipped(w) == [], (tab, w)
            for box in (w for w in controls if isinstance(w, Input) and w.placeholder):
                width = box.scrollable_content_region.width
                assert len(box.placeholder) <= width, (tab, box.id, box.placeholder, width)


@pytest.mark.asyncio
@BOTH
async def test_every_presets_workload_values_are_whole_in_their_fields(size):
    """Each preset's jobs, queue depth, request size, read share, working set and fsync
    count fit their fields with the cursor after them: at 80 columns the fields had two
    columns inside, and build-unpack's working set 3125m read '31', its 16k '16'."""
    app = FsAdvisorApp()
    async with app.run_test(size=size) as pilot:
        await _settle(pilot)
        pane = app.query_one("ProfilePane")
        fields = list(pane.query("#profile-side .num").results(Input))
        assert len(fields) == 6
        longest: dict[str, str] = {}
        for item in list(pane.loaded.values()):
            pane.show(item)
            for box in fields:
                width = box.scrollable_content_region.width
                assert len(box.value) < width, (item.ref, box.id, box.value, width)
                longest[box.id] = max(longest.get(box.id, ""), box.value, key=len)
        assert len(longest["wl-ws"]) >= 6, longest  # the check saw the long ones
        await _settle(pilot)


def test_every_snapshot_file_belongs_to_a_snapshot_test():
    """Each SVG under __snapshots__/<module>/ is named after a test of that module that
    takes snap_compare (and, for a parametrized one, after one of its ids): an SVG left by a
    renamed or removed test is only a warning of syrupy's (--snapshot-warn-unused) and
    would otherwise stay unnoticed."""
    import importlib.util

    here = Path(__file__).parent
    files = sorted((here / "__snapshots__").glob("*/*.svg"))
    assert files
    for svg in files:
        module_path = here / f"{svg.parent.name}.py"
        assert module_path.exists(), svg
        spec = importlib.util.spec_from_file_location(f"_owner_{svg.parent.name}", module_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        name, _, case = svg.stem.partition("[")
        test = getattr(module, name, None)
        assert test is not None and "snap_compare" in test.__code__.co_varnames, svg
        if case:
            ids = [
                i
                for mark in getattr(test, "pytestmark", [])
                if mark.name == "parametrize"
                for i in mark.kwargs.get("ids", [])
            ]
            assert case.rstrip("]") in ids, (svg, ids)
