"""Figures that cannot be measurements are not read: CPU percentages above
100 x the CPUs, latency percentiles that decrease with p or fall outside min..max."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.tools import sysbench as ab
from fsadvisor.tools import fio

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "fio"
DOC = json.loads((FIX / "fio-3.33-randread-4k.json").read_text())
PCT_KEYS = ["1.000000", "10.000000", "50.000000", "90.000000", "99.000000", "99.900000"]


def with_read_percentiles(values: list[float]) -> dict:
    d = json.loads(json.dumps(DOC))
    read = d["jobs"][0]["read"]
    for key in ("lat_ns", "clat_ns"):
        if "percentile" in read.get(key, {}):
            read[key]["percentile"] = dict(zip(PCT_KEYS, values))
    return d


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10**9), min_size=len(PCT_KEYS), max_size=len(PCT_KEYS)))
def test_fio_percentiles_are_read_only_when_monotone(values):
    m = fio.parse(json.dumps(with_read_percentiles(values))).metrics()
    monotone = values == sorted(values)
    assert ("p99_latency_us" in m) == monotone
    if monotone:
        assert m["p50_latency_us"] <= m["p99_latency_us"] <= m["p999_latency_us"]
        assert m["p99_latency_us"] == pytest.approx(values[4] / 1000)  # ns -> µs


def test_a_decreasing_percentile_list_makes_the_probe_refuse_the_run():
    res = fio.parse(json.dumps(with_read_percentiles([5, 4, 3, 2, 1, 0])))
    assert any("latency percentiles" in x for x in res.missing())


@given(st.floats(0, 1e6))
def test_fio_cpu_percentages_beyond_every_cpu_are_dropped(pct):
    d = json.loads(json.dumps(DOC))
    d["jobs"][0]["usr_cpu"] = pct
    m = fio.parse(json.dumps(d)).metrics()
    if pct <= 100 * (os.cpu_count() or 1):
        assert m["usr_cpu_pct"] == pytest.approx(pct)
    else:
        assert "usr_cpu_pct" not in m


SYSBENCH_TAIL = """\
Latency (ms):
         min:                                    0.00
         avg:                                    0.03
         max:                                    {max}
         99th percentile:                        {p99}
         sum:                                 1000.00
"""


SYSBENCH_HEAD = """\
File operations:
    reads/s:                      20121.53
    writes/s:                     13414.35
    fsyncs/s:                     0.00

Throughput:
    read, MiB/s:                  314.41
    written, MiB/s:               209.63

General statistics:
    total time:                          1.0003s
    total number of events:              34949

"""


def sysbench(p99: str, max_ms: str) -> str:
    return SYSBENCH_HEAD + SYSBENCH_TAIL.format(p99=p99, max=max_ms)


def test_sysbench_percentile_outside_min_max_is_not_read():
    assert ab.parse_sysbench_fileio(sysbench("0.10", "3.00"))["p99_latency_us"] == 100.0
    assert "p99_latency_us" not in ab.parse_sysbench_fileio(sysbench("9.00", "3.00"))
