"""The shipped seed data loads, validates and says what the seeds say; the loader turns any
malformed file into one DatasetError line naming file:line, never another exception."""

from __future__ import annotations

import csv
import math
import string
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsadvisor.store import datasets
from fsadvisor.store.datasets import (
    DATASET_FILESYSTEMS,
    DEVICE_KINDS,
    EXCLUDED_BY_DEFAULT,
    HEADER,
    METRIC_UNITS,
    DatasetError,
    load_observations,
    load_rows,
    load_workloads,
)
from fsadvisor.domain import FsConfig, Workload
from fsadvisor.errors import FsAdvisorError
from fsadvisor.infra.resources import data_dir

SHIPPED = data_dir("datasets")
CSV_FILES = (
    "seed000_massie2025.csv",
    "seed002_fs_overhead.csv",
    "seed003_ssd_schedulers.csv",
    "seed004_sehgal2010.csv",
)


@pytest.fixture(scope="module")
def rows():
    return load_rows()


def pick(rows, **want):
    """The single row matching every given column (mkfs/mount as their CSV strings)."""
    found = [r for r in rows if all(r[k] == v for k, v in want.items())]
    assert len(found) == 1, (want, [r["id"] for r in found])
    return found[0]


# ---------------------------------------------------------------- the shipped files


def test_every_seed_has_its_file_and_every_row_loads(rows):
    assert sorted(p.name for p in SHIPPED.glob("*.csv")) == sorted(CSV_FILES)
    per_file = Counter(r["file"] for r in rows)
    assert set(per_file) == set(CSV_FILES)
    assert sum(per_file.values()) == len(rows) > 400
    for name in CSV_FILES:  # the loader saw every data line of every file
        with open(SHIPPED / name, newline="", encoding="utf-8") as f:
            assert per_file[name] == sum(1 for _ in csv.DictReader(f))


def test_every_row_is_cited_and_typed(rows):
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)
    for r in rows:
        assert r["citation"].strip() and r["source"].startswith("seeds/"), r["id"]
        assert isinstance(r["value"], float) and math.isfinite(r["value"])
        assert r["filesystem"] in DATASET_FILESYSTEMS and r["device_kind"] in DEVICE_KINDS
        assert r["ag_count"] is None or (
            isinstance(r["ag_count"], int) and r["filesystem"] == "xfs"
        )


def test_relative_rows_name_their_baseline(rows):
    relative = [r for r in rows if r["unit"] in ("ratio", "ratio-1")]
    assert len(relative) > 250
    for r in relative:
        assert r["relative_to"] == "default" or r["relative_to"].startswith(
            ("default:", "same:")
        ), r["id"]
    for r in rows:
        if r["unit"] not in ("ratio", "ratio-1"):
            assert r["relative_to"] == "" and r["unit"] in METRIC_UNITS[r["metric"]], r["id"]


def test_workloads_file_defines_exactly_the_ids_used(rows):
    workloads = load_workloads()
    assert all(isinstance(w, Workload) for w in workloads.values())
    assert {r["workload"] for r in rows} == set(workloads)
    # The two Filebench generations disagree (seed 003 Table 2 vs seed 004 Table 1).
    assert workloads["filebench-webserver-003"].nrfiles == 1000
    assert workloads["filebench-webserver-004"].nrfiles == 20000
    assert workloads["fio-write-4k-j8"] == Workload(
        rw="write",
        bs_bytes=4096,
        iodepth=64,
        numjobs=8,
        direct=True,
        ioengine="io_uring",
        working_set_bytes=100 << 30,
        nrfiles=1,
        file_size_bytes=100 << 30,
        rank_by="ops",
    )
    assert workloads["fs-overhead-randwrite-4k-fsync1"].fsync_every == 1


# ---------------------------------------------------------------- spot checks against the seeds


def test_seed000_fig6_sequential_write_and_bounds(rows):
    for fs in ("ext4", "xfs"):
        r = pick(rows, filesystem=fs, workload="fio-write-4k-j8", metric="iops")
        assert (r["value"], r["n"], r["mount"]) == (1_620_000, 10, ("noatime",))
        assert pick(rows, filesystem=fs, workload="fio-write-4k-j8", metric="gb_s")["value"] == 6.18
    assert pick(rows, filesystem="xfs", workload="fio-write-4k-j8", metric="iops")["ag_count"] == 4
    f2fs = pick(rows, filesystem="f2fs", workload="fio-write-4k-j8", metric="gb_s")
    assert f2fs["value"] == 3 and "upper-bound" in f2fs["tags"]
    bounds = [
        r
        for r in rows
        if r["workload"].endswith(("-128k-j1", "-128k-j4", "-128k-j8"))
        and "Obs. 1" in r["citation"]
    ]
    assert len(bounds) == 3 * 5 * 3 * 2
    assert all("upper-bound" in r["tags"] and r["value"] in (54_000, 6.6) for r in bounds)


def test_seed000_obs4_reads_comparable(rows):
    """Obs. 4: "For read operations, all three file systems generally show comparable IO
    performance and energy efficiency" -- one no-difference row per fio read cell for xfs and
    f2fs, against ext4 mounted as they were (noatime), performance only."""
    obs4 = [r for r in rows if r["citation"].endswith("Obs. 4")]
    reads = {
        f"fio-{rw}-{bs}-j{j}"
        for rw in ("randread", "read")
        for bs in ("4k", "128k")
        for j in (1, 4, 8)
    }
    assert {(r["filesystem"], r["workload"]) for r in obs4} == {
        (fs, w) for fs in ("xfs", "f2fs") for w in reads
    }
    assert len(obs4) == 24
    for r in obs4:
        assert (r["metric"], r["value"], r["unit"], r["relative_to"]) == (
            "iops",
            0,
            "ratio-1",
            "same:ext4",
        )
        assert "comparable" in r["tags"] and r["mount"] == ("noatime",)
        assert "generally show comparable IO performance" in r["note"]
    obs = {o.source.rpartition("(")[2].rstrip(")"): o for o in load_observations()}
    o = obs[
        pick(rows, citation=obs4[0]["citation"], filesystem="xfs", workload="fio-randread-128k-j1")[
            "id"
        ]
    ]
    # against ext4 mounted alike: the comparison is of the filesystems, not of noatime
    assert o.relative_to == FsConfig.make("ext4", {}, ("noatime",), "none", None)
    assert o.config == FsConfig.make("xfs", {}, ("noatime",), "none", 4)


def test_seed002_sample_run_table(rows):
    def cell(fs, mount, workload, metric):
        return pick(rows, filesystem=fs, mount_options=mount, workload=workload, metric=metric)[
            "value"
        ]

    qd32, fsync1 = "fs-overhead-randwrite-4k-qd32", "fs-overhead-randwrite-4k-fsync1"
    tuned = "data=writeback,noatime,nobarrier,commit=60"
    assert cell("ext4", "relatime", qd32, "iops") == 38400
    assert cell("ext4", "relatime", qd32, "p99_latency_us") == 4800
    assert cell("ext4", tuned, fsync1, "iops") == 18900
    assert (
        cell("xfs", "logbufs=8,logbsize=256k", "fs-overhead-metadata-create", "files_per_s")
        == 38400
    )
    raw = [
        r
        for r in rows
        if r["filesystem"] == "raw" and r["workload"] == qd32 and "spec" not in r["tags"]
    ]
    assert {r["metric"]: r["value"] for r in raw} == {
        "iops": 408200,
        "mb_s": 1594.5,
        "p99_latency_us": 290,
    }


def test_seed002_bandwidth_is_mib_as_the_harness_computes_it(rows):
    # fs_overhead.py prints bw_bytes / (1024*1024) under "MB/s"; every table row agrees.
    table = [r for r in rows if r["citation"].endswith("sample-run table")]
    by_cell = {}
    for r in table:
        by_cell.setdefault((r["filesystem"], r["mount_options"], r["workload"]), {})[
            r["metric"]
        ] = r
    checked = 0
    for metrics in by_cell.values():
        if "mb_s" in metrics:
            assert metrics["mb_s"]["unit"] == "MiB/s"
            assert abs(metrics["iops"]["value"] * 4096 / 2**20 - metrics["mb_s"]["value"]) < 0.1
            checked += 1
    assert checked == 8


def test_seed002_fsync_decomposition_and_illustrative_amplification(rows):
    fsync = {
        r["mount_options"] or r["filesystem"]: r["value"]
        for r in rows
        if r["metric"] == "fsync_latency_us"
    }
    assert fsync == {
        "relatime": 1160,
        "relatime,nobarrier": 800,
        "relatime,nobarrier,data=writeback": 620,
        "logbufs=8,logbsize=256k": 880,
    }
    wa = [
        r for r in rows if r["metric"] == "write_bytes_per_4k_write" and r["filesystem"] == "ext4"
    ]
    assert sorted(r["value"] for r in wa) == [4.5, 12, 16]
    assert all("illustrative" in r["tags"] for r in wa)
    noatime = pick(rows, workload="db-server-writes-002")
    assert noatime["range"] == (0.05, 0.15) and noatime["relative_to"] == "default"


def test_seed003_table3_power_iops_and_ai(rows):
    t3 = {
        r["filesystem"]: {}
        for r in rows
        if r["citation"].endswith("Table 3") and r["file"] == "seed003_ssd_schedulers.csv"
    }
    for r in rows:
        if r["file"] == "seed003_ssd_schedulers.csv" and r["citation"].endswith("Table 3"):
            assert r["scheduler"] == "cfq" and r["power_scope"] == "drive"
            t3[r["filesystem"]][r["metric"]] = r["value"]
    assert set(t3) == {"ext2", "ext3", "nilfs2", "reiserfs", "xfs"}
    assert t3["xfs"]["watts"] == 1.9963
    assert t3["ext2"] == {
        "watts": 1.8042,
        "iops": 4598.63,
        "mb_s": 110.2,
        "ai_iops_per_watt": 2548.85,
    }
    for fs, m in t3.items():  # AI = IOPS / P (Eq. 4), to the printed digits
        assert m["ai_iops_per_watt"] == pytest.approx(m["iops"] / m["watts"], abs=0.5), fs


def test_seed003_cemp_and_table1(rows):
    cemp = [r for r in rows if r["filesystem"] == "ext3" and r["scheduler"] == "noop"]
    assert sorted((r["metric"], r["value"]) for r in cemp) == [
        ("watts_max", 1.8),
        ("watts_min", 1.5),
    ]
    idle = [
        r for r in rows if r["file"] == "seed003_ssd_schedulers.csv" and r["workload"] == "idle"
    ]
    assert sorted(r["value"] for r in idle) == [0.15, 1.5, 3.3]
    assert all("spec" in r["tags"] for r in idle)


def test_seed004_table2(rows):
    t2 = [r for r in rows if r["citation"] == "Sehgal et al., FAST'10, Table 2"]
    assert len(t2) == 27 * 4 * 2
    ag64 = {
        r["metric"]: r["value"]
        for r in t2
        if r["ag_count"] == 64 and r["workload"] == "filebench-fileserver-004"
    }
    assert ag64 == {"ops_per_s": 0.23, "ops_per_joule": 0.25}
    notail = pick(
        t2,
        filesystem="reiserfs",
        mount_options="notail",
        workload="filebench-webserver-004",
        metric="ops_per_s",
    )
    assert notail["value"] == 1.28 and notail["unit"] == "ratio-1"
    blk2k = pick(
        t2,
        filesystem="ext2",
        mkfs_options="block_size=2048",
        workload="filebench-oltp-004",
        metric="ops_per_joule",
    )
    assert blk2k["value"] == 1.37
    dashes = [r for r in t2 if "indistinguishable" in r["tags"]]
    assert dashes and all(r["value"] == 0 for r in dashes)
    daggers = {
        (r["filesystem"], r["mkfs_options"] or r["mount_options"]) for r in t2 if r["cv_over_40pct"]
    }
    assert daggers == {
        ("ext2", "noatime"),
        ("ext2", "block_size=1024"),
        ("ext2", "inode_size=1024"),
        ("ext2", "blocks_per_group=16384"),
    }
    # Pow. is ops/joule: agcnt64 -> agcnt128 is the "dropped by 14%" of Sec. 5.3.
    ag128 = pick(t2, ag_count=128, workload="filebench-fileserver-004", metric="ops_per_joule")
    assert (1 + ag128["value"]) / (1 + ag64["ops_per_joule"]) == pytest.approx(0.86, abs=0.01)


def test_seed004_table3_and_text_facts(rows):
    web = [
        r
        for r in rows
        if r["citation"].endswith("Table 3")
        and r["filesystem"] == "xfs"
        and r["workload"] == "filebench-webserver-004"
    ]
    assert {(r["metric"], r["relative_to"]): r["value"] for r in web} == {
        ("ops_per_s", "default:xfs"): 1.08,
        ("ops_per_s", "default:ext2"): 9.4,
        ("ops_per_joule", "default:xfs"): 1.06,
        ("ops_per_joule", "default:ext2"): 7.5,
    }
    assert (
        pick(
            rows,
            filesystem="xfs",
            mkfs_options="block_size=2048",
            ag_count=64,
            workload="filebench-fileserver-004",
        )["value"]
        == 0.41
    )
    assert (
        pick(
            rows,
            filesystem="reiserfs",
            mount_options="noatime,notail",
            workload="filebench-webserver-004",
        )["value"]
        == 1.55
    )
    ctx = {
        (r["workload"], r["power_scope"]): r["value"]
        for r in rows
        if r["file"] == "seed004_sehgal2010.csv" and r["filesystem"] == "raw"
    }
    assert ctx == {
        ("idle", "system"): 214,
        ("node-peak-004", "system"): 279,
        ("idle", "drive"): 7,
        ("hdd-max-power-004", "drive"): 22,
    }


# ---------------------------------------------------------------- observations


def test_observations_leave_out_bounds_and_convert_ratios(rows):
    obs = load_observations()
    kept = [r for r in rows if not (r["tags"] & EXCLUDED_BY_DEFAULT)]
    assert len(obs) == len(kept) < len(rows)
    assert all(o.unit != "ratio" for o in obs)
    assert len(load_observations(include=EXCLUDED_BY_DEFAULT)) == len(rows)
    web = [
        o
        for o in obs
        if o.source.startswith("Sehgal et al., FAST'10, Table 3")
        and o.relative_to == FsConfig.make("ext2")
        and o.metric == "ops_per_s"
        and o.workload == load_workloads()["filebench-webserver-004"]
    ]
    assert len(web) == 1 and web[0].value == pytest.approx(8.4)
    assert web[0].config == FsConfig.make("xfs", {"inode_size": 1024})


def test_observation_configs(rows):
    obs = {o.source.rpartition("(")[2].rstrip(")"): o for o in load_observations()}
    ag64 = pick(
        rows, ag_count=64, workload="filebench-fileserver-004", metric="ops_per_s", mkfs_options=""
    )
    o = obs[ag64["id"]]
    assert o.config == FsConfig.make("xfs", {}, (), "none", 64)
    assert o.relative_to == FsConfig.make("xfs", {}, (), "none", None)
    assert (o.power_scope, o.energy_source, o.device_kind, o.weight) == (
        "system",
        "meter-log",
        "hdd",
        1.0,
    )
    cfq = pick(rows, filesystem="xfs", metric="watts", scheduler="cfq")
    assert obs[cfq["id"]].config.scheduler == "cfq" and obs[cfq["id"]].relative_to is None
    with pytest.raises(DatasetError):
        load_observations(include=["approx"])


# ---------------------------------------------------------------- malformed files

GOOD = {
    "id": "t-1",
    "source": "seeds/x.txt",
    "citation": "Test, Table 1",
    "device": "disk",
    "device_kind": "nvme",
    "kernel": "6.1",
    "filesystem": "xfs",
    "mkfs_options": "block_size=4096",
    "mount_options": "noatime",
    "scheduler": "none",
    "ag_count": "8",
    "workload": "w1",
    "metric": "iops",
    "value": "1000",
    "unit": "IOPS",
    "sd": "",
    "n": "",
    "relative_to": "",
    "power_scope": "",
    "energy_source": "",
    "cv_over_40pct": "",
    "note": "",
}
WORKLOADS_TOML = '[w1]\nrw = "randread"\nbs = "4k"\n\n[w2]\nrw = "write"\nfsync = 1\n'


def write_dir(d: Path, rows: list[dict], header=HEADER, name="t.csv") -> Path:
    (d / "workloads.toml").write_text(WORKLOADS_TOML)
    with open(d / name, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([r[h] for h in HEADER])
    return d


def load_error(rows_: list[dict], **kw) -> str:
    with tempfile.TemporaryDirectory() as d:
        with pytest.raises(DatasetError) as e:
            load_rows(write_dir(Path(d), rows_, **kw))
    return str(e.value)


def test_good_fixture_row_loads(tmp_path):
    (r,) = load_rows(write_dir(tmp_path, [GOOD]))
    assert (r["value"], r["ag_count"], r["mkfs"], r["mount"], r["line"]) == (
        1000.0,
        8,
        {"block_size": 4096},
        ("noatime",),
        2,
    )


@pytest.mark.parametrize(
    "column, value, problem",
    [
        ("filesystem", "zfs", "filesystem = 'zfs' must be one of"),
        ("unit", "MB/s", "unit = 'MB/s' is not a unit of iops"),
        ("value", "12k", "value = '12k' is not a number"),
        ("value", "nan", "value = 'nan' is not a number"),
        ("citation", "", "citation is empty"),
        ("workload", "w9", "workload = 'w9' is not defined in workloads.toml"),
        ("ag_count", "0", "ag_count = '0' must be at least 1"),
        ("mkfs_options", "blocksize=4096", "key 'blocksize' is not one of"),
        ("relative_to", "default", "relative_to = 'default' must be empty for an absolute row"),
        ("note", "[guess] x", "tag [guess] is not one of"),
        ("note", "[range=5..9] x", "tag [range=5..9] must hold the value 1000"),
    ],
)
def test_bad_cell_names_file_line_and_column(column, value, problem):
    bad = dict(GOOD, id="t-2", **{column: value})
    msg = load_error([GOOD, bad])
    assert msg.startswith("t.csv:3: ") and problem in msg and "\n" not in msg


def test_relative_row_needs_a_baseline_and_known_metric():
    rel = dict(GOOD, unit="ratio-1", value="0.23")
    assert "relative_to = '' must be 'default'" in load_error([rel])
    assert "relative_to = 'same:raw' must be 'default'" in load_error(
        [dict(rel, relative_to="same:raw")]
    )
    assert "relative_to = 'like:ext4' must be" in load_error([dict(rel, relative_to="like:ext4")])
    assert "metric = 'speed' is not one of" in load_error([dict(GOOD, metric="speed")])


def test_ag_count_only_for_xfs_and_no_options_on_raw():
    assert "XFS allocation-group count" in load_error([dict(GOOD, filesystem="ext4")])
    assert "raw (no filesystem)" in load_error([dict(GOOD, filesystem="raw", ag_count="")])


def test_file_level_errors(tmp_path):
    assert "header must be exactly" in load_error([GOOD], header=HEADER[:-1] + ("notes",))
    assert "is also used at t.csv:2" in load_error([GOOD, GOOD])
    write_dir(tmp_path, [GOOD])
    (tmp_path / "t.csv").write_bytes(b"\xff\xfe")
    with pytest.raises(DatasetError, match="not UTF-8"):
        load_rows(tmp_path)
    (tmp_path / "t.csv").unlink()
    with pytest.raises(DatasetError, match="holds no"):
        load_rows(tmp_path)


def test_bad_workloads_file_is_one_line(tmp_path):
    write_dir(tmp_path, [GOOD])
    (tmp_path / "workloads.toml").write_text('[w1]\nrw = "randread"\nbogus = 1\n')
    with pytest.raises(FsAdvisorError, match=r"workloads.toml \[w1\].*bogus"):
        load_rows(tmp_path)
    (tmp_path / "workloads.toml").write_text("[w1\n")
    with pytest.raises(DatasetError, match="malformed TOML"):
        load_workloads(tmp_path)


# ---------------------------------------------------------------- generated files


def _num(x: float) -> str:
    return repr(float(x))


@st.composite
def valid_rows(draw, idx: int = 0):
    fs = draw(st.sampled_from(DATASET_FILESYSTEMS))
    metric = draw(st.sampled_from(sorted(METRIC_UNITS)))
    relative = fs != "raw" and draw(st.booleans())
    if relative:
        unit = draw(st.sampled_from(("ratio-1", "ratio")))
        lo = -0.99 if unit == "ratio-1" else 0.01
        value = draw(st.floats(lo, 1e3, allow_nan=False))
        base = draw(
            st.sampled_from(
                ("default",)
                + tuple(
                    p + f for p in ("default:", "same:") for f in DATASET_FILESYSTEMS if f != "raw"
                )
            )
        )
    else:
        unit = draw(st.sampled_from(METRIC_UNITS[metric]))
        value = draw(st.floats(0, 1e9, allow_nan=False))
        base = ""
    mkfs = (
        {}
        if fs == "raw"
        else draw(
            st.dictionaries(
                st.sampled_from(("block_size", "inode_size", "blocks_per_group")),
                st.integers(1, 1 << 20),
                max_size=3,
            )
        )
    )
    mount = (
        ()
        if fs == "raw"
        else tuple(
            draw(
                st.lists(
                    st.sampled_from(
                        (
                            "noatime",
                            "relatime",
                            "nobarrier",
                            "data=writeback",
                            "commit=60",
                            "logbsize=256k",
                        )
                    ),
                    unique=True,
                    max_size=3,
                )
            )
        )
    )
    ag = draw(st.none() | st.integers(1, 512)) if fs == "xfs" else None
    sd = draw(st.none() | st.floats(0, 1e6, allow_nan=False))
    n = draw(st.none() | st.integers(1, 100))
    text = st.text(string.ascii_letters + string.digits + " ,;'\"()%", max_size=30).map(str.strip)
    row = {
        "id": f"g-{idx}",
        "source": "seeds/gen.txt",
        "citation": draw(text.filter(bool)),
        "device": draw(text),
        "device_kind": draw(st.sampled_from(DEVICE_KINDS)),
        "kernel": draw(st.sampled_from(("", "6.5", "2.6.18"))),
        "filesystem": fs,
        "mkfs_options": ";".join(f"{k}={v}" for k, v in mkfs.items()),
        "mount_options": ",".join(mount),
        "scheduler": draw(
            st.sampled_from(("", "none", "mq-deadline", "kyber", "bfq", "cfq", "deadline", "noop"))
        ),
        "ag_count": "" if ag is None else str(ag),
        "workload": draw(st.sampled_from(("w1", "w2"))),
        "metric": metric,
        "value": _num(value),
        "unit": unit,
        "sd": "" if sd is None else _num(sd),
        "n": "" if n is None else str(n),
        "relative_to": base,
        "power_scope": draw(st.sampled_from(("", "system", "drive"))),
        "energy_source": draw(st.sampled_from(("", "meter-log", "rapl"))),
        "cv_over_40pct": draw(st.sampled_from(("", "true", "false"))),
        "note": (
            draw(st.sampled_from(("", "[approx] ", "[upper-bound] [derived] ", "[spec] ")))
            + draw(text)
        ).strip(),
    }
    return row, (value, mkfs, mount, ag, sd, n)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(), min_size=1, max_size=6).flatmap(
        lambda xs: st.tuples(*(valid_rows(i) for i in range(len(xs))))
    )
)
def test_generated_valid_rows_round_trip(generated):
    with tempfile.TemporaryDirectory() as d:
        loaded = load_rows(write_dir(Path(d), [r for r, _ in generated]))
        obs = load_observations(d, include=EXCLUDED_BY_DEFAULT)
    assert len(loaded) == len(obs) == len(generated)
    for got, (raw, (value, mkfs, mount, ag, sd, n)) in zip(loaded, generated):
        assert got["value"] == value and got["mkfs"] == mkfs and got["mount"] == mount
        assert (got["ag_count"], got["sd"], got["n"]) == (ag, sd, n)
        for col in ("citation", "device", "note", "relative_to", "filesystem", "unit"):
            assert got[col] == raw[col]
    for o, (raw, (value, *_)) in zip(obs, generated):
        assert o.value == pytest.approx(value - 1 if raw["unit"] == "ratio" else value)
        assert (o.relative_to is None) == (raw["relative_to"] == "")
        assert o.config.scheduler == (raw["scheduler"] or "none")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_rows(), st.sampled_from(HEADER), st.text(max_size=40))
def test_garbage_cell_is_one_line_dataset_error(generated, column, garbage):
    row = dict(generated[0], **{column: garbage})
    with tempfile.TemporaryDirectory() as d:
        write_dir(Path(d), [row])
        try:
            load_rows(d)
        except DatasetError as e:
            msg = str(e)
            assert msg and "\n" not in msg and "\r" not in msg
            assert msg.startswith("t.csv")


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_garbage_file_is_one_line_dataset_error(blob):
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "workloads.toml").write_text(WORKLOADS_TOML)
        (Path(d) / "g.csv").write_bytes(",".join(HEADER).encode() + b"\n" + blob)
        try:
            rows_ = load_rows(d)
        except DatasetError as e:
            assert "\n" not in str(e) and str(e).startswith("g.csv")
        else:
            assert all(r["citation"] for r in rows_)


def test_default_directory_is_the_shipped_one(monkeypatch, tmp_path):
    assert len(load_rows()) == len(load_rows(SHIPPED))
    monkeypatch.setattr(datasets, "_resolve", lambda d: Path(d) if d else tmp_path)
    with pytest.raises(FsAdvisorError):
        load_rows()


def test_dataset_workloads_named_like_presets_are_the_presets():
    """One truth per workload: a dataset workload id that is also a preset name must be
    exactly the preset's workload (the two were written separately and had drifted)."""
    from fsadvisor.profiles import list_presets

    presets = {p.name: p.workload for p in list_presets()}
    shared = [wid for wid in load_workloads() if wid in presets]
    assert len(shared) >= 7
    for wid, w in load_workloads().items():
        if wid in presets:
            assert w == presets[wid], wid
