"""Which latency percentiles are fio's own figures and which are pooled estimates.

fio prints percentiles per direction (and per job without group_reporting); fsadvisor's
undirected p50/p99/p999 pool those into one figure fio never printed. These tests pin down
that FioResult says so (percentile_provenance) and that the per-direction figures it adds are
fio's, on real fio 3.33 output. ``fio-3.33-randrw-group-reporting.json`` is the probe's own
command line for a 70/30 randrw, numjobs=2 (group_reporting), captured here with

    workload_argv(Workload(rw="randrw", bs_bytes=4096, iodepth=4, numjobs=2, rwmixread=70,
                           direct=True, ioengine="io_uring", working_set_bytes=4 << 20),
                  "<tmp>/data.dat", 1, name="randrw")
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsadvisor.tools import fio

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "fio"
PCTS = {"p50": "50.000000", "p99": "99.000000", "p999": "99.900000"}
EXACT, POOLED = fio.EXACT, fio.POOLED_ESTIMATE


def load(name: str) -> tuple[fio.FioResult, dict]:
    t = (FIX / name).read_text()
    return fio.parse(t), json.JSONDecoder().raw_decode(t, t.index('{\n  "fio version"'))[0]


def percentile_keys(m: dict) -> set[str]:
    return {k for k in m if k.endswith("_latency_us") and "mean" not in k}


@pytest.mark.parametrize(
    "name, basis",
    [
        ("fio-3.33-randrw-clat-default.json", "clat_ns"),  # one job, fio's default clat
        ("fio-3.33-randrw-group-reporting.json", "lat_ns"),  # the probe's argv, two clones
    ],
)
def test_randrw_pools_an_estimate_and_keeps_each_directions_own_figures(name, basis):
    res, d = load(name)
    (job,) = d["jobs"]
    m, prov = res.metrics(), res.percentile_provenance()
    for key in ("p50_latency_us", "p99_latency_us", "p999_latency_us"):
        assert prov[key] == POOLED  # fio printed no percentile over both directions
    for side in ("read", "write"):
        blk = job[side][basis]
        for name_, p in PCTS.items():
            key = f"{side}_{name_}_latency_us"
            assert m[key] == pytest.approx(blk["percentile"][p] / 1000)
            assert prov[key] == EXACT
        assert m[f"{side}_mean_latency_us"] == pytest.approx(blk["mean"] / 1000)
    # The estimate lies between the two sides, and the old key is still there for the model.
    lo, hi = sorted((m["read_p99_latency_us"], m["write_p99_latency_us"]))
    assert lo - 1e-9 <= m["p99_latency_us"] <= hi + 1e-9
    assert set(prov) == percentile_keys(m)


def test_jobs_without_group_reporting_give_no_per_direction_percentile():
    # Two "pair" jobs: each direction has two distributions, so a per-direction percentile
    # would be an estimate too; only the (exact) per-direction means are added.
    res, d = load("fio-3.33-numjobs2-nogroup.json")
    m, prov = res.metrics(), res.percentile_provenance()
    assert {v for v in prov.values()} == {POOLED}
    assert set(prov) == {"p50_latency_us", "p99_latency_us", "p999_latency_us"}
    assert not any(k.startswith(("read_p", "write_p")) for k in m)
    for side in ("read", "write"):
        blks = [j[side]["lat_ns"] for j in d["jobs"]]
        assert m[f"{side}_mean_latency_us"] == pytest.approx(
            sum(b["mean"] * b["N"] for b in blks) / sum(b["N"] for b in blks) / 1000
        )


@pytest.mark.parametrize(
    "name, side",
    [
        ("fio-3.33-randread-4k.json", "read"),
        ("fio-3.33-randwrite-4k.json", "write"),
        ("synthetic-fio-3.36-randread-prios.json", "read"),
    ],
)
def test_one_distribution_is_fios_own_figure_everywhere(name, side):
    res, d = load(name)
    m, prov = res.metrics(), res.percentile_provenance()
    assert set(prov.values()) == {EXACT}
    for name_, p in PCTS.items():
        assert m[f"{name_}_latency_us"] == m[f"{side}_{name_}_latency_us"]
    assert set(prov) == percentile_keys(m)


def test_stonewalled_groups_are_pooled_but_each_group_alone_is_exact():
    res, _ = load("fio-3.33-metadata-chain.json")
    assert set(res.percentile_provenance().values()) == {POOLED}
    for g in res.groups():
        assert set(res.percentile_provenance(groupid=g).values()) == {EXACT}
    # create/stat/delete are reported under "read" but are no reads.
    assert not any(k.startswith("read_") for k in res.metrics())


def test_unified_mixed_section_is_one_distribution():
    res, _ = load("fio-3.33-unified-mixed.json")
    assert res.percentile_provenance() == dict.fromkeys(
        ("p50_latency_us", "p99_latency_us", "p999_latency_us"), EXACT
    )


def test_fsync_percentiles_of_one_job_are_exact_of_two_jobs_pooled():
    res, d = load("fio-3.33-randwrite-fsync1.json")
    assert res.percentile_provenance()["fsync_p99_latency_us"] == EXACT
    job = d["jobs"][0]
    # The same job twice, as numjobs=2 without group_reporting would print it.
    two = fio.parse(json.dumps({**d, "jobs": [job, {**job, "jobname": "clone"}]}))
    prov = two.percentile_provenance()
    assert prov["fsync_p99_latency_us"] == prov["p99_latency_us"] == POOLED
    assert not any(k.startswith("write_p") for k in two.metrics())
    assert two.metrics()["fsync_p99_latency_us"] == pytest.approx(
        job["sync"]["lat_ns"]["percentile"]["99.000000"] / 1000
    )  # identical: same value


def test_synthetic_2x_randrw_hand_computed_values_are_flagged():
    res, _ = load("synthetic-fio-2.2.10-randrw.json")
    m, prov = res.metrics(), res.percentile_provenance()
    assert m["p99_latency_us"] == pytest.approx(968.75, rel=1e-6)
    assert prov["p99_latency_us"] == POOLED
    assert (m["read_p99_latency_us"], m["write_p99_latency_us"]) == (600.0, 1200.0)
    assert (m["read_mean_latency_us"], m["write_mean_latency_us"]) == (150.0, 300.0)
