"""The results store on real SQLite files: schema, migration, durability, summaries, seeding,
export, the CLI. The seed datasets module is replaced by a small fake (``fake_datasets``)
except in the one test that loads the real shipped data."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sqlite3
import sys
import threading
import types
from pathlib import Path

import platformdirs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fsadvisor.infra import xdg
from fsadvisor.domain import Device, FsConfig, Workload
from fsadvisor.records import EnergyReading, Observation, RunRecord
from fsadvisor.errors import StoreError
from fsadvisor.store import SCHEMA_VERSION, open_store
from fsadvisor.store.encoding import real_or_none
from fsadvisor.store.intervals import (
    _t_quantile_exact,
    _t_quantile_expansion,
    describe,
    t_cdf,
    t_quantile,
)
from fsadvisor.store.schema import APPLICATION_ID, METRIC_COLUMNS

DEV = Device(path="/dev/loop3", size_bytes=2 << 30, kind="loop", model="loop", plp="no")
XFS = FsConfig.make("xfs", {"block_size": 4096}, ["noatime"], "none", 4)
EXT4 = FsConfig.make("ext4", {"inode_size": 256}, ["noatime", "data=ordered"], "mq-deadline")
RANDREAD = Workload(rw="randread", bs_bytes=4096, iodepth=32, direct=True)


def run_record(**kw) -> RunRecord:
    base = dict(
        cell_key="xfs|randread",
        device=DEV,
        config=XFS,
        workload_name="randread-4k",
        workload=RANDREAD,
        rep=1,
        status="ok",
        started_at=1_700_000_000.0,
        wall_s=12.5,
        metrics={
            "iops": 1000.0,
            "mb_s": 4.096,
            "p99_latency_us": 250.0,
            "mean_latency_us": 30.0,
            "runtime_s": 10.0,
        },
        energy=EnergyReading(
            source="rapl",
            scope="cpu+dram",
            energy_j=100.0,
            avg_watts=10.0,
            duration_s=10.0,
            samples=10,
        ),
        host={"hostname": "box", "kernel": "6.18", "cores": 8, "fio_version": "fio-3.33"},
    )
    base.update(kw)
    return RunRecord(**base)


@pytest.fixture
def fake_datasets(monkeypatch):
    """A stand-in fsadvisor.store.datasets with two tidy rows and one observation; tests change
    ``fake.rows`` to simulate a new shipped dataset."""
    fake = types.ModuleType("fsadvisor.store.datasets")
    fake.rows = [
        {
            "id": "s004-t2-1",
            "source": "seed 004",
            "citation": "Table 2",
            "device": "Intel 750",
            "device_kind": "nvme",
            "kernel": "4.4",
            "filesystem": "xfs",
            "mkfs_options": "-d agcount=32",
            "mount_options": "noatime",
            "scheduler": "none",
            "ag_count": 32,
            "workload": "varmail",
            "metric": "ops_per_s",
            "value": 0.23,
            "unit": "ratio",
            "sd": None,
            "n": 5,
            "relative_to": "xfs default",
            "power_scope": None,
            "energy_source": None,
            "cv_over_40pct": False,
            "note": "",
        },
        {
            "id": "s000-f3-1",
            "source": "seed 000",
            "citation": "Fig. 3",
            "device": "SSD",
            "device_kind": "sata-ssd",
            "kernel": "3.x",
            "filesystem": "ext4",
            "mkfs_options": "",
            "mount_options": "",
            "scheduler": "cfq",
            "ag_count": None,
            "workload": "fileserver",
            "metric": "watts",
            "value": 41.5,
            "unit": "W",
            "sd": 1.2,
            "n": 3,
            "relative_to": None,
            "power_scope": "system",
            "energy_source": "meter-log",
            "cv_over_40pct": True,
            "note": "wall meter",
            "page": 7,
        },
    ]
    fake.calls = 0

    def load_rows():
        fake.calls += 1
        return [dict(r) for r in fake.rows]

    def load_observations(include=()):  # the store asks for bounds too (censored in the fit)
        return [
            Observation(
                source="seed 004, Table 2",
                device_kind="nvme",
                config=FsConfig.make("xfs", ag_count=32),
                workload=Workload(),
                metric="ops_per_joule",
                value=0.23,
                unit="ratio",
                relative_to=FsConfig.make("xfs"),
            )
        ]

    fake.load_rows, fake.load_observations = load_rows, load_observations
    monkeypatch.setitem(sys.modules, "fsadvisor.store.datasets", fake)
    return fake


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path / "results.db")
    yield s
    s.close()


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize(
    "p, df, expected",
    [
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 4, 2.776),
        (0.975, 10, 2.228),
        (0.975, 30, 2.042),
        (0.95, 5, 2.015),
        (0.995, 3, 5.841),
        (0.975, 120, 1.980),
        (0.975, 10**6, 1.960),
    ],
)
def test_t_quantile_matches_published_table(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=5e-4)
    assert t_quantile(1 - p, df) == pytest.approx(-expected, abs=5e-4)


@given(p=st.floats(0.5001, 0.99999), df=st.integers(1, 5000))
@settings(max_examples=200, deadline=None)
def test_t_quantile_inverts_the_cdf(p, df):
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)


@pytest.mark.parametrize("df", [1000, 1500, 3000])
def test_large_df_expansion_agrees_with_exact_inverse(df):
    assert _t_quantile_expansion(0.975, df) == pytest.approx(_t_quantile_exact(0.975, df), abs=1e-9)


def test_t_quantile_rejects_bad_arguments():
    for p, df in ((0.0, 3), (1.0, 3), (0.9, 0)):
        with pytest.raises(ValueError):
            t_quantile(p, df)


def test_describe_three_values_by_hand():
    d = describe([10, 12, 14])
    half = 4.302653 * 2 / math.sqrt(3)  # t(0.975, 2) * sd / sqrt(n)
    assert d["n"] == 3 and d["mean"] == 12 and d["sd"] == pytest.approx(2.0)
    assert d["ci95_low"] == pytest.approx(12 - half, abs=1e-5)
    assert d["ci95_high"] == pytest.approx(12 + half, abs=1e-5)


def test_describe_degenerate_samples():
    assert describe([]) == {"n": 0, "mean": None, "sd": None, "ci95_low": None, "ci95_high": None}
    one = describe([5.0, None, float("nan")])
    assert one["n"] == 1 and one["mean"] == 5.0 and one["sd"] is None and one["ci95_low"] is None
    huge = describe([1e308, 1e308, 1e308])
    assert huge["mean"] == pytest.approx(1e308) and huge["sd"] == 0.0


# --------------------------------------------------------------------------- schema


def test_new_store_has_schema_wal_and_foreign_keys(tmp_path):
    path = tmp_path / "new.db"
    with open_store(path) as s:
        assert s._db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        info = s.info()
    assert info["schema_version"] == SCHEMA_VERSION
    assert set(info["tables"]) >= {
        "hosts",
        "devices",
        "configurations",
        "workloads",
        "matrices",
        "runs",
        "energy",
        "energy_samples",
        "measurements",
    }
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        run_cols = {r[1] for r in con.execute("PRAGMA table_info(runs)")}
        assert set(METRIC_COLUMNS) | {"metrics", "raw_output", "configuration_id"} <= run_cols
    finally:
        con.close()


# The version-1 schema written out by hand, as fsadvisor 0.1 left it on disk.
V1_DDL = """
CREATE TABLE hosts (id INTEGER PRIMARY KEY, key TEXT NOT NULL, hostname TEXT, kernel TEXT,
  cpu_model TEXT, cores INTEGER, fio_version TEXT, info TEXT);
CREATE UNIQUE INDEX idx_hosts_key ON hosts (key);
CREATE TABLE devices (id INTEGER PRIMARY KEY, key TEXT NOT NULL, path TEXT, kind TEXT, model TEXT,
  serial TEXT, firmware TEXT, size_bytes INTEGER, plp TEXT, write_cache TEXT,
  logical_block_size INTEGER, rotational INTEGER);
CREATE UNIQUE INDEX idx_devices_key ON devices (key);
CREATE TABLE configurations (id INTEGER PRIMARY KEY, key TEXT NOT NULL, fs TEXT NOT NULL,
  mkfs TEXT, mount TEXT, scheduler TEXT, ag_count INTEGER);
CREATE UNIQUE INDEX idx_configurations_key ON configurations (key);
CREATE TABLE workloads (id INTEGER PRIMARY KEY, key TEXT NOT NULL, name TEXT NOT NULL, params TEXT);
CREATE UNIQUE INDEX idx_workloads_key ON workloads (key);
CREATE TABLE matrices (id TEXT PRIMARY KEY, plan TEXT, started_at FLOAT, finished_at FLOAT,
  status TEXT);
CREATE TABLE runs (id INTEGER PRIMARY KEY, matrix_id TEXT REFERENCES matrices(id),
  cell_key TEXT NOT NULL, device_id INTEGER NOT NULL REFERENCES devices(id),
  configuration_id INTEGER REFERENCES configurations(id),
  workload_id INTEGER NOT NULL REFERENCES workloads(id), host_id INTEGER REFERENCES hosts(id),
  rep INTEGER, status TEXT NOT NULL, error TEXT, started_at FLOAT, wall_s FLOAT, tool TEXT,
  command TEXT, flags TEXT, {metric_columns}, metrics TEXT, raw_output TEXT);
CREATE TABLE energy (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
  source TEXT NOT NULL, scope TEXT NOT NULL, energy_j FLOAT, avg_watts FLOAT, duration_s FLOAT,
  samples INTEGER, accuracy TEXT, idle_watts FLOAT, active_energy_j FLOAT, assumptions TEXT,
  missing TEXT);
CREATE UNIQUE INDEX idx_energy_run_id ON energy (run_id);
INSERT INTO devices VALUES (1, 'dev-1', '/dev/nvme0n1', 'nvme', 'Old SSD', 'S1', 'F1',
  1000204886016, 'unknown', 'write back', 512, 0);
INSERT INTO configurations VALUES (1, 'xfs [] () none', 'xfs', '{{}}', '[]', 'none', NULL);
INSERT INTO workloads VALUES (1, 'wl-1', 'randread-4k', '{{"rw": "randread", "iodepth": 32}}');
INSERT INTO matrices VALUES ('m-old', '{{"reps": 1}}', 1.0, 2.0, 'done');
INSERT INTO runs (id, matrix_id, cell_key, device_id, configuration_id, workload_id, rep, status,
  started_at, wall_s, tool, command, flags, iops, metrics, raw_output)
  VALUES (1, 'm-old', 'c1', 1, 1, 1, 1, 'ok', 1.0, 1.0, 'fio', '[]', '[]', 5000.0,
  '{{"iops": 5000.0}}', '{{"fio version": "fio-3.33"}}');
INSERT INTO energy (run_id, source, scope, energy_j, avg_watts, duration_s, samples, accuracy,
  assumptions) VALUES (1, 'ipmi', 'system', 1200.0, 120.0, 10.0, 10, '±5%', '{{}}');
PRAGMA application_id = {app_id};
PRAGMA user_version = 1;
"""


def test_hand_built_v1_file_migrates_to_current(tmp_path, fake_datasets):
    path = tmp_path / "v1.db"
    con = sqlite3.connect(path)
    con.executescript(
        V1_DDL.format(
            app_id=APPLICATION_ID, metric_columns=", ".join(f"{m} FLOAT" for m in METRIC_COLUMNS)
        )
    )
    con.close()
    with open_store(path) as s:
        assert s.info()["schema_version"] == SCHEMA_VERSION == 5
        # v3: the old device row got its identity (model + serial), and no calibration
        assert s.runs()[0]["device_identity"] == "nvme:Old SSD:S1"
        assert s.device_params("nvme:Old SSD:S1") is None
        (old,) = s.runs()
        assert old["iops"] == 5000.0 and old["energy_source"] == "ipmi"
        # v4: the old run is a probe run with a stable id derived from its content
        assert old["origin"] == "probe" and old["run_uid"].startswith("run-")
        assert s.info()["runs_by_origin"] == {"probe": 1}
        assert old["workload"] == {"rw": "randread", "iodepth": 32}
        # v5: a run of a single-profile matrix names no profile set
        assert old["profiles"] is None
        assert s.completed_cells("m-old") == {"c1"}
        rid = s.record_run(run_record(), samples=[(0.0, 10.0), (1.0, 11.0)])
        assert s.run(rid)["power_samples"] == [(0.0, 10.0), (1.0, 11.0)]
        # the old run's workload lacks most fields: defaults fill them in
        old_obs = [o for o in s.observations() if o.source == "probe m-old run(s) 1"]
        assert old_obs[0].workload == Workload(rw="randread", iodepth=32)
        assert old_obs[0].device_kind == "nvme"
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    con.close()


# Two `fsadvisor` processes started together on a machine without a store (a probe and a
# TUI, or two CI jobs) both find user_version 0 and no seed rows; the loser must wait and then
# see the winner's schema and seeds, not fail on a lock or load the seeds twice.
def _open_at_barrier(path: str, barrier, results) -> None:
    from fsadvisor.store import open_store

    barrier.wait()
    try:
        with open_store(path) as s:
            s.ensure_seeded()
            info = s.info()
            results.put(("ok", info["schema_version"], info["tables"]["measurements"]))
    except BaseException as e:  # reported to the parent, which asserts on it
        results.put(("error", f"{type(e).__name__}: {e}"))


def test_processes_creating_the_same_new_store_at_once_all_succeed(tmp_path):
    import multiprocessing as mp

    from fsadvisor.store.datasets import load_rows

    ctx = mp.get_context("fork")
    outcomes = []
    for trial in range(12):
        path = str(tmp_path / f"race-{trial}.db")
        barrier, results = ctx.Barrier(3), ctx.Queue()
        procs = [
            ctx.Process(target=_open_at_barrier, args=(path, barrier, results)) for _ in range(3)
        ]
        for p in procs:
            p.start()
        outcomes += [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
    seed_rows = len(load_rows())
    assert outcomes == [("ok", SCHEMA_VERSION, seed_rows)] * len(outcomes)


def test_newer_schema_is_refused_in_one_line(tmp_path):
    path = tmp_path / "future.db"
    open_store(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="newer") as e:
        open_store(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)


def test_corrupt_file_is_refused_in_one_line(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(StoreError, match="not a readable fsadvisor store") as e:
        open_store(path)
    assert "\n" not in str(e.value)


def test_foreign_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not an fsadvisor store"):
        open_store(path)


def test_directory_path_is_refused(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        open_store(tmp_path)


def test_fsadvisor_db_env_and_default_store_path(tmp_db, monkeypatch):
    with open_store() as s:
        assert s.path == tmp_db
    assert tmp_db.exists()
    monkeypatch.delenv("FSADVISOR_DB")
    assert (
        xdg.default_store_path() == Path(platformdirs.user_data_dir("fsadvisor")) / "fsadvisor.db"
    )


def test_memory_store_works(fake_datasets):
    with open_store(":memory:") as s:
        s.record_run(run_record())
        assert s.info()["tables"]["runs"] == 1
        assert s.ensure_seeded()["loaded"] is True


# --------------------------------------------------------------------------- recording


def test_record_run_round_trip_with_energy_and_samples(store):
    raw = '{\n  "fio version" : "fio-3.33",\t"jobs": [ {"jobname": "j\u00e9"} ]\n}  \n'
    mid = store.start_matrix({"reps": 1, "device": "/dev/loop3"})
    energy = EnergyReading(
        source="estimate",
        scope="drive",
        energy_j=55.5,
        avg_watts=5.55,
        duration_s=10.0,
        samples=3,
        accuracy="model, ±50%",
        idle_watts=2.0,
        active_energy_j=35.5,
        assumptions={"active_power_w": 8.0},
        missing=None,
    )
    rid = store.record_run(
        run_record(
            matrix_id=mid,
            raw_output=raw,
            energy=energy,
            flags=("loop-device",),
            command=("fio", "--name=j"),
            metrics={"iops": 1234.5, "ops": 12345, "custom_x": 7},
        ),
        samples=[(0.0, 5.0), {"t": 1.0, "watts": 6.0}, {"t_s": 2.0, "watts": 5.6}],
    )
    # committed the moment record_run returns: another connection sees it
    con = sqlite3.connect(store.path)
    assert con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    con.close()
    r = store.run(rid)
    assert r["raw_output"] == raw
    assert r["metrics"] == {"iops": 1234.5, "ops": 12345, "custom_x": 7}
    assert r["iops"] == 1234.5 and r["ops"] == 12345 and r["mb_s"] is None
    assert r["flags"] == ["loop-device"] and r["command"] == ["fio", "--name=j"]
    assert (r["energy_source"], r["power_scope"], r["energy_j"], r["avg_watts"]) == (
        "estimate",
        "drive",
        55.5,
        5.55,
    )
    assert r["energy_accuracy"] == "model, ±50%" and r["active_energy_j"] == 35.5
    assert r["energy_assumptions"] == {"active_power_w": 8.0} and r["energy_sample_count"] == 3
    assert r["power_samples"] == [(0.0, 5.0), (1.0, 6.0), (2.0, 5.6)]
    assert r["config_key"] == XFS.key() and r["mkfs"] == {"block_size": 4096}
    assert Workload(**r["workload"]) == RANDREAD and r["hostname"] == "box"
    assert "raw_output" not in store.runs()[0]


def test_rows_are_deduplicated_and_raw_baseline_has_no_configuration(store):
    store.record_run(run_record(rep=1))
    store.record_run(run_record(rep=2))
    store.record_run(run_record(config=EXT4))
    store.record_run(run_record(config=None, cell_key="raw", energy=None))
    store.record_run(run_record(device=Device(path="/dev/loop3", size_bytes=4 << 30, kind="loop")))
    t = store.info()["tables"]
    assert (
        t["runs"],
        t["hosts"],
        t["configurations"],
        t["workloads"],
        t["devices"],
        t["energy"],
    ) == (5, 1, 2, 1, 2, 4)
    (raw,) = store.runs(cell_key="raw")
    assert raw["configuration_id"] is None and raw["filesystem"] is None
    assert raw["energy_source"] is None
    assert [r["run_id"] for r in store.runs(filesystem="ext4")] == [3]


def test_failed_record_leaves_nothing_behind(store):
    with pytest.raises(StoreError, match="not in the store"):
        store.record_run(run_record(matrix_id="nope"))
    with pytest.raises(StoreError, match="status"):
        store.record_run(run_record(status="great"))
    with pytest.raises(StoreError, match="power sample"):
        store.record_run(run_record(), samples=[(1.0,)])
    assert all(n == 0 for n in store.info()["tables"].values())


def test_unknown_run_filter_is_a_store_error(store):
    with pytest.raises(StoreError, match="unknown run filter"):
        store.runs(colour="blue")


def test_matrix_lifecycle(store):
    mid = store.start_matrix({"reps": 3, "device": "/dev/loop3", "profile": "oltp"})
    assert store.matrix(mid)["status"] == "running"
    store.finish_matrix(mid, "interrupted")
    m = store.matrix(mid)
    assert m["status"] == "interrupted" and m["finished_at"] >= m["started_at"]
    assert m["plan"]["reps"] == 3
    with pytest.raises(StoreError, match="unknown matrix status"):
        store.finish_matrix(mid, "sort of done")
    with pytest.raises(StoreError, match="already exists"):
        store.start_matrix({}, matrix_id=mid)
    with pytest.raises(StoreError, match="no matrix"):
        store.finish_matrix("m-missing")
    assert store.start_matrix({"configs": [XFS], "when": {1, 2}}, matrix_id="m2") == "m2"
    assert store.matrix("m2")["plan"]["configs"][0]["filesystem"] == "xfs"


def test_completed_cells_need_every_rep_ok(store):
    mid = store.start_matrix({"reps": 2})
    other = store.start_matrix({"reps": 1})
    for cell, rep, status in [
        ("a", 1, "ok"),
        ("a", 2, "ok"),
        ("b", 1, "ok"),
        ("b", 2, "failed"),
        ("c", 1, "ok"),
        ("c", 1, "ok"),
        ("d", 1, "incomplete"),
        ("d", 2, "ok"),
    ]:
        store.record_run(
            run_record(
                matrix_id=mid,
                cell_key=cell,
                rep=rep,
                status=status,
                error=None if status == "ok" else "fio died",
            )
        )
    store.record_run(run_record(matrix_id=other, cell_key="b", rep=2))
    assert store.completed_cells(mid) == {"a"}
    assert store.completed_cells(mid, reps=1) == {"a", "b", "c", "d"}
    assert store.completed_cells(other) == {"b"}
    with pytest.raises(StoreError):
        store.completed_cells("m-missing")


# --------------------------------------------------------------------------- summaries


def test_summary_ci_by_hand_and_incomplete_runs_excluded(store):
    for rep, iops in enumerate([10.0, 12.0, 14.0], start=1):
        store.record_run(
            run_record(
                rep=rep,
                metrics={"iops": iops, "mb_s": iops * 4096 / 1e6, "p99_latency_us": 100.0 * rep},
            )
        )
    store.record_run(
        run_record(rep=4, status="incomplete", error="interrupted", metrics={"iops": 1e9})
    )
    store.record_run(run_record(rep=5, status="failed", error="mount failed", metrics={}))
    (s,) = store.summaries()
    half = 4.302653 * 2 / math.sqrt(3)
    assert s["n"] == 3 and s["run_ids"] == [1, 2, 3]
    assert s["iops"]["mean"] == pytest.approx(12.0) and s["iops"]["sd"] == pytest.approx(2.0)
    assert s["iops"]["ci95_low"] == pytest.approx(12 - half, abs=1e-5)
    assert s["iops"]["ci95_high"] == pytest.approx(12 + half, abs=1e-5)
    assert s["p99_latency_us"]["mean"] == pytest.approx(200.0)
    # 10 W average in every run: ops/J = IOPS / W
    assert s["watts"]["mean"] == pytest.approx(10.0)
    assert s["ops_per_joule"]["mean"] == pytest.approx(1.2)
    assert s["energy_j"]["n"] == 3
    assert {r["status"] for r in store.runs()} == {"ok", "incomplete", "failed"}
    assert store.runs(status="failed")[0]["error"] == "mount failed"
    with pytest.raises(StoreError):
        store.summaries(status="failed")


def test_summaries_keep_power_scopes_apart(store):
    store.record_run(run_record(rep=1))
    store.record_run(
        run_record(
            rep=2,
            energy=EnergyReading(
                source="ipmi", scope="system", energy_j=900.0, avg_watts=90.0, duration_s=10.0
            ),
        )
    )
    scopes = sorted((s["power_scope"], s["watts"]["mean"]) for s in store.summaries())
    assert scopes == [("cpu+dram", 10.0), ("system", 90.0)]
    assert [s["power_scope"] for s in store.summaries(power_scope="system")] == ["system"]


def test_observations_from_probe_summaries(store, fake_datasets):
    mid = store.start_matrix({"reps": 2})
    est = EnergyReading(
        source="estimate",
        scope="drive",
        energy_j=None,
        avg_watts=None,
        duration_s=10.0,
        missing="no power table",
    )
    for rep in (1, 2):
        store.record_run(
            run_record(
                matrix_id=mid,
                rep=rep,
                metrics={
                    "iops": 1000.0 * rep,
                    "mb_s": 4.0 * rep,
                    "p99_latency_us": 500.0,
                    "mean_latency_us": 40.0,
                },
                energy=EnergyReading(
                    source="estimate", scope="drive", energy_j=50.0, avg_watts=5.0, duration_s=10.0
                ),
            )
        )
    store.record_run(run_record(matrix_id=mid, config=EXT4, energy=est))
    store.record_run(run_record(matrix_id=mid, config=None, cell_key="raw"))
    store.record_run(
        run_record(
            matrix_id=mid,
            config=FsConfig.make("ext4", mount=["data=journal"]),
            flags=("direct-io-not-honoured",),
        )
    )
    store.record_run(run_record(matrix_id=mid, rep=3, status="incomplete", metrics={"iops": 1.0}))
    obs = store.observations()
    seeds = [o for o in obs if o.source.startswith("seed")]
    probe = [o for o in obs if o.source.startswith("probe")]
    assert len(seeds) == 1
    xfs = {o.metric: o for o in probe if o.config == XFS}
    assert set(xfs) == {
        "iops",
        "mb_s",
        "mean_latency_us",
        "p99_latency_us",
        "watts",
        "ops_per_joule",
    }
    assert xfs["iops"].value == pytest.approx(1500.0) and xfs["iops"].unit == "IOPS"
    assert xfs["p99_latency_us"].value == pytest.approx(500.0)
    assert xfs["p99_latency_us"].unit == "us"
    assert xfs["ops_per_joule"].value == pytest.approx(300.0)
    assert (xfs["watts"].energy_source, xfs["watts"].power_scope) == ("estimate", "drive")
    assert xfs["iops"].energy_source is None
    assert xfs["iops"].device_kind == "loop" and xfs["iops"].workload == RANDREAD
    assert xfs["iops"].source == f"probe {mid} run(s) 1,2"
    assert "n=2" in xfs["iops"].note and "95% CI" in xfs["iops"].note
    ext4 = {o.metric for o in probe if o.config == EXT4}
    assert ext4 == {"iops", "mb_s", "mean_latency_us", "p99_latency_us"}  # no energy measured
    assert all(o.config.fs != "ext4" or o.config == EXT4 for o in probe)  # flagged run left out
    # the raw baseline is the device's own ceiling: kept, as filesystem "raw"
    raw = {o.metric for o in probe if o.config.fs == "raw"}
    assert "iops" in raw
    assert len({o.source for o in probe}) == 3


# --------------------------------------------------------------------------- seeding


def test_seeding_on_first_use_not_twice_and_again_when_changed(store, fake_datasets):
    assert store.info()["datasets"] is None
    first = store.ensure_seeded()
    assert first["loaded"] is True and first["rows"] == 2
    rows = store.measurements()
    assert [r["id"] for r in rows] == ["s004-t2-1", "s000-f3-1"]
    assert rows[0]["ag_count"] == 32 and rows[0]["value"] == 0.23 and rows[0]["sd"] is None
    assert rows[1]["cv_over_40pct"] == 1 and rows[1]["extra"] == {"page": 7}
    seqs = [r["seq"] for r in rows]
    again = store.ensure_seeded()
    assert again["loaded"] is False and [r["seq"] for r in store.measurements()] == seqs
    fake_datasets.rows = fake_datasets.rows[:1] + [dict(fake_datasets.rows[0], id="new", value=0.5)]
    third = store.ensure_seeded()
    assert third["loaded"] is True and third["hash"] != first["hash"]
    assert [r["id"] for r in store.measurements()] == ["s004-t2-1", "new"]
    info = store.info()["datasets"]
    assert info["rows"] == 2 and info["hash"] == third["hash"]


def test_seeding_the_real_shipped_datasets(store):
    datasets = pytest.importorskip("fsadvisor.store.datasets")
    rows = datasets.load_rows()
    assert store.ensure_seeded()["rows"] == len(rows) > 0
    assert store.info()["tables"]["measurements"] == len(rows)
    assert store.info()["datasets"]["files"] == sorted({r["file"] for r in rows})
    buf = io.StringIO()
    store.export("csv", buf, table="measurements")
    exported = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert [(e["id"], e["metric"]) for e in exported] == [(r["id"], r["metric"]) for r in rows]
    assert [float(e["value"]) for e in exported] == [r["value"] for r in rows]
    # The store hands the model the seed rows with their bounds (censored in the fit) and
    # the shipped reference matrix's cells.
    from fsadvisor.store import reference

    assert len(store.observations()) == (
        len(datasets.load_observations(include=("upper-bound", "lower-bound")))
        + len(reference.load_observations())
    )


def test_missing_datasets_module_is_a_store_error(store, monkeypatch):
    monkeypatch.setitem(sys.modules, "fsadvisor.store.datasets", None)
    with pytest.raises(StoreError, match="seed datasets module"):
        store.ensure_seeded()


# --------------------------------------------------------------------------- export


def _fill(store):
    mid = store.start_matrix({"reps": 2})
    for rep in (1, 2):
        store.record_run(run_record(matrix_id=mid, rep=rep, raw_output=f'{{"rep": {rep}}}'))
    store.record_run(
        run_record(
            matrix_id=mid,
            rep=3,
            status="failed",
            raw_output='{"rep": 3}',
            error='boom, "quoted"\nline',
        )
    )
    return mid


def test_export_csv_runs_parse_back(store, fake_datasets):
    _fill(store)
    buf = io.StringIO()
    assert store.export("csv", buf) == {"runs": 3}
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert len(rows) == 3
    assert rows[0]["config_key"] == XFS.key() and float(rows[0]["energy_j"]) == 100.0
    assert rows[0]["workload.bs_bytes"] == "4096" and rows[0]["metrics.iops"] == "1000.0"
    assert rows[2]["error"] == 'boom, "quoted"\nline' and rows[2]["status"] == "failed"
    assert "raw_output" not in rows[0]


def test_export_csv_other_tables_to_a_file(store, fake_datasets, tmp_path):
    _fill(store)
    store.ensure_seeded()
    out = tmp_path / "s.csv"
    assert store.export("csv", out, table="summaries") == {"summaries": 1}
    (row,) = list(csv.DictReader(out.open(newline="")))
    assert float(row["iops.mean"]) == 1000.0 and row["n"] == "2"
    store.export("csv", out, table="measurements")
    assert [r["id"] for r in csv.DictReader(out.open(newline=""))] == ["s004-t2-1", "s000-f3-1"]


def test_export_json_document(store, fake_datasets, tmp_path):
    _fill(store)
    store.ensure_seeded()
    out = tmp_path / "all.json"
    assert store.export("json", out) == {"runs": 3, "summaries": 1, "measurements": 2}
    doc = json.loads(out.read_text())
    assert set(doc) == {"schema_version", "runs", "summaries", "measurements"}
    assert [r["raw_output"] for r in doc["runs"]] == ['{"rep": 1}', '{"rep": 2}', '{"rep": 3}']
    assert doc["summaries"][0]["iops"]["n"] == 2
    only = io.StringIO()
    store.export("json", only, table="measurements")
    assert set(json.loads(only.getvalue())) == {"schema_version", "measurements"}


def test_export_rejects_unknown_format_and_table(store, tmp_path):
    with pytest.raises(StoreError, match="format"):
        store.export("xml", io.StringIO())
    with pytest.raises(StoreError, match="table"):
        store.export("csv", io.StringIO(), table="secrets")
    with pytest.raises(StoreError, match="cannot write"):
        store.export("csv", tmp_path / "no" / "such" / "dir.csv")


# --------------------------------------------------------------------------- concurrency


def test_second_connection_and_other_thread(tmp_path):
    path = tmp_path / "shared.db"
    with open_store(path) as writer, open_store(path) as reader:
        writer.record_run(run_record())
        assert len(reader.runs()) == 1
        errors: list[BaseException] = []

        def work():
            try:
                writer.record_run(run_record(rep=2))
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        t = threading.Thread(target=work)
        t.start()
        t.join()
        assert not errors and len(reader.runs()) == 2


# --------------------------------------------------------------------------- hypothesis

metric_values = st.one_of(
    st.floats(), st.integers(), st.text(max_size=20), st.none(), st.booleans()
)
metric_names = st.one_of(st.sampled_from(METRIC_COLUMNS), st.text(max_size=30))


def _expected(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


@given(
    metrics=st.dictionaries(metric_names, metric_values, max_size=12),
    cell_key=st.text(),
    name=st.text(),
    error=st.one_of(st.none(), st.text()),
    raw=st.text(),
    command=st.lists(st.text(max_size=10), max_size=5),
    flags=st.lists(st.text(max_size=10), max_size=3),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_arbitrary_metrics_and_strings_round_trip(
    metrics, cell_key, name, error, raw, command, flags
):
    with open_store(":memory:") as s:
        rid = s.record_run(
            run_record(
                metrics=metrics,
                cell_key=cell_key,
                workload_name=name,
                error=error,
                raw_output=raw,
                command=tuple(command),
                flags=tuple(flags),
                status="failed" if error else "ok",
            )
        )
        r = s.run(rid)
        assert r["metrics"] == {k: _expected(v) for k, v in metrics.items()}
        for m in METRIC_COLUMNS:
            assert r[m] == (real_or_none(metrics[m]) if m in metrics else None)
        assert (r["cell_key"], r["workload_name"], r["error"], r["raw_output"]) == (
            cell_key,
            name,
            error,
            raw,
        )
        assert (r["command"], r["flags"]) == (command, flags)
        s.summaries()
        buf = io.StringIO()
        s.export("json", buf, table="runs")
        assert json.loads(buf.getvalue())["runs"][0]["raw_output"] == raw


# --------------------------------------------------------------------------- CLI and service


@pytest.fixture
def cli():
    from fsadvisor.cli.app import register_all, app

    register_all()
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def test_cli_db_info(cli, tmp_path, fake_datasets):
    path = tmp_path / "cli.db"
    with open_store(path) as s:
        _fill(s)
    r = cli("db", "info", "--db", str(path), "--json")
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert info["tables"]["runs"] == 3 and info["datasets"]["rows"] == 2
    assert info["last_probe"]["runs_ok"] == 2 and info["last_probe"]["runs_failed"] == 1
    r = cli("db", "info", "--db", str(path))
    assert (
        r.exit_code == 0
        and f"schema v{SCHEMA_VERSION}" in r.stdout
        and "2 ok, 1 failed" in r.stdout
    )


def test_cli_db_export(cli, tmp_db, fake_datasets, tmp_path):
    with open_store() as s:
        _fill(s)
    r = cli("db", "export", "--format", "csv")
    assert r.exit_code == 0, r.output
    assert len(list(csv.DictReader(io.StringIO(r.stdout)))) == 3
    out = tmp_path / "x.json"
    r = cli("db", "export", "--format", "json", "--table", "summaries", "--output", str(out))
    assert r.exit_code == 0 and "1 summaries" in r.stdout
    assert json.loads(out.read_text())["summaries"][0]["n"] == 2


def test_cli_csv_export_of_an_empty_store_is_the_header(cli, tmp_db, fake_datasets):
    r = cli("db", "export", "--format", "csv")
    assert r.exit_code == 0, r.output
    header = r.stdout.splitlines()
    assert len(header) == 1 and header[0].startswith("run_id,matrix_id,cell_key,rep,status,")
    reader = csv.DictReader(io.StringIO(r.stdout))
    assert list(reader) == [] and {"config_key", "energy_j", "iops", "workload"} <= set(
        reader.fieldnames
    )
    # The same columns as once there are runs (JSON-valued ones flattened there).
    with open_store() as s:
        _fill(s)
    filled = csv.DictReader(io.StringIO(cli("db", "export", "--format", "csv").stdout)).fieldnames
    for col in reader.fieldnames:
        if col == "energy_assumptions":
            continue  # {} in every run of _fill, and an empty dict adds no column
        assert any(f == col or f.startswith(col + ".") for f in filled), col
    r = cli("db", "export", "--format", "csv", "--table", "measurements")
    assert r.stdout.startswith("seq,id,source,")


def test_cli_csv_export_of_no_summaries_writes_no_blank_line(cli, tmp_db, fake_datasets):
    r = cli("db", "export", "--format", "csv", "--table", "summaries")
    assert r.exit_code == 0 and r.stdout == ""


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_cli_export_to_an_unwritable_path_is_one_line(cli, tmp_db, fake_datasets, tmp_path, fmt):
    # /proc/version: root opens it and fails on the write (EIO); others fail on the open.
    for target in ("/proc/version", str(tmp_path)):
        r = cli("db", "export", "--format", fmt, "-o", target)
        assert r.exit_code == 2, r.output
        assert r.stderr.startswith(f"fsadvisor: cannot write export to {target}: ")
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.output
        assert r.exception is None or isinstance(r.exception, SystemExit)


def test_cli_errors_are_one_line_exit_2(cli, tmp_path, fake_datasets):
    bad = tmp_path / "bad.db"
    bad.write_bytes(os.urandom(4096))
    r = cli("db", "info", "--db", str(bad))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "not a readable" in r.stderr
    r = cli("db", "export", "--format", "xml", "--db", str(tmp_path / "ok.db"))
    assert r.exit_code == 2 and "unknown export format" in r.stderr


def test_service_history(tmp_db, fake_datasets):
    from fsadvisor.service.store import db_export, db_info, history

    with open_store() as s:
        first = s.start_matrix({"reps": 1, "device": "/dev/loop3", "profile": "oltp"})
        s.record_run(run_record(matrix_id=first))
        s.finish_matrix(first)
        second = s.start_matrix({"reps": 1, "device": "/dev/loop4"}, matrix_id="zz-later")
    h = history()
    assert [m["id"] for m in h] == [second, first]
    assert h[1]["status"] == "done" and h[1]["runs_ok"] == 1 and h[1]["profile"] == "oltp"
    (one,) = history(matrix_id=first)
    assert len(one["runs"]) == 1 and "raw_output" not in one["runs"][0]
    assert db_info()["path"] == str(tmp_db)
    buf = io.StringIO()
    assert db_export("json", buf)["tables"] == {"runs": 1, "summaries": 1, "measurements": 2}


def test_raw_baselines_under_different_schedulers_stay_apart(store, fake_datasets):
    mid = store.start_matrix({"reps": 1})
    for sched, iops in (("none", 1000.0), ("mq-deadline", 3000.0)):
        store.record_run(
            run_record(
                matrix_id=mid,
                config=None,
                energy=None,
                cell_key=f"raw-device {sched} | randread-4k",
                metrics={"iops": iops},
            )
        )
    raws = [s for s in store.summaries() if s["config"] is None]
    assert sorted(s["iops"]["mean"] for s in raws) == [1000.0, 3000.0]
    obs = {
        o.config.scheduler: o.value
        for o in store.observations()
        if o.config.fs == "raw" and o.metric == "iops" and not o.source.startswith("reference")
    }
    assert obs == {"none": 1000.0, "mq-deadline": 3000.0}


# --------------------------------------------------------------------------- every metric summarised


def test_every_recorded_metric_gets_its_summary_by_hand(store):
    """Three reps: each metric's mean, sd (n-1) and 95% t interval computed by hand."""
    per_rep = {  # rep 1, 2, 3
        "p50_latency_us": (90.0, 100.0, 110.0),
        "p999_latency_us": (1000.0, 1300.0, 1600.0),
        "write_amplification": (1.5, 2.0, 2.5),
        "usr_cpu_pct": (4.0, 5.0, 6.0),
        "sys_cpu_pct": (20.0, 22.0, 24.0),
        "host_cpu_busy_pct": (40.0, 45.0, 50.0),
        "host_cpu_usr_pct": (10.0, 11.0, 12.0),
        "host_cpu_sys_pct": (28.0, 30.0, 32.0),
        "host_cpu_iowait_pct": (5.0, 7.0, 9.0),
        "read_p99_latency_us": (300.0, 330.0, 360.0),
        "dev_write_bytes": (1e9, 2e9, 3e9),
    }
    for i in range(3):
        metrics = {
            "iops": 1000.0,
            **{k: v[i] for k, v in per_rep.items()},
            "window_start_epoch_s": 1.7e9 + 100 * i,
            "window_end_epoch_s": 1.7e9 + 100 * i + 10,
            "note": "not a number",
        }
        store.record_run(run_record(rep=i + 1, metrics=metrics))
    (s,) = store.summaries()
    t = 4.302653  # t(0.975, 2)
    for key, (a, b, c) in per_rep.items():
        mean = (a + b + c) / 3
        sd = math.sqrt(((a - mean) ** 2 + (b - mean) ** 2 + (c - mean) ** 2) / 2)
        half = t * sd / math.sqrt(3)
        got = s[key]
        assert got["n"] == 3, key
        assert got["mean"] == pytest.approx(mean) and got["sd"] == pytest.approx(sd), key
        assert (got["ci95_low"], got["ci95_high"]) == pytest.approx(
            (mean - half, mean + half), rel=1e-6
        ), key
    assert s["p50_latency_us"]["sd"] == pytest.approx(10.0)  # 90, 100, 110 by eye
    # When the window was is no property of the cell; text is no figure.
    assert "window_start_epoch_s" not in s and "window_end_epoch_s" not in s and "note" not in s
    assert s["iops"]["mean"] == 1000.0 and s["iops"]["sd"] == 0.0
    assert s["p99_latency_us"]["n"] == 0  # no run recorded it, yet the key is there


def test_fixed_summary_metrics_are_present_without_values(store):
    store.record_run(run_record(metrics={"iops": 5.0}))
    (s,) = store.summaries()
    for key in (
        "p50_latency_us",
        "p999_latency_us",
        "write_amplification",
        "usr_cpu_pct",
        "sys_cpu_pct",
        "host_cpu_usr_pct",
        "host_cpu_sys_pct",
        "host_cpu_iowait_pct",
    ):
        assert s[key] == {"n": 0, "mean": None, "sd": None, "ci95_low": None, "ci95_high": None}
    assert s["iops"]["mean"] == 5.0


def test_a_metric_named_like_a_summary_field_does_not_replace_it(store):
    store.record_run(run_record(metrics={"iops": 5.0, "n": 99.0, "run_ids": 1.0}))
    (s,) = store.summaries()
    assert s["n"] == 1 and s["run_ids"] == [1]


def test_pooled_percentiles_are_noted_in_observations(store, fake_datasets):
    pooled = "latency-percentiles-pooled-estimate"
    store.record_run(
        run_record(
            flags=(pooled,),
            metrics={"iops": 10.0, "p99_latency_us": 500.0, "mean_latency_us": 40.0},
        )
    )
    store.record_run(
        run_record(
            config=EXT4, metrics={"iops": 10.0, "p99_latency_us": 500.0, "mean_latency_us": 40.0}
        )
    )
    probe = [o for o in store.observations() if o.source.startswith("probe")]
    notes = {(o.config.fs, o.metric): o.note for o in probe}
    assert "pooled estimate" in notes[("xfs", "p99_latency_us")]
    assert "pooled estimate" not in notes[("xfs", "mean_latency_us")]  # a pooled mean is exact
    assert "pooled estimate" not in notes[("ext4", "p99_latency_us")]


# --------------------------------------------------------------------------- joint probes

JOINT_PLAN = {
    "reps": 5,
    "profile": "a",
    "adaptive": {
        "profiles": ["a", "b", "c"],
        "profile_workloads": ["profile:a", "profile:a", "profile:c"],
    },
}


def test_a_joint_probes_shared_run_counts_for_every_profile_it_served(store, tmp_path):
    """A cell profiles a and b share is measured once, stored under a's workload name with
    both in its profile set: each profile's lookup finds it, once, and no other's does."""
    m = store.start_matrix(JOINT_PLAN)
    shared = store.record_run(
        run_record(matrix_id=m, workload_name="profile:a", profiles=("a", "b"))
    )
    store.record_run(
        run_record(
            matrix_id=m,
            workload_name="profile:a",
            rep=2,
            profiles=("a", "b"),
            metrics={"iops": 1100.0},
        )
    )
    own_c = store.record_run(run_record(matrix_id=m, workload_name="profile:c", profiles=("c",)))
    alone_b = store.record_run(run_record(config=EXT4, workload_name="profile:b"))
    ids = {p: [r["run_id"] for r in store.runs(profile=p)] for p in ("a", "b", "c", "d")}
    assert ids == {
        "a": [shared, shared + 1],
        "b": [shared, shared + 1, alone_b],
        "c": [own_c],
        "d": [],
    }
    assert store.run(shared)["profiles"] == ["a", "b"]
    assert store.run(alone_b)["profiles"] is None
    by_cfg = {s["config_key"]: s for s in store.summaries(profile="b")}
    assert set(by_cfg) == {XFS.key(), EXT4.key()}
    assert by_cfg[XFS.key()]["n"] == 2 and by_cfg[XFS.key()]["profiles"] == ["a", "b"]
    assert by_cfg[XFS.key()]["iops"]["mean"] == 1050.0
    assert by_cfg[EXT4.key()]["profiles"] == ["b"]
    # a merged copy keeps the profile set
    with open_store(tmp_path / "other.db") as other:
        other.merge_from(store.path)
        assert [r["run_id"] for r in other.runs(profile="b")] and other.runs(profile="b")[0][
            "profiles"
        ] == ["a", "b"]
    # the history names every profile of the session
    from fsadvisor.service.store import history

    assert history(db=store.path)[0]["profile"] == "a + b + c"


def as_v4(path) -> None:
    """Make a store file what schema v4 wrote: no runs.profiles column."""
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE runs DROP COLUMN profiles")
    con.execute("PRAGMA user_version = 4")
    con.commit()
    con.close()


def test_v4_store_gets_its_joint_runs_profile_sets(tmp_path):
    """Runs of a joint probe stored before v5 get the profiles their matrix's plan says their
    workload served; a single-profile matrix's runs stay their workload's."""
    path = tmp_path / "v4.db"
    with open_store(path) as s:
        joint = s.start_matrix(JOINT_PLAN)
        single = s.start_matrix({"reps": 5, "profile": "a"})
        s.record_run(run_record(matrix_id=joint, workload_name="profile:a"))
        s.record_run(run_record(matrix_id=joint, workload_name="profile:c"))
        s.record_run(run_record(matrix_id=single, workload_name="profile:a", rep=2))
    as_v4(path)
    with open_store(path) as s:
        assert s.info()["schema_version"] == SCHEMA_VERSION == 5
        assert [r["profiles"] for r in s.runs()] == [["a", "b"], ["c"], None]
        assert [r["matrix_id"] for r in s.runs(profile="b")] == [joint]
        assert [r["matrix_id"] for r in s.runs(profile="a")] == [joint, single]


def test_v4_joint_runs_of_profiles_given_as_files_are_found_by_the_names_they_hold(tmp_path):
    """A joint probe's plan holds a profile file as the path it was given, but the probe
    stored (and lookups use) the name the file holds: the migration reads it, and names a
    file that is gone by its stem, as a file without a name is named."""
    web = tmp_path / "web.toml"
    web.write_text('name = "webcache"\n[fio]\nrw = "randread"\nbs = "16k"\n')
    gone = str(tmp_path / "old" / "batch.toml")
    plan = {
        "reps": 5,
        "profile": str(web),
        "adaptive": {
            "profiles": [str(web), gone, "oltp"],
            "profile_workloads": ["profile:webcache", "profile:batch", "profile:oltp"],
        },
    }
    path = tmp_path / "v4.db"
    with open_store(path) as s:
        m = s.start_matrix(plan)
        for w in ("webcache", "batch", "oltp"):
            s.record_run(run_record(matrix_id=m, workload_name=f"profile:{w}"))
    as_v4(path)
    with open_store(path) as s:
        assert [r["profiles"] for r in s.runs()] == [["webcache"], ["batch"], ["oltp"]]
        for name in ("webcache", "batch", "oltp"):
            assert [r["workload_name"] for r in s.runs(profile=name)] == [f"profile:{name}"]
        assert s.runs(profile=str(web)) == []
