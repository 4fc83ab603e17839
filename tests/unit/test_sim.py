"""The what-if simulator: exact event sequences on tiny devices, calibration against the
model, queueing laws, and the CLI's output against a golden file. Real simpy throughout."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fsadvisor.predict import sim
from fsadvisor.domain import Device, FsConfig, Workload
from fsadvisor.errors import FsAdvisorError
from fsadvisor.predict.model import ModelSettings, fit

GOLDEN = Path(__file__).parent / "golden"
NVME = Device(path=None, size_bytes=1 << 40, kind="nvme")
XFS = FsConfig.make("xfs", ag_count=16)
# Postgres-like: 16 jobs, 70% random 8K reads, a commit every 8 writes (the oltp preset).
OLTP = Workload(rw="randrw", bs_bytes=8192, numjobs=16, iodepth=1, rwmixread=70,
                fsync_every=1, fsync_mode="per_transaction", direct=False)
NO_FSYNC = Workload(rw="randread", bs_bytes=4096, numjobs=4, iodepth=8)


@pytest.fixture(scope="module")
def model():
    # Prior-only: the simulator must agree with whatever the model says, fitted or not.
    return fit([], ModelSettings.load())


def fixed(channels: int, read_us: float = 10.0, write_us: float = 10.0,
          flush_us: float = 100.0) -> sim.DeviceTimes:
    return sim.DeviceTimes(channels=channels, read_us=read_us, write_us=write_us,
                           flush_us=flush_us, sigma=0.0)


# --------------------------------------------------------------------------- event sequences

def test_one_channel_one_client_serves_back_to_back():
    st_ = sim.run(fixed(1), [sim.JobSpec(read_frac=1.0)], requests=3, trace=True)
    assert st_.trace == [(10.0, 0, "read"), (20.0, 0, "read"), (30.0, 0, "read")]
    assert st_.sim_us == 30.0
    assert list(st_.latencies_us) == [10.0, 10.0, 10.0]
    assert st_.throughput_ops_s == pytest.approx(1e5)


def test_two_clients_share_one_channel_first_come_first_served():
    st_ = sim.run(fixed(1), [sim.JobSpec(read_frac=1.0)] * 2, requests=4, trace=True)
    assert st_.trace == [(10.0, 0, "read"), (20.0, 1, "read"), (30.0, 0, "read"),
                         (40.0, 1, "read")]
    # job 1 waited 10 us for the channel the first time, then every request waits one service
    assert list(st_.latencies_us) == [10.0, 20.0, 20.0, 20.0]


def test_a_flush_drains_and_blocks_every_channel():
    # Job 0 writes and fsyncs every write; job 1 reads 30 us at a time on the other channel.
    times = fixed(2, read_us=30.0, write_us=10.0, flush_us=100.0)
    st_ = sim.run(times, [sim.JobSpec(read_frac=0.0, writes_per_flush=1),
                          sim.JobSpec(read_frac=1.0)], requests=5, trace=True)
    assert st_.trace == [
        (10.0, 0, "write"),
        (30.0, 1, "read"),    # the flush queued at 10 waits for this read to drain
        (130.0, 0, "flush"),  # 30 + 100: it held both channels
        (140.0, 0, "write"),
        (160.0, 1, "read"),   # the read issued at 30 waited behind the flush until 130
        (260.0, 0, "flush"),  # queued at 140, the read held a channel until 160
        (270.0, 0, "write"),
    ]
    assert list(st_.flush_latencies_us) == [120.0, 120.0]
    assert st_.device_flushes == 2


def test_fsyncs_waiting_for_the_same_flush_share_it():
    times = fixed(3, read_us=50.0, write_us=10.0, flush_us=100.0)
    jobs = [sim.JobSpec(read_frac=1.0)] + [sim.JobSpec(writes_per_flush=1)] * 2
    st_ = sim.run(times, jobs, requests=4, trace=True)
    assert st_.trace == [(10.0, 1, "write"), (10.0, 2, "write"), (50.0, 0, "read"),
                         (150.0, 1, "flush"), (150.0, 2, "flush"), (160.0, 1, "write")]
    assert st_.device_flushes == 1 and list(st_.flush_latencies_us) == [140.0, 140.0]


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
    times = sim.DeviceTimes(channels=2, read_us=10.0, write_us=10.0, flush_us=0.0,
                            read_xfer_us=5.0, sigma=0.0)
    st_ = sim.run(times, [sim.JobSpec(read_frac=1.0)] * 2, requests=2, trace=True)
    assert st_.trace == [(15.0, 0, "read"), (20.0, 1, "read")]


def test_channels_never_let_a_narrow_claim_overtake_a_wide_one():
    env = simpy.Environment()
    ch = sim.Channels(env, 2)
    got: list[tuple[str, float]] = []

    def user(name, width, start_us, hold_us):
        yield env.timeout(start_us)
        c = ch.claim(width)
        yield c
        got.append((name, env.now))
        yield env.timeout(hold_us)
        ch.free(c)

    env.process(user("a", 1, 0, 10))
    env.process(user("barrier", 2, 1, 5))
    env.process(user("b", 1, 2, 1))  # a channel is free at 2, but the barrier is first in line
    env.run()
    assert got == [("a", 0), ("barrier", 10), ("b", 15)]
    assert ch.busy_channel_us == 10 + 2 * 5 + 1


# --------------------------------------------------------------------------- distributions

def test_default_spread_reproduces_seed_002_p99_over_mean():
    assert sim.SEED002_RAW_MEAN_US == pytest.approx(78.4, abs=0.1)
    st_ = sim.run(sim.DeviceTimes(channels=64, read_us=78.4, write_us=78.4, flush_us=0.0),
                  [sim.JobSpec()] * 32, requests=60_000, seed=1)
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
        assert r.throughput_ops_s == pytest.approx(r.calibration.model_iops, rel=1e-6)
        assert r.model_iops == pytest.approx(r.calibration.model_iops)
        # the model's watts are the active level and the closed loop keeps the device busy
        assert r.busy_fraction == pytest.approx(1.0)
        assert r.watts == pytest.approx(r.calibration.model_watts)
        assert r.ops_per_joule == pytest.approx(r.calibration.model_ops_per_joule, rel=1e-6)
        assert r.energy_source == "simulated from model"


def test_littles_law_holds_in_the_output(model):
    cal = sim.calibrate(model, XFS, NO_FSYNC, NVME, requests=10_000)
    for ov in (None, {"numjobs": 1}, {"iodepth": 64}, {"numjobs": 16, "iodepth": 32}):
        r = sim.simulate(model, XFS, NO_FSYNC, NVME, requests=10_000, overrides=ov,
                         calibration=cal)
        assert r.mean_latency_ms / 1000 == pytest.approx(r.concurrency / r.throughput_ops_s,
                                                         rel=0.03), ov
        assert r.energy_per_op_j == pytest.approx(r.watts / r.throughput_ops_s, rel=1e-9)


def test_fsync_with_plp_is_faster_than_without(model):
    cal = sim.calibrate(model, XFS, OLTP, NVME, requests=10_000)
    no = sim.simulate(model, XFS, OLTP, NVME, requests=10_000, overrides={"plp": "no"},
                      calibration=cal)
    yes = sim.simulate(model, XFS, OLTP, NVME, requests=10_000, overrides={"plp": "yes"},
                       calibration=cal)
    assert yes.throughput_ops_s > 1.5 * no.throughput_ops_s
    assert yes.mean_flush_latency_ms < no.mean_flush_latency_ms
    assert yes.ops_per_joule > no.ops_per_joule
    none = sim.simulate(model, XFS, OLTP, NVME, requests=10_000, overrides={"fsync_every": 0},
                        calibration=cal)
    assert none.fsyncs == 0 and none.mean_flush_latency_ms is None
    assert none.throughput_ops_s > yes.throughput_ops_s


def test_group_commit_raises_throughput(model):
    w = Workload(rw="write", bs_bytes=65536, numjobs=4, fsync_every=1)
    cal = sim.calibrate(model, XFS, w, NVME, requests=8000)
    thr = [sim.simulate(model, XFS, w, NVME, requests=8000, calibration=cal,
                        overrides={"fsync_every": n}).throughput_ops_s for n in (1, 8, 32)]
    assert thr[0] < thr[1] < thr[2]


def test_same_seed_same_output_other_seed_other_output(model):
    def run(seed):
        d = sim.simulate(model, XFS, OLTP, NVME, seed=seed, requests=3000,
                         overrides={"numjobs": 8}).to_dict()
        d.pop("wall_s")
        return d

    a, b = run(11), run(11)
    assert a == b
    assert run(12)["p99_latency_ms"] != a["p99_latency_ms"]


@pytest.mark.parametrize("overrides, fragment", [
    ({"numjobs": 0}, "numjobs must be between"),
    ({"iodepth": 2.5}, "iodepth must be a whole number"),
    ({"qd": 4}, "unknown what-if knob"),
    ({"plp": "maybe"}, "plp must be yes, no or unknown"),
    ({"bs": "huge"}, "bs must be a size"),
    ({"burst": 4}, "needs both burst"),
    ({"numjobs": 4096, "iodepth": 2}, "limit"),
    ({"numjobs": 100}, "steady state"),
])
def test_bad_overrides_are_one_line_domain_errors(model, overrides, fragment):
    with pytest.raises(FsAdvisorError, match=fragment) as e:
        sim.simulate(model, XFS, NO_FSYNC, NVME, requests=5000, overrides=overrides)
    assert "\n" not in str(e.value)


_OVERRIDES = st.fixed_dictionaries({}, optional={
    "numjobs": st.integers(1, 16),
    "iodepth": st.integers(1, 8),
    "fsync_every": st.integers(0, 64),
    "plp": st.sampled_from(["yes", "no", "unknown"]),
    "rwmixread": st.integers(0, 100),
    "bs": st.sampled_from(["512", "4k", "16k", "128k", "1m", 8192]),
})


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ov=_OVERRIDES, burst=st.sampled_from([None, (3, 0.05), (50, 2.0)]),
       meta=st.sampled_from([0.0, 0.3, 1.0]))
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
    import fsadvisor.cli as cli
    from fsadvisor.service import advice
    advice._cache.clear()
    cli._register()
    runner = CliRunner()
    return lambda *args: runner.invoke(cli.app, list(args))


GOLDEN_ARGS = ["simulate", "--config", '{"filesystem": "xfs", "ag_count": 16}',
               "--profile", "oltp", "--vary", "numjobs=1,4,16,64", "--seed", "7",
               "--requests", "10000"]


def test_cli_output_matches_the_golden_file(cli_env):
    r = cli_env(*GOLDEN_ARGS)
    assert r.exit_code == 0, r.output
    path = GOLDEN / "sim_oltp.out"
    if os.environ.get("FSADVISOR_UPDATE_GOLDEN") == "1":  # regenerate after checking by hand
        path.write_text(r.stdout)
    assert r.stdout == path.read_text(), (
        "simulator output changed; if that is intended (new model data, priors, devices.toml), "
        "check the new numbers by hand and rerun with FSADVISOR_UPDATE_GOLDEN=1")


def test_cli_json_and_errors(cli_env):
    import json
    r = cli_env("simulate", "-c", '{"filesystem": "ext4"}', "-w",
                '{"rw": "randwrite", "bs": "4k", "iodepth": 8, "fsync": 1}',
                "--vary", "plp=no,yes", "-n", "2000", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["note"] == sim.LABEL
    assert [d["plp"] for d in doc["results"]] == ["no", "yes"]
    assert all(d["energy_source"] == "simulated from model" for d in doc["results"])
    for args, fragment in (
            (["--vary", "numjobs=1,x"], "numjobs needs a number"),
            (["--vary", "speed=1"], "unknown what-if knob"),
            (["--requests", "50"], "requests must be between"),
            (["--set", "burst=3"], "needs both burst")):
        r = cli_env("simulate", "-c", '{"filesystem": "ext4"}', "-p", "oltp", *args)
        assert r.exit_code == 2, r.output
        assert fragment in r.output and "Traceback" not in r.output
        assert r.output.count("\n") == 1
