"""Calibration without a device: the plan and its 5-minute budget, the lookup that
predict/recommend use (calibrated vs prior vs an unknown kind's fallback class), and the
model taking the device's parameters."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from fsadvisor.domain import Device, FsConfig, Workload
from fsadvisor.errors import ConfigError
from fsadvisor.catalog.device_params import DEVICE_KEYS, PARAM_KEYS, DeviceParams, prior_params
from fsadvisor.probe.calibration_plan import (
    BUDGET_S,
    SWEEP_NAMES,
    CalibrationPlan,
    build_calibration_plan,
)
from fsadvisor.service import calibration, device_figures
from fsadvisor.store import open_store

TIB = 1 << 40
LOOP = Device(
    path="/dev/loop4", size_bytes=1 << 30, kind="loop", model="loop on ext4 (/dev/vda), direct I/O"
)


def test_plan_covers_every_parameter_and_fits_the_budget():
    p = build_calibration_plan("/dev/nvme9n1", TIB)
    names = [w.name for w in p.workloads]
    assert names == [
        "4k-randread-qd1",
        "4k-randwrite-qd1",
        "4k-randwrite-fsync1",
        "4k-randread-qd32",
        "4k-randwrite-qd32",
        "128k-read-qd8",
        "128k-write-qd8",
        "4k-randread-qd4",
        "4k-randread-qd16",
        "4k-randread-qd64",
    ]
    assert all(w.raw_baseline and w.workload.direct for w in p.workloads)
    cells = p.cells()
    assert all(c.config is None and c.scheduler == "none" for c in cells)
    assert len(cells) == 7 * 3 + 3 * 2  # key cells 3 reps, the sweep's extra depths 2
    assert [c.rep for c in cells[:10]] == [1] * 10  # repetitions outermost
    assert p.estimated_seconds() <= BUDGET_S and p.runtime_s == 4.0 and p.cooldown_s == 0
    assert p.size_bytes == 512 << 20
    d = p.to_dict()
    assert d["purpose"] == "calibration" and d["cells"] == 27
    # never the key a probe of the same device resumes from
    assert p.device_key == "calibrate:/dev/nvme9n1"
    assert (
        build_calibration_plan(None, 1 << 30, scratch_size_bytes=1 << 30).device_key
        == "calibrate:scratch"
    )


def test_plan_shrinks_its_windows_to_fit_and_refuses_what_cannot():
    p = build_calibration_plan("/dev/x", TIB, budget_s=100)
    assert p.estimated_seconds() <= 100 and p.runtime_s < 4.0 and p.reps == 3
    tight = build_calibration_plan("/dev/x", TIB, budget_s=60)
    assert tight.estimated_seconds() <= 60 and tight.reps == 2 and tight.runtime_s == 1.0
    with pytest.raises(ConfigError, match=r"would take about \d+ s, more than its 300 s budget"):
        build_calibration_plan("/dev/x", TIB, runtime_s=30)  # the user's own window: refused
    with pytest.raises(ConfigError, match="lower --runtime or --reps"):
        build_calibration_plan("/dev/x", TIB, reps=20, runtime_s=4)
    with pytest.raises(ConfigError, match="--runtime must be positive"):
        build_calibration_plan("/dev/x", TIB, runtime_s=0)
    assert SWEEP_NAMES == {"4k-randread-qd4", "4k-randread-qd16", "4k-randread-qd64"}


def test_lookup_calibrated_prior_and_unknown_kind(tmp_path):
    db = str(tmp_path / "s.db")
    table = device_figures.devices_table()
    assert {"ram-loop", "zram", "loop", "nvme"} <= set(table)
    # every kind has the device's own keys; the host's (HOST_KEYS) are no kind's property
    assert all(set(DEVICE_KEYS) <= set(table[k]) for k in table)
    prior = device_figures.device_params_for(LOOP, db)
    assert not prior.measured and prior.values == prior_params("loop", table).values
    assert device_figures.describe(prior).startswith(
        "prior for kind loop (models/devices.toml [loop]"
    )
    odd = Device(path="/dev/vdb", size_bytes=1 << 30, kind="unknown", model="virtio")
    text = device_figures.describe(device_figures.device_params_for(odd, db))
    assert text.startswith("prior for kind nvme (device kind 'unknown' has no figures")
    fitted = DeviceParams(
        LOOP.identity,
        "loop",
        {k: 2.0 for k in PARAM_KEYS},
        {k: 0.05 for k in PARAM_KEYS},
        "calibrated: test",
        12,
        {"measured": list(PARAM_KEYS)},
    )
    with open_store(db) as s:
        s.save_device_params(fitted, fitted_at=1_790_000_000.0)  # 2026-09-21
    other_loop_number = Device(path="/dev/loop7", size_bytes=2 << 30, kind="loop", model=LOOP.model)
    got = device_figures.device_params_for(other_loop_number, db)
    assert got.values == fitted.values
    assert device_figures.describe(got) == (
        "calibrated on this device, 12 runs, 2026-09-21 "
        f"({len(PARAM_KEYS)} of {len(PARAM_KEYS)} parameters measured)"
    )
    # a spec without a path is its kind's prior, whatever the store holds
    spec = Device(path=None, size_bytes=1 << 30, kind="loop")
    assert not device_figures.device_params_for(spec, db).measured


def test_params_table_intervals():
    p = DeviceParams(
        "x",
        "loop",
        {k: 100.0 for k in PARAM_KEYS},
        {k: 0.1 for k in PARAM_KEYS},
        "calibrated",
        3,
        {"measured": ["read_latency_us"]},
    )
    t = calibration.params_table(p)
    assert t["read_latency_us"]["measured"] and not t["parallelism"]["measured"]
    lo, hi = t["read_latency_us"]["interval_90"]
    assert lo == pytest.approx(
        100 * 2.718281828 ** (-0.1 * 1.6448536)
    ) and lo * hi == pytest.approx(1e4)


def test_the_model_uses_the_device_ceiling():
    from fsadvisor.predict.settings import ModelSettings
    from fsadvisor.predict.fit import fit
    from fsadvisor.predict.predict import predict

    model = fit([], ModelSettings.load(prior_scale=1.0))
    w = Workload(rw="randread", bs_bytes=4096, iodepth=32)
    cfg = FsConfig.make("xfs")
    base = predict(model, cfg, w, LOOP)
    slow = prior_params("loop", model.settings.devices, LOOP.identity)
    slow = DeviceParams(
        slow.device_id,
        "loop",
        {**slow.values, "read_iops_cap": 2000.0},
        slow.log_sd,
        "calibrated: test",
        3,
    )
    capped = predict(model, cfg, w, LOOP, device_params=slow)
    assert base.iops > 5000 and capped.iops <= 2000.0 * 1.001
    assert capped.basis["device_params"]["source"] == "calibrated: test"
    # Without a calibration the basis still says what the device figures are: the prior.
    assert base.basis["device_params"]["source"].startswith("prior: models/devices.toml [loop]")
    assert base.basis["device_params"]["n_runs"] == 0


def test_cli_device_calibration_refuses_output_and_keeps_the_model_form(tmp_path, monkeypatch):
    from fsadvisor.cli.app import register_all, app

    register_all()
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "c.db"))
    r = CliRunner().invoke(app, ["calibrate", "--scratch", "1G", "--output", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--output applies to the model calibration" in r.output
    r = CliRunner().invoke(app, ["calibrate", "--scratch", "1G", "--dry-run", "--runtime", "60"])
    assert r.exit_code == 2 and "budget" in r.output
    r = CliRunner().invoke(app, ["calibrate", "--scratch", "1G", "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    # 27 runs, and on a host of several cores the 128 KiB writes from as many jobs, twice
    from fsadvisor.host.cpu import cores

    assert f'"runs": {27 + (2 if cores() > 1 else 0)}' in r.output
