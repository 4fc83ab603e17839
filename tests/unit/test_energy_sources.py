"""choose_meter, check, idle baseline, ops/joule, interrupted runs, `fsadvisor energy`."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fsadvisor.records import EnergyReading
from fsadvisor.energy import (
    EnergyMeter,
    check,
    choose_meter,
    measure_idle,
    ops_per_joule,
    parse_idle_watts,
    with_idle,
)
from fsadvisor.energy.meter import CommandResult
from fsadvisor.errors import EnergyError
from fsadvisor.service.energy import energy_check

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "energy"
ACTIVATED = (FIX / "ipmi_activated.txt").read_text()
NO_BMC = CommandResult(1, "", (FIX / "ipmi_no_bmc.stderr").read_text())


def bmc(result: CommandResult):
    return lambda argv: result


def rapl_tree(root: Path) -> Path:
    d = root / "intel-rapl:0"
    d.mkdir(parents=True)
    (d / "name").write_text("package-0\n")
    (d / "energy_uj").write_text("0\n")
    (d / "max_energy_range_uj").write_text("262143328850\n")
    return root


def test_auto_order_rapl_then_ipmi_then_estimate(tmp_path):
    ok_bmc = bmc(CommandResult(0, ACTIVATED, ""))
    rapl_root = str(rapl_tree(tmp_path / "powercap"))
    assert choose_meter(sysfs_root=rapl_root, runner=ok_bmc).name == "rapl"
    m = choose_meter(sysfs_root=str(tmp_path / "absent"), runner=ok_bmc)
    assert m.name == "ipmi" and "rapl:" in m.why and "absent" in m.why
    m = choose_meter(sysfs_root=str(tmp_path / "absent"), runner=bmc(NO_BMC))
    assert m.name == "estimate" and "no BMC" in m.why and "not a measurement" in m.why
    log = tmp_path / "log.csv"
    log.write_text("timestamp,watts\n1741961730,100\n")
    assert choose_meter(sysfs_root=rapl_root, runner=ok_bmc, meter_log=str(log)).name == "meter-log"


def test_explicit_source_that_cannot_work_is_one_line_error(tmp_path):
    with pytest.raises(EnergyError) as e:
        choose_meter("rapl", sysfs_root=str(tmp_path / "absent"))
    assert "\n" not in str(e.value) and "rapl" in str(e.value)
    with pytest.raises(EnergyError, match="unknown energy source"):
        choose_meter("wattmeter")
    with pytest.raises(TypeError, match="colour"):
        choose_meter("estimate", colour="blue")
    m = choose_meter("estimate")
    assert m.name == "estimate" and m.why == "estimate requested"


def test_check_reports_every_source(tmp_path):
    statuses = check(sysfs_root=str(tmp_path / "absent"), runner=bmc(NO_BMC))
    by = {s.name: s for s in statuses}
    assert list(by) == ["rapl", "ipmi", "meter-log", "estimate"]
    assert not by["rapl"].ok and "absent" in by["rapl"].detail
    assert not by["ipmi"].ok and by["ipmi"].detail.startswith("ipmitool: no BMC")
    assert not by["meter-log"].ok and by["meter-log"].detail == "meter-log: give --meter-log FILE"
    assert by["estimate"].ok
    rows = energy_check(sysfs_root=str(tmp_path / "absent"), runner=bmc(NO_BMC))
    assert [r["name"] for r in rows if r["auto"]] == ["estimate"]
    rows = energy_check(sysfs_root=str(rapl_tree(tmp_path / "pc")), runner=bmc(NO_BMC))
    assert [r["name"] for r in rows if r["auto"]] == ["rapl"]


def test_idle_baseline_total_and_active_energy_and_ops_per_joule():
    r = EnergyReading(
        source="ipmi", scope="system", energy_j=1000.0, avg_watts=100.0, duration_s=10.0
    )
    assert ops_per_joule(1e6, r) == pytest.approx(1000.0)
    with pytest.raises(EnergyError, match="idle baseline"):
        ops_per_joule(1e6, r, basis="active")
    ri = with_idle(r, 60)
    assert ri.idle_watts == 60 and ri.active_energy_j == pytest.approx(400.0)
    assert ops_per_joule(1e6, ri, basis="active") == pytest.approx(2500.0)
    assert ops_per_joule(1e6, ri, basis="total") == pytest.approx(1000.0)
    with pytest.raises(EnergyError):
        ops_per_joule(1, ri, basis="joules")
    too_high = with_idle(r, 150)
    assert too_high.active_energy_j is None and "exceeds" in too_high.assumptions["active_energy"]
    missing = EnergyReading(
        source="ipmi",
        scope="system",
        energy_j=None,
        avg_watts=None,
        duration_s=10.0,
        missing="no BMC",
    )
    assert ops_per_joule(1e6, missing) is None
    assert ops_per_joule(1e6, with_idle(missing, 50), basis="active") is None
    assert parse_idle_watts("45 W") == 45.0 and parse_idle_watts(" 45.5watts") == 45.5
    with pytest.raises(EnergyError):
        parse_idle_watts("lots")
    with pytest.raises(EnergyError):
        parse_idle_watts(float("nan"))


def test_measure_idle_and_user_given_idle_on_a_meter():
    meter = choose_meter("ipmi", runner=bmc(CommandResult(0, ACTIVATED, "")), interval_s=0.01)
    assert measure_idle(meter, 0.05) == pytest.approx(220.0)
    meter = choose_meter(
        "ipmi", runner=bmc(CommandResult(0, ACTIVATED, "")), interval_s=0.01, idle_watts="200 W"
    )
    meter.start()
    time.sleep(0.05)
    r = meter.stop()
    assert r.idle_watts == 200.0
    assert r.active_energy_j == pytest.approx(20.0 * r.duration_s, rel=1e-6)
    failing = choose_meter("estimate", proc_root="/proc")
    failing.proc_root = "/nonexistent"
    with pytest.raises(EnergyError, match="idle power not measured"):
        measure_idle(failing, 0.01)
    with pytest.raises(EnergyError):
        measure_idle(meter, 0)


def _meters(tmp_path) -> list[EnergyMeter]:
    log = tmp_path / "log.csv"
    now = time.time()
    log.write_text("timestamp,watts\n" + "\n".join(f"{now - 10 + i},100" for i in range(8)))
    return [
        choose_meter("rapl", sysfs_root=str(rapl_tree(tmp_path / "pc")), interval_s=0.01),
        choose_meter("ipmi", runner=bmc(CommandResult(0, ACTIVATED, "")), interval_s=0.01),
        choose_meter("meter-log", meter_log=str(log)),
        choose_meter("estimate", interval_s=0.01),
    ]


def test_every_meter_survives_ctrl_c_and_early_stop(tmp_path):
    for meter in _meters(tmp_path):
        with pytest.raises(KeyboardInterrupt):
            try:
                meter.start()
                raise KeyboardInterrupt
            finally:
                reading = meter.stop()
        assert isinstance(reading, EnergyReading), meter.name
        assert reading.source == meter.name and reading.scope == meter.scope
        assert reading.energy_j is not None or reading.missing, meter.name
        assert meter.stop() is reading
        if meter.name == "meter-log":
            # The log ended 3 s before the run: missing, saying what the log covers.
            assert reading.energy_j is None and reading.missing.startswith("meter log covers")
        else:
            assert reading.energy_j is not None and reading.energy_j >= 0, meter.name
    assert not any(
        t.name == "fsadvisor-energy-sampler" and t.is_alive() for t in threading.enumerate()
    )


def test_ctrl_c_while_starting_still_gives_a_reading():
    calls = []

    def runner(argv):
        calls.append(argv)
        if len(calls) == 2:  # the first call is choose_meter's availability check
            raise KeyboardInterrupt
        return CommandResult(0, ACTIVATED, "")

    meter = choose_meter("ipmi", runner=runner, interval_s=0.01)
    with pytest.raises(KeyboardInterrupt):
        meter.start()
    r = meter.stop()
    assert r.energy_j is None and r.missing == "ipmi meter interrupted while starting"
    assert len(calls) == 2


def test_stop_without_start_and_double_start(tmp_path):
    meter = choose_meter("estimate")
    r = meter.stop()
    assert r.energy_j is None and "never started" in r.missing
    meter.start()
    with pytest.raises(EnergyError, match="already running"):
        meter.start()
    meter.stop()


def test_core_imports_no_front_end():
    import subprocess
    import sys

    code = (
        "import sys, fsadvisor.energy, fsadvisor.service.energy; "
        "print(any(m.split('.')[0] in ('typer', 'textual') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(os.path.isdir("/sys/class/powercap"), reason="this machine has powercap")
def test_cli_energy_check_shows_rapl_unavailable_and_auto_choice():
    import fsadvisor.cli.app as cli

    cli.register_all()
    runner = CliRunner()
    res = runner.invoke(cli.app, ["energy", "check"])
    assert res.exit_code == 0, res.output
    rapl_line = next(ln for ln in res.output.splitlines() if ln.startswith("rapl"))
    assert " no " in rapl_line and "/sys/class/powercap absent" in rapl_line
    assert "meter-log: give --meter-log FILE" in res.output
    assert res.output.strip().splitlines()[-1].startswith("auto would choose: ")
    res = runner.invoke(cli.app, ["energy", "check", "--json"])
    doc = json.loads(res.output)
    rapl = next(s for s in doc["sources"] if s["name"] == "rapl")
    assert rapl["ok"] is False and "absent" in rapl["detail"]
    assert doc["auto"] in ("ipmi", "estimate")
    res = runner.invoke(cli.app, ["energy", "idle", "--source", "rapl", "--seconds", "0.2"])
    assert res.exit_code == 2 and "rapl unusable" in res.output


def test_cli_energy_idle_with_estimate():
    import fsadvisor.cli.app as cli

    cli.register_all()
    res = CliRunner().invoke(
        cli.app, ["energy", "idle", "--source", "estimate", "--seconds", "0.3", "--json"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["source"] == "estimate" and doc["measured"] is False and doc["idle_watts"] >= 40.0
