"""ops/J (or bytes/J) bars with 95% interval whiskers, drawn in the terminal with plotext.

One bar per configuration, best on top; the whisker is the 95% interval (measured: Student-t
over the runs; predicted: the model's log-normal interval). Plain text (no colour codes), at
most ``width`` columns, so it reads the same in a pipe, a log and an 80-column terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

# The terminal is assumed to be 80 columns unless told otherwise (the classic VT100 width,
# still the default of most terminal emulators).
DEFAULT_WIDTH = 80
LABEL_CHARS = 26
WHISKER, CAP = "─", "│"


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    low: float
    high: float
    measured: bool  # measured (M) or predicted (P)


def _short(label: str, n: int = LABEL_CHARS) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def _num(x: float) -> str:
    if abs(x) >= 1e6:
        return f"{x / 1e6:,.2f}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:,.1f}k"
    return f"{x:,.1f}" if abs(x) < 100 else f"{x:,.0f}"


def bars(items: list[Bar], unit: str, title: str = "", width: int = DEFAULT_WIDTH) -> str:
    """The chart as text: bars sorted best first (top), whiskers ``│──│`` spanning each 95%
    interval, then one numbered line per bar (same order) with its figures. Empty input gives an empty string."""
    import plotext as plt  # lazy: ~50 ms, only when a plot is asked for

    if not items:
        return ""
    width = max(40, min(int(width), 400))
    order = sorted(items, key=lambda b: -b.value)
    # plotext's first category sits at the bottom: give it the worst so the best is on top.
    bottom_up = list(reversed(order))
    labels = [f"{'M' if b.measured else 'P'} {_short(b.label)}" for b in bottom_up]
    ys = list(range(1, len(bottom_up) + 1))
    # Axis ticks are plotext's plain numbers: scale them to at most 4 integer digits and say
    # the scale in the legend (bytes/J runs into the hundreds of millions).
    top = max(max(b.high for b in order), max(b.value for b in order))
    scale, suffix = next(((f, s) for f, s in ((1e9, "G"), (1e6, "M"), (1e3, "k"))
                          if top >= 10 * f), (1.0, ""))
    values = [b.value / scale for b in bottom_up]
    xmax = top / scale * 1.05 or 1.0
    plt.clf()
    plt.theme("clear")
    plt.plotsize(width, max(3 * len(order) + 4, 8))
    plt.bar(labels, values, orientation="horizontal", width=0.3)
    # Each whisker is drawn from its low to its high end with caps (plotext's error() only
    # draws symmetric ones around a centre, and the log-normal intervals are not symmetric).
    for y, b in zip(ys, bottom_up):
        ends = [b.low / scale, b.high / scale]
        plt.plot(ends, [y, y], marker=WHISKER, color="black")
        plt.scatter(ends, [y, y], marker=CAP, color="black")
    plt.xlim(0, xmax)
    if title:
        plt.title(_short(title, width - 4))
    chart = plt.uncolorize(plt.build())
    lines = [ln.rstrip() for ln in chart.splitlines()]
    axis = f" (axis in {suffix})" if suffix else ""
    lines.append(_short(f"bar = {unit}{axis}; {CAP}{WHISKER}{WHISKER}{CAP} = 95% interval; "
                        "M measured, P predicted", width))
    for i, b in enumerate(order, 1):
        row = (f"{i:>2}.{'M' if b.measured else 'P'} {_short(b.label, 30):<30} "
               f"{_num(b.value):>9} [{_num(b.low)} – {_num(b.high)}]")
        lines.append(_short(row, width))
    return "\n".join(lines)
