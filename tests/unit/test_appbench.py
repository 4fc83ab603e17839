"""db_bench and sysbench fileio: command lines, parsers and the probe's adapters.

The recorded outputs below are stdout of db_bench 7.8.3 (Debian rocksdb-tools) and sysbench
1.0.20 on this machine; tests/device/test_appbench_real.py runs the installed tools."""

from __future__ import annotations

from dataclasses import replace

import math
import random
import re

import pytest
from hypothesis import given, settings, strategies as st

from fsadvisor.domain import Workload
from fsadvisor.host.run import CommandResult
from fsadvisor.tools import benchmark, dbbench, registry, sysbench
from fsadvisor.tools.benchmark import AppBenchParseError
from fsadvisor.tools.dbbench import Histogram, _pooled_percentile
from fsadvisor.errors import FsAdvisorError


# db_bench --use_existing_db=1 --benchmarks=readrandomwriterandom --readwritepercent=50
#   --threads=2 --num=3000 --value_size=200 --compression_type=none --seed=7 --histogram=1
#   --progress_reports=0 --reads=3000   (stdout from "DB path" on)
DB_BENCH_RRWR = """\
DB path: [/tmp/dbx]
readrandomwriterandom :       7.385 micros/op 239798 ops/sec 0.025 seconds 6000 operations; ( reads:1500 writes:1500 total:3000 found:1500)
Microseconds per read:
Count: 3000 Average: 7.8377  StdDev: 165.95
Min: 0  Median: 2.6027  Max: 7541
Percentiles: P50: 2.60 P75: 4.13 P99: 16.59 P99.9: 34.00 P99.99: 7541.00
------------------------------------------------------
[       0,       1 ]      390  13.000%  13.000% ###
(       1,       2 ]      661  22.033%  35.033% ####
(       2,       3 ]      745  24.833%  59.867% #####
(       3,       4 ]      416  13.867%  73.733% ###
(       4,       6 ]      580  19.333%  93.067% ####
(       6,      10 ]      148   4.933%  98.000% #
(      10,      15 ]       25   0.833%  98.833% 
(      15,      22 ]       22   0.733%  99.567% 
(      22,      34 ]       10   0.333%  99.900% 
(      34,      51 ]        1   0.033%  99.933% 
(    4400,    6600 ]        1   0.033%  99.967% 
(    6600,    9900 ]        1   0.033% 100.000% 

Microseconds per write:
Count: 3000 Average: 8.2450  StdDev: 7.40
Min: 3  Median: 7.4145  Max: 341
Percentiles: P50: 7.41 P75: 9.09 P99: 24.90 P99.9: 76.00 P99.99: 341.00
------------------------------------------------------
(       2,       3 ]       12   0.400%   0.400% 
(       3,       4 ]      303  10.100%  10.500% ##
(       4,       6 ]      552  18.400%  28.900% ####
(       6,      10 ]     1790  59.667%  88.567% ############
(      10,      15 ]      248   8.267%  96.833% ##
(      15,      22 ]       58   1.933%  98.767% 
(      22,      34 ]       29   0.967%  99.733% 
(      34,      51 ]        4   0.133%  99.867% 
(      51,      76 ]        1   0.033%  99.900% 
(      76,     110 ]        2   0.067%  99.967% 
(     250,     380 ]        1   0.033% 100.000% 
"""

# A load followed by a run, with progress reports on (they end in "\r", not "\n").
DB_BENCH_TWO = (
    "RocksDB:    version 7.8.3\n"
    "... finished 100 ops                              \r"
    "... finished 200 ops                              \rDB path: [/tmp/dbt]\n"
    "fillrandom   :      20.218 micros/op 48249 ops/sec 0.104 seconds 5000 operations;   19.1 MB/s\n"
    "seekrandom   :     328.664 micros/op 5866 ops/sec 1.193 seconds 6998 operations;  115.8 MB/s"
    " (3997 of 3999 found)\n"
)

# sysbench fileio --file-total-size=8388608 --file-num=4 --file-test-mode=rndrw --time=1
#   --threads=2 --file-fsync-freq=100 --percentile=99 --histogram=off --file-extra-flags=direct run
SYSBENCH_RNDRW = """\
sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 2
Initializing random number generator from current time


Extra file open flags: directio
4 files, 2MiB each
8MiB total file size
Block size 16KiB
Number of IO requests: 0
Read/Write ratio for combined random IO test: 1.50
Periodic FSYNC enabled, calling fsync() each 100 requests.
Calling fsync() at the end of test, Enabled.
Using synchronous I/O mode
Doing random r/w test
Initializing worker threads...

Threads started!


File operations:
    reads/s:                      20122.14
    writes/s:                     13416.42
    fsyncs/s:                     1349.33

Throughput:
    read, MiB/s:                  314.41
    written, MiB/s:               209.63

General statistics:
    total time:                          1.0003s
    total number of events:              34949

Latency (ms):
         min:                                    0.02
         avg:                                    0.06
         max:                                    1.84
         99th percentile:                        0.10
         sum:                                 1974.98

Threads fairness:
    events (avg/stddev):           17474.5000/21.50
    execution time (avg/stddev):   0.9875/0.00
"""


# ---------------------------------------------------------------- db_bench parsing


def test_db_bench_summary_and_pooled_histograms():
    res = dbbench.parse_db_bench(DB_BENCH_RRWR)
    run = res.run()
    assert run.name == "readrandomwriterandom"
    assert (run.micros_per_op, run.ops_per_sec, run.seconds, run.operations) == (
        7.385,
        239798,
        0.025,
        6000,
    )
    assert [h.op for h in run.histograms] == ["read", "write"]
    m = res.metrics()
    assert m["iops"] == 239798 and m["ops"] == 6000 and m["runtime_s"] == 0.025
    assert m["mean_latency_us"] == pytest.approx((7.8377 + 8.2450) / 2)
    # Pooled percentiles lie between the two printed ones.
    assert 2.60 <= m["p50_latency_us"] <= 7.41
    assert 16.59 <= m["p99_latency_us"] <= 24.90
    assert "mb_s" not in m  # this benchmark printed no MB/s


def test_bucket_recomputation_reproduces_printed_percentiles():
    """The pooled method, applied to one histogram's buckets, gives db_bench's own values:
    evidence it is RocksDB's computation (printed values are rounded to 0.01)."""
    for h in dbbench.parse_db_bench(DB_BENCH_RRWR).run().histograms:
        twin = Histogram(
            op=h.op,
            count=h.count,
            min_us=h.min_us,
            max_us=h.max_us,
            printed=h.printed,
            buckets=h.buckets,
        )
        for p, printed in h.printed.items():
            # pooling a histogram with an identical copy leaves every percentile unchanged
            assert _pooled_percentile([h, twin], p) == pytest.approx(printed, abs=0.006), (h.op, p)


def test_db_bench_several_results_and_progress_noise():
    res = dbbench.parse_db_bench(DB_BENCH_TWO)
    assert res.version == "7.8.3"
    assert [r.name for r in res.runs] == ["fillrandom", "seekrandom"]
    assert res.metrics("fillrandom")["mb_s"] == pytest.approx(19.1 * 1.048576)
    m = res.metrics()  # the last one
    assert m["iops"] == 5866 and m["mean_latency_us"] == 328.664  # no histogram: micros/op
    assert "p99_latency_us" not in m
    with pytest.raises(AppBenchParseError, match="readrandom"):
        res.metrics("readrandom")


@pytest.mark.parametrize(
    "bad", ["", "Invalid argument: Column family not found\n", "fillrandom : fast\n", "micros/op\n"]
)
def test_db_bench_garbage_raises_one_line(bad):
    with pytest.raises(AppBenchParseError) as e:
        dbbench.parse_db_bench(bad)
    assert "\n" not in str(e.value) and isinstance(e.value, FsAdvisorError)


# ---------------------------------------------------------------- sysbench parsing


def test_sysbench_metrics():
    m = sysbench.parse_sysbench_fileio(SYSBENCH_RNDRW)
    assert m["read_iops"] == 20122.14 and m["write_iops"] == 13416.42
    assert m["iops"] == pytest.approx(20122.14 + 13416.42)
    assert m["fsyncs_per_s"] == 1349.33
    assert m["read_mb_s"] == pytest.approx(314.41 * 1.048576)
    assert m["mb_s"] == pytest.approx((314.41 + 209.63) * 1.048576)
    assert m["runtime_s"] == 1.0003 and m["events"] == 34949
    assert m["ops"] == round((20122.14 + 13416.42) * 1.0003)
    assert m["mean_latency_us"] == pytest.approx(60) and m["p99_latency_us"] == pytest.approx(100)
    assert m["max_latency_us"] == pytest.approx(1840)


def test_sysbench_95th_percentile_keeps_its_name():
    m = sysbench.parse_sysbench_fileio(SYSBENCH_RNDRW.replace("99th percentile", "95th percentile"))
    assert "p95_latency_us" in m and "p99_latency_us" not in m


@pytest.mark.parametrize(
    "bad",
    ["", "FATAL: Missing required command argument.\n", SYSBENCH_RNDRW.split("File operations")[0]],
)
def test_sysbench_garbage_raises_one_line(bad):
    with pytest.raises(AppBenchParseError) as e:
        sysbench.parse_sysbench_fileio(bad)
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------- hypothesis


def lines_with_noise(base: str, seed: int, junk: list[str]) -> str:
    rnd = random.Random(seed)
    out = []
    for line in base.splitlines():
        out.append(line)
        if junk and rnd.random() < 0.3:
            out.append(rnd.choice(junk))
    return "\n".join(out) + "\n"


junk_line = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=60
).filter(lambda s: not re.search(r"micros/op|\d|:", s))


@given(st.integers(0, 10**6), st.lists(junk_line, max_size=5))
def test_db_bench_ignores_unrelated_lines(seed, junk):
    assert (
        dbbench.parse_db_bench(lines_with_noise(DB_BENCH_RRWR, seed, junk)).metrics()
        == dbbench.parse_db_bench(DB_BENCH_RRWR).metrics()
    )


@given(st.integers(0, 10**6), st.lists(junk_line, max_size=5))
def test_sysbench_ignores_unrelated_lines(seed, junk):
    assert sysbench.parse_sysbench_fileio(
        lines_with_noise(SYSBENCH_RNDRW, seed, junk)
    ) == sysbench.parse_sysbench_fileio(SYSBENCH_RNDRW)


def finite_nonnegative(m: dict) -> None:
    for k, v in m.items():
        assert isinstance(v, float) or isinstance(v, int), k
        assert math.isfinite(v) and v >= 0, (k, v)


@given(st.sampled_from([DB_BENCH_RRWR, DB_BENCH_TWO]), st.integers(0, 5000), st.integers(0, 5000))
@settings(max_examples=200)
def test_db_bench_slices_give_result_or_parse_error(src, a, b):
    try:
        res = dbbench.parse_db_bench(src[min(a, b) : max(a, b)])
    except AppBenchParseError:
        return
    for r in res.runs:
        finite_nonnegative(r.metrics())


@given(st.integers(0, 5000), st.integers(0, 5000))
@settings(max_examples=200)
def test_sysbench_slices_give_result_or_parse_error(a, b):
    try:
        finite_nonnegative(sysbench.parse_sysbench_fileio(SYSBENCH_RNDRW[min(a, b) : max(a, b)]))
    except AppBenchParseError:
        pass


@given(st.text(max_size=500))
@settings(max_examples=300)
def test_parsers_on_random_text(t):
    for parser in (dbbench.parse_db_bench, sysbench.parse_sysbench_fileio):
        try:
            out = parser(t)
        except AppBenchParseError as e:
            assert "\n" not in str(e)
            continue
        finite_nonnegative(out if isinstance(out, dict) else out.metrics())


number = st.one_of(
    st.integers(0, 10**9).map(str),
    st.floats(0, 1e9).map(lambda f: f"{f:.3f}"),
    st.sampled_from(["1e999", "nan", "-3", "99999999999999999999999999999"]),
)


@given(st.sampled_from(["readrandom", "fillseq", "x"]), number, number, number, number)
def test_db_bench_summary_line_fuzz(name, a, b, c, d):
    line = f"{name} : {a} micros/op {b} ops/sec {c} seconds {d} operations;\n"
    try:
        m = dbbench.parse_db_bench(line).metrics()
    except AppBenchParseError:
        return
    finite_nonnegative(m)


buckets = st.lists(st.tuples(st.integers(0, 20), st.integers(1, 10**4)), min_size=1, max_size=8)
EDGES = [
    0,
    1,
    2,
    3,
    4,
    6,
    10,
    15,
    22,
    34,
    51,
    76,
    110,
    170,
    250,
    380,
    580,
    870,
    1300,
    1900,
    2900,
    4400,
]


def hist_of(bs):
    counts: dict[int, int] = {}
    for i, n in bs:
        counts[i] = counts.get(i, 0) + n
    bk = [(float(EDGES[i]), float(EDGES[i + 1]), float(n)) for i, n in sorted(counts.items())]
    total = sum(n for *_, n in bk)
    h = Histogram(
        op="read",
        count=total,
        min_us=bk[0][0],
        max_us=bk[-1][1],
        buckets=bk,
        printed={p: math.nan for p in (50.0, 99.0, 99.9)},
    )
    # What db_bench would print for it: the same computation on its own buckets.
    h.printed = {p: _pooled_percentile([h, h], p) for p in h.printed}
    return h


@given(buckets, buckets, st.sampled_from([50.0, 99.0, 99.9]))
def test_pooled_percentile_between_the_parts(b1, b2, p):
    h1, h2 = hist_of(b1), hist_of(b2)
    got = _pooled_percentile([h1, h2], p)
    lo, hi = sorted((h1.printed[p], h2.printed[p]))
    assert lo - 1e-9 <= got <= hi + 1e-9


# ---------------------------------------------------------------- command lines


def test_db_bench_argv():
    load = dbbench.db_bench_load_argv("/mnt/x/db", num=1000, value_size=100)
    assert load[:3] == ["db_bench", "--benchmarks=fillrandom", "--threads=1"]
    assert "--num=1000" in load and "--compression_type=none" in load and "--histogram=1" in load
    for mix, bench in (
        ("A", "readrandomwriterandom"),
        ("b", "readrandomwriterandom"),
        ("C", "readrandom"),
        ("D", "readwhilewriting"),
        ("E", "seekrandom"),
        ("F", "updaterandom"),
    ):
        argv = dbbench.db_bench_run_argv("/mnt/x/db", mix, threads=4, duration_s=30)
        assert f"--benchmarks={bench}" in argv and "--use_existing_db=1" in argv
        assert "--threads=4" in argv and "--duration=30" in argv
    assert "--readwritepercent=95" in dbbench.db_bench_run_argv("/d", "B")
    assert "--seek_nexts=50" in dbbench.db_bench_run_argv("/d", "E")
    counted = dbbench.db_bench_run_argv("/d", "A", ops=500)
    assert "--reads=500" in counted and not any(a.startswith("--duration") for a in counted)
    direct = dbbench.db_bench_run_argv("/d", "C", direct=True)
    assert "--use_direct_reads=1" in direct
    with pytest.raises(FsAdvisorError, match="YCSB"):
        dbbench.db_bench_run_argv("/d", "G")
    with pytest.raises(FsAdvisorError):
        dbbench.db_bench_run_argv("/d", "A", threads=0)


def test_sysbench_argv():
    prep = sysbench.sysbench_fileio_argv("prepare", total_size_bytes=1 << 20, file_num=4)
    assert prep[:2] == ["sysbench", "fileio"] and prep[-1] == "prepare"
    assert "--file-total-size=1048576" in prep and not any(a.startswith("--time") for a in prep)
    run = sysbench.sysbench_fileio_argv("run", mode="rndwr", time_s=5, fsync_freq=0, direct=True)
    assert run[-1] == "run" and "--file-test-mode=rndwr" in run and "--time=5" in run
    assert "--file-fsync-freq=0" in run and "--file-extra-flags=direct" in run
    assert "--file-extra-flags=direct" not in sysbench.sysbench_fileio_argv("run", direct=False)
    with pytest.raises(FsAdvisorError):
        sysbench.sysbench_fileio_argv("run", mode="random")
    with pytest.raises(FsAdvisorError):
        sysbench.sysbench_fileio_argv("destroy")


# ---------------------------------------------------------------- the probe's adapters


def job(kind, **w) -> benchmark.BenchJob:
    return benchmark.BenchJob(
        name="profile:rocksdb-ycsb-b",
        workload=Workload(**w),
        runtime_s=9.6,
        device="/dev/loop9",
        target_dir="/mnt/p/",
        size_bytes=64 << 20,
        budget_bytes=64 << 20,
        kind=kind,
        app={"profile": "rocksdb-ycsb-b"},
    )


def result(stdout="", stderr="", rc=0, argv=("db_bench",)) -> CommandResult:
    return CommandResult(tuple(argv), rc, stdout, stderr, 1.0)


def test_db_bench_adapter_loads_then_measures_the_profiles_mix():
    bench = registry.for_kind("db_bench")
    assert isinstance(bench, dbbench.DbBench) and bench.tool == "db_bench"
    todo = bench.invocations(
        job(
            "db_bench",
            rw="randrw",
            rwmixread=95,
            bs_bytes=1000,
            numjobs=4,
            working_set_bytes=1 << 30,
            direct=True,
        )
    )
    (load,) = todo.prepare
    assert (
        load.argv[:2] == ("db_bench", "--benchmarks=fillrandom")
        and "--db=/mnt/p/rocksdb" in load.argv
    )
    assert "--num=67108" in load.argv  # the 64 MiB budget / 1000-byte values, not the 1 GiB set
    run = todo.measure.argv
    assert "--readwritepercent=95" in run and "--threads=4" in run and "--duration=10" in run
    assert "--use_direct_reads=1" in run and todo.measure.note == "measured"


def test_sysbench_adapter_runs_in_the_mounted_filesystem():
    bench = registry.for_kind("sysbench")
    todo = bench.invocations(
        job(
            "sysbench",
            rw="randrw",
            rwmixread=60,
            bs_bytes=16384,
            fsync_every=0,
            working_set_bytes=1 << 30,
        )
    )
    assert [i.argv[-1] for i in (*todo.prepare, todo.measure)] == ["prepare", "run"]
    assert {i.cwd for i in (*todo.prepare, todo.measure)} == {"/mnt/p/"}
    assert "--file-rw-ratio=1.5" in todo.measure.argv and "--file-fsync-freq=0" in todo.measure.argv


@pytest.mark.parametrize("kind", ["db_bench", "sysbench"])
def test_app_benchmarks_refuse_a_raw_device(kind):
    with pytest.raises(FsAdvisorError, match="needs a filesystem"):
        registry.for_kind(kind).invocations(replace(job(kind, rw="randrw"), target_dir=None))


def test_adapters_parse_their_tools_output_and_name_failures():
    db = registry.for_kind("db_bench")
    ok = db.parse(result(DB_BENCH_RRWR))
    assert ok.error is None and ok.metrics == dbbench.parse_db_bench(DB_BENCH_RRWR).metrics()
    assert (
        db.parse(result("", "open error: Not a directory", rc=1)).error
        == "db_bench exited 1: open error: Not a directory"
    )
    sb = registry.for_kind("sysbench")
    assert sb.parse(
        result(SYSBENCH_RNDRW, argv=("sysbench",))
    ).metrics == sysbench.parse_sysbench_fileio(SYSBENCH_RNDRW)
    assert sb.parse(result("garbage", argv=("sysbench",))).error
    with pytest.raises(FsAdvisorError, match="no benchmark runs workloads of kind 'iozone'"):
        registry.for_kind("iozone")
