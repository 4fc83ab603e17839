"""RAPL through fake powercap trees (this machine has no /sys/class/powercap)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fsadvisor.energy import check, choose_meter
from fsadvisor.energy.rapl import (
    ROOT_ONLY,
    RaplMeter,
    accumulate,
    counter_delta_uj,
    discover,
    pyrapl_status,
)
from fsadvisor.errors import EnergyError

MAX_UJ = 262143328850  # a typical Intel package max_energy_range_uj


def zone(root: Path, label: str, name: str, energy_uj: int, max_uj: int | None = MAX_UJ) -> Path:
    d = root / label
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    (d / "energy_uj").write_text(f"{energy_uj}\n")
    if max_uj is not None:
        (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return d


def bump(d: Path, delta_uj: int) -> None:
    f = d / "energy_uj"
    f.write_text(f"{int(f.read_text()) + delta_uj}\n")


def measure(root: Path, change, **kw):
    """Start a meter on ``root``, apply ``change()`` to the counters, stop."""
    meter = RaplMeter(root=str(root), interval_s=100.0, **kw)
    meter.start()
    change()
    return meter.stop()


def test_two_sockets_sum_package_and_dram_never_core_or_uncore(tmp_path):
    p0 = zone(tmp_path, "intel-rapl:0", "package-0", 1_000_000)
    c0 = zone(tmp_path, "intel-rapl:0:0", "core", 5_000)
    d0 = zone(tmp_path, "intel-rapl:0:1", "dram", 7_000)
    p1 = zone(tmp_path, "intel-rapl:1", "package-1", 2_000_000)
    u1 = zone(tmp_path, "intel-rapl:1:0", "uncore", 1)
    d1 = zone(tmp_path, "intel-rapl:1:1", "dram", 9)

    def work():
        bump(p0, 10_000_000)
        bump(c0, 8_000_000)  # inside package-0: must not be added again
        bump(d0, 2_000_000)
        bump(p1, 12_000_000)
        bump(u1, 1_000_000)
        bump(d1, 3_000_000)

    r = measure(tmp_path, work)
    assert r.source == "rapl" and r.scope == "cpu+dram"
    assert r.energy_j == pytest.approx(27.0)
    assert r.missing is None
    assert sorted(r.assumptions["zones"]) == sorted(
        [
            "intel-rapl:0 package-0",
            "intel-rapl:0:1 dram",
            "intel-rapl:1 package-1",
            "intel-rapl:1:1 dram",
        ]
    )
    assert r.avg_watts == pytest.approx(27.0 / r.duration_s)


def test_psys_and_mmio_are_not_double_counted(tmp_path):
    p0 = zone(tmp_path, "intel-rapl:0", "package-0", 0)
    c0 = zone(tmp_path, "intel-rapl:0:0", "core", 0)
    ps = zone(tmp_path, "intel-rapl:1", "psys", 0)
    mm = zone(tmp_path, "intel-rapl-mmio:0", "package-0", 0)

    def work():
        bump(p0, 10_000_000)
        bump(c0, 6_000_000)
        bump(ps, 25_000_000)  # platform: includes the package
        bump(mm, 10_000_000)  # the same package counter via MMIO

    r = measure(tmp_path, work)
    assert r.energy_j == pytest.approx(10.0)
    skipped = " ".join(r.assumptions["skipped"])
    assert "psys" in skipped and "intel-rapl-mmio" in skipped and "core" in skipped


def test_no_dram_domain_says_package_only(tmp_path):
    p0 = zone(tmp_path, "intel-rapl:0", "package-0", 0)
    r = measure(tmp_path, lambda: bump(p0, 4_000_000))
    assert r.energy_j == pytest.approx(4.0)
    assert r.assumptions["dram"] == "absent"
    assert "package only" in r.accuracy


def test_wrap_between_start_and_stop_uses_max_energy_range(tmp_path):
    p0 = zone(tmp_path, "intel-rapl:0", "package-0", MAX_UJ - 1_000_000)
    r = measure(tmp_path, lambda: (p0 / "energy_uj").write_text("3000000\n"))
    assert r.energy_j == pytest.approx(4.0)
    assert r.assumptions["wraps"] == 1


def test_wrap_with_unknown_range_is_missing_not_invented(tmp_path):
    p0 = zone(tmp_path, "intel-rapl:0", "package-0", 9_000_000, max_uj=0)
    r = measure(tmp_path, lambda: (p0 / "energy_uj").write_text("1000\n"))
    assert r.energy_j is None
    assert "unknown range" in r.missing and "\n" not in r.missing
    assert r.assumptions["unknown_range_zones"] == ["intel-rapl:0"]


def test_unknown_range_without_wrap_is_measured_but_flagged(tmp_path):
    p0 = zone(tmp_path, "intel-rapl:0", "package-0", 1000, max_uj=0)
    r = measure(tmp_path, lambda: bump(p0, 2_000_000))
    assert r.energy_j == pytest.approx(2.0)
    assert r.assumptions["unknown_range_zones"] == ["intel-rapl:0"]


def test_counter_delta_and_accumulate_catch_every_wrap():
    assert counter_delta_uj(100, 300, 1000) == 200
    assert counter_delta_uj(900, 100, 1000) == 200
    assert counter_delta_uj(900, 100, 0) is None

    class Z:
        label, name, max_range_uj = "z", "package-0", 1000

    samples = [{"z": v} for v in (900, 100, 800, 50)]
    energy_j, wraps, why = accumulate([Z], samples)
    assert why is None and wraps == 2
    assert energy_j == pytest.approx((200 + 700 + 250) / 1e6)
    # Begin/end only (what pyRAPL does) would see 900 -> 50: one wrap, 150 uJ, wrong.
    assert accumulate([Z], [samples[0], samples[-1]])[0] == pytest.approx(150 / 1e6)


def test_periodic_sampling_catches_several_wraps_during_a_run(tmp_path):
    """The counter wraps twice while the meter runs; the sampling thread sees each wrap."""
    zone(tmp_path, "intel-rapl:0", "package-0", 0, max_uj=1_000_000)
    started = threading.Event()
    script = iter([100_000, 800_000, 50_000])  # what the counter shows after start
    last = [900_000]  # the counter until start() has returned
    done = threading.Event()

    def reader(path: str) -> str:
        if path.endswith("energy_uj"):
            if started.is_set():
                try:
                    last[0] = next(script)
                except StopIteration:
                    done.set()
            return str(last[0])
        with open(path) as f:
            return f.read()

    meter = RaplMeter(root=str(tmp_path), reader=reader, interval_s=0.01)
    meter.start()
    started.set()
    assert done.wait(5.0)
    r = meter.stop()
    assert r.energy_j == pytest.approx((200_000 + 700_000 + 250_000) / 1e6)
    assert r.assumptions["wraps"] == 2
    assert r.samples >= 4


def test_nested_control_type_layout_is_found(tmp_path):
    base = tmp_path / "intel-rapl"
    p0 = zone(base, "intel-rapl:0", "package-0", 0)
    d0 = zone(p0, "intel-rapl:0:0", "dram", 0)
    zones, _ = discover(str(tmp_path))
    assert [z.name for z in zones] == ["package-0", "dram"]
    r = measure(tmp_path, lambda: (bump(p0, 1_000_000), bump(d0, 500_000)))
    assert r.energy_j == pytest.approx(1.5)


def test_mirrored_amd_dies_count_once_but_distinct_dies_add(tmp_path):
    a = zone(tmp_path, "intel-rapl:0", "package-0-die-0", 5_000_000)
    b = zone(tmp_path, "intel-rapl:1", "package-0-die-1", 5_000_000)
    r = measure(tmp_path, lambda: (bump(a, 3_000_000), bump(b, 3_000_000)))
    assert r.energy_j == pytest.approx(3.0)
    assert any("mirror" in n for n in r.assumptions["skipped"])

    other = tmp_path / "intel"
    c = zone(other, "intel-rapl:0", "package-0-die-0", 1_000_000)
    d = zone(other, "intel-rapl:1", "package-0-die-1", 2_000_000)
    r = measure(other, lambda: (bump(c, 3_000_000), bump(d, 4_000_000)))
    assert r.energy_j == pytest.approx(7.0)


def _denying_reader(path: str) -> str:
    if path.endswith("energy_uj"):
        raise PermissionError(13, "Permission denied", path)
    with open(path) as f:
        return f.read()


def test_unreadable_energy_uj_is_reported_as_needing_root(tmp_path):
    zone(tmp_path, "intel-rapl:0", "package-0", 0)
    meter = RaplMeter(root=str(tmp_path), reader=_denying_reader)
    assert meter.unavailable() == ROOT_ONLY
    with pytest.raises(EnergyError, match="needs root"):
        choose_meter("rapl", sysfs_root=str(tmp_path), reader=_denying_reader)
    meter.start()
    r = meter.stop()
    assert r.energy_j is None and r.missing == ROOT_ONLY
    statuses = {s.name: s for s in check(sysfs_root=str(tmp_path), reader=_denying_reader)}
    assert not statuses["rapl"].ok and "needs root" in statuses["rapl"].detail


def test_absent_powercap_and_empty_tree(tmp_path):
    assert "absent" in RaplMeter(root=str(tmp_path / "nope")).unavailable()
    assert "no RAPL package zone" in RaplMeter(root=str(tmp_path)).unavailable()
    r = RaplMeter(root=str(tmp_path / "nope"))
    r.start()
    reading = r.stop()
    assert reading.energy_j is None and "absent" in reading.missing


def test_pyrapl_is_only_a_second_opinion(tmp_path, monkeypatch):
    zone(tmp_path, "intel-rapl:0", "package-0", 0)
    assert "not consulted" in pyrapl_status(str(tmp_path))
    status = {s.name: s for s in check(sysfs_root=str(tmp_path))}["rapl"]
    assert status.ok and "pyRAPL not consulted" in status.detail


def test_pyrapl_absent_or_failing_is_tolerated(tmp_path, monkeypatch):
    from fsadvisor.energy import rapl

    # Pretend tmp_path is the standard location so pyRAPL is consulted.
    (tmp_path / "intel-rapl").mkdir()
    monkeypatch.setattr(rapl, "DEFAULT_ROOT", str(tmp_path))
    monkeypatch.setitem(sys.modules, "pyRAPL", None)
    assert rapl.pyrapl_status(str(tmp_path)) == "pyRAPL not installed"
    monkeypatch.delitem(sys.modules, "pyRAPL")
    # The real pyRAPL reads its fixed /sys/class/powercap/intel-rapl paths, absent here.
    status = rapl.pyrapl_status(str(tmp_path))
    if os.path.isdir("/sys/class/powercap/intel-rapl"):
        pytest.skip("real RAPL present: pyRAPL may succeed")
    assert status.startswith("pyRAPL cannot set up (")


def test_pyrapl_import_warnings_do_not_reach_the_terminal():
    # pyRAPL logs "imports error ... pymongo/pandas" at import; users must not see it.
    code = "from fsadvisor.energy.rapl import _import_pyrapl; _import_pyrapl(); print('ok')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if p.returncode != 0 and "No module named 'pyRAPL'" in p.stderr:
        pytest.skip("pyRAPL not installed")
    assert p.stdout.strip() == "ok" and "imports error" not in p.stderr, p.stderr


def test_stop_is_idempotent_and_thread_ends(tmp_path):
    zone(tmp_path, "intel-rapl:0", "package-0", 0)
    meter = RaplMeter(root=str(tmp_path), interval_s=0.01)
    meter.start()
    time.sleep(0.05)
    r1 = meter.stop()
    assert meter.stop() is r1
    assert not any(
        t.name == "fsadvisor-energy-sampler" and t.is_alive() for t in threading.enumerate()
    )
