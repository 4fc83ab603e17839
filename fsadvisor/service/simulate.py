"""Service for what-if simulation: one configuration and workload, one knob varied.

The front ends call :func:`simulate_what_if`; it resolves the inputs the way ``predict``
does (fsadvisor.service.advice), calibrates the simulator once at the workload's own point
and runs one simulation per value of the varied knob. Results are simulated from the fitted
model, never measurements.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from fsadvisor import catalog, limits
from fsadvisor.domain import POWER_SCOPES
from fsadvisor.errors import FsAdvisorError
from fsadvisor.predict import sim
from fsadvisor.service import advice

# For the front ends, which import only the service: the label every simulated figure
# carries and the default service-time spread.
SIM_LABEL = sim.LABEL
DEFAULT_SIGMA = sim.DEFAULT_SIGMA
DEFAULT_REQUESTS = sim.DEFAULT_REQUESTS

MAX_VARIANTS = 16  # each variant is a full simulation, about 0.1 s per 10,000 requests


def _knob(name: str) -> str:
    name = name.strip()
    if name not in sim.OVERRIDE_KEYS:
        raise FsAdvisorError(
            f"unknown what-if knob {name!r}; use one of {', '.join(sim.OVERRIDE_KEYS)}"
        )
    return name


def _value(knob: str, text: str) -> Any:
    text = text.strip()
    if not text:
        raise FsAdvisorError(f"empty value for {knob}")
    if knob in ("plp", "bs"):
        return text
    try:
        return float(text) if knob == "pause_ms" else int(text)
    except ValueError:
        raise FsAdvisorError(f"{knob} needs a number, not {text!r}") from None


def parse_vary(text: str) -> tuple[str, list[Any]]:
    """``"numjobs=1,4,8"`` -> ("numjobs", [1, 4, 8])."""
    name, sep, values = str(text).partition("=")
    if not sep:
        raise FsAdvisorError(f"--vary needs KNOB=V1,V2,... (e.g. numjobs=1,4,16), not {text!r}")
    knob = _knob(name)
    vals = [_value(knob, v) for v in values.split(",")]
    if len(vals) > MAX_VARIANTS:
        raise FsAdvisorError(f"at most {MAX_VARIANTS} values per --vary, not {len(vals)}")
    return knob, vals


def parse_settings(items: Iterable[str] | Mapping[str, Any] | None) -> dict[str, Any]:
    """Fixed what-if knobs: ``["iodepth=4", "plp=yes"]`` or a mapping."""
    if items is None:
        return {}
    if isinstance(items, Mapping):
        return {_knob(k): v for k, v in items.items()}
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = str(item).partition("=")
        if not sep:
            raise FsAdvisorError(f"--set needs KNOB=VALUE (e.g. iodepth=4), not {item!r}")
        knob = _knob(name)
        out[knob] = _value(knob, value)
    return out


def simulate_what_if(
    config: Any,
    workload: Any = None,
    profile: str | None = None,
    device: Any = None,
    vary: str | None = None,
    seed: int = 0,
    requests: int = sim.DEFAULT_REQUESTS,
    db: str | None = None,
    scope: str = "system",
    fixed: Iterable[str] | Mapping[str, Any] | None = None,
    sigma: float | None = None,
) -> list[sim.SimResult]:
    """One :class:`fsadvisor.predict.sim.SimResult` per value of ``vary`` (one result without it),
    all calibrated at the workload's own point; ``fixed`` knobs apply to every variant.
    The device's parameters are the ones ``predict`` uses (its calibration in the store, a
    library drive's datasheet, else its kind's prior). ``sigma`` None: the spread of service
    times that gives the model's own p99/mean at the workload's point."""

    if scope not in POWER_SCOPES:
        raise FsAdvisorError(f"power scope must be one of {', '.join(POWER_SCOPES)}, not {scope!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise FsAdvisorError(f"seed must be a non-negative whole number, not {seed!r}")
    for name, value in (("seed", seed), ("requests", requests), ("sigma", sigma)):
        if value is not None:
            limits.check(name, value)
    base = parse_settings(fixed)
    variants: list[dict[str, Any]] = [dict(base)]
    if vary:
        knob, values = parse_vary(vary)
        variants = [{**base, knob: v} for v in values]
    cfg = advice.config_for(config)
    w = advice.workload_for(workload, profile)
    dev = advice.resolve_device(
        device if isinstance(device, str) or device is None else json.dumps(device)
    )
    catalog.validate(cfg, dev.size_bytes)
    for v in variants:  # reject a bad variant before spending time on the pilot run
        sim.check_variant(w, dev, v, requests)
    model = advice.get_model(db)
    params = advice.device_params_of(dev, db)
    cal = sim.calibrate(model, cfg, w, dev, scope, seed, requests, sigma, params)
    return [
        sim.simulate(
            model,
            cfg,
            w,
            dev,
            scope,
            seed,
            requests,
            overrides=v,
            calibration=cal,
            device_params=params,
        )
        for v in variants
    ]
