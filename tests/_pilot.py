"""Clicking a Textual app under Pilot as a person would: only on a widget laid out where the
click lands, and failing at the click when it misses. Shared by tests/tui and tests/device
(this directory, holding tests/conftest.py, is on pytest's import path)."""

from __future__ import annotations


def laid_out(app, selector: str) -> bool:
    """``selector`` is on the active screen where a click lands on it: mounted, given a place
    (a container's children are laid out after it, so on a busy machine a button can exist
    before it has a region), and the widget under its centre (not under a toast)."""
    from textual.errors import NoWidget

    found = app.screen.query(selector)
    if not found:
        return False
    widget = found.first()
    if not widget.region.area:
        return False
    try:
        under, _ = app.get_widget_at(*widget.region.center)
    except NoWidget:
        return False
    return under is widget


async def click_landed(pilot, selector: str, tries: int = 100) -> None:
    """Click ``selector`` as a person would, once it is laid out, and fail here if the click
    did not land on it (not in a later check of what the click should have done)."""
    for _ in range(tries):
        if laid_out(pilot.app, selector):
            break
        await pilot.pause(0.02)
    assert laid_out(pilot.app, selector), f"{selector} is not on the screen to be clicked"
    assert await pilot.click(selector), f"the click missed {selector}"
