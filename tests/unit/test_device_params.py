"""Fitting one device's parameters from its raw-device runs (catalog/device_params.py), with
hand-made numbers whose answer is known, and the monotone property of the ceilings."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from fsadvisor.predict.device_fit import LOG_SD_FLOOR, SINGLE_RUN_LOG_SD, RawRun, fit_device_params
from fsadvisor.catalog.device_params import (
    DEVICE_KEYS,
    HOST_KEYS,
    HOST_PRIOR_LOG_SD,
    PARAM_KEYS,
    PRIOR_LOG_SD,
    prior_params,
)

DEVICES = {
    "nvme": {
        "read_iops_cap": 1e6,
        "write_iops_cap": 1e6,
        "read_bw_bytes_s": 7e9,
        "write_bw_bytes_s": 6e9,
        "read_latency_us": 80.0,
        "write_latency_us": 20.0,
        "flush_latency_us_plp": 25.0,
        "flush_latency_us": 360.0,
        "parallelism": 256,
    },
    "loop": {
        "read_iops_cap": 60e3,
        "write_iops_cap": 60e3,
        "read_bw_bytes_s": 1.5e9,
        "write_bw_bytes_s": 1e9,
        "read_latency_us": 100.0,
        "write_latency_us": 100.0,
        "flush_latency_us_plp": 200.0,
        "flush_latency_us": 500.0,
        "parallelism": 64,
    },
}

# The device these runs come from: 100 us per 4K read at QD1, a 50k IOPS read ceiling, so
# an internal parallelism of 50,000 x 100e-6 = 5; writes 40 us and 20k IOPS; a flush of
# 460 us (500 us per write+fsync minus the 40 us write); 2 GB/s reads, 800 MB/s writes.
READ_CAP, READ_LAT_US, WRITE_LAT_US, WRITE_CAP, FLUSH_US = 50_000.0, 100.0, 40.0, 20_000.0, 460.0
PAR = READ_CAP * READ_LAT_US * 1e-6
JITTER = (0.98, 1.0, 1.02)  # three reps, +-2%


def sweep_iops(c: int) -> float:
    return READ_CAP * ((PAR / c) ** 4 + 1) ** -0.25


def device_runs() -> list[RawRun]:
    runs, rid = [], 0

    def add(**kw):
        nonlocal rid
        for j in JITTER:
            rid += 1
            r = dict(kw)
            r["iops"] *= j
            if r.get("bw_bytes_s"):
                r["bw_bytes_s"] *= j
            runs.append(RawRun(run_id=rid, **r))

    for qd in (1, 4, 16, 32, 64):
        add(rw="randread", bs_bytes=4096, iodepth=qd, iops=sweep_iops(qd))
    add(rw="randwrite", bs_bytes=4096, iodepth=1, iops=1e6 / WRITE_LAT_US)
    add(rw="randwrite", bs_bytes=4096, iodepth=32, iops=WRITE_CAP)
    add(
        rw="randwrite",
        bs_bytes=4096,
        iodepth=1,
        fsync_every=1,
        iops=1e6 / (WRITE_LAT_US + FLUSH_US),
    )
    add(rw="read", bs_bytes=128 << 10, iodepth=8, iops=2e9 / (128 << 10), bw_bytes_s=2e9)
    add(rw="write", bs_bytes=128 << 10, iodepth=8, iops=8e8 / (128 << 10), bw_bytes_s=8e8)
    # the same writes from two jobs: a device with its own limit moves a little more at most
    add(
        rw="write",
        bs_bytes=128 << 10,
        iodepth=8,
        numjobs=2,
        iops=8.2e8 / (128 << 10),
        bw_bytes_s=8.2e8,
    )
    return runs


def test_fit_recovers_the_known_device():
    p = fit_device_params(device_runs(), "loop", DEVICES, device_id="loop:test")
    v = p.values
    assert v["read_latency_us"] == pytest.approx(1e6 / sweep_iops(1), rel=0.01)
    assert v["read_latency_us"] == pytest.approx(READ_LAT_US, rel=0.01)
    assert v["write_latency_us"] == pytest.approx(WRITE_LAT_US, rel=0.01)
    # the ceiling is the best deep cell: QD64 of the sweep, within 0.1% of the cap
    assert v["read_iops_cap"] == pytest.approx(sweep_iops(64), rel=0.01)
    assert v["write_iops_cap"] == pytest.approx(WRITE_CAP, rel=0.01)
    assert v["read_bw_bytes_s"] == pytest.approx(2e9, rel=0.01)
    assert v["write_bw_bytes_s"] == pytest.approx(8e8, rel=0.01)  # one job's, per submitter
    assert v["bw_submitters"] == pytest.approx(8.2 / 8, rel=0.01)
    assert v["flush_latency_us"] == pytest.approx(FLUSH_US, rel=0.02)
    assert v["flush_latency_us_plp"] == v["flush_latency_us"]
    assert v["parallelism"] == pytest.approx(PAR, rel=0.05)
    assert p.measured and p.n_runs == len(device_runs())
    # the runs measure every key of the device; the host's are measured apart (host/cpu.py),
    # so without its figures they stay at the reference machine's prior
    # (and the sweep's shape: sharp, as the sweep was made)
    assert set(p.details["measured"]) == set(DEVICE_KEYS) | {"knee_power"}
    assert v["knee_power"] == 4.0
    assert set(p.details["not_measured"]) == set(HOST_KEYS)
    assert p.source.startswith(
        "calibrated: 10 of 10 device parameters fitted on 33 raw-device runs; "
        "host CPU: the reference machine's (not measured)"
    )
    assert "queueing shape measured" in p.source
    assert p.kind == "loop" and p.device_id == "loop:test"


def test_sd_comes_from_the_repetitions_and_is_floored():
    p = fit_device_params(device_runs(), "loop", DEVICES)
    logs = [math.log(0.98), 0.0, math.log(1.02)]
    m = sum(logs) / 3
    sd = (sum((x - m) ** 2 for x in logs) / 2) ** 0.5 / 3**0.5
    assert sd < LOG_SD_FLOOR  # +-2% reps: the floor applies
    assert p.log_sd["read_latency_us"] == pytest.approx(LOG_SD_FLOOR)
    noisy = [RawRun("randread", 4096, iops=i, run_id=n) for n, i in enumerate((8000, 10000, 12500))]
    q = fit_device_params(noisy, "loop", DEVICES)
    logs = [math.log(x) for x in (8000, 10000, 12500)]
    m = sum(logs) / 3
    want = (sum((x - m) ** 2 for x in logs) / 2) ** 0.5 / 3**0.5
    assert q.log_sd["read_latency_us"] == pytest.approx(want)
    assert q.values["read_latency_us"] == pytest.approx(100.0, rel=1e-9)  # geometric mean
    single = fit_device_params([RawRun("randread", 4096, iops=10000)], "loop", DEVICES)
    assert single.log_sd["read_latency_us"] == SINGLE_RUN_LOG_SD


def test_unmeasured_keys_stay_at_the_prior_with_its_wide_sd():
    runs = [
        RawRun("randread", 4096, iops=10000, run_id=1),
        RawRun("randread", 4096, iops=10100, run_id=2),
    ]
    p = fit_device_params(runs, "loop", DEVICES)
    prior = prior_params("loop", DEVICES)
    assert p.details["measured"] == ["read_latency_us"]
    for k in PARAM_KEYS:
        if k != "read_latency_us":
            wide = HOST_PRIOR_LOG_SD[k] if k in HOST_KEYS else PRIOR_LOG_SD
            assert p.values[k] == prior.values[k] and p.log_sd[k] == wide
    assert "prior (models/devices.toml [loop]) for" in p.source and "write_iops_cap" in p.source
    assert p.details["run_ids"] == [1, 2]


def test_no_usable_runs_is_the_prior():
    p = fit_device_params([RawRun("filecreate", 4096, iops=500)], "nvme", DEVICES)
    prior = prior_params("nvme", DEVICES)
    assert (p.values, p.log_sd, p.source) == (prior.values, prior.log_sd, prior.source)
    assert not p.measured and p.details["measured"] == []


def test_flush_without_a_plain_write_is_not_guessed():
    runs = [RawRun("randwrite", 4096, iodepth=1, fsync_every=1, iops=2000)]
    p = fit_device_params(runs, "loop", DEVICES)
    assert "flush_latency_us" not in p.details["measured"]


def test_a_free_flush_is_floored_not_negative():
    runs = [
        RawRun("randwrite", 4096, iops=25000),
        RawRun("randwrite", 4096, fsync_every=1, iops=26000),
    ]
    p = fit_device_params(runs, "loop", DEVICES)
    assert p.values["flush_latency_us"] == 1.0


def test_parallelism_needs_a_knee():
    # Linear in queue depth up to 64: no saturation, so P is not determined.
    runs = [RawRun("randread", 4096, iodepth=qd, iops=qd * 1e4) for qd in (1, 4, 16, 64)]
    p = fit_device_params(runs, "loop", DEVICES)
    assert "parallelism" not in p.details["measured"]
    two = [RawRun("randread", 4096, iodepth=qd, iops=1e4) for qd in (1, 32)]
    assert "parallelism" not in fit_device_params(two, "loop", DEVICES).details["measured"]


def test_raw_run_from_a_store_row():
    row = {
        "configuration_id": None,
        "run_id": 7,
        "iops": 1000.0,
        "mb_s": 4.096,
        "mean_latency_us": 950.0,
        "workload": {
            "rw": "randwrite",
            "bs_bytes": 4096,
            "iodepth": 1,
            "numjobs": 1,
            "fsync_every": 1,
        },
    }
    r = RawRun.from_store_row(row)
    assert r == RawRun(
        "randwrite",
        4096,
        iops=1000.0,
        fsync_every=1,
        mean_latency_us=950.0,
        bw_bytes_s=4.096e6,
        run_id=7,
    )
    assert RawRun.from_store_row({**row, "configuration_id": 3}) is None
    assert RawRun.from_store_row({**row, "iops": None}) is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(1e3, 1e6), min_size=1, max_size=4),
    st.sampled_from((8, 16, 32, 64)),
    st.floats(1.0, 10.0),
    st.integers(0, 3),
)
def test_more_measured_iops_never_lowers_the_cap(reps, qd, factor, which):
    base = [RawRun("randread", 4096, iodepth=qd, iops=x) for x in reps]
    base += [
        RawRun("randread", 4096, iodepth=1, iops=5e3),
        RawRun("randwrite", 4096, iodepth=qd, iops=reps[0]),
    ]
    before = fit_device_params(base, "nvme", DEVICES)
    i = which % len(reps)
    raised = list(base)
    raised[i] = RawRun("randread", 4096, iodepth=qd, iops=reps[i] * factor)
    after = fit_device_params(raised, "nvme", DEVICES)
    assert after.values["read_iops_cap"] >= before.values["read_iops_cap"] * (1 - 1e-12)
    # a new, faster deep cell can only raise it too
    extra = fit_device_params(
        base + [RawRun("randread", 4096, iodepth=2 * qd, iops=max(reps) * factor)], "nvme", DEVICES
    )
    assert extra.values["read_iops_cap"] >= before.values["read_iops_cap"] * (1 - 1e-12)


def test_cpu_per_read_comes_from_the_ceiling_cell_of_one_job():
    # fio's own threads 21.5% busy and the host 22.3% (of 2 CPUs) at 75,000 random reads a
    # second at QD32 (the disk-backed loop's raw run): 2.9 us of the submitting thread per
    # read and 5.9 us of the host's CPUs. The QD16 cell (below the ceiling) and a cell of 4
    # jobs (fio's figure of a group is not one thread's) do not count.
    runs = [
        RawRun(
            rw="randread",
            bs_bytes=4096,
            iodepth=32,
            iops=75_000.0 * j,
            thread_cpu_pct=21.5,
            host_cpu_busy_pct=22.3,
            run_id=i,
        )
        for i, j in enumerate(JITTER)
    ]
    runs += [
        RawRun(
            rw="randread",
            bs_bytes=4096,
            iodepth=16,
            iops=60_000.0,
            thread_cpu_pct=90.0,
            host_cpu_busy_pct=90.0,
        ),
        RawRun(
            rw="randread",
            bs_bytes=4096,
            iodepth=8,
            numjobs=4,
            iops=70_000.0,
            thread_cpu_pct=300.0,
            host_cpu_busy_pct=95.0,
        ),
    ]
    p = fit_device_params(
        runs, "loop", DEVICES, "dev", host={"host_cpu_factor": 1.0, "host_cores": 2.0}
    )
    assert p.values["submit_cpu_us_read"] == pytest.approx(0.215 * 1e6 / 75_000, rel=0.03)
    assert p.values["host_cpu_us_read"] == pytest.approx(0.223 * 2 * 1e6 / 75_000, rel=0.03)
    assert {"submit_cpu_us_read", "host_cpu_us_read"} <= set(p.details["measured"])
    assert "CPU per raw read measured" in p.source
    # without CPU figures (an import, an older store) nothing is guessed
    bare = fit_device_params(device_runs(), "loop", DEVICES, "dev")
    assert "submit_cpu_us_read" not in bare.values and "host_cpu_us_read" not in bare.values


def test_raw_run_reads_its_cpu_from_a_store_row():
    row = {
        "configuration_id": None,
        "iops": 1000.0,
        "workload": {"rw": "randread"},
        "usr_cpu_pct": 2.9,
        "sys_cpu_pct": 18.6,
        "host_cpu_busy_pct": 22.3,
    }
    r = RawRun.from_store_row(row)
    assert r is not None and r.thread_cpu_pct == pytest.approx(21.5)
    assert r.host_cpu_busy_pct == 22.3
    assert RawRun.from_store_row({**row, "sys_cpu_pct": None}).thread_cpu_pct is None


def test_a_gradual_knee_is_measured_and_the_roofline_follows_it():
    """A device that serves one I/O at a time behind a fixed delay (a loop device on a file:
    each extra I/O in flight waits one ceiling-time, c / (latency + (c - 1) / cap)) bends
    long before cap x latency. The sharp knee fitted to such a sweep misses its middle by a
    third; the measured shape (knee_power about 1) follows the sweep at every depth, and stays
    anchored at the QD1 latency."""
    from fsadvisor.domain import Workload
    from fsadvisor.predict.mechanisms import roofline

    lat, cap = 70.0, 68_000.0

    def gradual(c: int) -> float:
        return c / (lat + (c - 1) * 1e6 / cap) * 1e6

    wlat = 120.0

    def gradual_w(c: int) -> float:
        return c / (wlat + (c - 1) * 1e6 / 120_000.0) * 1e6

    runs = [
        RawRun("randread", 4096, iodepth=qd, iops=gradual(qd) * j, run_id=10 * qd + i)
        for qd in (1, 4, 16, 32, 64)
        for i, j in enumerate(JITTER)
    ]
    runs += [
        RawRun("randwrite", 4096, iodepth=qd, iops=gradual_w(qd) * j, run_id=1000 + 10 * qd + i)
        for qd in (1, 32)
        for i, j in enumerate(JITTER)
    ]
    p = fit_device_params(runs, "loop", DEVICES)
    assert p.values["knee_power"] == 1.0
    # The best deep cell (QD64) is 6% under the asymptote the sweep tends to; the fitted
    # ceiling is that asymptote (within the jitter's 2%), so the curve passes through the
    # cell it was measured at. The writes (QD1 and QD32 only) take the reads' shape, and
    # their ceiling is lifted the same way: 120k, where their QD32 cell ran at 79k.
    assert p.values["read_iops_cap"] == pytest.approx(cap, rel=0.02)
    assert p.values["write_iops_cap"] == pytest.approx(120_000.0, rel=0.02)
    assert "lifted to its knee's asymptote" in p.details["cells"]["read_iops_cap"]["cell"]
    for qd in (1, 4, 16, 32, 64):
        w = Workload(rw="randread", bs_bytes=4096, iodepth=qd)
        got, _ = roofline(w, p.values)
        # within 3%: the jitter of the runs (+-2%) and the soft minimum's join
        assert got == pytest.approx(gradual(qd), rel=0.03), qd
    for qd in (1, 32):
        got, _ = roofline(Workload(rw="randwrite", bs_bytes=4096, iodepth=qd), p.values)
        assert got == pytest.approx(gradual_w(qd), rel=0.03), qd
    sharp = dict(p.values)
    del sharp["knee_power"]
    got4, _ = roofline(Workload(rw="randread", bs_bytes=4096, iodepth=4), sharp)
    assert got4 > 1.3 * gradual(4)


def test_a_sweep_that_has_not_bent_does_not_extrapolate_its_ceiling():
    """A fast drive's sweep still nearly linear at its deepest cell (QD1 10k ... QD32 305k)
    may fit the gradual shape, but its ceiling is not where a straight line would put it:
    at most MAX_LIFT x the best cell, with the extrapolation in its spread, and the lift is
    continuous in the cell's rate (no jump at a bound)."""
    from fsadvisor.predict.device_fit import MAX_LIFT, _asymptote

    sweep = {1: 10_000, 4: 39_500, 16: 155_000, 32: 305_000}
    runs = [
        RawRun("randread", 4096, iodepth=qd, iops=v * j, run_id=10 * qd + i)
        for qd, v in sweep.items()
        for i, j in enumerate(JITTER)
    ]
    p = fit_device_params(runs, "loop", DEVICES)
    top = p.values["read_iops_cap"]
    assert 305_000 * 0.97 <= top <= MAX_LIFT * 305_000 * 1.03
    if top > 305_000 * 1.05:
        assert p.log_sd["read_iops_cap"] >= math.log(top / 305_000 / 1.03)
    lifts = [_asymptote(r, 32, 100.0, 1.0) / r for r in (314_000, 315_000, 315_500, 316_000)]
    assert all(1.0 <= x <= MAX_LIFT for x in lifts)
    assert max(lifts) - min(lifts) < 0.05, lifts
    # a cell no faster than one I/O at a time is no knee to lift
    assert _asymptote(8_000, 32, 120.0, 1.0) == 8_000
