"""The store's device_params table: per-device calibration keyed by the device identity,
saved whole or not at all, and kept per store file."""

from __future__ import annotations

import sqlite3

import pytest

from fsadvisor.domain import Device, Workload, device_identity
from fsadvisor.records import RunRecord
from fsadvisor.errors import StoreError
from fsadvisor.predict.device_fit import RawRun, fit_device_params
from fsadvisor.catalog.device_params import PARAM_KEYS, DeviceParams
from fsadvisor.store import open_store

DEVICES = {"loop": {k: 100.0 for k in PARAM_KEYS}}
LOOP_A = Device(
    path="/dev/loop3", size_bytes=1 << 30, kind="loop", model="loop on ext4 (/dev/vda1), direct I/O"
)
LOOP_B = Device(
    path="/dev/loop6", size_bytes=2 << 30, kind="loop", model="loop on ext4 (/dev/vda1), direct I/O"
)


def raw(device: Device, iops: float, rep: int) -> RunRecord:
    return RunRecord(
        cell_key="raw-device none | 4k-randread-qd1",
        device=device,
        config=None,
        workload_name="4k-randread-qd1",
        workload=Workload(rw="randread", bs_bytes=4096, iodepth=1),
        rep=rep,
        status="ok",
        started_at=1.7e9,
        wall_s=3.0,
        metrics={"iops": iops, "mb_s": iops * 4096 / 1e6, "mean_latency_us": 1e6 / iops},
    )


def test_identity_is_the_backing_class_not_the_loop_number():
    assert LOOP_A.identity == LOOP_B.identity == "loop:loop on ext4 (/dev/vda1), direct I/O"
    ram = Device(path="/dev/loop1", size_bytes=1 << 30, kind="ram-loop", model="loop on tmpfs")
    assert ram.identity == "ram-loop:loop on tmpfs"
    assert device_identity("zram", "zram (lzo-rle)") == "zram:zram (lzo-rle)"
    assert device_identity("nvme", "Samsung 990", "S6Z1", "/dev/nvme0n1") == "nvme:Samsung 990:S6Z1"
    assert (
        device_identity("nvme", "Samsung 990", "", "/dev/nvme0n1")
        == "nvme:Samsung 990:/dev/nvme0n1"
    )
    assert device_identity("nvme") == "kind:nvme"


def test_save_and_load_round_trip(tmp_path):
    with open_store(tmp_path / "a.db") as s:
        ids = [s.record_run(raw(LOOP_A, 10000 + 100 * i, i + 1)) for i in range(3)]
        rows = s.runs(device_identity=LOOP_A.identity)
        assert [r["run_id"] for r in rows] == ids
        fitted = fit_device_params(
            [RawRun.from_store_row(r) for r in rows], "loop", DEVICES, device_id=LOOP_A.identity
        )
        s.save_device_params(fitted, run_ids=ids, fitted_at=1_800_000_000.0)
        back = s.device_params(LOOP_A.identity)
        assert back.values == fitted.values and back.log_sd == fitted.log_sd
        assert (back.kind, back.source, back.n_runs) == ("loop", fitted.source, 3)
        assert back.details["run_ids"] == ids and back.details["fitted_at"] == 1_800_000_000.0
        assert back.details["measured"] == ["read_latency_us"]
        # the same class on another loop number and size finds the same calibration
        s.record_run(raw(LOOP_B, 9000, 1))
        assert s.device_params(LOOP_B.identity) == back
        assert s.calibrated_devices() == [LOOP_A.identity]
        assert s.info()["tables"]["device_params"] == 1
        # a recalibration replaces the row
        s.save_device_params(
            DeviceParams(
                LOOP_A.identity,
                "loop",
                {k: 1.0 for k in PARAM_KEYS},
                {k: 0.1 for k in PARAM_KEYS},
                "again",
                1,
            ),
            run_ids=ids[:1],
        )
        assert s.device_params(LOOP_A.identity).source == "again"
        assert s.info()["tables"]["device_params"] == 1
    con = sqlite3.connect(tmp_path / "a.db")
    row = con.execute("SELECT identity, device_id, n_runs, run_ids FROM device_params").fetchone()
    con.close()
    assert (
        row[0] == LOOP_A.identity and row[1] is not None and row[2] == 1 and row[3] == f"[{ids[0]}]"
    )


def test_calibration_is_per_store(tmp_path):
    p = DeviceParams(
        LOOP_A.identity,
        "loop",
        {k: 1.0 for k in PARAM_KEYS},
        {k: 0.1 for k in PARAM_KEYS},
        "calibrated",
        3,
    )
    with open_store(tmp_path / "a.db") as a:
        a.save_device_params(p)
    with open_store(tmp_path / "b.db") as b:
        assert b.device_params(LOOP_A.identity) is None


def test_incomplete_or_dangling_params_are_refused_whole(tmp_path):
    with open_store(tmp_path / "a.db") as s:
        short = DeviceParams(
            LOOP_A.identity, "loop", {"read_latency_us": 1.0}, {"read_latency_us": 0.1}, "x", 1
        )
        with pytest.raises(StoreError, match="lack"):
            s.save_device_params(short)
        full = DeviceParams(
            LOOP_A.identity,
            "loop",
            {k: 1.0 for k in PARAM_KEYS},
            {k: 0.1 for k in PARAM_KEYS},
            "x",
            1,
        )
        with pytest.raises(StoreError, match="not in the store"):
            s.save_device_params(full, run_ids=[12345])
        assert s.device_params(LOOP_A.identity) is None
