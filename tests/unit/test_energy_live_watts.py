"""The meters' live figure (EnergyMeter.live_watts), which the probe shows about once a
second while a cell runs: the BMC's latest reading, RAPL's energy between its last two
counter readings over their interval; None before there is one, after stop(), and for
sources that have no live figure (estimate)."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest

from fsadvisor.energy.estimate import EstimateMeter
from fsadvisor.energy.ipmi import IpmiMeter
from fsadvisor.energy.meter import CommandResult
from fsadvisor.energy.rapl import RaplMeter

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "energy"
ACTIVATED = (FIX / "ipmi_activated.txt").read_text()


def test_ipmi_live_watts_is_the_latest_reading():
    readings = itertools.chain([180.0, 240.0], itertools.repeat(240.0))
    runner = lambda argv: CommandResult(  # noqa: E731
        0, ACTIVATED.replace("220 Watts", f"{next(readings):g} Watts", 1), ""
    )
    meter = IpmiMeter(runner=runner, interval_s=0.01)
    assert meter.live_watts() is None  # not started
    meter.start()
    threading.Event().wait(0.1)
    assert meter.live_watts() == 240.0
    meter.stop()
    assert meter.live_watts() is None  # the run's figure is the reading now


def test_rapl_live_watts_is_the_last_interval(tmp_path):
    z = tmp_path / "intel-rapl:0"
    z.mkdir()
    (z / "name").write_text("package-0\n")
    (z / "max_energy_range_uj").write_text("262143328850\n")
    (z / "energy_uj").write_text("1000000\n")
    t = {"now": 0.0}
    meter = RaplMeter(root=str(tmp_path), interval_s=1000.0, clock=lambda: t["now"])
    meter.start()  # first reading at t=0
    assert meter.live_watts() is None  # one reading: no interval yet
    (z / "energy_uj").write_text(f"{1_000_000 + 30_000_000}\n")  # +30 J
    t["now"] = 2.0
    meter._sampler._take()  # the sampling thread's next reading, 2 s later
    assert meter.live_watts() == pytest.approx(15.0)
    meter.stop()
    assert meter.live_watts() is None


def test_an_estimate_has_no_live_figure():
    assert EstimateMeter().live_watts() is None
