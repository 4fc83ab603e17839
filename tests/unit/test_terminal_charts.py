"""The terminal charts (plotext, plain text) read right at 80 and 120 columns: every label,
the axis and its unit, one bar per labelled row, best on top, bar lengths in proportion to
the values, whiskers under their bars, nothing wider than the terminal, no colour codes.
Beside the checks, one golden of each width (tests/unit/golden/terminal_bars_*.txt,
FSADVISOR_REGEN_GOLDEN=1 rewrites them) shows a change to the drawing in review."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from _golden import same_lines
from fsadvisor.report.terminal import CAP, WHISKER, Bar, bars, short

GOLDEN = Path(__file__).parent / "golden"
REGEN = os.environ.get("FSADVISOR_REGEN_GOLDEN") == "1"
WIDTHS = pytest.mark.parametrize("width", [80, 120])
BAR = "█"

# A recommendation's chart: predictions, one measured bar beside its prediction, near-ties
# and a label longer than the label column at 80 columns.
ITEMS = [
    Bar("#1 xfs -o noatime", 270.4, 126.0, 579.0, False),
    Bar("#1 xfs -o noatime", 300.2, 280.0, 321.0, True),
    Bar("#2 ext4, sched mq-deadline", 191.0, 73.0, 503.0, False),
    Bar("#3 xfs", 265.0, 121.0, 603.0, False),
    Bar("#4 ext4 -o noatime", 200.0, 89.0, 451.0, False),
    Bar("#5 xfs -o logbufs=8,logbsize=256k, sched none, agcount=4", 120.5, 51.0, 309.0, False),
]
BEST_FIRST = sorted(ITEMS, key=lambda b: -b.value)


def _name(b: Bar) -> str:
    return f"{'M' if b.measured else 'P'} {b.label}"


def _chart(text: str) -> tuple[list[str], list[int]]:
    """The lines and the indexes of the labelled (y tick) rows, top down."""
    lines = text.splitlines()
    return lines, [i for i, ln in enumerate(lines) if "┤" in ln]


@WIDTHS
def test_fits_the_width_without_colour_codes(width):
    text = bars(ITEMS, "predicted ops/J", "oltp: ops/J", width)
    assert "\x1b" not in text
    lines = text.splitlines()
    assert max(map(len, lines)) <= width
    # the chart uses the width it is given, not plotext's guess of the terminal
    assert max(len(ln) for ln in lines if "┤" in ln) >= width - 2


@WIDTHS
def test_every_label_once_shortened_consistently_best_on_top(width):
    lines, rows = _chart(bars(ITEMS, "predicted ops/J", "oltp: ops/J", width))
    assert len(rows) == len(ITEMS)
    shown = [lines[i].split("┤")[0].strip() for i in rows]
    for got, b in zip(shown, BEST_FIRST):
        whole = _name(b)
        assert got == whole or (got.endswith("…") and whole.startswith(got[:-1])), (got, whole)
    assert len(set(shown)) == len(shown)
    # a label is cut only where it has to be, at the same length for every label
    cut = {len(s) for s in shown if s.endswith("…")}
    assert len(cut) <= 1 and all(len(s) <= max(cut, default=width) for s in shown)
    # the listing under the chart: same order, each label in it, measured or predicted
    listing = [ln for ln in lines if re.search(r"  (measured|predicted) +\d", ln)]
    assert [re.search(r"  (measured|predicted) +\d", ln)[1] for ln in listing] == [
        "measured" if b.measured else "predicted" for b in BEST_FIRST
    ]
    for ln, b in zip(listing, BEST_FIRST):
        assert ln.startswith(b.label) or ln.startswith(short(b.label, 10)[:-1])


@WIDTHS
def test_each_bar_on_its_labelled_row_in_proportion(width):
    lines, rows = _chart(bars(ITEMS, "predicted ops/J", "oltp: ops/J", width))
    # labels right-aligned on one axis, the frame's right side in one column
    assert len({lines[i].index("┤") for i in rows}) == 1
    assert len({len(lines[i]) for i in rows}) == 1
    lengths = []
    for i in rows:
        plot = lines[i].split("┤", 1)[1]
        assert plot.startswith(BAR)
        run = len(plot) - len(plot.lstrip(BAR))
        assert plot[run:].rstrip("│").strip() == ""  # the bar and nothing else on its row
        lengths.append(run)
    assert lengths == sorted(lengths, reverse=True)  # best on top
    # plotext fills columns 0..c where c is the value's column: c in proportion to the value
    top_col = lengths[0] - 1
    for run, b in zip(lengths, BEST_FIRST):
        assert abs((run - 1) - top_col * b.value / BEST_FIRST[0].value) <= 1, (b, run)


@WIDTHS
def test_whiskers_under_their_bars_span_the_interval(width):
    lines, rows = _chart(bars(ITEMS, "predicted ops/J", "oltp: ops/J", width))
    first = lines[rows[0]].split("┤", 1)[1]
    per_value = (len(first) - len(first.lstrip(BAR)) - 1) / BEST_FIRST[0].value
    for i, b in zip(rows, BEST_FIRST):
        under = lines[i + 1]
        assert "┤" not in under
        plot = under[lines[i].index("┤") + 1 :]
        caps = [c for c, ch in enumerate(plot[:-1]) if ch == CAP]
        assert len(caps) == 2 and set(plot[caps[0] + 1 : caps[1]]) == {WHISKER}, under
        assert abs(caps[0] - b.low * per_value) <= 2 and abs(caps[1] - b.high * per_value) <= 2
    for i in rows[:-1]:  # a blank row between a whisker and the next bar down
        assert lines[i + 2][lines[i].index("┤") + 1 :].rstrip("│").strip() == ""


@WIDTHS
def test_axis_ticks_and_unit_label(width):
    text = bars(ITEMS, "predicted ops/J", "oltp: ops/J", width)
    lines, rows = _chart(text)
    axis = next(i for i, ln in enumerate(lines) if "└" in ln)
    assert axis > rows[-1] and lines[axis].index("└") == lines[rows[0]].index("┤")
    assert "┬" in lines[axis] or "┴" in lines[axis]
    ticks = [float(t) for t in lines[axis + 1].split()]
    assert ticks[0] == 0 and ticks == sorted(ticks) and len(ticks) >= 3
    assert ticks[-1] <= 1.05 * max(b.high for b in ITEMS)
    assert "predicted ops/J" in lines[axis + 2]
    assert lines[0].strip() == "oltp: ops/J"


@WIDTHS
def test_the_legend_says_what_each_bar_is_in_words(width):
    """Under the chart, a key and one line per bar, best first: its label as on the chart
    (no running number or letter code before it: "1.P #1 xfs" read as garbage), measured
    or predicted in words, its value and its 95% interval."""
    lines = bars(ITEMS, "predicted ops/J", "oltp: ops/J", width).splitlines()
    axis = next(i for i, ln in enumerate(lines) if "└" in ln)
    key, *rows = lines[axis + 3 :]
    assert (
        key == f"{CAP}{WHISKER}{WHISKER}{CAP} under a bar: its 95% interval; "
        "P predicted by the model, M measured"
    )
    assert len(rows) == len(ITEMS) and all(len(ln) <= width for ln in rows)
    row = re.compile(
        r"(?P<label>\S.*?)\s+(?P<kind>measured|predicted)\s+(?P<value>[\d,.]+[kM]?)"
        r"  \(95%: (?P<low>[\d,.]+[kM]?) – (?P<high>[\d,.]+[kM]?)\)$"
    )
    for ln, b in zip(rows, BEST_FIRST):
        m = row.fullmatch(ln)
        assert m, ln
        label = m["label"]
        assert label == b.label or (label.endswith("…") and b.label.startswith(label[:-1]))
        assert m["kind"] == ("measured" if b.measured else "predicted")
        assert float(m["value"].replace(",", "")) == pytest.approx(b.value, abs=0.5)
        assert float(m["low"].replace(",", "")) == pytest.approx(b.low, abs=0.5)
        assert float(m["high"].replace(",", "")) == pytest.approx(b.high, abs=0.5)
        assert not re.match(r"\s*\d+\.[MP]\b", ln)
    # the longest label is whole where the width leaves room for it
    assert (rows[-1].startswith(ITEMS[-1].label)) == (width >= 120)


def test_large_values_are_scaled_and_the_axis_says_so():
    text = bars(
        [Bar("xfs", 107e6, 14e6, 209e6, False), Bar("ext4", 105e6, 13e6, 209e6, False)],
        "bytes/J",
        width=80,
    )
    lines = text.splitlines()
    axis = next(i for i, ln in enumerate(lines) if "└" in ln)
    assert max(len(t.split(".")[0]) for t in lines[axis + 1].split()) <= 4
    assert "bytes/J (millions)" in lines[axis + 2]
    assert "107.00M  (95%: 14.00M – 209.00M)" in text


def test_one_bar_and_a_single_run_without_interval():
    lines, rows = _chart(bars([Bar("ext4", 50.0, 50.0, 50.0, True)], "ops/J", width=80))
    assert len(rows) == 1 and lines[rows[0]].split("┤")[0].strip() == "M ext4"
    assert lines[rows[0]].split("┤")[1].startswith(BAR)
    assert CAP in lines[rows[0] + 1].split("│", 1)[1]


def test_no_bars_is_an_empty_string():
    assert bars([], "ops/J") == ""


@WIDTHS
def test_golden_chart(width):
    text = bars(ITEMS, "predicted ops/J", "oltp: ops/J", width) + "\n"
    path = GOLDEN / f"terminal_bars_{width}.txt"
    if REGEN:
        path.write_text(text)
    same_lines(text, path.read_text(), path.name)


# ------------------------------------------------------------------ device history (lines)


def _history(matrices: int, configs: int = 3) -> dict:
    start = 1_790_000_000.0
    return {
        "device": "/dev/loop9",
        "metric": "ops_per_joule",
        "unit": "ops/J",
        "matrices": [{"id": f"m{i}", "started_at": start + 3600 * i} for i in range(matrices)],
        "series": {
            f"cfg{c} xfs -o noatime,logbufs=8,logbsize=256k profile:oltp": [
                [i, 200.0 + 10 * c + 5 * i] for i in range(matrices)
            ]
            for c in range(configs)
        },
    }


@WIDTHS
def test_history_chart_fits_and_names_the_matrices_without_overlap(width, monkeypatch):
    import time

    from fsadvisor.service.matrix_results import plot_device_history

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        text = plot_device_history(_history(12), width, 14)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert "\x1b" not in text
    lines = text.splitlines()
    assert max(map(len, lines)) <= width
    assert lines[0].strip() == "/dev/loop9: measured ops/J per matrix"
    axis = next(i for i, ln in enumerate(lines) if "└" in ln)
    names = re.findall(r"\S+ \S+", lines[axis + 1])
    assert len(names) >= 2 and all(re.fullmatch(r"\d\d-\d\d \d\d:\d\d", n) for n in names)
    assert names[-1] == time.strftime("%m-%d %H:%M", time.gmtime(1_790_000_000 + 11 * 3600))
    legend = [ln for ln in lines if ln.startswith((" ●", " ▲", " ■"))]
    assert len(legend) == 3 and all("last" in ln or ln.endswith("…") for ln in legend)
