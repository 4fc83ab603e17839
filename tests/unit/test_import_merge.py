"""`import fio-json` (service.importing) and `db merge` (service.fleet, store.merge): store
v4's run uids, origins and provenance, end to end through the CLI and below it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fsadvisor.cli.app import register_all, app
from fsadvisor.domain import Device, FsConfig, Workload
from fsadvisor.records import RunRecord
from fsadvisor.errors import StoreError
from fsadvisor.service.fleet import merge_stores
from fsadvisor.service.importing import import_fio_json, mismatch
from fsadvisor.store import SCHEMA_VERSION, open_store
from fsadvisor.store.schema import APPLICATION_ID

FIO = Path(__file__).resolve().parents[1] / "fixtures" / "fio"
RANDREAD = '{"rw": "randread", "bs_bytes": 4096}'
XFS = '{"filesystem": "xfs"}'

register_all()
runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, list(args))


def _imp(db, *files, workload=RANDREAD, device="nvme:1T"):
    return import_fio_json(
        [str(FIO / f) for f in files], device=device, config=XFS, workload=workload, db=db
    )


def test_import_marks_runs_imported_everywhere_and_feeds_observations(tmp_path):
    db = tmp_path / "s.db"
    out = _imp(db, "fio-3.33-randread-4k.json")
    (f,) = out["files"]
    assert f["status"] == "imported" and f["fio_version"] == "fio-3.33"
    assert len(f["sha256"]) == 64
    with open_store(db) as s:
        (run,) = s.runs()
        assert run["origin"] == "imported" and "imported" in run["flags"]
        prov = run["provenance"]
        assert prov["sha256"] == f["sha256"] and prov["fio_version"] == "fio-3.33"
        assert prov["file"].endswith("fio-3.33-randread-4k.json")
        assert "@" in prov["imported_by"] and prov["imported_at"] > 1.6e9
        assert run["iops"] > 1000  # the fixture's own figure, read by tools/fio.py
        (summ,) = s.summaries()
        assert summ["origin"] == "imported" and summ["imported_from"][0]["sha256"] == f["sha256"]
        obs = [o for o in s.observations() if o.source.startswith("imported fio-json")]
        assert {o.metric for o in obs} >= {"iops", "p99_latency_us"}
        assert obs[0].device_kind == "nvme" and obs[0].config.fs == "xfs"
        assert obs[0].workload.rw == "randread"
        assert s.info()["runs_by_origin"] == {"imported": 1}


def test_imported_and_probe_runs_of_one_cell_are_summarised_apart(tmp_path):
    db = tmp_path / "s.db"
    _imp(db, "fio-3.33-randread-4k.json")
    with open_store(db) as s:
        (imp,) = s.runs()
        dev = Device(path=None, size_bytes=1 << 40, kind="nvme")
        s.record_run(
            RunRecord(
                cell_key=imp["cell_key"],
                device=dev,
                config=FsConfig.make("xfs"),
                workload_name=imp["workload_name"],
                workload=Workload(rw="randread", bs_bytes=4096),
                rep=1,
                status="ok",
                started_at=1.0,
                wall_s=1.0,
                metrics={"iops": 5.0},
            )
        )
        origins = sorted(x["origin"] for x in s.summaries())
        assert origins == ["imported", "probe"]


def test_same_file_twice_is_recognised_not_duplicated(tmp_path):
    db = tmp_path / "s.db"
    first = _imp(db, "fio-3.33-randread-4k.json")["files"][0]
    # the same bytes under another name, in the same call and in a later one
    copy = tmp_path / "copy.json"
    shutil.copy(FIO / "fio-3.33-randread-4k.json", copy)
    again = import_fio_json(
        [str(copy), str(copy)], device="nvme:1T", config=XFS, workload=RANDREAD, db=db
    )["files"]
    assert [a["status"] for a in again] == ["already imported"] * 2
    assert {a["run_id"] for a in again} == {first["run_id"]}
    with open_store(db) as s:
        assert len(s.runs()) == 1
    r = cli(
        "import", "fio-json", str(copy), "-d", "nvme:1T", "-c", XFS, "-w", RANDREAD, "--db", str(db)
    )
    assert r.exit_code == 0 and r.output.count("\n") == 1
    assert r.output.startswith("already imported")


@pytest.mark.parametrize(
    "name",
    [
        "fio-3.33-randread-normal-json.out",  # text, then JSON
        "fio-3.33-randread-json-plus.json",
        "fio-3.33-note-before-json.out",
        "fio-3.33-status-interval.out",
        "synthetic-fio-2.1.11-randread.json",
        "synthetic-fio-3.36-randread-prios.json",
    ],
)
def test_reads_text_before_json_status_interval_and_old_layouts(tmp_path, name):
    out = _imp(tmp_path / "s.db", name)
    assert out["files"][0]["status"] == "imported"


def test_json_plus_output_is_read(tmp_path):
    # json+ adds the latency histogram bins ("bins") to every clat_ns block.
    doc = json.loads((FIO / "fio-3.33-randread-4k.json").read_text())
    for job in doc["jobs"]:
        job["read"]["clat_ns"]["bins"] = {"1000": 3, "2000": 5}
    p = tmp_path / "plus.json"
    p.write_text(json.dumps(doc))
    assert _imp(tmp_path / "s.db", p)["files"][0]["status"] == "imported"


@pytest.mark.parametrize(
    "name, says",
    [
        ("refused-fio-2.6-client-server.synthetic.json", "client/server"),
        ("fio-3.33-error-direct-einval.out", "failed: error 22"),
        ("fio-3.33-randwrite-4k.json", "rw=randwrite but the workload is rw=randread"),
    ],
)
def test_bad_file_is_one_line_exit_2_and_nothing_half_imported(tmp_path, name, says):
    db = tmp_path / "s.db"
    # a good file first on the command line: it must not be stored either
    r = cli(
        "import",
        "fio-json",
        str(FIO / "fio-3.33-randread-4k.json"),
        str(FIO / name),
        "-d",
        "nvme:1T",
        "-c",
        XFS,
        "-w",
        RANDREAD,
        "--db",
        str(db),
    )
    assert r.exit_code == 2, r.output
    assert says in r.output and r.output.count("\n") == 1 and "Traceback" not in r.output
    with open_store(db) as s:
        assert s.runs() == []


def test_unreadable_and_foreign_files_refused(tmp_path):
    db = tmp_path / "s.db"
    junk = tmp_path / "junk.json"
    junk.write_text('{"not": "fio"}')
    half = tmp_path / "half.json"
    half.write_text((FIO / "fio-3.33-randread-4k.json").read_text()[:2000])
    for bad, says in (
        (junk, "no fio JSON"),
        (half, "not valid fio JSON"),
        (tmp_path / "missing.json", "No such file"),
    ):
        r = cli(
            "import",
            "fio-json",
            str(bad),
            "-d",
            "nvme:1T",
            "-c",
            XFS,
            "-w",
            RANDREAD,
            "--db",
            str(db),
        )
        assert r.exit_code == 2 and says in r.output, (bad, r.output)


def test_folder_of_results_like_bench_fio(tmp_path):
    folder = tmp_path / "benchfio" / "nvme0n1" / "randread-4k"
    folder.mkdir(parents=True)
    shutil.copy(FIO / "fio-3.33-randread-4k.json", folder / "8-1.json")
    shutil.copy(FIO / "synthetic-fio-3.36-randread-prios.json", folder / "16-1.json")
    out = _imp(tmp_path / "s.db", tmp_path / "benchfio")
    assert [f["status"] for f in out["files"]] == ["imported", "imported"]
    with pytest.raises(Exception, match="holds no"):
        (tmp_path / "empty").mkdir()
        _imp(tmp_path / "s.db", tmp_path / "empty")


def test_workload_or_profile_is_required_and_exclusive(tmp_path):
    r = cli(
        "import",
        "fio-json",
        str(FIO / "fio-3.33-randread-4k.json"),
        "-d",
        "nvme:1T",
        "-c",
        XFS,
        "--db",
        str(tmp_path / "s.db"),
    )
    assert r.exit_code == 2 and "--workload JSON or --profile NAME" in r.output


@given(
    rw=st.sampled_from(["read", "write", "randread", "randwrite", "randrw", "rw"]),
    bs=st.sampled_from([512, 4096, 16384, 131072]),
    job_rw=st.sampled_from(["read", "write", "randread", "randwrite", "randrw", "readwrite"]),
    job_bs=st.sampled_from(["512", "4k", "16k", "128k", "4096"]),
)
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_mismatch_property(rw, bs, job_rw, job_bs):
    from fsadvisor.sizes import parse_size

    w = Workload(rw=rw, bs_bytes=bs)
    why = mismatch({}, [{"jobname": "j", "job options": {"rw": job_rw, "bs": job_bs}}], w)
    same_rw = {"rw": "readwrite"}.get(rw, rw) == job_rw
    assert (why is None) == (same_rw and parse_size(job_bs) == bs)


# ------------------------------------------------------------------ merge


def _probe_run(host: str, serial: str, started: float, iops: float) -> RunRecord:
    return RunRecord(
        cell_key="xfs | randread",
        device=Device(
            path="/dev/nvme0n1", size_bytes=1 << 40, kind="nvme", model="M1", serial=serial
        ),
        config=FsConfig.make("xfs"),
        workload_name="randread",
        workload=Workload(rw="randread"),
        rep=1,
        status="ok",
        started_at=started,
        wall_s=1.0,
        metrics={"iops": iops},
        host={"hostname": host, "kernel": "6.18"},
    )


def test_merge_keeps_host_and_device_and_adds_each_run_once(tmp_path):
    a, b, c = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "fleet.db"
    with open_store(a) as s:
        s.record_run(_probe_run("web1", "S-A", 1.0, 100.0))
        s.record_run(_probe_run("web1", "S-A", 2.0, 110.0))
    with open_store(b) as s:
        s.record_run(_probe_run("web2", "S-B", 1.0, 200.0))
    _imp(b, "fio-3.33-randread-4k.json")
    out = merge_stores([a, b], db=c)
    assert [m["runs_added"] for m in out["merged"]] == [2, 2]
    again = merge_stores([a, b, a], db=c)
    assert [m["runs_added"] for m in again["merged"]] == [0, 0, 0]
    with open_store(c) as s:
        runs = s.runs()
        assert len(runs) == 4
        by_host = {(r["hostname"], r["device_serial"]) for r in runs if r["origin"] == "probe"}
        assert by_host == {("web1", "S-A"), ("web2", "S-B")}
        with open_store(a) as sa:
            assert {r["run_uid"] for r in sa.runs()} <= {r["run_uid"] for r in runs}
        imported = [r for r in runs if r["origin"] == "imported"]
        assert imported[0]["provenance"]["sha256"]
    # the merged imported file is still recognised when imported again
    assert _imp(c, "fio-3.33-randread-4k.json")["files"][0]["status"] == "already imported"


def test_copies_of_one_store_merge_without_duplicates(tmp_path):
    a = tmp_path / "a.db"
    with open_store(a) as s:
        s.record_run(_probe_run("web1", "S-A", 1.0, 100.0))
    copy = tmp_path / "copy.db"
    shutil.copy(a, copy)
    out = merge_stores([copy], db=a)
    assert out["merged"][0] == {**out["merged"][0], "runs_added": 0, "runs_present": 1}


def test_merge_leaves_the_other_file_untouched(tmp_path):
    a = tmp_path / "a.db"
    with open_store(a) as s:
        s.record_run(_probe_run("web1", "S-A", 1.0, 100.0))
    before = a.read_bytes()
    merge_stores([a], db=tmp_path / "c.db")
    assert a.read_bytes() == before


def test_merge_refuses_future_schema_non_store_and_foreign_sqlite(tmp_path):
    good = tmp_path / "good.db"
    with open_store(good) as s:
        s.record_run(_probe_run("web1", "S-A", 1.0, 100.0))
    future = tmp_path / "future.db"
    shutil.copy(good, future)
    con = sqlite3.connect(future)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    text = tmp_path / "notes.db"
    text.write_text("hello\n" * 100)
    foreign = tmp_path / "other.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    target = tmp_path / "fleet.db"
    for bad, says in (
        (future, "newer than this fsadvisor"),
        (text, "not an fsadvisor store"),
        (foreign, "not an fsadvisor store"),
        (tmp_path / "nope.db", "no such"),
    ):
        # the good store listed first must not be merged either
        r = cli("db", "merge", str(good), str(bad), "--db", str(target))
        assert r.exit_code == 2 and says in r.output and r.output.count("\n") == 1, r.output
        with open_store(target) as s:
            assert s.runs() == []
    assert sqlite3.connect(foreign).execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID


def test_merge_cli_json_and_self_merge_refused(tmp_path):
    a = tmp_path / "a.db"
    with open_store(a) as s:
        s.record_run(_probe_run("web1", "S-A", 1.0, 100.0))
    r = cli("db", "merge", str(a), "--db", str(tmp_path / "c.db"), "--json")
    assert r.exit_code == 0 and json.loads(r.output)["merged"][0]["runs_added"] == 1
    r = cli("db", "merge", str(a), "--db", str(a))
    assert r.exit_code == 2 and "being merged into" in r.output


def test_v3_store_uids_are_stable_across_copies(tmp_path):
    """Two copies of one v3 store, migrated apart, give every run the same uid."""
    from fsadvisor.store import schema

    a = tmp_path / "a.db"
    with open_store(a) as s:
        s.record_run(_probe_run("web1", "S-A", 1.0, 100.0))
        uid = s.runs()[0]["run_uid"]
    # take it back to v3 by hand: drop the v4 columns' values and the version
    con = sqlite3.connect(a)
    con.execute("DROP INDEX IF EXISTS idx_runs_uid")
    con.execute("UPDATE runs SET uid = NULL, origin = NULL")
    con.execute("ALTER TABLE runs DROP COLUMN profiles")  # v5's
    con.execute("PRAGMA user_version = 3")
    con.commit()
    con.close()
    b = tmp_path / "b.db"
    shutil.copy(a, b)
    # a v3 file has no uid column; rebuild runs without the v4 columns
    for p in (a, b):
        con = sqlite3.connect(p)
        for col in ("uid", "origin", "provenance"):
            con.execute(f"ALTER TABLE runs DROP COLUMN {col}")
        con.commit()
        con.close()
    with open_store(a) as sa, open_store(b) as sb:
        ua, ub = sa.runs()[0]["run_uid"], sb.runs()[0]["run_uid"]
        assert ua == ub and ua.startswith("run-") and ua != uid
    assert merge_stores([b], db=a)["merged"][0]["runs_added"] == 0
    assert schema.SCHEMA_VERSION == 5


def test_imported_runs_feed_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from fsadvisor.service import advice

    db = tmp_path / "s.db"
    _imp(db, "fio-3.33-randread-4k.json")
    sha = open_store(db).runs()[0]["provenance"]["sha256"]
    model = advice.get_model(str(db))
    cited = {g for groups in model.sources.values() for g in groups}
    assert f"imported fio-json sha256 {sha[:12]}" in cited


@given(st.binary(max_size=3000) | st.text(max_size=3000).map(str.encode))
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
def test_any_file_is_imported_whole_or_refused_in_one_line(tmp_path, data):
    from fsadvisor.service.importing import FioImportError, read_result

    p = tmp_path / "f.json"
    p.write_bytes(data)
    try:
        r = read_result(p, Workload(rw="randread", bs_bytes=4096))
    except FioImportError as e:
        assert "\n" not in str(e) and str(e).startswith(str(p))
    else:
        assert r.metrics.get("ops")


@given(cut=st.integers(min_value=1, max_value=20000))
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_truncated_real_result_is_never_half_read(tmp_path, cut):
    from fsadvisor.service.importing import FioImportError, read_result

    text = (FIO / "fio-3.33-randread-4k.json").read_text()
    p = tmp_path / "cut.json"
    # any cut before the document's closing brace (a trailing newline is not the document)
    p.write_text(text[: min(cut, text.rstrip().rfind("}"))])
    with pytest.raises(FioImportError):
        read_result(p, Workload(rw="randread", bs_bytes=4096))
