"""The yearly energy arithmetic (fsadvisor.predict.cost): hand-computed cases and properties."""

import math

import pytest
from hypothesis import assume, given, settings, strategies as st

from fsadvisor.predict.cost import (
    HOURS_PER_YEAR,
    Tariff,
    average_power_w,
    kwh_per_year,
    saving,
    yearly,
)


def test_hours_per_year_is_the_mean_calendar_year():
    assert HOURS_PER_YEAR == 365.25 * 24


def test_average_power_below_capacity_by_hand():
    # 40 W idle, 60 W busy, capacity 50,000 ops/s, load 20,000: busy 40% of the time
    # -> 40 + (60 - 40) x 0.4 = 48 W.
    assert average_power_w(40.0, 60.0, 50_000, 20_000) == pytest.approx((48.0, 0.4, True))


def test_average_power_at_and_above_capacity_by_hand():
    assert average_power_w(40.0, 60.0, 20_000, 20_000) == pytest.approx((60.0, 1.0, True))
    assert average_power_w(40.0, 60.0, 10_000, 20_000) == pytest.approx((60.0, 1.0, False))
    assert average_power_w(40.0, 60.0, 0.0, 1.0) == (60.0, 1.0, False)


def test_zero_load_is_idle_and_a_busy_power_below_idle_counts_as_idle():
    assert average_power_w(40.0, 60.0, 50_000, 0.0)[0] == 40.0
    assert average_power_w(40.0, 30.0, 50_000, 25_000)[0] == 40.0


def test_kwh_and_cost_per_year_by_hand():
    # 48 W x 8766 h = 420.768 kWh per server; x 10 servers x PUE 1.4 = 5,890.752 kWh;
    # at 0.30 per kWh: 1,767.2256.
    assert kwh_per_year(48.0) == pytest.approx(420.768)
    y = yearly(
        40.0,
        60.0,
        (60.0, 60.0),
        50_000,
        (50_000, 50_000),
        Tariff(load=20_000, price_per_kwh=0.30, servers=10, pue=1.4),
    )
    assert y.avg_watts == pytest.approx(48.0)
    assert y.kwh == pytest.approx(5890.752)
    assert y.cost == pytest.approx(1767.2256)
    assert y.sustains


def test_the_interval_pairs_low_power_with_high_capacity_by_hand():
    # busy 50..80 W, capacity 25k..100k, load 20k: low end 40 + 10 x 0.2 = 42 W,
    # high end 40 + 40 x 0.8 = 72 W.
    y = yearly(40.0, 60.0, (50.0, 80.0), 50_000, (25_000, 100_000), Tariff(load=20_000))
    assert y.avg_watts_90 == pytest.approx((42.0, 72.0))
    assert y.kwh_90 == pytest.approx((42.0 * 8.766, 72.0 * 8.766))
    assert y.cost is None and y.cost_90 is None


def test_saving_by_hand():
    t = Tariff(load=20_000, price_per_kwh=0.5)
    a = yearly(40.0, 60.0, (60.0, 60.0), 50_000, (50_000, 50_000), t)  # 48 W
    b = yearly(40.0, 60.0, (60.0, 60.0), 100_000, (100_000, 100_000), t)  # 44 W
    s = saving(a, b)
    assert s["kwh_per_year"] == pytest.approx(4.0 * 8.766)
    assert s["cost_per_year"] == pytest.approx(4.0 * 8.766 * 0.5)
    assert s["kwh_per_year_range"] == pytest.approx([4.0 * 8.766, 4.0 * 8.766])


watts = st.floats(min_value=0.0, max_value=2000.0, allow_nan=False)
positive = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False)
loads = st.floats(min_value=0.0, max_value=1e10, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(
    idle=watts,
    busy=watts,
    cap=positive,
    a=loads,
    b=loads,
    w_lo=watts,
    w_hi=watts,
    c_lo=positive,
    c_hi=positive,
)
def test_more_load_never_means_less_energy(idle, busy, cap, a, b, w_lo, w_hi, c_lo, c_hi):
    lo_load, hi_load = sorted((a, b))
    assert (
        average_power_w(idle, busy, cap, lo_load)[0] <= average_power_w(idle, busy, cap, hi_load)[0]
    )
    y_lo = yearly(
        idle, busy, (w_lo, w_hi), cap, (c_lo, c_hi), Tariff(load=lo_load, price_per_kwh=0.3)
    )
    y_hi = yearly(
        idle, busy, (w_lo, w_hi), cap, (c_lo, c_hi), Tariff(load=hi_load, price_per_kwh=0.3)
    )
    assert y_lo.kwh <= y_hi.kwh
    assert y_lo.kwh_90[0] <= y_hi.kwh_90[0] and y_lo.kwh_90[1] <= y_hi.kwh_90[1]
    assert y_lo.cost <= y_hi.cost


@settings(max_examples=300, deadline=None)
@given(
    idle=watts,
    busy=watts,
    cap=positive,
    load=loads,
    w_lo=watts,
    w_hi=watts,
    c_lo=positive,
    c_hi=positive,
)
def test_power_lies_between_idle_and_busy_and_inside_its_interval(
    idle, busy, cap, load, w_lo, w_hi, c_lo, c_hi
):
    p, util, ok = average_power_w(idle, busy, cap, load)
    assert idle - 1e-9 <= p <= max(idle, busy) + 1e-9
    assert 0.0 <= util <= 1.0 and ok == (load <= cap)
    y = yearly(idle, busy, (w_lo, w_hi), cap, (c_lo, c_hi), Tariff(load=load))
    assert y.avg_watts_90[0] <= y.avg_watts <= y.avg_watts_90[1]
    assert all(math.isfinite(x) for x in (*y.kwh_90, y.kwh))
