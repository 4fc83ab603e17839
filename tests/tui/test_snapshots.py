"""What the screens look like at 120x40, compared with the accepted SVGs in __snapshots__/
(pytest-textual-snapshot; `python -m pytest tests/tui --snapshot-update` accepts a change
after looking at it). The recommendation numbers are deterministic: a fresh store holds
only the shipped seed data, and the model fitted on it has no randomness."""

from __future__ import annotations

from fsadvisor.tui.app import FsAdvisorApp

SIZE = (120, 40)


async def _settle(pilot) -> None:
    # The presets are read in a worker: the screenshot waits for it, for the messages it
    # posted and for the scrolling that highlighting the default preset starts.
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


async def _recommend(pilot) -> None:
    # Pressed here rather than with press=[...]: the screenshot must wait for the worker.
    await _settle(pilot)
    await pilot.press("r")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_start_screen(snap_compare):
    """The preset list with oltp chosen, its workload and the constraints form."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_settle)


def test_recommendation_screen(snap_compare):
    """oltp on the default nvme:1T: summary, notes, the ranked table and #1's commands."""
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_recommend)

