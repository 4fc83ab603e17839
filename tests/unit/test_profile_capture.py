"""profiles/capture: /proc/diskstats parsing and the arithmetic of a capture, and the
service's two-sample capture against a fake diskstats file."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.errors import FsAdvisorError
from fsadvisor.profiles import capture as cap
from fsadvisor.service import advice
from fsadvisor.service.capture import capture

# A real line (kernel 6.x, 20 fields: with discard and flush counters)
LINE = " 253       0 vda 14637 4113 1137306 5396 52127 41316 2290904 50611 0 73468 62432 0 0 0 0 8113 6424"


def test_parses_the_classic_fields():
    s = cap.parse_diskstats(LINE + "\n   7  0 loop0 0 0 0 0 0 0 0 0 0 0 0\n short line\n")
    assert s["vda"] == cap.DiskStats(
        reads=14637,
        read_sectors=1137306,
        writes=52127,
        write_sectors=2290904,
        in_flight=0,
        io_ticks_ms=73468,
        time_in_queue_ms=62432,
    )
    assert set(s) == {"vda", "loop0"}


counters = st.integers(0, 10**12)


@given(
    st.lists(counters, min_size=11, max_size=17),
    st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12),
)
@settings(max_examples=100)
def test_parse_round_trips_any_counter_line(fields, name):
    line = f"8 0 {name} " + " ".join(map(str, fields))
    s = cap.parse_diskstats(line)[name]
    assert (
        s.reads,
        s.read_sectors,
        s.writes,
        s.write_sectors,
        s.io_ticks_ms,
        s.time_in_queue_ms,
    ) == (fields[0], fields[2], fields[4], fields[6], fields[9], fields[10])


@given(
    r=st.integers(0, 10**6),
    w=st.integers(0, 10**6),
    rs=st.integers(1, 256),
    ws=st.integers(1, 256),
    q=st.integers(0, 10**7),
    secs=st.floats(0.1, 3600),
)
@settings(max_examples=200)
def test_measure_is_the_delta(r, w, rs, ws, q, secs):
    a = cap.DiskStats(5, 40, 7, 56, 0, 100, 200)
    b = cap.DiskStats(
        5 + r, 40 + r * rs, 7 + w, 56 + w * ws, 0, 100 + min(q, int(secs * 1000)), 200 + q
    )
    m = cap.measure(a, b, secs)
    assert m.ios == r + w and m.iops == pytest.approx((r + w) / secs)
    if r:
        assert m.mean_read_bytes == pytest.approx(rs * 512)
    if w:
        assert m.mean_write_bytes == pytest.approx(ws * 512)
    assert m.effective_queue_depth == pytest.approx(q / (secs * 1000))
    assert 0 <= m.read_pct <= 100 and 0 <= m.utilisation <= 1


def test_counters_going_backwards_and_no_io_are_errors():
    a = cap.DiskStats(10, 80, 10, 80, 0, 10, 10)
    with pytest.raises(FsAdvisorError, match="went backwards"):
        cap.measure(a, cap.DiskStats(9, 80, 10, 80, 0, 10, 10), 1.0)
    with pytest.raises(FsAdvisorError, match="did no I/O"):
        cap.to_profile(cap.measure(a, a, 1.0), "x", "/dev/x")


def test_profile_from_a_mix_rounds_sizes_and_depth_and_lists_assumptions():
    a = cap.DiskStats(0, 0, 0, 0, 0, 0, 0)
    # 700 reads of 16 KiB, 300 writes of 16 KiB in 2 s, 5,000 ms in flight: 2.5 on average
    b = cap.DiskStats(700, 700 * 32, 300, 300 * 32, 0, 1900, 5000)
    prof, assumptions = cap.to_profile(cap.measure(a, b, 2.0), "db", "/dev/sdz")
    w = prof.workload
    assert (w.rw, w.rwmixread, w.bs_bytes, w.iodepth, w.numjobs) == ("randrw", 70, 16384, 3, 1)
    assert any("random" in x for x in assumptions) and any("fsync" in x for x in assumptions)
    assert "500 IOPS" in prof.description


def test_service_capture_writes_a_profile_that_loads(tmp_path):
    stats = tmp_path / "diskstats"
    samples = iter(
        [
            "8 0 sdz 0 0 0 0 0 0 0 0 0 0 0\n",
            f"8 0 sdz 1000 0 {1000 * 8} 0 1000 0 {1000 * 128} 0 0 1500 3000\n",
        ]
    )
    stats.write_text(next(samples))
    out = tmp_path / "p.toml"
    r = capture(
        "/dev/sdz",
        1.0,
        out=str(out),
        diskstats=str(stats),
        sleep=lambda s: stats.write_text(next(samples)),
    )
    assert r["read_pct"] == 50 and r["mean_read_bytes"] == 4096 and r["mean_write_bytes"] == 65536
    text = out.read_text()
    assert text.startswith("# captured by fsadvisor profiles capture; ASSUMPTIONS to confirm:")
    p = advice.get_profile(str(out))
    assert p.name == "captured-sdz" and p.workload.rwmixread == 50
    assert p.workload.bs_bytes == (4096 + 65536) // 2


def test_service_capture_refuses_an_unknown_device_and_a_bad_interval(tmp_path):
    stats = tmp_path / "diskstats"
    stats.write_text(LINE + "\n")
    with pytest.raises(FsAdvisorError, match="nosuch is not in"):
        capture("nosuch", 1.0, diskstats=str(stats), sleep=lambda s: None)
    with pytest.raises(FsAdvisorError, match="--seconds must be between"):
        capture("vda", 0.0, diskstats=str(stats), sleep=lambda s: None)


def test_a_diskstats_line_with_a_counter_that_is_no_number_is_skipped():
    """benchmarks/fuzz_parsers.py found a ValueError traceback here."""
    good = "259 0 nvme0n1 100 0 800 10 5 0 40 2 0 20 12 0 0 0 0 0 0"
    bad = "259 1 nvme1n1 100 : 800 10 5 0 40 2 0 20 12 0 0 0 0 0 0"
    assert set(cap.parse_diskstats(f"{good}\n{bad}\n")) == {"nvme0n1"}
