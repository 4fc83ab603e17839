"""fio JSON in, metrics out; workload -> fio command line.

Real fixtures are fio 3.33 output captured on this machine (tests/fixtures/fio/generate.py);
two synthetic ones follow older/newer layouts from fio's source (README there). The tests
that run the installed fio live in tests/device/test_fio_local.py."""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings, strategies as st

from fsadvisor.tools import fio
from fsadvisor.domain import Workload
from fsadvisor.errors import FsAdvisorError, NotSupported
from fsadvisor.tools.fio import FioParseError, _LatComponent, _mixture_quantile

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "fio"
RUNNER = Path(__file__).resolve().parents[2] / "runner"


def text(name: str) -> str:
    return (FIX / name).read_text()


def doc(name: str) -> dict:
    t = text(name)
    return json.JSONDecoder().raw_decode(t, t.index('{\n  "fio version"'))[0]


REAL = sorted(p.name for p in FIX.glob("fio-3.33-*"))
ALL = REAL + sorted(p.name for p in FIX.glob("synthetic-*"))


def check_invariants(m: dict) -> None:
    """What holds for any input: every figure is a finite, non-negative float."""
    for k, v in m.items():
        assert isinstance(v, float), k
        assert math.isfinite(v) and v >= 0, (k, v)


def check_ordered(m: dict) -> None:
    """What holds for fio's real output (its percentiles are monotone)."""
    check_invariants(m)
    if {"p50_latency_us", "p99_latency_us"} <= m.keys():
        assert m["p50_latency_us"] <= m["p99_latency_us"] + 1e-9
    if {"p99_latency_us", "p999_latency_us"} <= m.keys():
        assert m["p99_latency_us"] <= m["p999_latency_us"] + 1e-9


# ---------------------------------------------------------------- real fixtures


@pytest.mark.parametrize("name", ALL)
def test_every_fixture_parses_with_sane_metrics(name):
    res = fio.parse(text(name))
    assert res.version and res.version.startswith("fio-")
    assert res.jobs
    m = res.metrics()
    check_ordered(m)
    check_provenance(m, res.percentile_provenance())
    assert m["ops"] >= 1


@pytest.mark.parametrize("name", ALL)
def test_rates_agree_with_totals(name):
    """iops ~ ops / runtime and mb_s ~ bytes / runtime: rates and totals tell one story."""
    m = fio.parse(text(name)).metrics()
    if "runtime_s" not in m:
        pytest.skip("no runtime reported (failed job)")
    assert m["iops"] == pytest.approx(m["ops"] / m["runtime_s"], rel=0.1)
    if "mb_s" in m:
        assert m["mb_s"] == pytest.approx(m["bytes"] / m["runtime_s"] / 1e6, rel=0.1)
    for d in ("read", "write"):
        if f"{d}_mb_s" in m:
            assert m[f"{d}_mb_s"] == pytest.approx(
                m[f"app_{d}_bytes"] / m["runtime_s"] / 1e6, rel=0.1
            )


def test_randread_metrics_are_fios_own_numbers():
    d = doc("fio-3.33-randread-4k.json")
    r = d["jobs"][0]["read"]
    m = fio.parse(text("fio-3.33-randread-4k.json")).metrics()
    assert m["read_iops"] == m["iops"] == pytest.approx(r["iops"])
    assert m["read_mb_s"] == m["mb_s"] == pytest.approx(r["bw_bytes"] / 1e6)
    assert m["ops"] == r["total_ios"]
    assert m["bytes"] == m["app_read_bytes"] == r["io_bytes"]
    # workload_argv asks for lat_percentiles, so percentiles are of total latency.
    assert m["p99_latency_us"] == pytest.approx(r["lat_ns"]["percentile"]["99.000000"] / 1000)
    assert m["p50_latency_us"] == pytest.approx(r["lat_ns"]["percentile"]["50.000000"] / 1000)
    assert m["p999_latency_us"] == pytest.approx(r["lat_ns"]["percentile"]["99.900000"] / 1000)
    assert m["mean_latency_us"] == pytest.approx(r["lat_ns"]["mean"] / 1000)
    assert m["runtime_s"] == pytest.approx(r["runtime"] / 1000)
    assert "write_iops" not in m and "app_write_bytes" not in m
    assert not any(k.startswith("fsync") for k in m)
    assert fio.parse(text("fio-3.33-randread-4k.json")).latency_basis() == "lat"


def test_randwrite_reports_write_side_only():
    d = doc("fio-3.33-randwrite-4k.json")["jobs"][0]["write"]
    m = fio.parse(text("fio-3.33-randwrite-4k.json")).metrics()
    assert m["write_iops"] == pytest.approx(d["iops"])
    assert m["app_write_bytes"] == d["io_bytes"]
    assert "read_iops" not in m and "app_read_bytes" not in m


def test_randrw_default_percentiles_use_clat_and_pool_both_directions():
    d = doc("fio-3.33-randrw-clat-default.json")["jobs"][0]
    res = fio.parse(text("fio-3.33-randrw-clat-default.json"))
    m = res.metrics()
    assert res.latency_basis() == "clat"
    r, w = d["read"]["clat_ns"], d["write"]["clat_ns"]
    assert m["iops"] == pytest.approx(d["read"]["iops"] + d["write"]["iops"])
    assert m["mb_s"] == pytest.approx((d["read"]["bw_bytes"] + d["write"]["bw_bytes"]) / 1e6)
    assert m["mean_latency_us"] == pytest.approx(
        (r["mean"] * r["N"] + w["mean"] * w["N"]) / (r["N"] + w["N"]) / 1000
    )
    for key, p in (("p50_latency_us", "50.000000"), ("p99_latency_us", "99.000000")):
        lo, hi = sorted((r["percentile"][p] / 1000, w["percentile"][p] / 1000))
        assert lo - 1e-9 <= m[key] <= hi + 1e-9


def test_numjobs2_without_group_reporting_sums_rates_and_pools_latency():
    d = doc("fio-3.33-numjobs2-nogroup.json")
    jobs = d["jobs"]
    assert len(jobs) == 2 and jobs[0]["jobname"] == jobs[1]["jobname"] == "pair"
    m = fio.parse(text("fio-3.33-numjobs2-nogroup.json")).metrics()
    assert m["read_iops"] == pytest.approx(sum(j["read"]["iops"] for j in jobs))
    assert m["write_mb_s"] == pytest.approx(sum(j["write"]["bw_bytes"] for j in jobs) / 1e6)
    assert m["ops"] == sum(j[d]["total_ios"] for j in jobs for d in ("read", "write"))
    p99s = [
        j[d]["lat_ns"]["percentile"]["99.000000"] / 1000 for j in jobs for d in ("read", "write")
    ]
    assert min(p99s) <= m["p99_latency_us"] <= max(p99s)
    # Both clones ran together for the same second: wall time is not their sum.
    assert m["runtime_s"] == pytest.approx(max(j["read"]["runtime"] for j in jobs) / 1000)


def test_fsync_section_becomes_fsync_metrics():
    s = doc("fio-3.33-randwrite-fsync1.json")["jobs"][0]["sync"]
    m = fio.parse(text("fio-3.33-randwrite-fsync1.json")).metrics()
    assert m["fsync_ops"] == s["total_ios"] > 0
    assert m["fsync_p99_latency_us"] == pytest.approx(s["lat_ns"]["percentile"]["99.000000"] / 1000)
    assert m["fsync_mean_latency_us"] == pytest.approx(s["lat_ns"]["mean"] / 1000)
    # fsyncs are not data operations
    assert m["ops"] == doc("fio-3.33-randwrite-fsync1.json")["jobs"][0]["write"]["total_ios"]


def test_note_before_json_is_kept_apart():
    res = fio.parse(text("fio-3.33-note-before-json.out"))
    assert res.notes.startswith("note: both iodepth >= 1 and synchronous I/O engine")
    assert res.error is None
    assert res.metrics()["ops"] == 500


def test_status_interval_takes_the_last_complete_document():
    t = text("fio-3.33-status-interval.out")
    starts = [m.start() for m in re.finditer(r'\{\n  "fio version"', t)]
    assert len(starts) >= 3
    last = json.loads(t[starts[-1] :])
    res = fio.parse(t)
    assert not res.truncated
    assert res.metrics()["ops"] == last["jobs"][0]["read"]["total_ios"]
    # Cut the final document: the previous snapshot is returned, marked truncated.
    cut = t[: starts[-1] + (len(t) - starts[-1]) // 2]
    prev = json.loads(t[starts[-2] : starts[-1]])
    res2 = fio.parse(cut)
    assert res2.truncated
    assert res2.metrics()["ops"] == prev["jobs"][0]["read"]["total_ios"] < res.metrics()["ops"]


def test_job_error_and_fio_notes_are_reported():
    res = fio.parse(text("fio-3.33-error-direct-einval.out"))
    assert "error 22" in res.error and "broken" in res.error
    assert "\n" not in res.error
    assert "first direct IO errored" in res.notes


def test_filecreate_results_are_metadata_ops_without_bandwidth():
    r = doc("fio-3.33-filecreate.json")["jobs"][0]["read"]
    res = fio.parse(text("fio-3.33-filecreate.json"))
    m = res.metrics()
    assert m["iops"] == m["metadata_iops"] == pytest.approx(r["iops"])
    assert m["ops"] == r["total_ios"] == 2000
    for absent in ("read_iops", "read_mb_s", "mb_s", "bytes", "app_read_bytes"):
        assert absent not in m, absent
    # lat_ns is empty for metadata engines: latency comes from clat.
    assert r["lat_ns"]["N"] == 0
    assert res.latency_basis() == "clat"
    assert m["p99_latency_us"] == pytest.approx(r["clat_ns"]["percentile"]["99.000000"] / 1000)


def test_metadata_chain_groups_run_in_sequence():
    jobs = doc("fio-3.33-metadata-chain.json")["jobs"]
    res = fio.parse(text("fio-3.33-metadata-chain.json"))
    assert res.groups() == [0, 1, 2]
    for j in jobs:
        g = res.metrics(groupid=j["groupid"])
        assert g["iops"] == pytest.approx(j["read"]["iops"])
        assert g["ops"] == j["read"]["total_ios"]
    m = res.metrics()
    total_s = sum(j["read"]["runtime"] for j in jobs) / 1000
    assert m["ops"] == 3000
    assert m["runtime_s"] == pytest.approx(total_s)
    assert m["iops"] == pytest.approx(3000 / total_s)
    # The overall rate lies between the slowest and fastest step.
    assert min(j["read"]["iops"] for j in jobs) <= m["iops"] <= max(j["read"]["iops"] for j in jobs)


def test_unified_mixed_section_counts_without_direction_split():
    mx = doc("fio-3.33-unified-mixed.json")["jobs"][0]["mixed"]
    m = fio.parse(text("fio-3.33-unified-mixed.json")).metrics()
    assert m["iops"] == pytest.approx(mx["iops"])
    assert m["mb_s"] == pytest.approx(mx["bw_bytes"] / 1e6)
    assert not {"read_iops", "write_iops", "app_read_bytes", "app_write_bytes"} & m.keys()


def test_unified_both_counts_each_io_once():
    """unified_rw_reporting=both repeats read+write as "mixed": summing all three doubled
    the IOPS of a real run (reviewer: 86,286 reported, 43,143 true)."""
    job = doc("fio-3.33-unified-both.json")["jobs"][0]
    rd, wr, mx = job["read"], job["write"], job["mixed"]
    assert mx["total_ios"] == rd["total_ios"] + wr["total_ios"]  # the fixture is what it claims
    res = fio.parse(text("fio-3.33-unified-both.json"))
    m = res.metrics()
    assert m["ops"] == rd["total_ios"] + wr["total_ios"]
    assert m["iops"] == pytest.approx(rd["iops"] + wr["iops"])
    assert m["iops"] == pytest.approx(mx["iops"], rel=1e-3)
    assert m["mb_s"] == pytest.approx((rd["bw_bytes"] + wr["bw_bytes"]) / 1e6)
    assert m["bytes"] == rd["io_bytes"] + wr["io_bytes"]
    assert m["read_iops"] == pytest.approx(rd["iops"])
    assert m["write_iops"] == pytest.approx(wr["iops"])
    assert res.latency_basis() == "clat"


# ---------------------------------------------------------------- synthetic layouts


def test_fio_2x_layout_microseconds_kib_and_padded_percentiles():
    res = fio.parse(text("synthetic-fio-2.2.10-randrw.json"))
    assert res.version_tuple == (2, 2, 10)
    m = res.metrics()
    assert m["read_iops"] == 25000 and m["write_iops"] == 10000
    assert m["read_mb_s"] == pytest.approx(100000 * 1024 / 1e6)  # bw in KiB/s
    assert m["app_read_bytes"] == 1000000 * 1024  # io_bytes in KiB before 2.21
    assert m["runtime_s"] == 10.0
    assert m["mean_latency_us"] == pytest.approx((250000 * 150 + 100000 * 300) / 350000)
    # p50: read 150 µs, write 300 µs -> pooled CDF crosses 0.5 at 175 µs (hand computed).
    assert m["p50_latency_us"] == pytest.approx(175.0)
    # p99: read 600 µs, write 1200 µs; G(750)=0.985, G(1200)=0.99529 -> 968.75 µs.
    assert m["p99_latency_us"] == pytest.approx(968.75, rel=1e-6)
    assert "trim_iops" not in m  # zero trim I/Os, "0.00" padding ignored
    assert res.latency_basis() == "clat"


def test_fio_336_layout_prefers_total_latency_and_keeps_disk_sectors():
    res = fio.parse(text("synthetic-fio-3.36-randread-prios.json"))
    m = res.metrics()
    assert m["p99_latency_us"] == 420.0  # lat_ns, not clat_ns (400)
    assert m["mb_s"] == pytest.approx(245.76)
    assert m["iops"] == 60000
    assert res.disk_util[0]["read_sectors"] == 4798400
    assert "fsync_ops" not in m  # an empty sync section is no fsync


def test_missing_fields_stay_missing():
    d = {
        "fio version": "fio-3.33",
        "jobs": [
            {"jobname": "x", "groupid": 0, "error": 0, "read": {"total_ios": 10, "iops": 5.0}}
        ],
    }
    m = fio.parse(json.dumps(d)).metrics()
    assert m == {"read_iops": 5.0, "ops": 10.0, "iops": 5.0}


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "bad, why",
    [
        ("", "no output"),
        ("   \n", "no output"),
        ("fio: failed parsing rw=bogus\nfio: job x dropped\n", "no fio JSON"),
        ('{"fio version": "fio-3.33", "jobs": [', "not valid"),
        ('{"fio version": "fio-3.33"}', "no fio JSON"),
        ('{"fio version": "fio-3.33", "jobs": {"a": 1}}', "no fio JSON"),
        ('{"fio version": "fio-3.33", "jobs": [1, 2]}', "other than job objects"),
        ("[1, 2, 3]", "no fio JSON"),
    ],
)
def test_unparseable_output_raises_one_line(bad, why):
    with pytest.raises(FioParseError) as e:
        fio.parse(bad)
    assert why in str(e.value)
    assert "\n" not in str(e.value)
    assert isinstance(e.value, FsAdvisorError)


def test_bytes_input_and_non_text():
    assert fio.parse(text("fio-3.33-randread-4k.json").encode()).metrics()["ops"] > 0
    with pytest.raises(FioParseError):
        fio.parse(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------- hypothesis

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
json_any = st.recursive(
    json_leaf,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=10), kids, max_size=5)
    ),
    max_leaves=30,
)
num = st.one_of(
    st.integers(min_value=-5, max_value=10**12),
    st.floats(min_value=-1.0, max_value=1e12),
    st.just(math.nan),
    st.just(math.inf),
    st.none(),
    st.text(max_size=3),
)
pct_keys = st.sampled_from(["1.000000", "50.000000", "99.000000", "99.900000", "0.00", "x", "150"])
lat_block = st.fixed_dictionaries(
    {},
    optional={
        "N": num,
        "mean": num,
        "min": num,
        "max": num,
        "percentile": st.dictionaries(pct_keys, num, max_size=5),
    },
)
direction = st.fixed_dictionaries(
    {},
    optional={
        "total_ios": num,
        "iops": num,
        "io_bytes": num,
        "io_kbytes": num,
        "bw_bytes": num,
        "bw": num,
        "runtime": num,
        "lat_ns": lat_block,
        "clat_ns": lat_block,
        "clat": lat_block,
        "lat": lat_block,
    },
)
fio_job = st.fixed_dictionaries(
    {"jobname": st.sampled_from(["a", "b", "All clients"])},
    optional={
        "groupid": st.one_of(st.integers(0, 3), st.text(max_size=2)),
        "error": num,
        "read": direction,
        "write": direction,
        "trim": direction,
        "mixed": direction,
        "sync": st.fixed_dictionaries({}, optional={"total_ios": num, "lat_ns": lat_block}),
        "job_runtime": num,
        "usr_cpu": num,
        "sys_cpu": num,
        "job options": st.fixed_dictionaries(
            {}, optional={"ioengine": st.sampled_from(["io_uring", "filecreate", "filestat", 3])}
        ),
    },
)
fio_doc = st.fixed_dictionaries(
    {
        "fio version": st.sampled_from(["fio-3.33", "fio-2.2.10", 7]),
        "jobs": st.lists(fio_job, max_size=4),
    },
    optional={
        "global options": st.dictionaries(st.sampled_from(["ioengine", "x"]), st.text(max_size=10))
    },
)


def parse_or_error(t):
    try:
        res = fio.parse(t)
    except FioParseError as e:
        assert "\n" not in str(e)
        return None
    m = res.metrics()
    check_invariants(m)
    for g in res.groups():
        check_invariants(res.metrics(groupid=g))
    for g in (None, *res.groups()):
        check_provenance(res.metrics(groupid=g), res.percentile_provenance(groupid=g))
    res.latency_basis()
    return res


def check_provenance(m: dict, prov: dict) -> None:
    """Every percentile says where it comes from; a per-direction one is always fio's own."""
    assert set(prov) == {k for k in m if re.search(r"(^|_)p(50|99|999)_latency_us$", k)}
    assert set(prov.values()) <= {fio.EXACT, fio.POOLED_ESTIMATE}
    for k, v in prov.items():
        if k.startswith(("read_", "write_", "trim_")):
            assert v == fio.EXACT, k


@given(json_any)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_fuzz_arbitrary_json_gives_result_or_parse_error(obj):
    parse_or_error(json.dumps(obj))


@given(fio_doc)
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_fuzz_fio_shaped_documents(d):
    parse_or_error(json.dumps(d))


@given(st.sampled_from(REAL), st.floats(0, 1))
@settings(max_examples=150, deadline=None)
def test_fuzz_truncated_real_output(name, frac):
    t = text(name)
    parse_or_error(t[: int(len(t) * frac)])


@given(st.sampled_from(REAL), st.text(max_size=200), st.text(max_size=200))
@settings(max_examples=150, deadline=None)
def test_fuzz_noise_around_real_output_changes_nothing(name, prefix, suffix):
    assume('"fio version"' not in prefix + suffix)
    clean = fio.parse(text(name)).metrics()
    noisy = fio.parse(prefix + "\n" + text(name) + suffix).metrics()
    assert noisy == clean


@given(st.text(max_size=400))
@settings(max_examples=300)
def test_fuzz_random_text(t):
    parse_or_error(t)


@given(st.integers(min_value=0, max_value=5), st.integers(min_value=1, max_value=10**6))
def test_single_direction_consistency(idx, bw):
    """mb_s is bw_bytes / 1e6 and iops is what fio said, whatever the numbers."""
    d = {
        "fio version": "fio-3.33",
        "jobs": [
            {
                "jobname": "j",
                "groupid": 0,
                "error": 0,
                "write": {
                    "total_ios": idx + 1,
                    "iops": float(idx),
                    "io_bytes": bw * 3,
                    "io_kbytes": bw * 3 // 1024,
                    "bw_bytes": bw,
                    "runtime": 1000,
                },
            }
        ],
    }
    m = fio.parse(json.dumps(d)).metrics()
    assert m["write_mb_s"] == m["mb_s"] == pytest.approx(bw / 1e6)
    assert m["write_iops"] == m["iops"] == float(idx)
    assert m["bytes"] == m["app_write_bytes"] == bw * 3


ladder = st.lists(st.floats(min_value=1, max_value=1e6), min_size=5, max_size=5).map(sorted)


def comp(values, weight):
    pct = dict(zip((10.0, 50.0, 90.0, 99.0, 99.9), values))
    return _LatComponent(
        weight=weight, mean_us=None, min_us=values[0] / 2, max_us=values[-1] * 2, pct=pct
    )


@given(
    st.lists(st.tuples(ladder, st.floats(min_value=1, max_value=1e6)), min_size=1, max_size=4),
    st.sampled_from([0.5, 0.99, 0.999]),
)
def test_pooled_quantile_lies_between_component_quantiles(parts, q):
    comps = [comp(v, w) for v, w in parts]
    key = round(q * 100, 6)
    got = _mixture_quantile(comps, q)
    qs = [c.pct[key] for c in comps]
    assert min(qs) * (1 - 1e-9) <= got <= max(qs) * (1 + 1e-9)


@given(ladder, st.integers(2, 4), st.sampled_from([0.5, 0.99, 0.999]))
@example(values=[1.0, 1.0, 1.0, 1.0, 81066.0], n=3, q=0.99)  # weights summing to 1 - 1 ulp
def test_pooled_quantile_of_identical_components_is_the_component_quantile(values, n, q):
    got = _mixture_quantile([comp(values, 7.0) for _ in range(n)], q)
    assert got == pytest.approx(comp(values, 1).pct[round(q * 100, 6)], rel=1e-9)


# ---------------------------------------------------------------- command lines


def opts(argv):
    out = {}
    for a in argv[1:]:
        k, _, v = a.partition("=")
        assert k not in out, f"duplicate option {k}"
        out[k] = v
    return out


def test_workload_argv_for_seed000_randread(tmp_path):
    w = Workload(
        rw="randread",
        bs_bytes=4096,
        iodepth=64,
        numjobs=4,
        direct=True,
        ioengine="io_uring",
        working_set_bytes=1 << 30,
    )
    argv = fio.workload_argv(w, str(tmp_path / "f.dat"), 30, name="rr")
    assert argv[:2] == ["fio", "--output-format=json"]
    o = opts(argv)
    assert o["--filename"] == str(tmp_path / "f.dat")
    assert (o["--rw"], o["--bs"], o["--iodepth"], o["--numjobs"]) == ("randread", "4096", "64", "4")
    assert (o["--direct"], o["--ioengine"], o["--size"]) == ("1", "io_uring", str(1 << 30))
    assert (o["--time_based"], o["--runtime"], o["--group_reporting"]) == ("1", "30s", "1")
    assert o["--lat_percentiles"] == "1"
    assert {"50", "99", "99.9"} <= set(o["--percentile_list"].split(":"))
    assert "--rwmixread" not in o and "--fsync" not in o and "--directory" not in o


def test_workload_argv_options(tmp_path):
    w = Workload(
        rw="randrw", rwmixread=70, fsync_every=4, ioengine="psync", iodepth=8, direct=False
    )
    o = opts(fio.workload_argv(w, str(tmp_path), 1.5, name="mix", size_bytes=1 << 20))
    assert o["--filename"] == str(tmp_path / "mix.dat")  # a directory gets a named file
    assert o["--rwmixread"] == "70" and o["--fsync"] == "4" and o["--direct"] == "0"
    assert "--iodepth" not in o  # synchronous engine: depth would only print a note
    assert o["--runtime"] == "1500ms" and o["--size"] == str(1 << 20)
    o = opts(fio.workload_argv(Workload(fsync_mode="per_transaction"), "/x", 1, ioengine="libaio"))
    assert o["--fsync"] == "1" and o["--ioengine"] == "libaio"


def test_many_files_keep_the_smallest_file_at_least_one_block(tmp_path):
    w = Workload(
        rw="read", bs_bytes=16384, nrfiles=200, file_size_bytes=4096, file_size_max_bytes=65536
    )
    o = opts(fio.workload_argv(w, str(tmp_path), 5))
    assert o["--directory"] == str(tmp_path) and o["--nrfiles"] == "200"
    lo, hi = (int(x) for x in o["--filesize"].split("-"))
    assert lo >= 16384 and hi == 65536
    assert int(o["--size"]) >= 200 * lo  # fio wants size= with a range
    assert "--filename" not in o


def test_metadata_workload_uses_directory_and_shared_names(tmp_path):
    argv = fio.workload_argv(Workload(rw="filestat", nrfiles=500), str(tmp_path), 10, name="s")
    o = opts(argv)
    assert o["--ioengine"] == "filestat" and o["--directory"] == str(tmp_path)
    assert "$jobname" not in o["--filename_format"] and "$filenum" in o["--filename_format"]
    assert "--rw" not in o and "--time_based" not in o and "--filename" not in o
    od = opts(fio.workload_argv(Workload(rw="filedelete", nrfiles=5), str(tmp_path), 10))
    assert od["--unlink"] == "0"
    assert od["--filename_format"] == o["--filename_format"]


def test_metadata_on_a_block_device_is_refused():
    devs = [p for p in sorted(Path("/dev").glob("loop[0-9]*")) if stat.S_ISBLK(os.stat(p).st_mode)]
    if not devs:
        pytest.skip("no block device node to stat")
    with pytest.raises(NotSupported, match="block device"):
        fio.workload_argv(Workload(rw="filecreate"), str(devs[0]), 5)


def test_mixed_data_and_metadata_is_refused_not_dropped(tmp_path):
    with pytest.raises(NotSupported, match="runner"):
        fio.workload_argv(Workload(rw="randrw", create_frac=0.1), str(tmp_path), 5)
    with pytest.raises(FsAdvisorError):
        fio.workload_argv(Workload(), str(tmp_path), 0)


workloads = st.builds(
    Workload,
    rw=st.sampled_from(
        [
            "read",
            "write",
            "randread",
            "randwrite",
            "rw",
            "randrw",
            "filecreate",
            "filestat",
            "filedelete",
        ]
    ),
    bs_bytes=st.sampled_from([512, 2048, 4096, 16384, 131072, 1 << 20]),
    iodepth=st.integers(1, 256),
    numjobs=st.integers(1, 64),
    rwmixread=st.integers(0, 100),
    fsync_every=st.integers(0, 32),
    direct=st.booleans(),
    ioengine=st.sampled_from(["io_uring", "libaio", "psync", "sync"]),
    nrfiles=st.integers(1, 100000),
    file_size_bytes=st.integers(1, 1 << 30),
    file_size_max_bytes=st.one_of(st.none(), st.integers(1, 1 << 31)),
)


@given(workloads, st.floats(min_value=0.001, max_value=3600), st.sampled_from(["job", "x-1"]))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_workload_argv_is_well_formed(tmp_path, w, runtime, name):
    argv = fio.workload_argv(w, str(tmp_path), runtime, name=name)
    assert all(isinstance(a, str) for a in argv)
    o = opts(argv)
    assert o["--name"] == name and o["--numjobs"] == str(w.numjobs)
    if "--filesize" in o and "--ioengine" in o and o["--ioengine"] not in fio.METADATA_ENGINES:
        assert int(o["--filesize"].split("-")[0]) >= w.bs_bytes
    if w.rw in fio.METADATA_ENGINES:
        assert o["--ioengine"] == w.rw
    else:
        assert o["--rw"] == w.rw and "--time_based" in o


def test_jobfile_argv():
    assert fio.jobfile_argv("runner/micro.fio", ["--section=randread-4k"]) == [
        "fio",
        "--output-format=json",
        "--section=randread-4k",
        "runner/micro.fio",
    ]


# ---------------------------------------------------------------- runner/ job files


@pytest.mark.parametrize("job", sorted(p.name for p in RUNNER.glob("*.fio")))
def test_job_file_is_self_describing(job):
    """Like fio's examples/: a header (purpose, expectations, hazards), then sections that
    each say what they are, and the target only through the environment."""
    body = (RUNNER / job).read_text()
    assert body.startswith(f"# {job} — ")
    header = body.split("\n[", 1)[0]
    assert "HAZARDS:" in header and "What to expect" in header
    sections = re.split(r"^\[([^\]]+)\]\s*$", body, flags=re.M)[1:]
    names, blocks = sections[0::2], sections[1::2]
    assert names[0] == "global" and len(names) > 1
    for name, block in zip(names[1:], blocks[1:]):
        assert re.search(r"^description=\S", block, re.M), name
    assert re.search(r"^(filename|directory)=\$\{TARGET\}", body, re.M)
    assert job in (RUNNER / "README.md").read_text()
    if job.startswith("filebench-"):
        assert "EMULATED with fio" in header
