"""Which figures a device's predictions rest on: its calibration in the store, else its
library drive's datasheet, else its kind's prior from models/devices.toml; and the one line
of output that says which.

What `recommend` and `predict` read for every device, so it loads neither the calibration's
planning and running (service/calibration.py) nor the fitting (predict/device_fit.py).
"""

from __future__ import annotations

import time
from typing import Any

from fsadvisor.predict.device_params import DeviceParams, prior_params
from fsadvisor.infra.resources import data_dir, read_toml
from fsadvisor.service.devices import library_params_of
from fsadvisor.store import open_store


def devices_table() -> dict[str, dict[str, float]]:
    """models/devices.toml: the per-kind priors."""

    return read_toml(data_dir("models") / "devices.toml")


def device_params_for(device: Any, db: str | None = None) -> DeviceParams:
    """What predict/recommend key a device on: its calibration in the store (by
    Device.identity) when there is one, else its kind's prior from models/devices.toml —
    for a kind with no figures, the nvme class, and ``source`` says so."""
    table = devices_table()
    if device.path:
        with open_store(db) as store:
            found = store.device_params(device.identity)
        if found is not None:
            return found
    # A drive named from the device library (--device samsung-990-pro-2tb): its datasheet
    # figures are the prior, wide because datasheets quote best cases.

    lib = library_params_of(device)
    if lib is not None:
        return lib
    return prior_params(device.kind, table, device_id=device.identity)


def describe(p: DeviceParams) -> str:
    """One line for the output: calibrated (runs, date) or the prior's class."""
    if p.measured:
        at, listed = p.details.get("fitted_at"), p.details.get("measured")
        when = (
            time.strftime("%Y-%m-%d", time.gmtime(float(at)))
            if isinstance(at, (int, float, str)) and at
            else "unknown date"
        )
        n = len(listed) if isinstance(listed, (list, tuple, set)) else 0
        return (
            f"calibrated on this device, {p.n_runs} runs, {when} "
            f"({n} of {len(p.values)} parameters measured)"
        )
    if p.source.startswith("datasheet"):
        return f"{p.source}; not calibrated"
    if "no figures for device kind" in p.source:
        return (
            f"prior for kind nvme (device kind {p.kind!r} has no figures of its own: "
            "falls back to the nvme class of models/devices.toml; not calibrated)"
        )
    return f"prior for kind {p.kind} ({p.source.removeprefix('prior: ')}; not calibrated)"
