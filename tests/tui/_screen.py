"""What a Pilot-driven app shows, read the way a person reads the screen: its text (from
Textual's own screenshot, so it is what the terminal draws at this size, wrapped and cut as
drawn) and its notifications. The behavioural tests beside the SVG snapshots assert on this,
so a new Textual that draws borders or colours differently fails only the snapshot."""

from __future__ import annotations

import contextlib
import html
import io
import re

from rich.console import Console

from fsadvisor.tui.app import FsAdvisorApp

# the laid-out click, shared with the device TUI tests (tests/_pilot.py)
from _pilot import click_landed, laid_out  # noqa: F401

_ROW = re.compile(r'clip-path="url\(#[\w-]*-line-(\d+)\)"')


def screen_lines(app) -> list[str]:
    """The terminal's rows as plain text (trailing blanks dropped)."""
    svg = app.export_screenshot()
    rows: dict[int, list[str]] = {}
    for m in re.finditer(r"<text([^>]*)>(.*?)</text>", svg, re.S):
        row = _ROW.search(m.group(1))
        if row is None:
            continue
        rows.setdefault(int(row.group(1)), []).append(
            html.unescape(m.group(2)).replace("\xa0", " ")
        )
    return ["".join(rows[i]).rstrip() for i in sorted(rows)]


def screen_text(app) -> str:
    """Every row joined, whitespace collapsed: for "is this on the screen" checks."""
    return " ".join(" ".join(screen_lines(app)).split())


def toasts(app) -> list[str]:
    """The notifications on screen, as the user reads them."""
    out = []
    for t in app.screen.query("Toast"):
        console = Console(width=118, record=True, color_system=None, file=io.StringIO())
        console.print(t.render())
        out.append(" ".join(console.export_text().split()))
    return out


@contextlib.asynccontextmanager
async def driven(run_before, size):
    """The app at ``size`` after the same steps as a snapshot's ``run_before``."""
    app = FsAdvisorApp()
    async with app.run_test(size=size, notifications=True) as pilot:
        await run_before(pilot)
        yield app
