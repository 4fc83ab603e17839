"""A device whose work is its submitter's moves more for more submitters.

zram compresses (and decompresses) in the context that submits the I/O, so two fio jobs on a
2-core host move about twice one job's 128 KiB writes; a loop device's one worker copies
every request, so a second job adds no bandwidth there
(benchmarks/results/submitters-2026-11-29.txt). The device's ceilings are per submitter,
times min(submitters, host cores, ``bw_submitters``); a calibration on a host of several cores
measures ``bw_submitters`` with 128 KiB writes from that many jobs against one's. The
reference matrix of fsync from 1, 2, 4 and 8 writers (datasets/reference/runs-writers.csv)
shows it through filesystems: every filesystem's appends on zram x1.81-1.88 from one writer
to two, then flat."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from fsadvisor.catalog.device_params import (
    devices_table,
    for_submitters,
    prior_params,
    submitter_scale,
)
from fsadvisor.domain import Workload
from fsadvisor.predict.device_fit import RawRun, fit_device_params
from fsadvisor.probe.calibration_plan import MAX_SUBMITTERS, build_calibration_plan
from fsadvisor.profiles.presets import load_profile

# The log-append preset: four writers of 64 KiB buffered appends, an fsync every 32.
APPEND: Workload = load_profile("log-append").workload


def _values(kind: str, cores: float = 2.0) -> dict[str, float]:
    v = dict(prior_params(kind, devices_table()).values)
    v["host_cores"] = cores
    return v


def test_who_submits_and_how_far_it_scales():
    zram = _values("zram")
    assert submitter_scale(zram, APPEND) == 2.0  # four writers, two cores: the cores
    assert submitter_scale(_values("zram", cores=8), APPEND) == 4.0  # the writers
    assert submitter_scale(zram, dataclasses.replace(APPEND, numjobs=1)) == 1.0
    # buffered writes nobody fsyncs are the kernel flusher's to write back
    unsynced = dataclasses.replace(APPEND, fsync_every=0, fsync_mode="none")
    assert submitter_scale(zram, unsynced) == 1.0
    reads = dataclasses.replace(APPEND, rw="read", fsync_every=0, fsync_mode="none")
    assert submitter_scale(zram, reads) == 2.0
    for kind in ("ram-loop", "loop", "nvme", "sata-ssd", "hdd"):
        assert submitter_scale(_values(kind), APPEND) == 1.0, kind
        assert for_submitters(_values(kind), APPEND) == _values(kind)
    scaled = for_submitters(zram, APPEND)
    for key in ("read_iops_cap", "write_iops_cap", "read_bw_bytes_s", "write_bw_bytes_s"):
        assert scaled[key] == 2.0 * zram[key]
    for key in ("read_latency_us", "write_latency_us", "flush_latency_us", "parallelism"):
        assert scaled[key] == zram[key]  # a submitter's own time per I/O does not change


def _raw(bw_one: float, bw_many: float, jobs: int) -> list[RawRun]:
    def write(bw: float, n: int, rep: int) -> RawRun:
        return RawRun(
            rw="write", bs_bytes=128 << 10, iops=bw / (128 << 10), iodepth=8, numjobs=n,
            bw_bytes_s=bw, run_id=rep + 10 * n,
        )  # fmt: skip

    spread = (0.98, 1.0, 1.02)
    return [write(bw_one * s, 1, i) for i, s in enumerate(spread)] + [
        write(bw_many * s, jobs, i) for i, s in enumerate(spread[:2])
    ]


def test_the_calibration_measures_it_and_keeps_the_one_job_bandwidth_per_submitter():
    p = fit_device_params(_raw(560e6, 1150e6, 2), "zram", devices_table())
    assert p.values["write_bw_bytes_s"] == pytest.approx(560e6, rel=0.02)
    assert p.values["bw_submitters"] == pytest.approx(1150 / 560, rel=0.03)
    assert "bw_submitters" in p.details["measured"]
    assert "x2 jobs" in p.details["cells"]["bw_submitters"]["cell"]
    # a device with its own limit moves no more (nor, beyond noise, less) for two jobs
    flat = fit_device_params(_raw(3.1e9, 2.95e9, 2), "ram-loop", devices_table())
    assert flat.values["bw_submitters"] == 1.0
    assert flat.values["write_bw_bytes_s"] == pytest.approx(3.1e9, rel=0.02)
    # without the several-job cell it stays the kind's prior
    alone = fit_device_params(_raw(560e6, 1150e6, 2)[:3], "zram", devices_table())
    assert "bw_submitters" not in alone.details["measured"]
    assert alone.values["bw_submitters"] == devices_table()["zram"]["bw_submitters"]


def test_the_calibration_plan_has_the_several_job_cell_on_a_host_of_several_cores():
    def cell(cores: int):
        plan = build_calibration_plan(None, 4 << 30, cores=cores)
        many = [w for w in plan.workloads if w.workload.numjobs > 1]
        return plan, many

    plan, many = cell(1)
    assert many == []
    plan, many = cell(2)
    assert [(w.name, w.workload.numjobs, w.workload.rw) for w in many] == [
        ("128k-write-qd8-x2", 2, "write")
    ]
    assert many[0].workload.bs_bytes == 128 << 10 and many[0].workload.iodepth == 8
    assert plan.reps_of(many[0]) == plan.sweep_reps < plan.reps
    assert plan.estimated_seconds() <= 300  # the calibration's promise holds with it
    _, many = cell(64)
    assert [w.workload.numjobs for w in many] == [MAX_SUBMITTERS]


@pytest.fixture(scope="module")
def writers_held_out():
    """The shipped data's fit with the writers matrix's zram identity held out (its raw runs
    stay, as leave-one-device-out does), and that identity's log-append cells by writers."""
    from fsadvisor.predict.fit import fit
    from fsadvisor.predict.settings import ModelSettings
    from fsadvisor.predict.validate import _is_raw, _target_device, device_cells
    from fsadvisor.store import reference
    from fsadvisor.store.datasets import load_observations

    ref = reference.load_observations()
    obs = load_observations(include=("upper-bound", "lower-bound")) + ref
    dev = next(
        d for d in sorted({o.device_id for o in ref}) if d.startswith("zram:") and "writers" in d
    )
    train = [o for o in obs if o.device_id != dev or _is_raw(o)]
    model = fit(train, ModelSettings.load(use_store_calibration=False))
    cells: dict[tuple[str, str], dict[int, object]] = {}
    for c in device_cells(ref, dev):
        if c.metric == "iops" and c.workload.fsync_every == 32 and not c.workload.direct:
            cells.setdefault((c.config.fs, ",".join(c.config.mount)), {})[c.workload.numjobs] = c
    return model, _target_device(ref, dev), cells


def test_zram_appends_held_out_double_from_one_writer_to_two_as_measured(writers_held_out):
    from fsadvisor.predict.predict import predict_many

    model, device, cells = writers_held_out
    assert len(cells) == 4 and all(sorted(by) == [1, 2, 4, 8] for by in cells.values())
    gains, errors = [], []
    for by in cells.values():
        one, two = by[1], by[2]
        p1, p2 = (predict_many(model, [c.config], c.workload, device)[0].iops for c in (one, two))
        assert two.mean / one.mean > 1.7  # measured x1.81-1.88 (rep-to-rep CV 1-5%)
        gains.append(p2 / p1)
        errors += [abs(p / c.mean - 1) for p, c in ((p1, one), (p2, two))]
    # The model's gain follows the device's second core: x1.5-1.9 held out (the filesystems'
    # own commit costs take some of it); with one-job ceilings it predicted x1.02-1.04, i.e.
    # 41-49% under from two writers on.
    assert min(gains) > 1.4, gains
    # held out, raw-only: within 25% at one and two writers (0-19% measured here; the
    # one-job ceilings left it 41-45% under at two)
    assert max(errors) < 0.25, errors
    assert statistics.median(errors) < 0.15, errors
