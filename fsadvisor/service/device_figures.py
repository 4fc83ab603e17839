"""Which figures a device's predictions rest on: its calibration in the store, else its
library drive's datasheet, else its kind's prior from models/devices.toml; and the one line
of output that says which.

What `recommend` and `predict` read for every device, so it loads neither the calibration's
planning and running (service/calibration.py) nor the fitting (predict/device_fit.py) --
except once, to refit a stored calibration that another version's fit made
(current_calibration).
"""

from __future__ import annotations

import time
from typing import Any

# devices_table (models/devices.toml) is read beside the prior it makes; the callers of
# these lookups find it here too.
from fsadvisor.catalog.device_params import (
    DeviceParams,
    calibrated_at,
    devices_table,
    prior_params,
    with_host,
)
from fsadvisor.predict.fit_version import fit_version
from fsadvisor.service.devices import library_params_of
from fsadvisor.store import open_store


def device_params_for(device: Any, db: str | None = None) -> DeviceParams:
    """What predict/recommend key a device on: its calibration in the store (by
    Device.identity) when there is one, else its kind's prior from models/devices.toml —
    for a kind with no figures, the nvme class, and ``source`` says so."""
    return device_params_and_note(device, db)[0]


def device_params_and_note(device: Any, db: str | None = None) -> tuple[DeviceParams, str | None]:
    """device_params_for, and the one line the output owes about its calibration when the
    stored one was made by another version's fit (current_calibration); None otherwise."""
    table = devices_table()
    host = None
    if device.path:
        with open_store(db) as store:
            found, note = current_calibration(store, device.identity, device.path)
            if found is None:
                # a device path is on this host: its CPU figures, if measured, price the
                # filesystem's work instead of the reference machine's
                from fsadvisor.host.cpu import host_id

                host = store.host_figures(host_id())
        if found is not None:
            return found, note
    # A drive named from the device library (--device samsung-990-pro-2tb): its datasheet
    # figures are the prior, wide because datasheets quote best cases.

    lib = library_params_of(device)
    if lib is not None:
        return with_host(lib, host), None
    return with_host(prior_params(device.kind, table, device_id=device.identity), host), None


def current_calibration(
    store: Any, identity: str, name: str | None = None
) -> tuple[DeviceParams | None, str | None]:
    """The calibration stored for ``identity`` as this version's fit leaves it, and the line
    that says what was done to it (None when nothing was). A calibration records the fit
    version that made it (predict/fit_version.py); one made by another version
    whose runs are in the store is refitted from them and stored refitted, once
    (service/calibration.refit_stored); without its runs it keeps its parameters and the
    line says it predates this version. ``name``: the device as the user gave it."""
    stored = store.device_params(identity)
    if stored is None or stored.details.get("fit_version") == fit_version():
        return stored, None  # the common case: no fit loaded, nothing written
    # only a stale calibration loads the fit (start-up of every other `recommend`)
    from fsadvisor.service.calibration import refit_stored

    who = name or identity
    refit, why = refit_stored(store, stored)
    if refit is None:
        return stored, (
            f"calibration of {who} predates this version's fit and {why}: its parameters "
            f"are kept; run `fsadvisor calibrate {who}` to refit them"
        )
    runs = refit.details.get("run_ids")
    n = len(runs) if isinstance(runs, (list, tuple)) else 0
    return refit, (
        f"calibration of {who} refitted from its {n} stored runs with this version's fit"
        + (f" ({why})" if why else "")
    )


def describe(p: DeviceParams) -> str:
    """One line for the output: calibrated (runs, date) or the prior's class."""
    if p.measured:
        # a refit keeps the date the device was measured (service/calibration.refit_stored)
        at = calibrated_at(p.details) or p.details.get("fitted_at")
        listed = p.details.get("measured")
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
        return f"{p.source}; not calibrated" + host_words(p)
    if "no figures for device kind" in p.source:
        return (
            f"prior for kind nvme (device kind {p.kind!r} has no figures of its own: "
            "falls back to the nvme class of models/devices.toml; not calibrated)"
        ) + host_words(p)
    return (
        f"prior for kind {p.kind} ({p.source.removeprefix('prior: ')}; not calibrated)"
        + host_words(p)
    )


def host_words(p: DeviceParams) -> str:
    """What a device's predictions take from its host's stored CPU figures, if anything."""
    host = p.details.get("host")
    if not isinstance(host, dict) or "host_cpu_factor" not in host:
        return ""
    at = host.get("measured_at")
    when = (
        time.strftime("%Y-%m-%d", time.gmtime(float(at))) if isinstance(at, (int, float)) else "?"
    )
    return (
        f"; this host's CPU measured {when}: x{host['host_cpu_factor']:.2f} of the reference "
        f"machine's time per call, {host.get('host_cores', 0):.0f} cores"
    )
