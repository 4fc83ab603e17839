"""What a probe run records beside the benchmark's own figures: system-wide CPU split into
user, kernel and iowait from /proc/stat, and the flag on latency percentiles that fsadvisor
pooled from several distributions. No root, no devices: the measured command is a fake that
prints real fio 3.33 output, /proc/stat snapshots are fabricated."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from fsadvisor.tools import fio
from fsadvisor import domain
from fsadvisor.domain import Device
from fsadvisor.records import RunRecord
from fsadvisor.probe import measure
from fsadvisor.probe.cell import CellRunner, fitted_workload
from fsadvisor.probe.commands import CommandResult
from fsadvisor.probe.plan import build_plan
from fsadvisor.store import observations

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "fio"
GIB = 1 << 30


def stat_line(*cols: int) -> str:
    return "cpu  " + " ".join(map(str, cols)) + "\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 12345\n"


# ---------------------------------------------------------------- /proc/stat


def test_host_cpu_split_by_hand():
    #             user nice system idle iowait irq softirq steal guest guest_nice
    a = measure.CpuTimes.parse(stat_line(100, 10, 50, 700, 40, 5, 5, 0, 30, 0))
    b = measure.CpuTimes.parse(stat_line(300, 20, 150, 800, 90, 15, 25, 0, 90, 0))
    # deltas: user 200, nice 10, system 100, idle 100, iowait 50, irq 10, softirq 20 -> 490
    m = measure.host_cpu_metrics(a, b)
    assert m["host_cpu_usr_pct"] == pytest.approx(100 * 210 / 490)  # guest is inside user
    assert m["host_cpu_sys_pct"] == pytest.approx(100 * 130 / 490)  # irq+softirq included
    assert m["host_cpu_iowait_pct"] == pytest.approx(100 * 50 / 490)
    assert m["host_cpu_busy_pct"] == pytest.approx(100 * 340 / 490)
    assert m["host_cpu_busy_pct"] == pytest.approx(m["host_cpu_usr_pct"] + m["host_cpu_sys_pct"])


def test_steal_is_busy_but_neither_user_nor_kernel():
    a = measure.CpuTimes.parse(stat_line(0, 0, 0, 0, 0, 0, 0, 0))
    b = measure.CpuTimes.parse(stat_line(30, 0, 20, 40, 0, 0, 0, 10))
    m = measure.host_cpu_metrics(a, b)
    assert (m["host_cpu_usr_pct"], m["host_cpu_sys_pct"], m["host_cpu_busy_pct"]) == pytest.approx(
        (30.0, 20.0, 60.0)
    )


def test_a_pre_2_5_41_line_has_no_iowait_column():
    a = measure.CpuTimes.parse("cpu 10 0 10 80\n")
    b = measure.CpuTimes.parse("cpu 40 0 20 140\n")
    assert measure.host_cpu_metrics(a, b) == pytest.approx(
        {
            "host_cpu_busy_pct": 40.0,
            "host_cpu_usr_pct": 30.0,
            "host_cpu_sys_pct": 10.0,
            "host_cpu_iowait_pct": 0.0,
        }
    )


def test_no_time_passed_and_iowait_going_backwards():
    a = measure.CpuTimes.parse(stat_line(1, 2, 3, 4, 50, 0, 0, 0))
    assert measure.host_cpu_metrics(a, a) == {}
    # proc(5): iowait "may decrease in certain conditions"; that column is then no figure.
    b = measure.CpuTimes.parse(stat_line(11, 2, 3, 54, 40, 0, 0, 0))
    m = measure.host_cpu_metrics(a, b)
    assert "host_cpu_iowait_pct" not in m
    assert m["host_cpu_usr_pct"] == pytest.approx(100 * 10 / 50)  # user +10, idle +50, iowait -10


cols = st.lists(st.integers(0, 1 << 40), min_size=4, max_size=10)


@given(cols, st.lists(st.integers(0, 1 << 30), min_size=10, max_size=10))
def test_shares_add_up_whatever_the_counters(before, growth):
    after = [v + growth[i] for i, v in enumerate(before)]
    a, b = (measure.CpuTimes.parse(stat_line(*c)) for c in (before, after))
    m = measure.host_cpu_metrics(a, b)
    d = (after + [0] * 8)[:8]
    d = [x - y for x, y in zip(d, (before + [0] * 8)[:8])]
    if sum(d) == 0:
        assert m == {}
        return
    steal = 100.0 * d[7] / sum(d)
    assert m["host_cpu_busy_pct"] == pytest.approx(
        m["host_cpu_usr_pct"] + m["host_cpu_sys_pct"] + steal, abs=1e-9
    )
    assert m["host_cpu_usr_pct"] + m["host_cpu_sys_pct"] + m["host_cpu_iowait_pct"] <= 100 + 1e-9
    assert all(0.0 <= v <= 100.0 for v in m.values())


@given(cols | st.text(max_size=200))
def test_proc_stat_parser_columns(line):
    text = stat_line(*line) if isinstance(line, list) else line
    try:
        t = measure.CpuTimes.parse(text)
    except ValueError:
        assert not isinstance(line, list)  # every well-formed cpu line parses
        return
    first = next(ln.split()[1:] for ln in text.splitlines() if ln.split()[:1] == ["cpu"])
    v = ([int(x) for x in first] + [0] * 8)[:10]
    assert (t.total, t.idle, t.usr, t.sys, t.iowait) == (
        sum(v[:8]),
        v[3] + v[4],
        v[0] + v[1],
        v[2] + v[5] + v[6],
        v[4],
    )


# ---------------------------------------------------------------- one measured cell


class PrintsFixture:
    """Executor whose every command prints the given fio output."""

    def __init__(self, stdout: str):
        self.stdout = stdout

    def run(self, argv, **kw):
        return CommandResult(tuple(argv), 0, self.stdout, "", 1.0)


def measured(fixture: str, monkeypatch) -> RunRecord:
    p = build_plan(
        "/dev/loop9",
        4 * GIB,
        filesystems=["ext4"],
        schedulers=["none"],
        quick=True,
        runtime_s=1,
        kernel_supports=lambda fs: True,
    )
    cell = next(c for c in p.cells() if c.config is None)
    stats = iter(
        [
            {"read_sectors": 0, "write_sectors": 0},
            {"read_sectors": 1 << 30, "write_sectors": 1 << 30},
        ]
    )
    runner = CellRunner(
        plan=p,
        device="/dev/loop9",
        device_info=Device("/dev/loop9", 4 * GIB),
        mountpoint="/tmp/mnt-x",
        executor=PrintsFixture((FIX / fixture).read_text()),
        block_stat=lambda dev: next(stats),
    )
    snapshots = iter(
        [
            measure.CpuTimes.parse(stat_line(100, 0, 100, 700, 100, 0, 0, 0)),
            measure.CpuTimes.parse(stat_line(160, 0, 140, 760, 140, 0, 0, 0)),
        ]
    )
    monkeypatch.setattr(measure.CpuTimes, "now", staticmethod(lambda *a: next(snapshots)))
    record = RunRecord(
        cell_key=cell.key,
        device=runner.device_info,
        config=None,
        workload_name=cell.workload.name,
        workload=fitted_workload(p, cell),
        rep=1,
        status="failed",
        started_at=0.0,
        wall_s=0.0,
    )
    flags: list[str] = []
    step = next(s for s in runner.steps(cell) if s.role == "measure")
    runner._measure(step, cell, record, flags)
    record.flags = tuple(flags)
    return record


def test_a_randrw_run_is_flagged_and_keeps_fios_per_direction_percentiles(monkeypatch):
    rec = measured("fio-3.33-randrw-group-reporting.json", monkeypatch)
    assert rec.status == "ok"
    assert domain.FLAG_POOLED_PERCENTILES in rec.flags
    res = fio.parse((FIX / "fio-3.33-randrw-group-reporting.json").read_text())
    lat = res.jobs[0]
    for side in ("read", "write"):
        assert rec.metrics[f"{side}_p99_latency_us"] == pytest.approx(
            lat[side]["lat_ns"]["percentile"]["99.000000"] / 1000
        )
    assert rec.metrics["p99_latency_us"] == res.metrics()["p99_latency_us"]  # the old key stays
    # /proc/stat deltas: user 60, system 40, idle 60, iowait 40 of 200 jiffies.
    assert rec.metrics["host_cpu_usr_pct"] == pytest.approx(30.0)
    assert rec.metrics["host_cpu_sys_pct"] == pytest.approx(20.0)
    assert rec.metrics["host_cpu_iowait_pct"] == pytest.approx(20.0)
    assert rec.metrics["host_cpu_busy_pct"] == pytest.approx(50.0)


@pytest.mark.parametrize("fixture", ["fio-3.33-randread-4k.json", "fio-3.33-randwrite-4k.json"])
def test_a_single_direction_run_is_not_flagged(fixture, monkeypatch):
    rec = measured(fixture, monkeypatch)
    assert rec.status == "ok" and domain.FLAG_POOLED_PERCENTILES not in rec.flags
    assert "host_cpu_usr_pct" in rec.metrics


def test_the_store_knows_the_flag_by_the_same_name():
    assert observations.FLAG_POOLED_PERCENTILES is domain.FLAG_POOLED_PERCENTILES
