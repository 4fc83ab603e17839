"""External meter logs: header variants, alignment to the run window, bad data."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fsadvisor.energy import (
    MeterLogMeter,
    choose_meter,
    integrate_log,
    parse_log,
    reading_for_window,
)
from fsadvisor.energy.meterlog import parse_timestamp
from fsadvisor.errors import EnergyError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "energy"
UTC = timezone.utc


def utc(h, m, s, day=14) -> float:
    return datetime(2025, 3, day, h, m, s, tzinfo=UTC).timestamp()


def local(h, m, s) -> float:
    return time.mktime((2025, 3, 14, h, m, s, 0, 0, -1))


def epoch_csv(rows, header="timestamp,watts") -> str:
    return "\n".join([header] + [f"{t!r},{w!r}" for t, w in rows]) + "\n"


def test_hobo_export_header_gmt_offset_and_event_row():
    log = parse_log((FIX / "hobo_export.csv").read_text())
    assert log.watts_column.startswith("Active Power, W")
    assert log.time_column == "Date Time, GMT+00:00"
    assert log.covers == (utc(14, 15, 30), utc(14, 15, 41))
    assert log.rows_skipped == 1  # the "Logged" event row has no power
    # 100 W until :35, 200 W from :36: the step is linear between :35 and :36.
    e, why = integrate_log(log, utc(14, 15, 31), utc(14, 15, 40))
    assert why is None
    assert e == pytest.approx(4 * 100 + 150 + 4 * 200)


def test_wattsup_export_picks_watts_not_watthours_or_max():
    log = parse_log((FIX / "wattsup_export.csv").read_text())
    assert log.watts_column == "Watts" and log.time_column == "Time"
    assert log.samples[0] == (utc(14, 15, 30), 150.0)
    e, why = integrate_log(log, utc(14, 15, 30), utc(14, 15, 32))
    assert e == pytest.approx(155 + 165)


def test_timestamp_forms():
    assert parse_timestamp("1741961730") == 1741961730
    assert parse_timestamp("1741961730500") == pytest.approx(1741961730.5)  # milliseconds
    assert parse_timestamp("12") is None  # relative seconds cannot be aligned
    assert parse_timestamp("2025-03-14T14:15:30Z") == utc(14, 15, 30)
    assert parse_timestamp("2025-03-14 14:15:30+00:00") == utc(14, 15, 30)
    assert parse_timestamp("03/14/25 14:15:30", UTC) == utc(14, 15, 30)
    assert parse_timestamp("03/14/2025 02:15:30 PM", UTC) == utc(14, 15, 30)
    assert parse_timestamp("03/14/25 12:00:00") == local(12, 0, 0)  # naive: local time
    assert parse_timestamp("yesterday") is None


def test_not_covering_the_run_is_missing_with_one_line_saying_what():
    rows = [(local(12, 0, 3) + i, 100.0) for i in range(38)]  # 12:00:03 .. 12:00:40
    log = parse_log(epoch_csv(rows))
    e, why = integrate_log(log, local(12, 0, 0), local(12, 0, 45))
    assert e is None
    assert why == "meter log covers 12:00:03–12:00:40, run was 12:00:00–12:00:45"


def test_gap_inside_window_is_missing_but_gap_outside_is_fine():
    t0 = local(12, 0, 0)
    rows = [(t0 + i, 100.0) for i in range(0, 11)] + [(t0 + i, 100.0) for i in range(23, 40)]
    log = parse_log(epoch_csv(rows))
    e, why = integrate_log(log, t0 + 2, t0 + 30, max_gap_s=5)
    assert e is None and "gap of 13.0 s" in why and "12:00:10" in why and "12:00:23" in why
    e, why = integrate_log(log, t0 + 25, t0 + 35, max_gap_s=5)
    assert e == pytest.approx(1000.0)


def test_duplicates_keep_first_unsorted_sorted_garbage_skipped():
    t0 = 1_741_961_730.0
    rows = [
        f"{t0 + 2},300",
        f"{t0},100",
        "garbage,row",
        f"{t0 + 1},200",
        f"{t0 + 1},999",
        f"{t0 + 3},-5",
        f"{t0 + 3},nan",
        ",,,",
        f"{t0 + 3},400",
        "only-one-field",
    ]
    log = parse_log("timestamp,watts\n" + "\n".join(rows))
    assert log.samples == [(t0, 100.0), (t0 + 1, 200.0), (t0 + 2, 300.0), (t0 + 3, 400.0)]
    assert log.duplicates == 1
    assert log.rows_skipped == 4
    e, _ = integrate_log(log, t0, t0 + 3)
    assert e == pytest.approx(150 + 250 + 350)


@pytest.mark.parametrize(
    "bad", ["1e308", "100000.5", "2e5", "-0.5", "-1e308", "nan", "inf", "-inf", "1e400"]
)
def test_implausible_wattage_is_a_garbage_row(bad):
    t0 = 1_741_961_730.0
    log = parse_log(f"timestamp,watts\n{t0},100\n{t0 + 1},{bad}\n{t0 + 2},100\n")
    assert log.samples == [(t0, 100.0), (t0 + 2, 100.0)]
    assert log.rows_skipped == 1
    e, why = integrate_log(log, t0, t0 + 2)
    assert why is None and e == pytest.approx(200.0)


@given(w=st.floats(allow_nan=True, allow_infinity=True))
def test_only_wattages_a_server_can_draw_are_kept(w):
    t0 = 1_741_961_730.0
    log = parse_log(f"timestamp,watts\n{t0},{w!r}\n")
    kept = 0.0 <= w <= 100_000.0
    assert log.samples == ([(t0, w)] if kept else [])
    assert log.rows_skipped == (0 if kept else 1)


def test_headerless_and_semicolon_decimal_comma():
    t0 = 1_741_961_730
    log = parse_log(f"{t0},100.5\n{t0 + 1},101.5\n")
    assert log.samples == [(t0, 100.5), (t0 + 1, 101.5)]
    log = parse_log(
        f'"Date Time, GMT+01:00";"Power (W)"\n03/14/25 15:15:30;100,5\n03/14/25 15:15:31;101,5\n'
    )
    assert log.samples == [(utc(14, 15, 30), 100.5), (utc(14, 15, 31), 101.5)]


def test_no_valid_rows():
    log = parse_log("hello\nworld\n")
    assert log.samples == []
    e, why = integrate_log(log, 0, 1)
    assert e is None and "no valid" in why


def test_clock_offset_aligns_a_meter_that_runs_behind(tmp_path):
    host_start = 1_741_961_730.0
    # Meter clock 10 s behind the host: its rows say t - 10.
    rows = [(host_start - 10 + i, 120.0) for i in range(-5, 25)]  # host -15 .. +14
    path = tmp_path / "log.csv"
    path.write_text(epoch_csv(rows))
    r = reading_for_window(path, host_start, host_start + 18)
    assert r.energy_j is None and "covers" in r.missing
    r = reading_for_window(path, host_start, host_start + 18, clock_offset_s=10)
    assert r.energy_j == pytest.approx(120 * 18)
    assert r.source == "meter-log" and r.scope == "system" and r.measured


def test_meter_start_stop_against_a_live_log(tmp_path):
    now = time.time()
    path = tmp_path / "live.csv"
    path.write_text(epoch_csv([(now - 5 + 0.5 * i, 90.0) for i in range(40)]))
    meter = choose_meter("auto", meter_log=str(path))
    assert meter.name == "meter-log"
    meter.start()
    time.sleep(0.2)
    r = meter.stop()
    assert r.energy_j == pytest.approx(90.0 * (meter.wall_end - meter.wall_start))
    assert r.assumptions["duplicates"] == "first row kept"


def test_log_that_does_not_exist_or_not_given(tmp_path):
    with pytest.raises(EnergyError, match="give --meter-log FILE"):
        choose_meter("meter-log")
    with pytest.raises(EnergyError, match="not found"):
        choose_meter("meter-log", meter_log=str(tmp_path / "none.csv"))
    meter = MeterLogMeter(tmp_path / "later.csv")
    meter.start()
    r = meter.stop()  # e.g. the log was never exported
    assert r.energy_j is None and "later.csv" in r.missing


def test_drive_scope_for_a_rail_meter(tmp_path):
    t0 = 1_741_961_730.0
    path = tmp_path / "rail.csv"
    path.write_text(epoch_csv([(t0 + i, 2.5) for i in range(10)]))
    r = reading_for_window(path, t0, t0 + 9, scope="drive")
    assert r.scope == "drive" and r.energy_j == pytest.approx(22.5)
    with pytest.raises(EnergyError, match="scope"):
        MeterLogMeter(path, scope="ssd-only")


cell = st.one_of(
    st.text(max_size=12),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-10, max_value=2_000_000_000_000).map(str),
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)).map(
        lambda d: d.strftime("%m/%d/%y %I:%M:%S %p")
    ),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)).map(
        datetime.isoformat
    ),
    st.sampled_from(["Date Time, GMT-05:00", "Watts", "Active Power, W", "timestamp", "#", ""]),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.lists(cell, max_size=5), max_size=25),
    delim=st.sampled_from([",", ";", "\t"]),
    start=st.floats(min_value=-1e10, max_value=1e11),
    length=st.floats(min_value=0, max_value=1e5),
)
def test_any_csv_gives_energy_or_a_missing_reason(rows, delim, start, length):
    text = "\n".join(delim.join(r) for r in rows)
    log = parse_log(text)
    e, why = integrate_log(log, start, start + length)
    assert (e is None) != (why is None)
    if why is not None:
        assert "\n" not in why
    else:
        assert e >= 0


@given(text=st.text(max_size=600))
def test_any_text_never_raises(text):
    log = parse_log(text)
    e, why = integrate_log(log, 1.7e9, 1.7e9 + 10)
    assert (e is None) != (why is None)


@given(
    a=st.floats(min_value=0, max_value=2000),
    b=st.floats(min_value=-5, max_value=5),
    dt=st.floats(min_value=0.25, max_value=2.0),
    n=st.integers(min_value=3, max_value=120),
    u=st.floats(min_value=0, max_value=1),
    v=st.floats(min_value=0, max_value=1),
    shuffle=st.randoms(use_true_random=False),
)
def test_linear_power_integrates_to_the_analytic_value(a, b, dt, n, u, v, shuffle):
    t0 = 1_741_961_730.0
    span = (n - 1) * dt
    # Keep power non-negative over the log (a meter never reports negative watts).
    b = max(b, -a / span)
    rows = [(t0 + i * dt, max(0.0, a + b * i * dt)) for i in range(n)]
    shuffle.shuffle(rows)  # order in the file must not matter
    log = parse_log(epoch_csv(rows))
    lo, hi = sorted((u * span, v * span))
    start, end = t0 + lo, t0 + hi
    e, why = integrate_log(log, start, end, max_gap_s=dt * 1.01)
    assert why is None
    lo, hi = start - t0, end - t0  # the window as the epoch floats really hold it
    expected = a * (hi - lo) + b * (hi**2 - lo**2) / 2
    # Epoch floats near 1.7e9 resolve ~2.4e-7 s: allow that much time at peak power.
    peak_w = a + abs(b) * span
    assert e == pytest.approx(expected, rel=1e-9, abs=1e-6 * (peak_w + 1))


def test_hostile_bytes_do_not_break_the_parser():
    t0 = 1_741_961_730
    text = f'a\x00b,1\n{"x" * 200_000},5\n{t0},5\n{t0 + 1},"6\n'
    log = parse_log(text)  # a field beyond csv.field_size_limit() and an unclosed quote
    assert log.samples[0] == (t0, 5.0)
