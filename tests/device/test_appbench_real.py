"""The installed db_bench and sysbench on tiny data sets in tmp_path (no root): the command
lines fsadvisor builds run, and their output parses."""

from __future__ import annotations

import shutil

import pytest

from fsadvisor.tools import benchmark, dbbench, sysbench

pytestmark = pytest.mark.device
needs_db_bench = pytest.mark.skipif(shutil.which("db_bench") is None, reason="db_bench missing")
needs_sysbench = pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench missing")


@pytest.fixture(scope="module")
def loaded_db(tmp_path_factory):
    if shutil.which("db_bench") is None:
        pytest.skip("db_bench missing")
    db = str(tmp_path_factory.mktemp("rocks") / "db")
    res, out, cmds = dbbench.run_db_bench(db, "C", num=2000, value_size=200, ops=500, timeout_s=60)
    return db, res


@needs_db_bench
def test_real_db_bench_load_and_run(loaded_db):
    _, res = loaded_db
    assert res.version and res.version.startswith("7.")
    m = res.metrics()
    assert m["ops"] == 500 and m["iops"] > 0
    assert 0 < m["p50_latency_us"] <= m["p99_latency_us"] <= m["p999_latency_us"]


@needs_db_bench
@pytest.mark.parametrize("mix", list(dbbench.YCSB_MIXES))
def test_real_db_bench_every_mix(loaded_db, mix):
    db, _ = loaded_db
    res, out, cmds = dbbench.run_db_bench(
        db, mix, load=False, num=2000, value_size=200, threads=2, ops=300, timeout_s=60
    )
    assert len(cmds) == 1
    run = res.run()
    assert run.name == dbbench.YCSB_MIXES[mix].benchmark
    m = run.metrics()
    assert m["iops"] > 0 and m["ops"] >= 300 and m["mean_latency_us"] > 0
    assert m["p50_latency_us"] <= m["p99_latency_us"]


@needs_db_bench
def test_real_db_bench_failures_are_one_line(tmp_path):
    with pytest.raises(benchmark.AppBenchRunError, match="load it first"):
        dbbench.run_db_bench(str(tmp_path / "missing"), "A", load=False, num=10, ops=10)
    (tmp_path / "afile").write_text("")
    with pytest.raises(benchmark.AppBenchRunError) as e:
        dbbench.run_db_bench(str(tmp_path / "afile" / "db"), "A", num=10, ops=10, timeout_s=60)
    assert "Not a directory" in str(e.value) and "\n" not in str(e.value)


@needs_sysbench
@pytest.mark.parametrize("mode, reads, writes", [("rndrw", True, True), ("seqwr", False, True)])
def test_real_sysbench(tmp_path, mode, reads, writes):
    m, out, cmds = sysbench.run_sysbench_fileio(
        str(tmp_path),
        mode=mode,
        total_size_bytes=4 << 20,
        file_num=2,
        time_s=1,
        threads=1,
        timeout_s=60,
    )
    assert [c[-1] for c in cmds] == ["prepare", "run", "cleanup"]
    assert (m["read_iops"] > 0) == reads and (m["write_iops"] > 0) == writes
    assert 0.9 <= m["runtime_s"] <= 1.5 and m["ops"] > 0
    assert list(tmp_path.iterdir()) == []  # cleanup ran
