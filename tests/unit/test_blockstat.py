"""The probe's live block-layer reading (fsadvisor/host/blockstat.py): rates from two stat
readings of 11-, 15- and 17-field kernels, and the sampler thread that reports them."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings, strategies as st

from fsadvisor.host import blockstat
from fsadvisor.host.device import parse_stat

COUNTER = st.integers(0, 2**48)


def stat_text(values: list[int], n: int) -> str:
    # the kernel right-aligns each counter in a padded column (genhd.c's "%8lu" fields)
    return " ".join(f"{v:>8}" for v in values[:n]) + "\n"


@settings(max_examples=300, deadline=None)
@given(
    n=st.sampled_from([11, 15, 17]),
    before=st.lists(COUNTER, min_size=17, max_size=17),
    grow=st.lists(st.integers(0, 10**7), min_size=17, max_size=17),
    interval_s=st.floats(0.01, 10.0),
)
def test_rates_are_completed_read_plus_write_ios_and_bytes_per_second(n, before, grow, interval_s):
    after = [b + g for b, g in zip(before, grow)]
    rate = blockstat.block_rate(
        parse_stat(stat_text(before, n)), parse_stat(stat_text(after, n)), interval_s
    )
    # stat.rst field order: 1 read I/Os, 3 read sectors, 5 write I/Os, 7 write sectors
    assert rate.iops == pytest.approx((grow[0] + grow[4]) / interval_s)
    assert rate.bw_bytes_s == pytest.approx((grow[2] + grow[6]) * 512 / interval_s)
    assert rate.interval_s == interval_s


@settings(max_examples=100, deadline=None)
@given(
    n=st.sampled_from([11, 15, 17]),
    values=st.lists(COUNTER.filter(bool), min_size=17, max_size=17),
    which=st.sampled_from([0, 2, 4, 6]),
)
def test_a_counter_that_went_backwards_or_no_time_gives_no_rate(n, values, which):
    before = parse_stat(stat_text(values, n))
    back = list(values)
    back[which] -= 1  # the device was re-created between the readings
    assert blockstat.block_rate(before, parse_stat(stat_text(back, n)), 1.0) is None
    assert blockstat.block_rate(before, before, 0.0) is None


def test_discards_and_flushes_are_not_read_or_write_ios():
    z = [0] * 17
    more = list(z)
    more[11], more[13], more[15] = 500, 4000, 70  # discard I/Os, discard sectors, flushes
    rate = blockstat.block_rate(parse_stat(stat_text(z, 17)), parse_stat(stat_text(more, 17)), 1.0)
    assert rate.iops == 0 and rate.bw_bytes_s == 0


def test_the_sampler_reports_whole_intervals_with_measured_time_and_stops(tmp_path):
    """A fake clock and stat file: each rate is over the time the clock says passed between
    readings (a late wake-up is not counted as a second), and nothing arrives after stop()."""
    stat = tmp_path / "stat"
    ios = {"n": 0}
    clock = {"t": 100.0}
    got: list[blockstat.BlockRate] = []
    two = threading.Event()

    def read(path):
        ios["n"] += 3000
        clock["t"] += 1.5 if ios["n"] > 3000 else 0.0  # readings 1.5 s apart
        return stat_text([ios["n"]] + [0] * 16, 11)

    def on_rate(rate):
        got.append(rate)
        if len(got) >= 2:
            two.set()

    s = blockstat.BlockStatSampler(
        stat, on_rate, interval_s=0.01, clock=lambda: clock["t"], read=read
    )
    s.start()
    assert two.wait(5)
    s.stop()
    n = len(got)
    assert got[0].iops == pytest.approx(3000 / 1.5) and got[0].interval_s == pytest.approx(1.5)
    threading.Event().wait(0.05)
    assert len(got) == n and s.rates == got


def test_the_sampler_ends_quietly_when_the_stat_file_goes_away(tmp_path):
    s = blockstat.BlockStatSampler(tmp_path / "absent", lambda r: None, interval_s=0.01)
    s.start()
    s.stop()
    assert s.rates == []
    with pytest.raises(ValueError):
        blockstat.BlockStatSampler(tmp_path / "x", lambda r: None, interval_s=0)


def test_stat_file_names_a_whole_disk_under_sys_block():
    import os

    dev = next(
        (f"/dev/{n}" for n in sorted(os.listdir("/sys/block")) if os.path.exists(f"/dev/{n}")), None
    )
    if dev is None:
        pytest.skip("no block device with a /dev node here")
    path, label = blockstat.stat_file(dev)
    assert label == f"/sys/block/{os.path.basename(dev)}/stat" and path.is_file()
