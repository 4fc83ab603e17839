"""The estimate: fake /proc and /sys with recorded nvme output, then once for real here."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from fsadvisor.energy import EstimateMeter, choose_meter
from fsadvisor.domain import ASSUMED_DRIVE_IDLE_W
from fsadvisor.energy.estimate import drive_powers, parse_power_states, read_cpu
from fsadvisor.energy.meter import CommandResult
from fsadvisor.errors import EnergyError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "energy"
CLI23 = (FIX / "nvme_id_ctrl_cli23.json").read_text()
NEWER = (FIX / "nvme_id_ctrl_newer.json").read_text()


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def write_proc_stat(proc: Path, user: int, system: int, idle: int, iowait: int = 0) -> None:
    """Two cores; the aggregate line is what the estimate reads."""
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "stat").write_text(
        f"cpu  {user} 0 {system} {idle} {iowait} 0 0 0 0 0\n"
        f"cpu0 {user // 2} 0 {system // 2} {idle // 2} {iowait // 2} 0 0 0 0 0\n"
        f"cpu1 {user - user // 2} 0 {system - system // 2} {idle - idle // 2} 0 0 0 0 0 0\n"
        "intr 1 2 3\nctxt 100\nbtime 1700000000\n"
    )


def write_block_stat(sys_root: Path, name: str, io_ticks_ms: int) -> None:
    d = sys_root / "block" / name
    d.mkdir(parents=True, exist_ok=True)
    # 17 fields as on this kernel; io_ticks is the 10th.
    fields = [100, 0, 800, 5, 50, 0, 400, 7, 0, io_ticks_ms, 12, 0, 0, 0, 0, 0, 0]
    (d / "stat").write_text(" ".join(f"{v:8d}" for v in fields) + "\n")


def nvme_replay(text: str, rc: int = 0):
    calls = []

    def runner(argv):
        calls.append(argv)
        return CommandResult(rc, text if rc == 0 else "", "" if rc == 0 else text)

    runner.calls = calls
    return runner


def test_power_tables_both_nvme_cli_shapes():
    s = parse_power_states(CLI23)
    assert [x.operational for x in s] == [True, True, True, False]
    assert s[0].max_w == pytest.approx(9.5)  # 95000 x 0.0001 W (MXPS set in raw flags)
    assert s[0].idle_w == pytest.approx(0.45) and s[0].active_w == pytest.approx(6.1)
    assert s[1].max_w == pytest.approx(6.0) and s[1].idle_w is None
    assert s[3].max_w == pytest.approx(0.05)
    assert drive_powers(s) == (pytest.approx(0.45), pytest.approx(6.1), "nvme id-ctrl PS0")

    n = parse_power_states(NEWER)
    assert n[0].max_w == pytest.approx(8.49) and not n[2].operational
    idle, active, src = drive_powers(n)
    assert active == pytest.approx(8.49)  # no active power reported: PS0 maximum
    assert idle == ASSUMED_DRIVE_IDLE_W and "default idle assumed" in src


json_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)
psd = st.dictionaries(
    st.sampled_from(
        [
            "max_power",
            "flags",
            "max_power_scale",
            "non-operational_state",
            "idle_power",
            "idle_scale",
            "active_power",
            "active_scale",
        ]
    ),
    json_value,
)


@given(
    st.one_of(
        st.text(max_size=200),
        st.lists(st.one_of(psd, json_value), max_size=5).map(
            lambda p: json.dumps({"npss": len(p), "psds": p})
        ),
    )
)
def test_power_table_parser_never_raises_anything_but_energy_error(text):
    try:
        states = parse_power_states(text)
    except EnergyError as e:
        assert "\n" not in str(e)
        return
    for s in states:
        assert 0 <= s.max_w < 1e6
        assert s.idle_w is None or s.idle_w >= 0
    table = drive_powers(states)
    if table is not None:
        idle, active, _ = table
        assert 0 <= idle <= active


def test_estimate_from_fake_proc_sys_and_recorded_nvme(tmp_path):
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    write_proc_stat(proc, user=1000, system=0, idle=9000)
    write_block_stat(sys_root, "nvme0n1", io_ticks_ms=10_000)
    clock = Clock()
    runner = nvme_replay(CLI23)
    meter = EstimateMeter(
        device="/dev/nvme0n1",
        proc_root=str(proc),
        sys_root=str(sys_root),
        nvme_runner=runner,
        interval_s=1000,
        clock=clock,
    )
    assert meter.unavailable() is None
    meter.start()
    # 10 s later: 2 cores x 10 s x 100 Hz = 2000 jiffies, half of them busy -> 1 busy core;
    # io_ticks +5000 ms over 10 s -> drive 50% busy.
    write_proc_stat(proc, user=1800, system=200, idle=10000)
    write_block_stat(sys_root, "nvme0n1", io_ticks_ms=15_000)
    clock.t = 10.0
    r = meter.stop()
    assert runner.calls == [["nvme", "id-ctrl", "/dev/nvme0n1", "-o", "json"]]
    assert r.source == "estimate" and r.scope == "system" and not r.measured
    idle, cpu, drive = 40.0 * 10, 5.0 * 1 * 10, (6.1 - 0.45) * 0.5 * 10
    assert r.energy_j == pytest.approx(idle + cpu + drive)
    assert r.idle_watts == 40.0 and r.active_energy_j == pytest.approx(cpu + drive)
    a = r.assumptions
    assert (
        a["idle_watts_from"] == "assumed default"
        and a["core_active_watts_from"] == "assumed default"
    )
    assert a["drive_power_from"] == "nvme id-ctrl PS0" and a["cores"] == 2
    assert a["cpu_busy_core_s"] == pytest.approx(10.0) and a["drive_busy_s"] == pytest.approx(5.0)
    assert r.accuracy.startswith("model, not a measurement")
    assert "idle 40 W (assumed default)" in r.accuracy


def test_given_values_replace_defaults_and_iowait_is_idle(tmp_path):
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    write_proc_stat(proc, user=0, system=0, idle=0, iowait=0)
    write_block_stat(sys_root, "loop3", io_ticks_ms=0)
    clock = Clock()
    meter = choose_meter(
        "estimate",
        device="loop3",
        proc_root=str(proc),
        sys_root=str(sys_root),
        idle_watts=55,
        core_active_watts=3.0,
        drive_idle_watts=1.0,
        drive_active_watts=5.0,
        interval_s=1000,
        clock=clock,
    )
    meter.start()
    write_proc_stat(proc, user=0, system=0, idle=1000, iowait=1000)  # only waiting on I/O
    write_block_stat(sys_root, "loop3", io_ticks_ms=20_000)  # busy the whole 10 s
    clock.t = 10.0
    r = meter.stop()
    assert r.energy_j == pytest.approx(55 * 10 + 0 + (5.0 - 1.0) * 10)
    assert r.assumptions["idle_watts_from"] == "given"
    assert r.assumptions["drive_power_from"] == "given"
    assert r.assumptions["nvme_id_ctrl"].startswith("not an NVMe")
    assert "(assumed" not in r.accuracy


def test_nvme_failure_or_no_stat_falls_back_to_labelled_defaults(tmp_path):
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    write_proc_stat(proc, 0, 0, 0)
    clock = Clock()
    meter = EstimateMeter(
        device="nvme1n1",
        proc_root=str(proc),
        sys_root=str(sys_root),
        nvme_runner=nvme_replay("nvme1n1: No such file or directory", rc=1),
        interval_s=1000,
        clock=clock,
    )
    meter.start()
    clock.t = 2.0
    r = meter.stop()
    assert r.energy_j == pytest.approx(80.0)
    assert r.assumptions["drive_power_from"] == "assumed default"
    assert "No such file" in r.assumptions["nvme_id_ctrl"]
    assert "term omitted" in r.assumptions["drive_term"]


def test_unreadable_proc_is_unavailable_and_missing(tmp_path):
    meter = EstimateMeter(proc_root=str(tmp_path / "noproc"))
    assert "cannot read" in meter.unavailable()
    meter.start()
    r = meter.stop()
    assert r.energy_j is None and r.missing


def test_read_cpu_counts_cores_and_busy():
    busy, total, cores = read_cpu("/proc")
    assert cores == os.cpu_count() and 0 <= busy <= total


def test_real_estimate_over_one_second_of_cpu_work():
    """This machine has no RAPL (domain notes §6): the estimate is what it can give."""
    meter = EstimateMeter(interval_s=0.25)
    meter.start()
    end = time.monotonic() + 1.0
    x = 0
    while time.monotonic() < end:
        x += 1
    r = meter.stop()
    assert r.source == "estimate" and r.scope == "system" and not r.measured
    assert r.duration_s == pytest.approx(1.0, abs=0.3)
    assert r.samples >= 4
    # One core was kept busy: the model must see well over half a busy core-second.
    assert r.assumptions["cpu_busy_core_s"] > 0.5
    assert r.energy_j > 40.0 * r.duration_s
    assert "model, not a measurement" in r.accuracy


@pytest.mark.skipif(
    os.path.isdir("/sys/class/powercap") or os.path.exists("/dev/ipmi0"),
    reason="this machine has a hardware energy source",
)
def test_auto_on_this_machine_picks_estimate_and_says_why():
    meter = choose_meter()
    assert meter.name == "estimate"
    assert "rapl: /sys/class/powercap absent" in meter.why
    assert "ipmi:" in meter.why and "not a measurement" in meter.why
