"""A device's ceilings are never below what its own cells demonstrably moved through it.

A calibration measures bandwidth with one submitting job. zram compresses in the writer's
context, so four writers with fsync move about twice that (runs-mechanisms.csv: ext4's
log-append on zram at 1.3 GB/s against the raw 128 KiB writes' 842 MB/s), and a multi-queue
SSD moves more with several jobs than with one. Capped at the one-job figure, every
prediction for such a workload sat at the cap whatever the device's own runs said: an
adaptive probe of log-append on zram ranked five measured runs as if none had been made.
What a cell showed is kept per submitter, as the ceilings are (a four-writer cell on zram
moved two cores' worth: test_submitters.py)."""

from __future__ import annotations

import dataclasses

import pytest

from fsadvisor.domain import FsConfig, Workload
from fsadvisor.records import Observation
from fsadvisor.predict.fit import demonstrated_bandwidth

APPEND = Workload(
    rw="write",
    bs_bytes=64 << 10,
    numjobs=4,
    fsync_every=32,
    fsync_mode="every_n",
    direct=False,
    ioengine="psync",
)
EXT4 = FsConfig.make("ext4", {}, (), "none", None)


def _obs(w: Workload, iops: float, cfg: FsConfig = EXT4, device: str = "zram:x") -> Observation:
    return Observation(
        source="probe test",
        device_kind="zram",
        config=cfg,
        workload=w,
        metric="iops",
        value=iops,
        unit="IOPS",
        device_id=device,
    )


def test_what_counts_as_demonstrated():
    w4k = dataclasses.replace(APPEND, bs_bytes=4096, fsync_every=0, fsync_mode="none")
    shown = demonstrated_bandwidth(
        [
            _obs(APPEND, 16_000),  # buffered, an fsync every 32: on the device in its window
            _obs(dataclasses.replace(APPEND, fsync_every=0, fsync_mode="none"), 90_000),
            _obs(APPEND, 40_000, FsConfig.make("btrfs", {}, ("compress=zstd:1",), "none", None)),
            _obs(dataclasses.replace(w4k, rw="randread", direct=True), 50_000),
            _obs(dataclasses.replace(w4k, rw="randread", direct=False), 900_000),
        ]
    )
    # fewer bytes reach the device than the application wrote under compression, and
    # buffered writes without fsync or buffered reads may never leave the page cache
    assert shown == {"zram:x": {"write": 16_000 * 65536, "read": 50_000 * 4096}}


@pytest.fixture(scope="module")
def zram_appends():
    """The shipped data's fit, the quiet zram reference device, its ext4/XFS log-append cells
    and its raw 128 KiB write bandwidth (one job)."""
    from fsadvisor.predict.fit import fit
    from fsadvisor.predict.settings import ModelSettings
    from fsadvisor.predict.validate import _target_device, device_cells
    from fsadvisor.store import reference
    from fsadvisor.store.datasets import load_observations

    ref = reference.load_observations()
    obs = load_observations(include=("upper-bound", "lower-bound")) + ref
    dev = next(
        d for d in sorted({o.device_id for o in ref}) if d.startswith("zram:") and "quiet" in d
    )
    cells = [
        c
        for c in device_cells(ref, dev)
        if c.metric == "iops"
        and c.workload.numjobs == 4
        and c.workload.fsync_every == 32
        and c.config.fs in ("ext4", "xfs")
        and not c.config.mount
        and not c.config.mkfs
    ]
    raw_bw = max(
        o.value * (1 << 20)
        for o in ref
        if o.device_id == dev
        and o.config.fs == "raw"
        and o.metric == "mb_s"
        and o.workload.bs_bytes == 128 << 10
        and o.workload.read_pct == 0
    )
    model = fit(obs, ModelSettings.load(use_store_calibration=False))
    return model, dev, _target_device(ref, dev), cells, raw_bw


def test_the_reference_zram_appends_are_not_capped_at_the_one_job_bandwidth(zram_appends):
    from fsadvisor.predict.predict import predict_many

    from fsadvisor.catalog.device_params import for_submitters
    from fsadvisor.predict.ceilings import lifted_ceilings

    model, dev, device, cells, raw_bw = zram_appends
    assert len(cells) == 2
    # what the device showed is kept per submitter (four writers on zram bring two cores:
    # test_submitters.py); the ceiling these appends see is well above the one-job figure
    assert model.demonstrated[dev]["write"] > raw_bw
    seen = for_submitters(
        lifted_ceilings(model.params_for(device).values, model.demonstrated[dev]),
        cells[0].workload,
    )
    assert seen["write_bw_bytes_s"] > 1.4 * raw_bw
    preds = predict_many(model, [c.config for c in cells], cells[0].workload, device)
    for c, p in zip(cells, preds):
        # measured 1.5-1.7x the one-job cap (19.8k and 22.7k writes/s against ~12.9k). In
        # sample the prediction is 11-14% under its cell (the smooth cap still bites near the
        # largest bandwidth shown, which is this very cell's); capped at the one-job figure it
        # was 23% under for ext4. 18% is between the two.
        assert c.mean > 1.4 * raw_bw / c.workload.bs_bytes
        assert p.iops == pytest.approx(c.mean, rel=0.18), (c.config.key(), p.iops, c.mean)


def test_the_simulator_reaches_the_model_where_the_device_moved_more_than_its_calibration(
    zram_appends,
):
    # The simulated device is the one predict caps at: its transfer stage at what the
    # device's own cells moved, so at the workload's own point it reaches the model's figure
    # rather than stopping below it (the simulator's ceiling for this mix was the device's
    # fitted figure, 16.1k writes/s, against the 22.7k its own appends moved).
    from fsadvisor.predict import sim

    model, dev, device, cells, raw_bw = zram_appends
    c = next(c for c in cells if c.config.fs == "ext4")
    r = sim.simulate(model, c.config, c.workload, device, requests=4000)
    assert r.ceiling_iops >= model.demonstrated[dev]["write"] / c.workload.bs_bytes * 0.999
    assert r.ceiling_iops > 1.4 * raw_bw / c.workload.bs_bytes
    rel = 1e-6 if r.calibration.scale >= 1.0 else sim.SCALE_TOLERANCE
    assert r.throughput_ops_s == pytest.approx(r.calibration.model_iops, rel=rel)
