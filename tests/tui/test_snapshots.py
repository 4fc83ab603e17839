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

from fsadvisor.tui.app import FsAdvisorApp

SIZE = (120, 40)
SMALL = (80, 24)
RECORDED_WITH = (Path(__file__).parent / "__snapshots__" / "textual-version.txt").read_text().strip()

pytestmark = pytest.mark.skipif(
    textual.__version__ != RECORDED_WITH,
    reason=f"snapshots recorded with Textual {RECORDED_WITH}, this is {textual.__version__}")


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


def test_start_screen(snap_compare):
    """The preset list with oltp chosen, its workload, the what-if form and its live table."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_settle)


def test_recommendation_screen(snap_compare):
    """oltp on the default nvme:1T: summary, notes, the ranked table and #1's commands."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_recommend)


def test_start_screen_80x24(snap_compare):
    """The same start at 80x24: the form fits beside the list, the commands are visible."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_settle)


def test_recommendation_screen_80x24(snap_compare):
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_recommend)


def test_help_screen_80x24(snap_compare):
    """? on the profile tab: what ops/J and the intervals mean, what to do next."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_help)


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


def test_toast_bad_profile_path_80x24(snap_compare):
    """Profile tab: a TOML path that does not exist is one error toast, the form unchanged."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL,
                        run_before=_typed_then_enter("#profile-path", "no-such-profile.toml"))


def test_toast_capture_missing_device_80x24(snap_compare):
    """Profile tab: capturing a device /proc/diskstats does not list names it, once."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_capture_missing_device)


def test_capture_dialog_80x24(snap_compare):
    """ctrl+g: device, seconds (10 by default) and the file the profile goes to."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_capture_dialog)


def test_toast_export_unwritable_80x24(snap_compare):
    """Recommendations: exporting to a directory that does not exist says why, in one line."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_export_unwritable)


def test_toast_export_unwritable(snap_compare):
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_export_unwritable)


def test_toast_history_export_before_opening_80x24(snap_compare):
    """History (empty store): c before a matrix is opened says what to do first."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL,
                        run_before=_history_export_nothing_open)


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
    await pilot.press("space", "down", "space")
    await _settle(pilot)


async def _device_chart(pilot) -> None:
    await _settle(pilot)
    await pilot.press("f5")
    await _settle(pilot)
    await pilot.press("g")
    await _settle(pilot)


def test_history_two_cells_side_by_side_80x24(snap_compare, dated_store):
    """m-new opened, xfs and ext4 marked: means, intervals, n, B − A and 'separable'."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_compare_two_cells)


def test_history_device_chart(snap_compare, dated_store):
    """g on /dev/loop9's matrix: ops/J per configuration across its two matrices."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_device_chart)


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


def test_plot_marks_measured_runs(snap_compare, dated_store):
    """p with runs of oltp on /dev/loop9 in the store: M bars beside the P bars, and where
    and how many runs each measured bar rests on."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_plot_with_measured_runs)
