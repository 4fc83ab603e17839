"""The probe's progress display: a bar with cells done/total, the current cell and an ETA,
redrawn in place on a terminal and one line per event in a log."""

from __future__ import annotations

import io
import re

import pytest

from hypothesis import given
from hypothesis import strategies as st

from fsadvisor.cli.probe import BAR_WIDTH, ProbeProgress, progress_bar
from fsadvisor.probe.report import ProgressEvent

EVENTS = [
    ProgressEvent("note", 0, 4, message="energy: ESTIMATE from a power model"),
    ProgressEvent(
        "cell-start", 0, 4, cell="ext4 defaults, sched none | 4k-randread-qd32", eta_s=95
    ),
    ProgressEvent(
        "cell-end", 1, 4, cell="ext4 defaults, sched none | 4k-randread-qd32", status="ok", eta_s=70
    ),
    ProgressEvent("cell-start", 1, 4, cell="xfs defaults, sched none | 4k-randread-qd32", eta_s=70),
    ProgressEvent(
        "cell-end",
        2,
        4,
        cell="xfs defaults, sched none | 4k-randread-qd32",
        status="failed",
        message="mkfs.xfs: agsize too small",
    ),
    ProgressEvent(
        "cell-end",
        3,
        4,
        cell="f2fs defaults, sched none | 4k-randread-qd32",
        status="skipped",
        message="f2fs: not supported by this kernel",
    ),
    ProgressEvent(
        "cell-start", 3, 4, cell="btrfs defaults, sched none | 4k-randread-qd32", eta_s=3725
    ),
    ProgressEvent(
        "cell-end", 4, 4, cell="btrfs defaults, sched none | 4k-randread-qd32", status="ok"
    ),
    ProgressEvent("done", 4, 4, status="done"),
]
BAR = re.compile(r"\[(#*)(-*)\] +(\d+)/(\d+) +(\d+)%")


def shown(tty: bool) -> str:
    out = io.StringIO()
    progress = ProbeProgress(tty=tty, out=out)
    for e in EVENTS:
        progress(e)
    return out.getvalue()


def test_a_log_gets_one_line_per_event_each_with_the_bar():
    lines = shown(tty=False).splitlines()
    assert "\r" not in "".join(lines)
    assert lines[0] == "fsadvisor: energy: ESTIMATE from a power model"
    bars = [BAR.search(line) for line in lines[1:]]
    assert all(bars), lines
    assert [(int(b[3]), int(b[4])) for b in bars] == [
        (0, 4),
        (1, 4),
        (1, 4),
        (2, 4),
        (3, 4),
        (3, 4),
        (4, 4),
    ]
    assert "ETA 1m35s  running ext4 defaults, sched none | 4k-randread-qd32" in lines[1]
    assert (
        "failed      xfs defaults, sched none | 4k-randread-qd32: mkfs.xfs: agsize too small"
        in lines[4]
    )
    assert lines[5].endswith("f2fs: not supported by this kernel")
    assert "ETA 1h02m  running btrfs" in lines[6]
    assert len(lines) == 8


def test_a_terminal_redraws_one_bar_and_keeps_only_what_needs_reading():
    text = shown(tty=True)
    kept = [line.rsplit("\r\x1b[K", 1)[-1] for line in text.split("\n")]
    # permanent lines: the note, the failure, the skip, and the final bar
    assert kept[0].startswith("fsadvisor: energy")
    assert "failed" in kept[1] and "skipped" in kept[2]
    assert kept[3].endswith("done") and BAR.search(kept[3])[1] == "#" * BAR_WIDTH
    assert kept[4] == ""  # the output ends on a newline: the shell prompt starts clean
    assert len(kept) == 5  # an ok cell only redraws the bar, it never adds a line


@given(st.integers(0, 10_000), st.integers(1, 10_000))
def test_the_bar_is_fixed_width_and_monotone(done, total):
    done = min(done, total)
    b = BAR.search(progress_bar(done, total))
    assert len(b[1]) + len(b[2]) == BAR_WIDTH
    assert (int(b[3]), int(b[4])) == (done, total)
    assert 0 <= int(b[5]) <= 100
    if done < total:
        assert len(b[1]) < BAR_WIDTH and int(b[5]) < 100 or done / total >= 0.995
    assert len(progress_bar(done, total)) == len(progress_bar(total, total))


SAMPLE = ProgressEvent(
    "sample",
    0,
    4,
    cell="ext4 defaults, sched none | 4k-randread-qd32",
    iops=71234.0,
    bw_bytes_s=291.8e6,
    sample_source="/sys/block/loop3/stat",
    energy_source="estimate",
)


def test_a_terminal_shows_the_live_reading_on_the_running_cells_bar():
    out = io.StringIO()
    progress = ProbeProgress(tty=True, out=out, columns=200)
    progress(EVENTS[1])
    progress(SAMPLE)
    last = out.getvalue().rsplit("\r\x1b[K", 1)[-1]
    assert (
        "running ext4 defaults, sched none | 4k-randread-qd32  now: 71.2k IOPS, 292 MB/s "
        "(block layer, /sys/block/loop3/stat), no meter" in last
    )
    assert "\n" not in out.getvalue()  # redrawn in place, never a line per second
    narrow = io.StringIO()
    progress = ProbeProgress(tty=True, out=narrow, columns=80)
    progress(EVENTS[1])
    progress(SAMPLE)
    assert len(narrow.getvalue().rsplit("\r\x1b[K", 1)[-1]) == 79  # never wraps


def test_a_log_gets_no_line_per_sample_and_a_sample_between_cells_draws_nothing():
    out = io.StringIO()
    progress = ProbeProgress(tty=False, out=out)
    progress(EVENTS[1])
    before = out.getvalue()
    progress(SAMPLE)
    assert out.getvalue() == before
    tty = io.StringIO()
    ProbeProgress(tty=True, out=tty)(SAMPLE)
    assert tty.getvalue() == ""


@pytest.mark.parametrize(
    "seconds,text",
    [
        (None, "?"),
        (0, "0s"),
        (59.4, "59s"),
        (60, "1m00s"),
        (185, "3m05s"),
        (3599.6, "1h00m"),
        (3720, "1h02m"),
    ],
)
def test_one_clock_for_the_cli_and_the_tui(seconds, text):
    from fsadvisor.service.probing import clock
    from fsadvisor.tui.panes.probe import duration

    assert clock(seconds) == text
    assert duration is clock  # the TUI's status line uses the same one


def test_the_adaptive_outcome_is_one_set_of_lines_for_both_front_ends():
    from fsadvisor.service.adaptive import Decision

    d = Decision(
        leader="xfs none",
        confidence=0.8123,
        p_best={},
        spent_s=185.0,
        full_estimate_s=740.0,
        runs=7,
        reason="budget: 185 s of 190 s spent",
    )
    assert d.outcome_lines() == [
        "adaptive: xfs none is best (within 1%) with probability 0.81 after 7 runs; device "
        "time 3m05s = 25% of the full matrix's ~12m20s",
        "adaptive: stopped: budget: 185 s of 190 s spent",
        "adaptive: noise seen: not measured (no cell was repeated)",
    ]
    assert len(Decision(**{**d.__dict__, "reason": ""}).outcome_lines()) == 2
    noisy = Decision(**{**d.__dict__, "noise_sd": 0.0488})
    assert noisy.outcome_lines()[-1] == (
        "adaptive: noise seen: one run scatters by about 5.0% "
        "in ops/J (sd between repetitions of the same cell here)"
    )
    assert noisy.to_dict()["run_noise_sd"] == 0.0488


def test_device_time_splits_the_cells_time_by_phase():
    from fsadvisor.probe.report import CellOutcome, ProbeSummary
    from fsadvisor.service.probing import device_time_line

    s = ProbeSummary(total=3)
    s.outcomes = [
        CellOutcome(
            "k1",
            1,
            "ext4 defaults, sched none | w | rep 1",
            "ok",
            wall_s=20.0,
            steps_s={
                "discard": 0.5,
                "mkfs": 2.0,
                "mount": 0.5,
                "fill": 3.0,
                "cache drop": 0.5,
                "measure": 11.0,
                "cool-down": 2.0,
                "umount": 0.3,
            },
            window_s=10.0,
        ),
        CellOutcome(
            "k2",
            1,
            "xfs defaults, sched none | w | rep 1",
            "failed",
            wall_s=3.0,
            steps_s={"mkfs": 3.0},
        ),
        CellOutcome("k3", 1, "f2fs defaults, sched none | w | rep 1", "skipped"),
    ]
    d = s.to_dict()["device_time"]
    assert d["cells"] == 2 and d["cells_s"] == 23.0 and d["window_s"] == 10.0
    assert d["window_share"] == pytest.approx(10 / 23, abs=1e-4)
    out = d["outside_s"]
    assert out["mkfs"] == 5.0 and out["fill"] == 3.0 and out["benchmark start/end"] == 1.0
    assert list(out)[0] == "mkfs"  # largest first
    assert sum(out.values()) + d["window_s"] == pytest.approx(d["cells_s"], abs=0.2)
    line = device_time_line(s.to_dict())
    assert line.startswith("device time: 43% inside the benchmarks' measured windows")
    assert "mkfs 22%" in line and "\n" not in line
    assert ProbeSummary().to_dict()["device_time"] is None
