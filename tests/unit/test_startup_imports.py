"""`recommend` starts fast: with the fit cache warm it neither imports sqlite-utils (the
store's writer) nor textual, nor the standard-library modules it has no use for on that path
(each costs milliseconds of start-up). Measured with a fresh interpreter, as a user runs
it."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
sys.argv = ["fsadvisor", "recommend", "--profile", "oltp"]
from fsadvisor.cli.app import main
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
print("AVOIDABLE", sorted(set(sys.modules) & {
    "platformdirs", "statistics", "decimal", "zipfile",
    "fsadvisor.catalog.devicelib", "fsadvisor.tools.benchmark", "fsadvisor.store.export",
    "fsadvisor.host.device", "fsadvisor.service.worth", "fsadvisor.records",
    "fsadvisor.probe.plan", "fsadvisor.service.calibration", "fsadvisor.predict.device_fit",
    "fsadvisor.catalog.artifacts"}))
print("LOADED", sorted({m.split(".")[0] for m in sys.modules} & {"sqlite_utils", "textual"}))
"""


def test_warm_recommend_imports_neither_sqlite_utils_nor_textual(tmp_path, monkeypatch):
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "fsadvisor.db"))
    first = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr  # seeds the store and fills the fit cache
    warm = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.splitlines()[-1] == "LOADED []"


def test_warm_recommend_leaves_out_what_it_does_not_use(tmp_path, monkeypatch):
    # (hashlib and secrets come with numpy.random, whose generator draws P(best)'s samples;)
    # platformdirs (~3.5 ms; fsadvisor/infra/xdg.py), statistics with
    # decimal (~1.5 ms), zipfile (~1.6 ms; the fit cache is one .npy), the device library,
    # the benchmark adapters, the exporter, the device inspection (host/device.py: a spec
    # device is parsed by host/spec.py), the yearly cost (no --load) and the records of
    # measurements (fsadvisor/records.py, ~1.5 ms of dataclasses), the probe's planning (the
    # tie note times its cells by probe/timing.py), the calibration's running and the
    # fitting of device parameters (service/device_figures.py looks them up), and apply's
    # file builder (the udev rule recommend prints is catalog/udev.py's): none is needed.
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "fsadvisor.db"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    warm = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.splitlines()[-2] == "AVOIDABLE []", warm.stdout.splitlines()[-2]
