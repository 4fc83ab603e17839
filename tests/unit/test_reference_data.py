"""datasets/reference/runs.csv: the measured reference matrix (shm-loop and zram).

Loaded with the csv module only (the model's loader is not this test's business): the shape,
the units in the column names, the device classes, enough ok repetitions for the default
configurations, and no NaN or missing figure in an ok row."""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

CSV = Path(__file__).resolve().parents[2] / "datasets" / "reference" / "runs.csv"
CLASSES = {"shm-loop", "zram"}
STATUSES = {"ok", "failed", "incomplete", "skipped"}
MICRO = (
    "4k-randread-qd32",
    "4k-randwrite-qd32",
    "4k-randrw70-qd32",
    "4k-randwrite-fsync1",
    "128k-read-qd8",
    "128k-write-qd8",
    "meta-create",
    "meta-stat",
    "meta-delete",
)
RAW = MICRO[:6]  # the raw-device baseline has no files to create
REQUIRED = (
    "run_id",
    "device_class",
    "device",
    "host",
    "kernel",
    "fio_version",
    "date",
    "filesystem",
    "mkfs_options",
    "mount_options",
    "scheduler",
    "ag_count",
    "workload",
    "workload_params",
    "rep",
    "status",
    "flags",
    "iops",
    "read_iops",
    "write_iops",
    "mb_s",
    "mean_latency_us",
    "p50_latency_us",
    "p99_latency_us",
    "cpu_usr_pct",
    "cpu_sys_pct",
    "energy_source",
    "power_scope",
    "watts",
    "command",
)
# Figures every ok fio run has (files/s for the metadata jobs is in "iops").
OK_NUMBERS = (
    "iops",
    "mean_latency_us",
    "p50_latency_us",
    "p99_latency_us",
    "cpu_usr_pct",
    "cpu_sys_pct",
    "watts",
)
MKFS_KEYS = {"block_size", "inode_size", "blocks_per_group", "journal"}
# The default configuration of each filesystem (btrfs with the probe's explicit nodiscard).
DEFAULTS = {"raw": ("", ""), "ext4": ("", ""), "xfs": ("", ""), "btrfs": ("", "nodiscard")}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    assert CSV.exists(), f"{CSV} is missing"
    with CSV.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        assert not missing, f"columns missing: {missing}"
        return list(reader)


def _finite(text: str) -> bool:
    try:
        v = float(text)
    except ValueError:
        return False
    return math.isfinite(v)


def test_size_is_reasonable():
    assert CSV.stat().st_size < 5_000_000


def test_every_row_names_its_class_status_and_provenance(rows):
    assert rows
    for r in rows:
        assert r["device_class"] in CLASSES, r["run_id"]
        assert r["status"] in STATUSES, r["run_id"]
        assert r["host"] and r["kernel"] and r["fio_version"].startswith("fio-")
        assert r["date"].endswith("Z") and r["date"][:4].isdigit()
        assert r["scheduler"] == "none"
        assert r["workload"] in MICRO
        assert isinstance(json.loads(r["workload_params"]), dict)
        assert int(r["rep"]) >= 1
        expect = "zram" if r["device_class"] == "zram" else "loop on tmpfs"
        assert r["device"].startswith(expect), r["device"]


def test_columns_follow_the_datasets_conventions(rows):
    for r in rows:
        if r["mkfs_options"]:
            for item in r["mkfs_options"].split(";"):
                key, sep, value = item.partition("=")
                assert sep and key in MKFS_KEYS and value, r["mkfs_options"]
        assert ";" not in r["mount_options"] and " " not in r["mount_options"]
        if r["filesystem"] == "xfs":
            assert r["ag_count"].isdigit() and int(r["ag_count"]) >= 2, r["run_id"]
        else:
            assert r["ag_count"] == ""
        if r["filesystem"] == "raw":
            assert r["mkfs_options"] == r["mount_options"] == ""


def test_ok_rows_have_finite_figures_and_a_labelled_energy_estimate(rows):
    ok = [r for r in rows if r["status"] == "ok"]
    assert ok
    for r in ok:
        for col in OK_NUMBERS:
            assert _finite(r[col]), f"run {r['run_id']}: {col}={r[col]!r}"
        for col, text in r.items():
            assert text.lower() not in ("nan", "inf", "-inf"), f"run {r['run_id']}: {col}"
        assert float(r["iops"]) > 0
        assert r["energy_source"] == "estimate" and r["power_scope"] == "system"
        assert "energy-estimate" in r["flags"].split(";")
        assert r["command"].startswith("fio ")


def test_default_configurations_have_three_ok_reps_per_workload_and_class(rows):
    reps = defaultdict(set)
    for r in rows:
        if r["status"] == "ok":
            reps[
                (
                    r["device_class"],
                    r["filesystem"],
                    r["mkfs_options"],
                    r["mount_options"],
                    r["ag_count"],
                    r["workload"],
                )
            ].add(int(r["rep"]))
    xfs_default_ag = {
        r["ag_count"] for r in rows if r["filesystem"] == "xfs" and not r["mount_options"]
    } - {"2", "16"}
    assert len(xfs_default_ag) == 1  # the AG count mkfs.xfs chose on its own
    for cls in sorted(CLASSES):
        for fs, (mkfs, mount) in DEFAULTS.items():
            ag = next(iter(xfs_default_ag)) if fs == "xfs" else ""
            for wl in RAW if fs == "raw" else MICRO:
                n = len(reps[(cls, fs, mkfs, mount, ag, wl)])
                assert n >= 3, f"{cls} {fs} defaults {wl}: {n} ok reps"
