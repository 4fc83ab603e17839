"""The what-if simulator: exact event sequences on tiny devices, calibration against the
model, queueing laws, and the CLI's output against a golden file. Real simpy throughout."""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import simpy
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from _golden import NUMBER, same_text
from fsadvisor.predict import sim
from fsadvisor.domain import Device, FsConfig, Workload
from fsadvisor.errors import FsAdvisorError
from fsadvisor.predict.settings import ModelSettings
from fsadvisor.predict.fit import fit

GOLDEN = Path(__file__).parent / "golden"
NVME = Device(path=None, size_bytes=1 << 40, kind="nvme")
XFS = FsConfig.make("xfs", ag_count=16)
# Postgres-like: 16 jobs, 70% random 8K reads, a commit every 8 writes (the oltp preset).
OLTP = Workload(
    rw="randrw",
    bs_bytes=8192,
    numjobs=16,
    iodepth=1,
    rwmixread=70,
    fsync_every=1,
    fsync_mode="per_transaction",
    direct=False,
)
NO_FSYNC = Workload(rw="randread", bs_bytes=4096, numjobs=4, iodepth=8)


@pytest.fixture(scope="module")
def model():
    # Prior-only: the simulator must agree with whatever the model says, fitted or not.
    return fit([], ModelSettings.load())


def fixed(
    channels: int, read_us: float = 10.0, write_us: float = 10.0, flush_us: float = 100.0
) -> sim.DeviceTimes:
    return sim.DeviceTimes(
        channels=channels, read_us=read_us, write_us=write_us, flush_us=flush_us, sigma=0.0
    )


# --------------------------------------------------------------------------- event sequences


def test_one_channel_one_client_serves_back_to_back():
    st_ = sim.run(fixed(1), [sim.JobSpec(read_frac=1.0)], requests=3, trace=True)
    assert st_.trace == [(10.0, 0, "read"), (20.0, 0, "read"), (30.0, 0, "read")]
    assert st_.sim_us == 30.0
    assert list(st_.latencies_us) == [10.0, 10.0, 10.0]
    assert st_.throughput_ops_s == pytest.approx(1e5)


def test_two_clients_share_one_channel_first_come_first_served():
    st_ = sim.run(fixed(1), [sim.JobSpec(read_frac=1.0)] * 2, requests=4, trace=True)
    assert st_.trace == [(10.0, 0, "read"), (20.0, 1, "read"), (30.0, 0, "read"), (40.0, 1, "read")]
    # job 1 waited 10 us for the channel the first time, then every request waits one service
    assert list(st_.latencies_us) == [10.0, 20.0, 20.0, 20.0]


def test_a_flush_neither_drains_nor_blocks_the_other_channels():
    # Job 0 writes and fsyncs every write; job 1 reads 30 us at a time on the other channel.
    # A flush makes the writes completed before it durable (the kernel's
    # writeback_cache_control.rst): the read in flight when it starts is not drained, and the
    # reads issued during it are not held back.
    times = fixed(2, read_us=30.0, write_us=10.0, flush_us=100.0)
    st_ = sim.run(
        times,
        [sim.JobSpec(read_frac=0.0, writes_per_flush=1), sim.JobSpec(read_frac=1.0)],
        requests=5,
        trace=True,
    )
    assert st_.trace == [
        (10.0, 0, "write"),
        (30.0, 1, "read"),  # in flight when the flush started at 10
        (60.0, 1, "read"),  # issued and done during the flush
        (90.0, 1, "read"),
        (110.0, 0, "flush"),  # 10 + 100, nothing waited for
        (120.0, 1, "read"),
    ]
    assert list(st_.flush_latencies_us) == [100.0]
    assert st_.device_flushes == 1 and st_.flush_busy_us == 100.0


def test_flushes_run_one_at_a_time_and_those_waiting_share_the_next():
    # Three writers fsync at 10: the first's flush starts at once; the other two wait for it
    # and are merged into one flush after it (blk-flush keeps pending flushes and issues them
    # as one), so three fsyncs cost two flushes. A reader on the fourth channel runs on.
    times = fixed(4, read_us=50.0, write_us=10.0, flush_us=100.0)
    jobs = [sim.JobSpec(read_frac=1.0)] + [sim.JobSpec(writes_per_flush=1)] * 3
    st_ = sim.run(times, jobs, requests=9, trace=True)
    assert st_.trace == [
        (10.0, 1, "write"),
        (10.0, 2, "write"),
        (10.0, 3, "write"),
        (50.0, 0, "read"),
        (100.0, 0, "read"),
        (110.0, 1, "flush"),
        (120.0, 1, "write"),  # job 1 goes on; its next fsync waits behind the merged flush
        (150.0, 0, "read"),
        (200.0, 0, "read"),
        (210.0, 2, "flush"),  # one flush, 110..210, for jobs 2 and 3
        (210.0, 3, "flush"),
        (220.0, 2, "write"),
    ]
    assert st_.device_flushes == 2
    assert list(st_.flush_latencies_us) == [100.0, 200.0, 200.0]


def test_a_metadata_op_is_two_writes():
    st_ = sim.run(fixed(1, write_us=7.0), [sim.JobSpec(meta_frac=1.0)], requests=2, trace=True)
    assert st_.trace == [(14.0, 0, "meta"), (28.0, 0, "meta")]


def test_bursts_leave_the_device_idle_and_busy_time_counts_only_work():
    job = sim.JobSpec(read_frac=1.0, burst=1, pause_us=10.0)
    st_ = sim.run(fixed(1), [job], requests=3, trace=True)
    assert [t for t, _, _ in st_.trace] == [10.0, 30.0, 50.0]
    assert st_.busy_us == 30.0 and st_.sim_us == 50.0
    assert st_.busy_channel_us == 30.0


def test_controller_stage_serialises_transfers():
    # Two channels, but one 5 us transfer stage: the second read waits for the first's transfer.
    times = sim.DeviceTimes(
        channels=2, read_us=10.0, write_us=10.0, flush_us=0.0, read_xfer_us=5.0, sigma=0.0
    )
    st_ = sim.run(times, [sim.JobSpec(read_frac=1.0)] * 2, requests=2, trace=True)
    assert st_.trace == [(15.0, 0, "read"), (20.0, 1, "read")]


def _claimers(channels: int):
    """A simpy environment with ``channels`` channels, the (name, grant time) list, and a
    process body that claims ``width`` channels at ``start_us``, holds them ``hold_us``."""
    env = simpy.Environment()
    ch = sim.Channels(env, channels)
    got: list[tuple[str, float]] = []

    def user(name, width, start_us, hold_us):
        yield env.timeout(start_us)
        c = ch.claim(width)
        yield c
        got.append((name, env.now))
        yield env.timeout(hold_us)
        ch.free(c)

    return env, ch, got, user


def test_channels_never_let_a_narrow_claim_overtake_a_wide_one():
    env, ch, got, user = _claimers(2)

    env.process(user("a", 1, 0, 10))
    env.process(user("barrier", 2, 1, 5))
    env.process(user("b", 1, 2, 1))  # a channel is free at 2, but the barrier is first in line
    env.run()
    assert got == [("a", 0), ("barrier", 10), ("b", 15)]
    assert ch.busy_channel_us == 10 + 2 * 5 + 1


# --------------------------------------------------------------------------- distributions


def test_default_spread_reproduces_seed_002_p99_over_mean():
    assert sim.SEED002_RAW_MEAN_US == pytest.approx(78.4, abs=0.1)
    st_ = sim.run(
        sim.DeviceTimes(channels=64, read_us=78.4, write_us=78.4, flush_us=0.0),
        [sim.JobSpec()] * 32,
        requests=60_000,
        seed=1,
    )
    p99 = float(sorted(st_.latencies_us)[int(0.99 * st_.ops)])
    assert p99 / float(st_.latencies_us.mean()) == pytest.approx(290 / 78.4, rel=0.05)
    assert float(st_.latencies_us.mean()) == pytest.approx(78.4, rel=0.02)


def test_p99_grows_once_concurrency_exceeds_the_channels():
    times = sim.DeviceTimes(channels=4, read_us=100.0, write_us=100.0, flush_us=0.0)
    p99, mean = {}, {}
    for clients in (1, 4, 8, 16):
        st_ = sim.run(times, [sim.JobSpec(read_frac=1.0)] * clients, requests=4000, seed=3)
        p99[clients] = float(sorted(st_.latencies_us)[int(0.99 * st_.ops)])
        mean[clients] = float(st_.latencies_us.mean())
    # Up to the channel count nobody queues: the same draws give the same latencies.
    assert p99[4] == pytest.approx(p99[1], rel=1e-9)
    # Beyond it the queue adds its wait: mean latency = clients / channels x service time
    # (Little's law, 100 us service), and the tail follows, less than in proportion.
    assert mean[8] == pytest.approx(2 * mean[4], rel=0.05)
    assert mean[16] == pytest.approx(4 * mean[4], rel=0.05)
    assert p99[8] > 1.25 * p99[4] and p99[16] > 1.4 * p99[8]


# --------------------------------------------------------------------------- against the model


def test_throughput_at_the_calibration_point_is_the_models(model):
    for w in (OLTP, NO_FSYNC, Workload(rw="filecreate", numjobs=8)):
        r = sim.simulate(model, XFS, w, NVME, requests=5000)
        cal = r.calibration
        # Exact when every time scales (scale >= 1); below 1 the controller stage stays at
        # the device's ceiling and the secant stops within SCALE_TOLERANCE.
        rel = 1e-6 if cal.scale >= 1.0 else sim.SCALE_TOLERANCE
        assert r.throughput_ops_s == pytest.approx(cal.model_iops, rel=rel)
        assert r.model_iops == pytest.approx(cal.model_iops)
        assert r.busy_fraction == pytest.approx(1.0)
        # the power line passes through the model's watts at the calibration point
        assert r.utilisation == pytest.approx(cal.utilisation)
        assert r.watts == pytest.approx(cal.model_watts)
        assert r.ops_per_joule == pytest.approx(cal.model_ops_per_joule, rel=rel)
        assert r.energy_source == "simulated from model" and r.power_model == "estimate"


def test_the_scale_is_found_where_the_secant_circles():
    """With fsyncs merged into one flush at a time, throughput is not monotone in the scale
    at the few-percent level: a secant alone circled short of the target (3.4% for oltp's
    16 fsyncing jobs on nvme, seed 7) and the calibration then blamed the device's ceiling,
    847,826 IOPS, ten times the target. The runs bracket the target; halving the bracket
    reaches it to the stated tolerance -- or, where the throughput steps across the target
    between two almost equal scales (this case on an earlier fit: 74.7k and 82.6k either
    side of 75.5k), the calibration says so with the step it saw, the nearest run is its
    point, and no ceiling is claimed that the device lacks."""
    from fsadvisor.service.simulate import simulate_what_if

    (r,) = simulate_what_if(
        '{"filesystem": "xfs", "ag_count": 16}', profile="oltp", device="nvme:1T", seed=7
    )
    cal = r.calibration
    assert not any("ceiling" in x for x in cal.warnings), cal.warnings
    t = cal.point.throughput_ops_s
    if cal.step is None:
        assert t == pytest.approx(cal.model_iops, rel=sim.SCALE_TOLERANCE)
        assert not cal.warnings
    else:
        lo, hi = cal.step
        assert lo < cal.model_iops < hi and t in (lo, hi)
        assert abs(t / cal.model_iops - 1) == min(abs(x / cal.model_iops - 1) for x in (lo, hi))
        assert any("steps across" in x for x in cal.warnings), cal.warnings


class _Bare:
    """The bare device as the solver sees it: its scaled copy is the scale itself, which the
    fake ``run`` below turns into a throughput."""

    def scaled(self, k: float) -> float:
        return k


class _Stats:
    def __init__(self, t: float):
        self.throughput_ops_s = t


def test_the_scale_search_halves_a_bracket_when_throughput_is_not_monotone(monkeypatch):
    """The solver alone, on the throughputs the simulator gave for that case at fixed
    scales (k -> ops/s, seed 7), joined piecewise in log k: it ends within the tolerance
    wherever its runs bracket the target."""
    seen = [
        (1.0, 50_183), (0.8, 70_221), (0.7, 85_177), (0.65, 95_618), (0.62, 88_173),
        (0.6, 85_098), (0.58, 90_147), (0.55, 107_891), (0.5, 113_643), (0.4, 150_480),
    ]  # fmt: skip

    def throughput(k: float) -> float:
        pts = sorted(seen)
        for (k0, t0), (k1, t1) in zip(pts, pts[1:]):
            if k0 <= k <= k1:
                f = math.log(k / k0) / math.log(k1 / k0)
                return t0 + f * (t1 - t0)
        return pts[0][1] * pts[0][0] / k if k < pts[0][0] else pts[-1][1]

    monkeypatch.setattr(sim, "run", lambda k, jobs, requests, seed: _Stats(throughput(k)))
    for target in (89_213, 86_000, 92_000, 100_000):
        k, st, step = sim._solve_scale(_Bare(), [], 10_000, 7, _Stats(throughput(1.0)), target)
        assert st.throughput_ops_s == pytest.approx(target, rel=sim.SCALE_TOLERANCE), target
        assert st.throughput_ops_s == pytest.approx(throughput(k))
        assert step is None


def test_a_step_across_the_target_is_reported_as_a_step(monkeypatch):
    """Throughput that jumps across the target between two almost equal scales (the
    simulator gave 74.7k at k = 0.6966 and 82.6k at 0.6964 for oltp on nvme, seed 7, around
    the model's 75.5k): no run gets within the tolerance, the nearest is the point, and the
    step is returned -- the runs on both sides say the device is not at its ceiling."""

    def throughput(k: float) -> float:
        return 74_700.0 * (0.6966 / k) ** 0.2 if k >= 0.6965 else 82_600.0 * (0.6964 / k)

    monkeypatch.setattr(sim, "run", lambda k, jobs, requests, seed: _Stats(throughput(k)))
    target = 75_486.0
    k, st, step = sim._solve_scale(_Bare(), [], 10_000, 7, _Stats(throughput(1.0)), target)
    assert step is not None
    lo, hi = step
    assert lo < target < hi and hi / lo > 1.05
    assert st.throughput_ops_s in (lo, hi) and st.throughput_ops_s == pytest.approx(
        target, rel=0.03
    )


def test_littles_law_holds_in_the_output(model):
    cal = sim.calibrate(model, XFS, NO_FSYNC, NVME, requests=10_000)
    for ov in (None, {"numjobs": 1}, {"iodepth": 64}, {"numjobs": 16, "iodepth": 32}):
        r = sim.simulate(model, XFS, NO_FSYNC, NVME, requests=10_000, overrides=ov, calibration=cal)
        assert r.mean_latency_ms / 1000 == pytest.approx(
            r.concurrency / r.throughput_ops_s, rel=0.03
        ), ov
        assert r.energy_per_op_j == pytest.approx(r.watts / r.throughput_ops_s, rel=1e-9)


def test_fsync_with_plp_is_faster_than_without(model):
    cal = sim.calibrate(model, XFS, OLTP, NVME, requests=10_000)
    no = sim.simulate(
        model, XFS, OLTP, NVME, requests=10_000, overrides={"plp": "no"}, calibration=cal
    )
    yes = sim.simulate(
        model, XFS, OLTP, NVME, requests=10_000, overrides={"plp": "yes"}, calibration=cal
    )
    assert yes.throughput_ops_s > 1.5 * no.throughput_ops_s
    assert yes.mean_flush_latency_ms < no.mean_flush_latency_ms
    assert yes.ops_per_joule > no.ops_per_joule
    none = sim.simulate(
        model, XFS, OLTP, NVME, requests=10_000, overrides={"fsync_every": 0}, calibration=cal
    )
    assert none.fsyncs == 0 and none.mean_flush_latency_ms is None
    assert none.throughput_ops_s > yes.throughput_ops_s


def test_group_commit_raises_throughput(model):
    w = Workload(rw="write", bs_bytes=65536, numjobs=4, fsync_every=1)
    cal = sim.calibrate(model, XFS, w, NVME, requests=8000)
    thr = [
        sim.simulate(
            model, XFS, w, NVME, requests=8000, calibration=cal, overrides={"fsync_every": n}
        ).throughput_ops_s
        for n in (1, 8, 32)
    ]
    assert thr[0] < thr[1] < thr[2]


def test_same_seed_same_output_other_seed_other_output(model):
    def run(seed):
        d = sim.simulate(
            model, XFS, OLTP, NVME, seed=seed, requests=3000, overrides={"numjobs": 8}
        ).to_dict()
        d.pop("wall_s")
        return d

    a, b = run(11), run(11)
    assert a == b
    assert run(12)["p99_latency_ms"] != a["p99_latency_ms"]


@pytest.mark.parametrize(
    "overrides, fragment",
    [
        ({"numjobs": 0}, "numjobs must be between"),
        ({"iodepth": 2.5}, "iodepth must be a whole number"),
        ({"qd": 4}, "unknown what-if knob"),
        ({"plp": "maybe"}, "plp must be yes, no or unknown"),
        ({"bs": "huge"}, "bs must be a size"),
        ({"burst": 4}, "needs both burst"),
        ({"numjobs": 4096, "iodepth": 2}, "limit"),
        ({"numjobs": 100}, "steady state"),
    ],
)
def test_bad_overrides_are_one_line_domain_errors(model, overrides, fragment):
    with pytest.raises(FsAdvisorError, match=fragment) as e:
        sim.simulate(model, XFS, NO_FSYNC, NVME, requests=5000, overrides=overrides)
    assert "\n" not in str(e.value)


_OVERRIDES = st.fixed_dictionaries(
    {},
    optional={
        "numjobs": st.integers(1, 16),
        "iodepth": st.integers(1, 8),
        "fsync_every": st.integers(0, 64),
        "plp": st.sampled_from(["yes", "no", "unknown"]),
        "rwmixread": st.integers(0, 100),
        "bs": st.sampled_from(["512", "4k", "16k", "128k", "1m", 8192]),
    },
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ov=_OVERRIDES,
    burst=st.sampled_from([None, (3, 0.05), (50, 2.0)]),
    meta=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_random_valid_overrides_give_finite_non_negative_results(model, ov, burst, meta):
    if burst:
        ov = {**ov, "burst": burst[0], "pause_ms": burst[1]}
    w = Workload(rw="randrw", numjobs=2, iodepth=2, fsync_every=4, create_frac=meta)
    r = sim.simulate(model, XFS, w, NVME, requests=1500, overrides=ov)
    d = r.to_dict()
    for k, v in d.items():
        if isinstance(v, float):
            assert math.isfinite(v) and v >= 0, (k, v)
    assert r.requests == 1500 and r.simulated_s > 0
    assert 0 <= r.utilisation <= 1 and 0 < r.busy_fraction <= 1
    assert r.p50_latency_ms <= r.p99_latency_ms <= r.p999_latency_ms


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_vary_and_set_parsers_raise_only_domain_errors(text):
    from fsadvisor.service.simulate import parse_settings, parse_vary

    for f in (parse_vary, lambda t: parse_settings([t])):
        try:
            f(text)
        except FsAdvisorError as e:
            assert "\n" not in str(e)


def test_parse_vary():
    from fsadvisor.service.simulate import parse_vary

    assert parse_vary("numjobs=1,4,16") == ("numjobs", [1, 4, 16])
    assert parse_vary(" plp = no,yes") == ("plp", ["no", "yes"])
    assert parse_vary("pause_ms=0.5") == ("pause_ms", [0.5])


# --------------------------------------------------------------------------- CLI, golden


@pytest.fixture
def cli_env(tmp_db, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    import fsadvisor.cli.app as cli
    from fsadvisor.service import advice

    advice._cache.clear()
    cli.register_all()
    runner = CliRunner()
    return lambda *args: runner.invoke(cli.app, list(args))


GOLDEN_ARGS = [
    "simulate",
    "--config",
    '{"filesystem": "xfs", "ag_count": 16}',
    "--profile",
    "oltp",
    "--vary",
    "numjobs=1,4,16,64",
    "--seed",
    "7",
    "--requests",
    "10000",
]


# Seeds whose outputs measure each printed figure's own sampling spread (the golden's seed,
# 7, is one of them). Some seeds' outputs add a note (the calibration stepping across the
# model's figure): only the outputs that print the golden's words and figures count, and at
# least eight must, which give each spread within about +-25% at 1 sd (chi, 7 df).
SPREAD_SEEDS = tuple(range(1, 17))
SPREAD_MIN_SEEDS = 8
_SEED_LINE = re.compile(r"^seed \d+", re.M)


def _seeded(args: list[str], seed: int) -> list[str]:
    out = list(args)
    out[out.index("--seed") + 1] = str(seed)
    return out


def _unseeded(out: str) -> str:
    """The output without its seed's number (the seed itself, not a figure)."""
    return _SEED_LINE.sub("seed S", out)


def _words(text: str) -> str:
    """The text with its figures taken out and its spacing collapsed: a figure's width moves
    the columns and the wrapping, never the words."""
    return " ".join(NUMBER.sub("#", text).split())


def _spread(golden: str, outputs: list[str]) -> list[float]:
    """The sd of each printed figure, in the golden's order, over the seeds' outputs that
    print the golden's words: zero for a figure the seed does not move (the model's, the
    ceiling), the Monte Carlo spread for a simulated one."""
    alike = [_unseeded(o) for o in outputs if _words(_unseeded(o)) == _words(_unseeded(golden))]
    assert len(alike) >= SPREAD_MIN_SEEDS, (
        f"only {len(alike)} of {len(outputs)} seeds print the golden's words"
    )
    figures = np.array([[float(t.replace(",", "")) for t in NUMBER.findall(o)] for o in alike])
    # a figure every seed printed alike has no spread (not the rounding of its mean's sd)
    return [float(c.std(ddof=1)) if np.ptp(c) else 0.0 for c in figures.T]


def test_cli_output_matches_the_golden_file(cli_env, monkeypatch):
    """The same lines and words as the golden; a figure the seed does not move within its
    last printed digit, a simulated one within its own sampling error: 4 sd of the difference
    of two draws (the golden's and this run's), the sd measured over the seeds when the
    golden was made (golden/sim_oltp.spread.json). A model change that moves a simulated
    figure by more than its noise fails here, as one that moves the model's own figures does."""
    monkeypatch.setenv("COLUMNS", "80")  # the output fits the terminal: the golden's is 80
    r = cli_env(*GOLDEN_ARGS)
    assert r.exit_code == 0, r.output
    path = GOLDEN / "sim_oltp.out"
    spread_path = GOLDEN / "sim_oltp.spread.json"
    if os.environ.get("FSADVISOR_UPDATE_GOLDEN") == "1":  # regenerate after checking by hand
        outputs = [cli_env(*_seeded(GOLDEN_ARGS, k)).stdout for k in SPREAD_SEEDS]
        doc = {"seeds": list(SPREAD_SEEDS), "sd": _spread(r.stdout, outputs)}
        spread_path.write_text(json.dumps(doc, indent=1) + "\n")
        path.write_text(r.stdout)
    # if a change is intended (new model data, priors, devices.toml), check the new numbers
    # by hand and rerun with FSADVISOR_UPDATE_GOLDEN=1
    sds = json.loads(spread_path.read_text())["sd"]
    got, want = r.stdout.splitlines(), path.read_text().splitlines()
    assert len(got) == len(want), f"{len(got)} lines != golden {len(want)}"
    for i, (x, y) in enumerate(zip(got, want), 1):
        assert _words(x) == _words(y), f"{path.name}:{i}: {x!r} != golden {y!r}"
    got_t, want_t = NUMBER.findall(_unseeded(r.stdout)), NUMBER.findall(_unseeded(path.read_text()))
    assert len(want_t) == len(sds), "the spread file is not the golden's: regenerate both"
    for a, b, sd in zip(got_t, want_t, sds):
        x, y = float(a.replace(",", "")), float(b.replace(",", ""))
        unit = 10.0 ** -len(b.split(".")[1]) if "." in b else 1.0
        allowed = 4 * math.sqrt(2) * sd + unit * 1.0000001
        assert abs(x - y) <= allowed, (
            f"{path.name}: {a} vs golden {b}, beyond its sampling error (+-{allowed:.3g})"
        )


def test_the_golden_spread_is_a_seeds_spread():
    """The recorded spread is what it says: above zero for every variant's simulated
    throughput and zero for the model's own figures and the variants' numjobs (a spread of
    zero on a simulated figure would make its comparison an exact one again, a spread on
    the model's figures would let a model change through)."""
    sds = json.loads((GOLDEN / "sim_oltp.spread.json").read_text())["sd"]
    text = _unseeded((GOLDEN / "sim_oltp.out").read_text())
    tokens = [(m.start(), m.group()) for m in NUMBER.finditer(text)]
    assert len(tokens) == len(sds)

    def sd_at(label: str, k: int) -> float:
        """The spread of the k-th figure printed from ``label`` on."""
        at = text.index(label)
        return sds[next(j for j, (pos, _) in enumerate(tokens) if pos >= at) + k]

    for jobs in (1, 4, 16, 64):
        row = f"numjobs={jobs} "
        assert sd_at(row, 0) == 0  # the variant's own numjobs
        assert sd_at(row, 1) > 0  # its simulated ops/s
    assert sd_at("predict says", 0) == 0 and sd_at("p99/mean", 0) == 0


def test_cli_json_and_errors(cli_env):
    import json

    r = cli_env(
        "simulate",
        "-c",
        '{"filesystem": "ext4"}',
        "-w",
        '{"rw": "randwrite", "bs": "4k", "iodepth": 8, "fsync": 1}',
        "--vary",
        "plp=no,yes",
        "-n",
        "2000",
        "--json",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["note"] == sim.LABEL
    assert [d["plp"] for d in doc["results"]] == ["no", "yes"]
    assert all(d["energy_source"] == "simulated from model" for d in doc["results"])
    # a device without a measured knee: its channels, the sharp knee's count
    assert all(
        type(d["calibration"]["channels"]) is int and d["calibration"]["channels"] >= 1
        for d in doc["results"]
    )
    for args, fragment in (
        (["--vary", "numjobs=1,x"], "numjobs needs a number"),
        (["--vary", "speed=1"], "unknown what-if knob"),
        (["--requests", "50"], "requests must be between"),
        (["--set", "burst=3"], "needs both burst"),
    ):
        r = cli_env("simulate", "-c", '{"filesystem": "ext4"}', "-p", "oltp", *args)
        assert r.exit_code == 2, r.output
        assert fragment in r.output and "Traceback" not in r.output
        assert r.output.count("\n") == 1


# --------------------------------------------------------------------------- one story

STORY_PRESETS = ("oltp", "fs-overhead-randwrite-4k-fsync1", "rocksdb-ycsb-a", "analytics-scan")
STORY_KINDS = ("nvme", "sata-ssd", "loop", "zram")


def _within(x: float, interval, rel: float = 0.0) -> bool:
    lo, hi = interval
    return lo * (1 - rel) <= x <= hi * (1 + rel)


@pytest.mark.parametrize("kind", STORY_KINDS)
@pytest.mark.parametrize("preset", STORY_PRESETS)
def test_simulate_agrees_with_predict_at_the_calibration_point(tmp_db, preset, kind):
    """simulate and predict, each through the service a front end calls: at the profile's own
    workload the simulated IOPS, mean and p99 latency lie in predict's stated 90% intervals,
    and the IOPS is predict's (to the calibration's tolerance, or short of it only where
    predict sits at the device's ceiling, which a finite queue cannot reach: then a
    warning says so)."""
    from fsadvisor.service import advice
    from fsadvisor.service.simulate import simulate_what_if

    advice._cache.clear()
    cfg = '{"filesystem": "xfs", "ag_count": 16}'
    pred = advice.predict_one(cfg, profile=preset, device=f"{kind}:1T")
    (r,) = simulate_what_if(cfg, profile=preset, device=f"{kind}:1T", requests=3000)
    p, u = pred["predicted"], pred["uncertainty"]
    cal = r.calibration
    assert cal.model_iops == pytest.approx(p["iops"]) and r.model_iops == pytest.approx(p["iops"])
    assert cal.model_p99_latency_ms == pytest.approx(p["p99_latency_ms"])
    assert r.calibration.device_params_source == pred["basis"]["device_params"]["source"]
    at_ceiling = any("at the device's ceiling" in x for x in cal.warnings)
    if cal.step is not None:
        # the simulated throughput steps across predict's here: the nearest run either side
        lo, hi = cal.step
        assert lo < p["iops"] < hi and r.throughput_ops_s in (lo, hi)
        assert any("steps across" in x for x in cal.warnings), cal.warnings
    elif not at_ceiling:
        assert r.throughput_ops_s == pytest.approx(p["iops"], rel=2 * sim.SCALE_TOLERANCE)
    else:
        assert r.throughput_ops_s <= p["iops"] * (1 + sim.SCALE_TOLERANCE)
    # (hdd is left out: predict caps both ends of its interval at the 150-IOPS ceiling, a
    # single point a finite closed queue reaches only to within 1-3%; the warning says so.
    # Any other device whose interval the ceiling caps gets the calibration's tolerance: the
    # point itself at the cap, or the interval's upper end at the device's ceiling with the
    # point just under it, where the simulated queue reaches the ceiling within its own
    # sampling error.)
    ceiling = pred["basis"]["ceiling"]["iops"]
    capped = p["iops"] == pytest.approx(u["iops_90"][1], rel=1e-9) or (
        u["iops_90"][1] == pytest.approx(ceiling, rel=1e-9)
        and p["iops"] >= ceiling * (1 - sim.SCALE_TOLERANCE)
    )
    rel = sim.SCALE_TOLERANCE if at_ceiling or capped else 0.0
    assert _within(r.throughput_ops_s, u["iops_90"], rel=rel), (r.throughput_ops_s, u["iops_90"])
    conc = r.concurrency
    mean_90 = (conc / u["iops_90"][1] * 1000, conc / u["iops_90"][0] * 1000)
    assert _within(r.mean_latency_ms, mean_90, rel=rel), (r.mean_latency_ms, mean_90)
    assert _within(r.p99_latency_ms, u["p99_latency_ms_90"]), (
        r.p99_latency_ms,
        u["p99_latency_ms_90"],
    )


def test_a_devices_stored_calibration_drives_the_simulator_as_it_drives_predict(
    tmp_db, model, monkeypatch
):
    from fsadvisor.predict import ceilings
    from fsadvisor.catalog.device_params import PARAM_KEYS, DeviceParams
    from fsadvisor.predict.predict import predict
    from fsadvisor.service import advice, device_figures
    from fsadvisor.service.simulate import simulate_what_if
    from fsadvisor.store import open_store

    loop = Device(path="/dev/loop4", size_bytes=64 << 30, kind="loop", model="backing: file")
    values = dict(
        model.settings.device_params("loop"),
        read_latency_us=40.0,
        write_latency_us=30.0,
        flush_latency_us=150.0,
        parallelism=16.0,
        read_iops_cap=90_000.0,
        write_iops_cap=70_000.0,
    )
    fitted = DeviceParams(
        loop.identity,
        "loop",
        values,
        {k: 0.05 for k in PARAM_KEYS},
        source="fitted: 12 raw runs on this device",
        n_runs=12,
        details={"fitted_at": 1_790_000_000.0},
    )
    with open_store(str(tmp_db)) as s:
        s.save_device_params(fitted, fitted_at=1_790_000_000.0)
    params = device_figures.device_params_for(loop, str(tmp_db))
    assert params.measured and params.values["parallelism"] == 16.0
    monkeypatch.setattr(advice, "resolve_device", lambda spec, plp=None: loop)
    advice._cache.clear()
    w = advice.get_profile("oltp").workload
    (r,) = simulate_what_if('{"filesystem": "xfs", "ag_count": 16}', profile="oltp", requests=3000)
    want = ceilings.cap(predict(advice.get_model(None), XFS, w, loop, device_params=params), w)
    from fsadvisor.catalog.device_params import prior_params

    prior = ceilings.cap(
        predict(
            advice.get_model(None),
            XFS,
            w,
            loop,
            device_params=prior_params("loop", model.settings.devices, loop.identity),
        ),
        w,
    )
    assert want.iops != pytest.approx(prior.iops, rel=0.01)  # the calibration matters here
    cal = r.calibration
    assert cal.model_iops == pytest.approx(want.iops)
    assert cal.channels == 16 and cal.device_params_source == fitted.source
    assert r.ceiling_iops == pytest.approx(ceilings.ceilings(w, values)["iops_limit"])
    assert r.throughput_ops_s == pytest.approx(want.iops, rel=2 * sim.SCALE_TOLERANCE)


def test_power_rises_with_utilisation_across_a_numjobs_sweep(tmp_db):
    from fsadvisor.service.simulate import simulate_what_if

    rs = simulate_what_if(
        '{"filesystem": "xfs", "ag_count": 16}',
        profile="oltp",
        vary="numjobs=1,2,4,8,16,32,64",
        requests=2000,
    )
    cal = rs[0].calibration
    assert cal.drive_active_watts > cal.drive_idle_watts  # system scope contains the drive
    assert "assumed" in cal.drive_power_source
    utils = [r.utilisation for r in rs]
    assert max(utils) - min(utils) > 0.05  # the sweep really moves the device's load
    # more jobs, a busier device (oltp fsyncs every transaction: a flush that held every
    # channel once made this fall, 63% at 1 job to 49% at 64); 2,000-request runs, so a step
    # may dip by sampling noise, a few percent of the level, never the sweep's trend
    assert all(b >= a * 0.95 for a, b in zip(utils, utils[1:])), utils
    assert utils[-1] > utils[0] + 0.05, utils
    by_util = sorted(rs, key=lambda r: r.utilisation)
    for a, b in zip(by_util, by_util[1:]):
        if b.utilisation > a.utilisation:
            assert b.watts > a.watts, (a.utilisation, a.watts, b.utilisation, b.watts)
    for r in rs:
        # idle + (active - idle) x utilisation, through the model's watts at the point
        idle = cal.model_watts - cal.watts_per_utilisation * cal.utilisation
        assert r.watts == pytest.approx(idle + cal.watts_per_utilisation * r.utilisation)
    point = next(r for r in rs if r.numjobs == 16)
    assert point.watts == pytest.approx(cal.model_watts)


def test_a_burst_that_leaves_the_device_idle_draws_less(model):
    cal = sim.calibrate(model, XFS, NO_FSYNC, NVME, requests=4000)
    busy = sim.simulate(model, XFS, NO_FSYNC, NVME, requests=4000, calibration=cal)
    idle = sim.simulate(
        model,
        XFS,
        NO_FSYNC,
        NVME,
        requests=4000,
        calibration=cal,
        overrides={"burst": 4, "pause_ms": 1.0},
    )
    assert idle.utilisation < busy.utilisation and idle.watts < busy.watts


def test_cpu_dram_scope_does_not_contain_the_drive(model):
    cal = sim.calibrate(model, XFS, NO_FSYNC, NVME, scope="cpu+dram", requests=4000)
    assert cal.watts_per_utilisation == 0.0 and "outside" in cal.drive_power_source


def test_a_library_drives_datasheet_power_is_its_range():
    from fsadvisor.catalog.device_params import prior_params
    from fsadvisor.predict.settings import ModelSettings

    p = prior_params("nvme", ModelSettings.load().devices)
    p = sim.replace(
        p, details={"model": "Example 1", "power_w": {"active_power_w": 6.5, "idle_power_w": 0.055}}
    )
    idle, active, source = sim.drive_power(p, "system")
    assert (idle, active) == (0.055, 6.5) and "Example 1" in source and "datasheet" in source


def test_cli_default_request_count_is_the_simulators():
    from fsadvisor.cli import simulate as cli_sim

    assert cli_sim.DEFAULT_REQUESTS == sim.DEFAULT_REQUESTS


_CEILING_KINDS = st.sampled_from(["nvme", "sata-ssd", "loop", "zram", "ram-loop"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=_CEILING_KINDS,
    ov=st.fixed_dictionaries(
        {
            "numjobs": st.sampled_from([1, 4, 16, 64]),
            "iodepth": st.sampled_from([1, 8, 32]),
            "bs": st.sampled_from(["4k", "64k", "1m", "4m"]),
            "rwmixread": st.integers(0, 100),
        },
        optional={
            "fsync_every": st.sampled_from([0, 1, 32]),
            "plp": st.sampled_from(["yes", "no"]),
        },
    ),
)
# Found by hypothesis against a flat 3% slack: all writes (no share to wander), 0.5% over the
# write ceiling from the service times' own spread.
@example(kind="nvme", ov={"numjobs": 1, "iodepth": 32, "bs": "4m", "rwmixread": 0})
def test_simulated_rates_respect_the_devices_ceilings(model, kind, ov):
    """No variant, however much faster than the calibration point the model made the device,
    passes the drive's IOPS or bandwidth ceiling for its mix (predict/ceilings.py)."""
    dev = Device(path=None, size_bytes=1 << 40, kind=kind)
    # Calibrated on OLTP, where the model makes most kinds' media times faster than
    # devices.toml's (scale < 1): scaling the controller stage with them let a variant reach
    # 1.9x an NVMe drive's ceiling before ("13.5 GB/s, twice the cap").
    conc = ov["numjobs"] * ov["iodepth"]
    n = max(1500, 10 * conc)
    r = sim.simulate(model, XFS, OLTP, dev, requests=n, overrides=ov)
    _assert_within_the_ceilings(r, ov, model.params_for(dev).values)


def _assert_within_the_ceilings(r, ov, values):
    from fsadvisor.predict import ceilings
    from fsadvisor.sizes import parse_size

    from fsadvisor.catalog.device_params import for_submitters

    r_w = sim.replace(OLTP, rwmixread=ov["rwmixread"], bs_bytes=parse_size(ov["bs"]))
    # the ceilings as the variant's submitters see them (zram: one core's worth per writer
    # that submits, up to the host's cores; every other kind: the device's own): the
    # variant's own workload, every what-if knob applied (its jobs, and its fsync, without
    # which buffered writes are the kernel flusher's to submit)
    variant = sim.apply_overrides(OLTP, NVME, ov)[0]
    values = for_submitters(values, variant)
    lim = ceilings.ceilings(r_w, values)
    # The ceiling is a long-run rate: the harmonic mix of the read and write ceilings by the
    # share of reads, each request taking its mean service time. A finite run of n requests
    # departs from it in two ways, each bounded here at 5 sd (a false alarm once in ~3.5
    # million runs) instead of a tuned slack:
    # - each request is a read with the mix's probability, so the run's own share of reads is
    #   binomial around the mix: the bound is the ceiling at the share it could have drawn;
    # - each service time is the mean times a log-normal factor of mean 1 (the calibration's
    #   sigma), so n of them add up to n means times 1 +- cv/sqrt(n) (cv of the factor).
    share = ov["rwmixread"] / 100.0
    sd = math.sqrt(share * (1.0 - share) / r.requests)
    at = [
        ceilings.ceilings(sim.replace(r_w, rwmixread=x), values)
        for x in (max(0.0, share - 5 * sd) * 100, min(1.0, share + 5 * sd) * 100)
    ]
    cv = math.sqrt(math.expm1(r.calibration.sigma**2))
    spread = 1.0 / (1.0 - 5 * cv / math.sqrt(r.requests))
    iops_bound = max(c["iops_limit"] for c in at) * spread
    bw_bound = max(c["bandwidth_bytes_s"] for c in at) * spread
    assert r.throughput_ops_s <= iops_bound, (r.throughput_ops_s, iops_bound)
    assert r.mb_s * 1e6 <= bw_bound, (r.mb_s, bw_bound)
    assert r.ceiling_iops == pytest.approx(lim["iops_limit"])
    assert r_w.bs_bytes == r.workload["bs_bytes"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=_CEILING_KINDS, ov=_OVERRIDES, meta=st.sampled_from([0.0, 0.3]))
# Found by hypothesis (2026-11-24): 44% reads among writes that wait for a flush every 9th.
@example(
    kind="nvme",
    ov={"numjobs": 4, "plp": "no", "fsync_every": 9, "iodepth": 7, "rwmixread": 44, "bs": "16k"},
    meta=0.0,
)
def test_latency_statistics_are_consistent(model, kind, ov, meta):
    """Right-skewed service times give right-skewed latencies: p50 <= mean for one class of
    request, and the percentiles are ordered up to the maximum; the p99 interval contains
    the p99."""
    dev = Device(path=None, size_bytes=1 << 40, kind=kind)
    w = Workload(rw="randrw", numjobs=2, iodepth=2, fsync_every=4, create_frac=meta)
    conc = ov.get("numjobs", 2) * ov.get("iodepth", 2)
    r = sim.simulate(model, XFS, w, dev, requests=max(2000, 10 * conc), overrides=ov)
    # One class of request: reads only, or writes that all wait alike (no fsync, or one
    # after every write). A write followed by its fsync's flush and the writes that are not
    # are two classes, as reads among writes are.
    every, mix = ov.get("fsync_every", w.fsync_every), ov.get("rwmixread", w.rwmixread)
    one_class = mix == 100 or (mix == 0 and every <= 1)
    unsaturated = (
        r.concurrency <= r.calibration.channels and r.throughput_ops_s < 0.8 * r.ceiling_iops
    )
    if unsaturated and one_class:
        assert r.p50_latency_ms <= r.mean_latency_ms, (r.p50_latency_ms, r.mean_latency_ms)
    elif unsaturated:
        # Reads among writes that wait for flushes, or writes with and without an fsync's
        # flush after them: a mixture of a fast and a slow class. When
        # the slow class holds most requests, the median sits in it and the mean is pulled
        # below it by the fast one, so p50 > mean is no fault (the example above: p50/mean
        # 0.93-1.02 over seeds 1-7; without fsync, or with one class, 0.86-0.99).
        assert r.p50_latency_ms <= 1.05 * r.mean_latency_ms, (r.p50_latency_ms, r.mean_latency_ms)
    else:
        # A saturated device (a queue deeper than its channels, or its controller stage at
        # 80% of the ceiling or more): latency is mostly the wait behind the requests ahead,
        # a sum of many service times, near-symmetric (central limit): the median sits
        # within a few percent of the mean on either side (measured: up to 1.044 x at 512
        # outstanding on 2-256 channels).
        assert r.p50_latency_ms <= 1.05 * r.mean_latency_ms, (r.p50_latency_ms, r.mean_latency_ms)
    assert (
        r.p50_latency_ms
        <= r.p90_latency_ms
        <= r.p99_latency_ms
        <= r.p999_latency_ms
        <= r.max_latency_ms
    )
    lo, hi = r.p99_latency_ms_95
    assert lo <= r.p99_latency_ms <= hi


def test_quantile_ci_by_batch_means():
    import numpy as np

    rng = np.random.default_rng(5)
    x = rng.lognormal(0.0, 0.8, 20_000)
    lo, hi = sim.quantile_ci(x, 99)
    assert lo < float(np.percentile(x, 99)) < hi
    # coverage of the true p99 over 300 independent runs of 2,000 requests: about 95%
    true_p99 = math.exp(0.8 * sim.Z99)
    hits = sum(
        lo_ < true_p99 < hi_
        for lo_, hi_ in (sim.quantile_ci(rng.lognormal(0.0, 0.8, 2000), 99) for _ in range(300))
    )
    assert 0.88 <= hits / 300 <= 0.99, hits
    lo4, hi4 = sim.quantile_ci(x[:5000], 99)
    assert (hi4 - lo4) > (hi - lo)  # fewer requests, a wider interval
    assert sim.quantile_ci(x[:500], 99) is None  # batches of fewer than 100: no interval


# --------------------------------------------------------------------------- no Python reprs

REPR = __import__("re").compile(
    r"\{'|\['|'\]|\bNone\b|\bTrue\b|\bFalse\b|object at 0x|\b[A-Z][A-Za-z]+\(\w+=|\bnan\b"
)


@pytest.mark.parametrize(
    "args",
    [
        GOLDEN_ARGS[:-2] + ["--requests", "2000", "--set", "burst=3", "--set", "pause_ms=0.5"],
        [
            "simulate",
            "-c",
            '{"filesystem": "ext4", "mount": ["noatime"]}',
            "-w",
            '{"rw": "randwrite", "bs": "4k", "iodepth": 8, "fsync": 1}',
            "--vary",
            "plp=no,yes",
            "-n",
            "2000",
            "--scope",
            "cpu+dram",
        ],
        [
            "predict",
            "--config",
            '{"filesystem": "xfs", "ag_count": 16, "mount": ["noatime"]}',
            "--profile",
            "oltp",
        ],
        ["recommend", "--profile", "oltp", "--top", "3"],
        [
            "compare",
            "--profile",
            "oltp",
            '{"filesystem": "xfs", "ag_count": 16}',
            '{"filesystem": "ext4", "mount": ["noatime"]}',
        ],
    ],
)
def test_human_output_has_no_python_reprs(cli_env, args):
    r = cli_env(*args)
    assert r.exit_code == 0, r.output
    bad = [line for line in r.stdout.splitlines() if REPR.search(line)]
    assert not bad, bad


def test_utilisation_counts_the_link_at_the_bandwidth_ceiling():
    # 2 channels, a 10 us link per request and 1 us media: the link is the bottleneck, busy
    # all the time, while the channels are mostly waiting for it.
    times = sim.DeviceTimes(
        channels=2, read_us=1.0, write_us=1.0, flush_us=0.0, read_xfer_us=10.0, sigma=0.0
    )
    st_ = sim.run(times, [sim.JobSpec(read_frac=1.0)] * 8, requests=1000)
    assert st_.controller_busy_us == pytest.approx(1000 * 10.0, rel=0.01)  # + ones in flight
    assert st_.throughput_ops_s == pytest.approx(1e5, rel=0.01)
    assert sim._utilisation(st_) == pytest.approx(1.0, abs=0.01)
    scaled = sim._scaled_stats(st_, 3.0)
    assert sim._utilisation(scaled) == pytest.approx(sim._utilisation(st_))


def test_freeing_a_wide_claim_grants_every_waiting_claim_that_fits_in_order():
    # Channels._grant replaces simpy's _trigger_put/_do_put loop: a barrier's release lets
    # all the narrow claims behind it in at once, in the order they queued, and stops at the
    # first that does not fit (the wide one at the back waits for both narrow ones).
    env, ch, got, user = _claimers(2)

    env.process(user("barrier", 2, 0, 10))
    env.process(user("a", 1, 1, 3))
    env.process(user("b", 1, 2, 5))
    env.process(user("wide", 2, 3, 1))
    env.process(user("c", 1, 4, 1))  # behind the wide one: waits although a channel frees at 13
    env.run()
    assert got == [("barrier", 0), ("a", 10), ("b", 10), ("wide", 15), ("c", 16)]
    assert ch.in_use == 0 and not ch.put_queue
    assert ch.busy_channel_us == 2 * 10 + 3 + 5 + 2 * 1 + 1


def test_run_until_stops_at_the_stop_event_and_surfaces_failures():
    # sim._run_until is env.run(until=stop) with simpy's step inlined: the same stopping
    # time, the same crash on an unhandled exception, the same error on an empty schedule.
    def scenario(driver):
        env = simpy.Environment()
        stop = env.event()
        seen = []

        def p():
            yield env.timeout(3)
            seen.append(env.now)
            stop.succeed()
            yield env.timeout(0)  # same instant, after stop: not processed
            seen.append("late")

        env.process(p())
        driver(env, stop)
        return env.now, seen

    assert scenario(sim._run_until) == scenario(lambda env, stop: env.run(until=stop)) == (3, [3])

    env = simpy.Environment()

    def bad():
        yield env.timeout(1)
        raise ValueError("boom")

    env.process(bad())
    with pytest.raises(ValueError, match="boom"):
        sim._run_until(env, env.event())
    env = simpy.Environment()

    def short():
        yield env.timeout(1)

    env.process(short())
    with pytest.raises(RuntimeError, match="No scheduled events left"):
        sim._run_until(env, env.event())


from hypothesis import given, settings, strategies as hst  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(
    hnp.arrays(
        float,
        hst.integers(1, 60),
        elements=hst.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
    ),
    hst.lists(hst.floats(0, 100), min_size=1, max_size=5)
    | hst.floats(0, 100)
    | hst.sampled_from([[50, 90, 99, 99.9], 99, 0, 100]),
)
def test_percentiles_are_numpys_bit_for_bit(values, q):
    got = sim.percentiles(values, q)
    want = np.percentile(values, q)
    assert np.shape(got) == np.shape(want)
    assert np.array_equal(got, want)


@settings(max_examples=150, deadline=None)
@given(
    hnp.arrays(
        float,
        hst.tuples(hst.integers(2, 10), hst.integers(1, 30)),
        elements=hst.floats(0, 1e4, allow_nan=False),
    ),
    hst.floats(0, 100),
)
def test_percentiles_along_an_axis_are_numpys(values, q):
    for axis in (0, 1):
        assert np.array_equal(
            sim.percentiles(values, q, axis=axis), np.percentile(values, q, axis=axis)
        )


def test_percentiles_with_nan_are_numpys():
    v = np.array([1.0, np.nan, 3.0])
    assert np.array_equal(sim.percentiles(v, 50), np.percentile(v, 50), equal_nan=True)


def test_run_claims_channels_only_when_nothing_could_be_granted(monkeypatch):
    # run() queues a claim without simpy's grant attempt (sim.py, claim()): right only if,
    # whenever it joins the line, the head of the line does not fit in the free channels.
    fits_at_append = []

    class Line(list):
        def append(self, claim):
            super().append(claim)
            ch = claim.resource
            fits_at_append.append(ch._capacity - ch.in_use >= self[0].width)

    monkeypatch.setattr(sim.Channels, "PutQueue", Line)
    times = sim.DeviceTimes(
        channels=4,
        read_us=50.0,
        write_us=20.0,
        flush_us=100.0,
        read_xfer_us=2.0,
        write_xfer_us=2.0,
        meta_xfer_us=1.0,
        sigma=0.6,
    )
    jobs = [sim.JobSpec(iodepth=4, read_frac=0.5, meta_frac=0.1, writes_per_flush=2)] * 3
    st_ = sim.run(times, jobs, requests=3000, seed=3)
    assert st_.ops == 3000
    assert len(fits_at_append) > 100  # contended: many claims waited
    assert not any(fits_at_append)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rw=st.sampled_from(["randread", "randwrite", "randrw", "write"]),
    bs=st.sampled_from(["4k", "16k", "128k"]),
    depth=st.integers(1, 8),
    jobs=st.integers(1, 8),
    fsync=st.sampled_from([0, 1, 8]),
    kind=st.sampled_from(["nvme", "sata-ssd"]),
)
def test_more_offered_load_never_lowers_utilisation_or_power(
    model, rw, bs, depth, jobs, fsync, kind
):
    """Doubling the jobs offers the device more work: its busier stage (channels, link or
    flush) is at least as busy and the drive draws at least as much, with fsync too -- a
    flush is one at a time beside the channels, so the fsyncs that share one (as Linux merges
    pending flushes) keep the flush busier, never the device idler (a flush that held every
    channel made more jobs mean fewer flushes and a less busy device, 63% -> 49% for oltp's
    1 -> 64 jobs). Each run's figures are estimates from N requests
    whose service times are log-normal with the calibration's sigma: their relative sd is
    about cv / sqrt(N), cv = sqrt(exp(sigma^2) - 1), so two runs may differ by 4 sd of a
    difference, 4 sqrt(2) cv / sqrt(N), by chance alone (at saturation both sit on the same
    ceiling and differ by exactly that)."""
    n = 4000
    w = Workload(rw="randrw", numjobs=2, iodepth=2)
    dev = Device(path=None, size_bytes=1 << 40, kind=kind)
    ov = {
        "bs": bs,
        "iodepth": depth,
        "fsync_every": fsync,
        "rwmixread": {"randread": 100, "randwrite": 0, "randrw": 70, "write": 0}[rw],
    }
    cal = sim.calibrate(model, XFS, w, dev, requests=n)
    rel = 4 * math.sqrt(2) * math.sqrt(math.expm1(cal.sigma**2)) / math.sqrt(n)
    lo = sim.simulate(
        model, XFS, w, dev, requests=n, calibration=cal, overrides={**ov, "numjobs": jobs}
    )
    hi = sim.simulate(
        model, XFS, w, dev, requests=n, calibration=cal, overrides={**ov, "numjobs": 2 * jobs}
    )
    assert hi.throughput_ops_s >= lo.throughput_ops_s * (1 - rel)  # no collapse under load
    assert hi.utilisation >= lo.utilisation * (1 - rel), (lo.utilisation, hi.utilisation)
    assert hi.watts >= lo.watts - rel * lo.utilisation * cal.watts_per_utilisation


# --------------------------------------------------------------------------- a measured knee

# A loop device on a file, as tests/unit/test_device_params.py's gradual knee: one server
# behind a fixed delay, every extra I/O in flight waits one ceiling-time.
KNEE_LAT_US, KNEE_CAP = 70.0, 68_000.0
KNEE_DEPTHS = (1, 2, 4, 8, 16)


def _knee_params(model, power: float):
    from fsadvisor.catalog.device_params import PARAM_KEYS, DeviceParams

    loop = Device(path="/dev/loop4", size_bytes=64 << 30, kind="loop", model="backing: file")
    values = dict(
        model.settings.device_params("loop"),
        read_latency_us=KNEE_LAT_US,
        read_iops_cap=KNEE_CAP,
        knee_power=power,
    )
    return loop, DeviceParams(
        loop.identity,
        "loop",
        values,
        {k: 0.05 for k in PARAM_KEYS},
        source="fitted: a read sweep QD1..64",
        n_runs=30,
    )


def test_a_gradual_knee_is_the_simulated_devices_curve_at_every_depth(model):
    """Calibrated at QD1, the simulated raw 4K random reads follow predict (which is
    mechanisms.queue_rate on the raw device) at every depth, not the sharp knee of the
    device's channels. Within 5%: a 10,000-request run's rate has a sampling sd under 1%
    (cv / sqrt(N), cv 0.6 here), the calibration stops within 1% of the model, and predict
    joins the knee to the bandwidth bound and caps it at the device's ceiling (soft minimums
    the station's curve does not have: 2% at QD16 here)."""
    from fsadvisor.predict.mechanisms import queue_rate

    loop, params = _knee_params(model, 1.0)
    raw = FsConfig.make("raw")
    w = Workload(rw="randread", bs_bytes=4096, iodepth=1)
    cal = sim.calibrate(model, raw, w, loop, device_params=params)
    assert cal.knee_power == 1.0
    rs = [
        sim.simulate(
            model, raw, w, loop, calibration=cal, device_params=params, overrides={"iodepth": qd}
        )
        for qd in KNEE_DEPTHS
    ]
    for qd, r in zip(KNEE_DEPTHS, rs):
        curve = queue_rate(qd, KNEE_LAT_US, KNEE_CAP, 1.0)
        assert r.model_iops == pytest.approx(curve, rel=0.05), qd  # predict is the curve
        assert r.throughput_ops_s == pytest.approx(r.model_iops, rel=0.05), qd
    rates = [r.throughput_ops_s for r in rs]
    assert rates == sorted(rates) and rates[-1] > 3 * rates[0]
    # the sharp knee would still be near-linear at QD8 (8 / 70 us, capped at 68,000):
    # the gradual one has bent to two thirds of the ceiling
    assert rates[3] < 0.75 * KNEE_CAP
    utils = [r.utilisation for r in rs]
    assert utils == sorted(utils) and utils[-1] > 2 * utils[0]  # more load, a busier device
    assert all(0 < u <= 1 for u in utils)


@pytest.mark.parametrize("power", [1.0, 2.0, 8.0])
def test_the_knee_station_runs_at_queue_rate_by_littles_law(model, power):
    """The bare device (no calibration) at each depth: n in flight, each for n /
    queue_rate(n), run at queue_rate(n). Fixed times: exact but for the start-up round,
    when the first I/Os start at depths 1 .. n (under 1% of 10,000 requests). Log-normal
    times (seed 002's spread): within 3%, three sampling sds (cv / sqrt(N) = 0.7%)."""
    from fsadvisor.predict.mechanisms import queue_rate

    _, params = _knee_params(model, power)
    for sigma, rel in ((0.0, 0.01), (sim.DEFAULT_SIGMA, 0.03)):
        for qd in (*KNEE_DEPTHS, 64):
            w = Workload(rw="randread", bs_bytes=4096, iodepth=qd)
            times = sim.device_times(params.values, w, "unknown", sigma)
            assert times.knee_power == power and times.channels == sim.MAX_CONCURRENCY
            st_ = sim.run(times, sim.job_specs(w), 10_000, seed=3)
            want = queue_rate(qd, KNEE_LAT_US, KNEE_CAP, power)
            assert st_.throughput_ops_s == pytest.approx(want, rel=rel), (sigma, qd)


LARGE_DEPTHS = (1, 2, 4, 8, 16, 32)


@pytest.mark.parametrize("power", [1.0, 2.0, 8.0])
def test_the_knee_station_follows_predicts_bandwidth_bound_for_large_io(model, power):
    """64 KiB and 128 KiB reads and writes on the bare device (no calibration) at each depth
    run at predict's rate, the roofline's soft minimum of queue_rate(n) and bandwidth /
    size (mechanisms.roofline on the raw device): the station's time is that rate's
    Little's-law time (sim.knee_media_us). Tolerances as for small I/O: fixed times are
    exact but for the start-up round (under 1% of 10,000 requests); log-normal times within
    3%, three sampling sds of a seeded run's rate (cv / sqrt(N) = 0.7%)."""
    from fsadvisor.predict.mechanisms import queue_rate, roofline

    _, params = _knee_params(model, power)
    v = params.values
    for sigma, rel in ((0.0, 0.01), (sim.DEFAULT_SIGMA, 0.03)):
        for rw, lat, cap in (
            ("randread", v["read_latency_us"], v["read_iops_cap"]),
            ("randwrite", v["write_latency_us"], v["write_iops_cap"]),
        ):
            for bs in (64 << 10, 128 << 10):
                for qd in LARGE_DEPTHS:
                    w = Workload(rw=rw, bs_bytes=bs, iodepth=qd)
                    want = roofline(w, v)[0]
                    if bs == 128 << 10:
                        # the bandwidth bound is what sets this rate, at low depth as at
                        # high: the small-I/O curve alone is at least a sixth faster
                        assert want < queue_rate(qd, lat, cap, power) / 1.15, (rw, qd)
                    times = sim.device_times(v, w, "unknown", sigma)
                    st_ = sim.run(times, sim.job_specs(w), 10_000, seed=3)
                    assert st_.throughput_ops_s == pytest.approx(want, rel=rel), (sigma, rw, bs, qd)


def test_a_calibrated_large_io_stream_follows_predict_at_every_depth(model):
    """Calibrated at QD1, simulated raw 128 KiB reads follow predict's figure at each depth
    to 32, within 5% as the small-I/O curve: the calibration stops within 1% of the model,
    a run's rate has a sampling sd under 1%, and predict's own soft cap at the ceiling is a
    curve the station does not have."""
    loop, params = _knee_params(model, 1.0)
    raw = FsConfig.make("raw")
    w = Workload(rw="randread", bs_bytes=128 << 10, iodepth=1)
    cal = sim.calibrate(model, raw, w, loop, device_params=params)
    rs = [
        sim.simulate(
            model, raw, w, loop, calibration=cal, device_params=params, overrides={"iodepth": qd}
        )
        for qd in LARGE_DEPTHS
    ]
    for qd, r in zip(LARGE_DEPTHS, rs):
        assert r.throughput_ops_s == pytest.approx(r.model_iops, rel=0.05), qd
    rates = [r.throughput_ops_s for r in rs]
    assert rates == sorted(rates)
    # the rate approaches the bandwidth bound and stays under it
    bound = params.values["read_bw_bytes_s"] / (128 << 10)
    assert 0.9 * bound < rates[-1] <= bound * 1.03


def test_a_knee_devices_writes_go_on_while_a_flush_runs(model):
    # One job, 8 deep, a flush after every write: the flush is the device's, one at a time,
    # beside its I/O, so writes complete while a flush runs, and flushes never overlap.
    _, params = _knee_params(model, 1.0)
    w = Workload(rw="randwrite", bs_bytes=4096, iodepth=8, fsync_every=1)
    times = replace(sim.device_times(params.values, w, "no", 0.0), flush_us=1000.0)
    st_ = sim.run(times, sim.job_specs(w), 200, trace=True)
    flushes = sorted({t for t, _, kind in st_.trace if kind == "flush"})
    writes = [t for t, _, kind in st_.trace if kind == "write"]
    assert flushes and st_.device_flushes == len(flushes)
    assert all(b - a >= 1000.0 - 1e-6 for a, b in zip(flushes, flushes[1:]))  # one at a time
    during = [t for t in flushes if any(t - 1000.0 + 1e-6 < x < t for x in writes)]
    assert len(during) >= len(flushes) // 2  # float slack at the ends
    # the flushes done, and the part of one still running when the run stopped
    done = 1000.0 * st_.device_flushes
    assert done - 1e-6 <= st_.flush_busy_us <= done + 1000.0


def test_without_a_measured_knee_the_device_keeps_its_channels(model):
    values = model.settings.device_params("nvme")
    times = sim.device_times(values, NO_FSYNC, "unknown")
    assert times.knee_power == 0 and times.channels == round(values["parallelism"])


def test_the_cli_says_a_knee_device_queues_by_its_measured_knee(
    cli_env, tmp_db, model, monkeypatch
):
    from fsadvisor.service import advice
    from fsadvisor.store import open_store

    loop, params = _knee_params(model, 1.0)
    with open_store(str(tmp_db)) as s:
        s.save_device_params(params, fitted_at=1_790_000_000.0)
    monkeypatch.setattr(advice, "resolve_device", lambda spec, plp=None: loop)
    monkeypatch.setenv("COLUMNS", "200")
    r = cli_env(
        "simulate",
        "-c",
        '{"filesystem": "xfs", "ag_count": 16}',
        "-d",
        "/dev/loop4",
        "-w",
        '{"rw": "randread", "bs": "4k", "iodepth": 1}',
        "--vary",
        "iodepth=1,4,16",
        "-n",
        "2000",
    )
    assert r.exit_code == 0, r.output
    assert "loop (measured knee, power 1)" in r.stdout
    assert "channels" not in r.stdout  # a knee device has none of its own
    assert "share of its ceiling in use" in r.stdout
    import json

    r = cli_env(
        "simulate",
        "-c",
        '{"filesystem": "xfs", "ag_count": 16}',
        "-d",
        "/dev/loop4",
        "-w",
        '{"rw": "randread", "bs": "4k", "iodepth": 1}',
        "-n",
        "2000",
        "--json",
    )
    assert r.exit_code == 0, r.output
    cal = json.loads(r.stdout)["results"][0]["calibration"]
    # the device's shape is its knee; MAX_CONCURRENCY is how the simulator holds it, not
    # something the device has
    assert cal["knee_power"] == 1.0 and cal["channels"] is None


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    power=st.sampled_from([1.0, 2.0, 8.0]),
    ov=st.fixed_dictionaries(
        {
            "numjobs": st.sampled_from([1, 16, 64]),
            "iodepth": st.sampled_from([1, 32]),
            "bs": st.sampled_from(["4k", "1m"]),
            "rwmixread": st.integers(0, 100),
        },
        optional={"fsync_every": st.sampled_from([0, 1, 32])},
    ),
)
def test_a_knee_devices_simulated_rates_respect_its_ceilings(model, power, ov):
    """The knee's station has no queued dock: its ceiling is the n G term of every I/O's
    time (sim.knee_media_us), a long-run bound like the dock's, with the same sampling
    spread around it."""
    loop, params = _knee_params(model, power)
    n = max(1500, 10 * ov["numjobs"] * ov["iodepth"])
    r = sim.simulate(model, XFS, OLTP, loop, requests=n, overrides=ov, device_params=params)
    _assert_within_the_ceilings(r, ov, params.values)
    assert 0 < r.utilisation <= 1 and math.isfinite(r.p99_latency_ms)
