"""Old fio JSON: fio-2.1.11 has no ``total_ios`` and µs ``clat``/``lat``; it must
give every metric in the right units, and output that lacks a metric is refused in one line
naming it, never half-read. fio --client output (``client_stats``) is refused as what it is."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.tools import fio
from fsadvisor.tools.fio import FioParseError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "fio"
OLD = "synthetic-fio-2.1.11-randread.json"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def test_fio_2_1_11_yields_every_metric_in_its_units():
    res = fio.parse((FIXTURES / OLD).read_text()).require_complete()
    assert res.version_tuple == (2, 1, 11) and res.missing() == []
    m = res.metrics()
    assert m["ops"] == 100_000  # iops x runtime: 10,000/s x 10 s
    assert m["iops"] == m["read_iops"] == 10_000
    assert m["read_mb_s"] == m["mb_s"] == pytest.approx(40_000 * 1024 / 1e6)  # bw in KiB/s
    assert m["app_read_bytes"] == m["bytes"] == 400_000 * 1024  # io_bytes in KiB
    assert m["mean_latency_us"] == 100.0 and m["read_mean_latency_us"] == 100.0  # µs clat
    assert m["p50_latency_us"] == 100.0 and m["p99_latency_us"] == 400.0
    assert m["p999_latency_us"] == 1000.0
    assert res.percentile_provenance()["p99_latency_us"] == fio.EXACT
    assert m["runtime_s"] == 10.0
    assert "write_iops" not in m and "trim_iops" not in m  # idle directions stay absent
    assert res.latency_basis() == "clat"


def test_every_real_and_synthetic_fixture_is_complete():
    for f in sorted(FIXTURES.glob("*.json")):
        if f.name.startswith("refused-"):
            continue
        res = fio.parse(f.read_text())
        if not res.error:
            assert res.missing() == [], (f.name, res.missing())


@pytest.mark.parametrize(
    "drop, named",
    [
        (("iops",), "randread read: total_ios (or iops and runtime)"),
        (("runtime",), "randread read: total_ios (or iops and runtime)"),
        (("iops",), "randread read: iops"),
        (("bw",), "randread read: bw_bytes/bw"),
        (("io_bytes",), "randread read: io_bytes/io_kbytes"),
        (("clat", "lat"), "randread read: latency"),
    ],
)
def test_a_layout_missing_a_metric_is_refused_naming_it(drop, named):
    d = load(OLD)
    for key in drop:
        d["jobs"][0]["read"].pop(key, None)
    res = fio.parse(json.dumps(d))
    with pytest.raises(FioParseError) as e:
        res.require_complete()
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("fio-2.1.11 JSON lacks ") and named in msg, msg


def test_client_server_output_is_refused_as_what_it_is():
    with pytest.raises(FioParseError) as e:
        fio.parse((FIXTURES / "refused-fio-2.6-client-server.synthetic.json").read_text())
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(
        "fio-2.6 client/server output (client_stats, no jobs)"
    )


@settings(max_examples=200, deadline=None)
@given(keep=st.sets(st.sampled_from(["io_bytes", "bw", "iops", "runtime", "clat", "lat", "slat"])))
def test_any_subset_of_the_old_layout_is_whole_or_refused(keep):
    d = load(OLD)
    read = d["jobs"][0]["read"]
    d["jobs"][0]["read"] = {k: v for k, v in read.items() if k in keep or k.startswith("bw_")}
    res = fio.parse(json.dumps(d))
    try:
        res.require_complete()
    except FioParseError as e:
        assert "\n" not in str(e) and "lacks" in str(e)
        return
    m = res.metrics()  # complete: every headline metric is there, with the 2.1.11 units
    if keep <= {"slat"}:
        assert "ops" not in m  # nothing left that did I/O: the probe says "no I/O"
        return
    for key in ("ops", "iops", "mb_s", "bytes", "mean_latency_us", "p99_latency_us"):
        assert key in m, (keep, key)


def test_the_probe_refuses_a_half_read_run(tmp_path):
    """The cell's parser: an old fio's output without latency fails the cell, one line."""
    from fsadvisor.probe.cell import CellRunner, Step
    from fsadvisor.probe.commands import CommandResult

    d = load(OLD)
    del d["jobs"][0]["read"]["clat"], d["jobs"][0]["read"]["lat"]
    result = CommandResult(argv=("fio",), returncode=0, stdout=json.dumps(d), stderr="", wall_s=1.0)
    metrics, why, flags = CellRunner._parse(None, Step("measure", ("fio",)), result)
    assert metrics == {} and why and "lacks" in why and "latency" in why
    ok = copy.deepcopy(load(OLD))
    result = CommandResult(
        argv=("fio",), returncode=0, stdout=json.dumps(ok), stderr="", wall_s=1.0
    )
    metrics, why, _ = CellRunner._parse(None, Step("measure", ("fio",)), result)
    assert why is None and metrics["iops"] == 10_000


def test_an_idle_direction_with_zero_io_is_not_incomplete():
    d = load(OLD)
    d["jobs"][0]["write"] = {
        "io_bytes": 0,
        "bw": 0,
        "iops": 0,
        "runtime": 10000,
        "clat": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0},
    }
    assert fio.parse(json.dumps(d)).missing() == []
    d["jobs"][0]["write"] = {"runtime": 10000}  # says it ran, says nothing of what it did
    assert fio.parse(json.dumps(d)).missing()[0].startswith("randread write: total_ios")
