"""IPMI DCMI meter from recorded ipmitool outputs (this machine has no BMC)."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from fsadvisor.energy import choose_meter
from fsadvisor.energy.ipmi import IpmiMeter, explain_failure, parse_dcmi
from fsadvisor.energy.meter import CommandResult, integrate_power, run_command
from fsadvisor.errors import EnergyError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "energy"
ACTIVATED = (FIX / "ipmi_activated.txt").read_text()
DEACTIVATED = (FIX / "ipmi_deactivated.txt").read_text()
NO_BMC = (FIX / "ipmi_no_bmc.stderr").read_text()
UNSUPPORTED = (FIX / "ipmi_dcmi_unsupported.txt").read_text()


def replay(*outputs: CommandResult, cycle: bool = True):
    seq = itertools.cycle(outputs) if cycle else iter(outputs)
    calls = []

    def runner(argv):
        calls.append(argv)
        return next(seq)

    runner.calls = calls
    return runner


def ok(text: str) -> CommandResult:
    return CommandResult(0, text, "")


def watts(w: float) -> CommandResult:
    return ok(ACTIVATED.replace("220 Watts", f"{w:g} Watts", 1))


def test_parse_recorded_outputs():
    assert parse_dcmi(ACTIVATED).watts == 220 and parse_dcmi(ACTIVATED).active
    d = parse_dcmi(DEACTIVATED)
    assert d.watts == 999 and not d.active
    assert parse_dcmi(UNSUPPORTED).watts is None


@given(st.text(max_size=400))
def test_parse_never_raises(text):
    r = parse_dcmi(text)
    assert r.watts is None or r.watts >= 0


def test_constant_power_integrates_exactly():
    runner = replay(ok(ACTIVATED))
    meter = IpmiMeter(runner=runner, interval_s=0.01)
    meter.start()
    threading.Event().wait(0.1)
    r = meter.stop()
    assert r.source == "ipmi" and r.scope == "system" and r.measured
    assert r.energy_j == pytest.approx(220 * r.duration_s, rel=1e-9)
    assert r.samples >= 3
    assert runner.calls[0] == ["ipmitool", "dcmi", "power", "reading"]


def test_deactivated_readings_are_discarded():
    meter = IpmiMeter(runner=replay(watts(200), ok(DEACTIVATED)), interval_s=0.01)
    meter.start()
    threading.Event().wait(0.1)
    r = meter.stop()
    # 999 W deactivated values never enter the integral.
    assert r.energy_j == pytest.approx(200 * r.duration_s, rel=1e-9)
    assert r.assumptions["discarded_deactivated"] >= 1


def test_always_deactivated_is_missing_with_reason():
    meter = IpmiMeter(runner=replay(ok(DEACTIVATED)), interval_s=0.01)
    assert meter.unavailable() == "ipmitool: DCMI power reading deactivated"
    meter.start()
    r = meter.stop()
    assert r.energy_j is None and "deactivated" in r.missing


def test_no_bmc_missing_binary_and_unsupported_dcmi():
    no_bmc = CommandResult(1, "", NO_BMC)
    assert explain_failure(no_bmc).startswith("ipmitool: no BMC")
    assert IpmiMeter(runner=replay(no_bmc)).unavailable().startswith("ipmitool: no BMC")
    with pytest.raises(EnergyError, match="no BMC"):
        choose_meter("ipmi", runner=replay(no_bmc))
    missing = run_command(["/nonexistent/ipmitool", "dcmi", "power", "reading"])
    assert missing.returncode == 127
    assert explain_failure(missing) == "ipmitool not installed"
    # Some ipmitool versions exit 0 after the DCMI failure message: still no reading.
    assert "does not support DCMI" in IpmiMeter(runner=replay(ok(UNSUPPORTED))).unavailable()
    assert "does not support DCMI" in explain_failure(CommandResult(1, UNSUPPORTED, ""))


def test_bmc_going_silent_mid_run_is_missing():
    # First answer fine, then the BMC fails for longer than max_gap_s.
    t = [0.0]
    clock = lambda: t[0]  # noqa: E731
    results = iter([watts(200), CommandResult(1, "", NO_BMC), CommandResult(1, "", NO_BMC)])
    meter = IpmiMeter(
        runner=lambda argv: next(results), interval_s=1000, max_gap_s=5.0, clock=clock
    )
    meter.start()
    t[0] = 30.0
    r = meter.stop()
    assert r.energy_j is None
    assert "no power reading" in r.missing and "no BMC" in r.missing


def test_integrate_power_linear_and_gaps():
    samples = [(float(t), 100.0 + 10 * t) for t in range(11)]
    e, why = integrate_power(samples, 2.5, 7.5, max_gap_s=2, hold_edges=False)
    assert why is None
    # integral of 100 + 10 t over [2.5, 7.5]
    assert e == pytest.approx(100 * 5 + 5 * (7.5**2 - 2.5**2))
    gappy = [(0.0, 50.0), (1.0, 50.0), (9.0, 50.0), (10.0, 50.0)]
    e, why = integrate_power(gappy, 0.0, 10.0, max_gap_s=5, hold_edges=True)
    assert e is None and "gap of 8.0 s" in why
    e, why = integrate_power([(1.0, 80.0)], 0.0, 2.0, max_gap_s=5, hold_edges=True)
    assert e == pytest.approx(160.0)
    e, why = integrate_power([(1.0, 80.0)], 0.0, 2.0, max_gap_s=5, hold_edges=False)
    assert e is None
