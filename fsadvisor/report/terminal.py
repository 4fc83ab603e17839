"""ops/J (or bytes/J) bars with 95% interval whiskers, drawn in the terminal with plotext.

One bar per configuration, best on top; under each bar its whisker, the 95% interval
(measured: Student-t over the runs; predicted: the model's log-normal interval). Plain text
(no colour codes), at most ``width`` columns, so it reads the same in a pipe, a log and an
80-column terminal.
"""

from __future__ import annotations

import math
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# The terminal is assumed to be 80 columns unless it says otherwise (the classic VT100 width,
# still the default of most terminal emulators).
DEFAULT_WIDTH = 80
MIN_WIDTH, MAX_WIDTH = 40, 400
WHISKER, CAP = "─", "│"
# Canvas rows per bar: the bar itself (the row its label is on), its whisker under it, and
# one blank row that keeps the whisker apart from the next bar down.
ROWS_PER_BAR = 3
# Figure rows that are not canvas: title, the frame's top and bottom, the tick labels and
# the axis label.
CHROME_ROWS = 5
# A legend line's columns after the label: two spaces, "predicted", the value in 9 and
# the widest interval, "  (95%: 209.00M – 209.00M)".
LEGEND_FIGURES = 2 + 9 + 1 + 9 + 26

# plotext draws on one figure per process; the TUI draws from worker threads of different
# panes, so one chart is built at a time.
_FIGURE = threading.Lock()


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    low: float
    high: float
    measured: bool  # measured (M) or predicted (P)


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` first), 80 where there is none (a pipe, a log)."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def fit_width(width: int | None) -> int:
    return max(MIN_WIDTH, min(int(width or terminal_width()), MAX_WIDTH))


def short(label: str, n: int) -> str:
    """``label`` in at most ``n`` characters, an ellipsis where it was cut."""
    return label if len(label) <= n else label[: n - 1] + "…"


def _num(x: float) -> str:
    if abs(x) >= 1e6:
        return f"{x / 1e6:,.2f}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:,.1f}k"
    return f"{x:,.1f}" if abs(x) < 100 else f"{x:,.0f}"


def axis_scale(top: float) -> tuple[float, str]:
    """The factor an axis's values are divided by and its name: plotext prints ticks as plain
    numbers, and bytes/J runs into the hundreds of millions; at most 4 integer digits."""
    for factor, name in ((1e9, "billions"), (1e6, "millions"), (1e3, "thousands")):
        if top >= 10 * factor:
            return factor, name
    return 1.0, ""


@contextmanager
def figure(width: int, height: int) -> Iterator:
    """plotext's figure, cleared, plain (no colours) and exactly ``width`` x ``height``.

    plotext otherwise caps a figure at the terminal's size (80x24 in a pipe): a wider chart
    was cut and a taller one squeezed, so the bars no longer sat one to a row beside their
    labels."""
    import plotext as plt  # lazy: a heavy import, only when a plot is asked for

    with _FIGURE:
        plt.clf()
        plt.limitsize(False, False)
        plt.theme("clear")
        plt.plotsize(width, height)
        try:
            yield plt
        finally:
            plt.limitsize(True, True)  # plotext's default, for anything else in the process


def text_of(plt) -> list[str]:
    """The built figure as plain lines, trailing blanks dropped."""
    return [ln.rstrip() for ln in plt.uncolorize(plt.build()).splitlines()]


@dataclass(frozen=True)
class BarChart:
    """Bars sorted best first (top), the axis in ``unit``, under each bar its whisker
    ``│──│`` spanning the 95% interval; under the chart a key and one line per bar (same
    order) saying in words what it is, with its figures, then ``notes``. ``draw`` puts the chart on any plotext
    figure (plotext's own, or a Textual PlotextPlot's), ``text`` builds it as plain text."""

    items: tuple[Bar, ...]
    unit: str
    title: str = ""
    notes: tuple[str, ...] = ()

    @property
    def best_first(self) -> list[Bar]:
        return sorted(self.items, key=lambda b: -b.value)

    def height(self) -> int:
        """The figure's rows: ROWS_PER_BAR a bar (less the blank row over the top one), and
        the chrome (one row less without a title)."""
        return ROWS_PER_BAR * len(self.items) - 1 + CHROME_ROWS - (not self.title)

    def draw(self, plt, width: int) -> None:
        """The chart on ``plt``, a plotext figure sized ``width`` x ``height()``."""
        width = fit_width(width)
        n = len(self.items)
        # plotext's first category sits at the bottom: the worst first, the best on top.
        bottom_up = list(reversed(self.best_first))
        # A third of the width for the labels, the rest for the bars.
        label_chars = max(12, min(40, width // 3))
        labels = [f"{'M' if b.measured else 'P'} {short(b.label, label_chars)}" for b in bottom_up]
        top = max(max(b.high, b.value) for b in bottom_up)
        scale, scale_name = axis_scale(top)
        # Canvas row r shows y = lo + r / ROWS_PER_BAR (plotext maps the y limits onto the
        # centres of the first and last rows): bar i on y = i exactly, its whisker one row
        # lower, a blank row above it. A bar 0.3 high is filled on its own row only.
        step = 1 / ROWS_PER_BAR
        plt.bar(labels, [b.value / scale for b in bottom_up], orientation="horizontal", width=0.3)
        # Each whisker is drawn from its low to its high end with caps (plotext's error()
        # only draws symmetric ones around a centre, and the log-normal intervals are not).
        # In the text colour: a colour of its own each would make every whisker another one.
        for y, b in enumerate(bottom_up, 1):
            ends = [b.low / scale, b.high / scale]
            plt.plot(ends, [y - step] * 2, marker=WHISKER, color="default")
            plt.scatter(ends, [y - step] * 2, marker=CAP, color="default")
        plt.xlim(0, top / scale * 1.05 or 1.0)
        plt.ylim(1 - step, n)
        plt.xlabel(short(f"{self.unit} ({scale_name})" if scale_name else self.unit, width - 12))
        if self.title:
            plt.title(short(self.title, width - 4))

    def legend(self, width: int) -> list[str]:
        """The key, then one line per bar (same order) in words: its label, whether it was
        measured or predicted, its value and its 95% interval; each line at most ``width``
        columns."""
        width = fit_width(width)
        order = self.best_first
        lines = [
            short(
                f"{CAP}{WHISKER}{WHISKER}{CAP} under a bar: its 95% interval; "
                "P predicted by the model, M measured",
                width,
            )
        ]
        # The figures line up after the longest label that fits beside them: the kind, the
        # value and the widest interval ("(95%: 209.00M – 209.00M)") take LEGEND_FIGURES.
        listed = min(max(len(b.label) for b in order), max(20, width - LEGEND_FIGURES))
        for b in order:
            row = (
                f"{short(b.label, listed):<{listed}}  "
                f"{'measured' if b.measured else 'predicted':<9} {_num(b.value):>9}  "
                f"(95%: {_num(b.low)} – {_num(b.high)})"
            )
            lines.append(short(row, width))
        return lines + [short(note, width) for note in self.notes]

    def text(self, width: int | None = None) -> str:
        """Chart and legend as plain text, ``width`` (the terminal's by default) at most.
        No bars gives an empty string."""
        if not self.items:
            return ""
        width = fit_width(width)
        with figure(width, self.height()) as plt:
            self.draw(plt, width)
            lines = text_of(plt)
        return "\n".join(lines + self.legend(width))


def bars(items: list[Bar], unit: str, title: str = "", width: int | None = None) -> str:
    """BarChart(items, unit, title) as text at most ``width`` columns (the terminal's)."""
    return BarChart(tuple(items), unit, title).text(width)


@dataclass(frozen=True)
class LineChart:
    """Series over a sequence of named x positions (0, 1, ...), each with its marker, and
    the lines of its legend. ``{unit}`` in the title is the unit with the axis's scale."""

    title: str
    unit: str
    names: tuple[str, ...]
    series: tuple[tuple[str, tuple[tuple[float, float], ...], str], ...]  # label, points, marker
    legend_lines: tuple[str, ...] = ()

    def draw(self, plt, width: int) -> None:
        width = fit_width(width)
        scale, scale_name = axis_scale(max(y for _, pts, _ in self.series for _, y in pts))
        for _, pts, marker in self.series:
            plt.plot([x for x, _ in pts], [y / scale for _, y in pts], marker=marker)
        # plotext prints every x label it is given, over one another where they are closer
        # than their length: every k-th position is named, the last always.
        room = max(1, width - 12)  # the canvas, less the y tick labels and the frame
        k = max(1, math.ceil((max(map(len, self.names)) + 2) * (len(self.names) - 1) / room))
        ticks = list(range(len(self.names) - 1, -1, -k))[::-1]
        plt.xticks(ticks, [self.names[i] for i in ticks])
        # half a position of margin each side: the first and last labels stay over the canvas
        plt.xlim(-0.5, len(self.names) - 0.5)
        unit = f"{self.unit} ({scale_name})" if scale_name else self.unit
        plt.title(short(self.title.replace("{unit}", unit), width - 4))

    def legend(self, width: int) -> list[str]:
        return [short(ln, fit_width(width)) for ln in self.legend_lines]

    def text(self, width: int | None = None, height: int = 14) -> str:
        """Chart and legend as plain text, ``width`` (the terminal's by default) at most."""
        width = fit_width(width)
        with figure(width, max(8, height)) as plt:
            self.draw(plt, width)
            lines = text_of(plt)
        return "\n".join(lines + self.legend(width))
