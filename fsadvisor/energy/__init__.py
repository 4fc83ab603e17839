"""Energy meters behind one interface; every reading says where it came from.

    meter = choose_meter("auto", device="/dev/nvme0n1")   # meter.why: why this source
    meter.start(); run_workload(); reading = meter.stop()  # an EnergyReading, never a crash

Sources (domain notes §3): ``rapl`` (powercap counters, scope cpu+dram), ``ipmi`` (BMC DCMI,
whole system), ``meter-log`` (an external meter's CSV, whole system or a drive rail) and
``estimate`` (a model, scope system, source "estimate", never a measurement). None of them
meters the SSD alone.
"""

from fsadvisor.energy.estimate import EstimateMeter
from fsadvisor.energy.idle import measure_idle, ops_per_joule, parse_idle_watts, with_idle
from fsadvisor.energy.ipmi import IpmiMeter
from fsadvisor.energy.meter import EnergyMeter, SourceStatus
from fsadvisor.energy.meterlog import MeterLogMeter, integrate_log, parse_log, reading_for_window
from fsadvisor.energy.rapl import RaplMeter
from fsadvisor.energy.sources import auto_choice, check, choose_meter

__all__ = [
    "EnergyMeter",
    "SourceStatus",
    "choose_meter",
    "check",
    "auto_choice",
    "measure_idle",
    "with_idle",
    "ops_per_joule",
    "parse_idle_watts",
    "RaplMeter",
    "IpmiMeter",
    "MeterLogMeter",
    "EstimateMeter",
    "parse_log",
    "integrate_log",
    "reading_for_window",
]
