"""Service functions for the offline path: profiles, recommend, predict, calibrate, validate.

Both front ends call these; they return domain objects or plain dicts and raise
FsAdvisorError subclasses. The model is refitted from the store's observations whenever they
change (a fit takes milliseconds) and cached per process by a hash of the observations.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from fsadvisor import catalog
from fsadvisor.domain import POWER_SCOPES, Device, Profile
from fsadvisor.errors import ConfigError, FsAdvisorError, ProfileError
from fsadvisor.model import FittedModel, cross_validate, fit, observations_hash, predict
from fsadvisor.recommend import Recommendation, rank

DEFAULT_DEVICE_SPEC = "nvme:1T"
_cache: dict[str, FittedModel] = {}


# --------------------------------------------------------------------------- profiles

def list_profiles() -> list[Profile]:
    from fsadvisor.profile import list_presets
    return list_presets()


def get_profile(name_or_path: str) -> Profile:
    from fsadvisor.profile import load_profile
    return load_profile(name_or_path)


# --------------------------------------------------------------------------- model

def _observations(db: str | None):
    from fsadvisor.store import open_store
    store = open_store(db)
    store.ensure_seeded()
    return store.observations()


def get_model(db: str | None = None) -> FittedModel:
    obs = _observations(db)
    h = observations_hash(obs)
    if h not in _cache:
        _cache.clear()
        _cache[h] = fit(obs)
    return _cache[h]


def resolve_device(spec: str | None, plp: str | None = None) -> Device:
    """A device path (inspected read-only) or a spec like ``nvme:1.92T``; default 1 TB NVMe."""
    from fsadvisor.device import device_from_spec
    dev = device_from_spec(spec or DEFAULT_DEVICE_SPEC)
    if plp:
        if plp not in ("yes", "no", "unknown"):
            raise FsAdvisorError(f"--plp must be yes, no or unknown, not {plp!r}")
        from dataclasses import replace
        dev = replace(dev, plp=plp)
    return dev


def _check_scope(scope: str) -> None:
    if scope not in POWER_SCOPES:
        raise FsAdvisorError(f"power scope must be one of {', '.join(POWER_SCOPES)}, not {scope!r}")


def recommend(profile: str, device: str | None = None, top: int = 5, db: str | None = None,
              scope: str = "system", energy_basis: str = "total",
              plp: str | None = None) -> Recommendation:
    if top < 1:
        raise FsAdvisorError("--top must be at least 1")
    _check_scope(scope)
    prof = get_profile(profile)
    dev = resolve_device(device, plp)
    return rank(get_model(db), prof, dev, top=top, scope=scope, energy_basis=energy_basis)


def _workload_of(workload: Any = None, profile: str | None = None):
    from fsadvisor.profile import workload_from_dict
    if profile is not None and workload is not None:
        raise FsAdvisorError("give either a workload or a profile, not both")
    if profile is not None:
        return get_profile(profile).workload
    if workload is None:
        raise FsAdvisorError("a workload (JSON) or a profile name is required")
    if isinstance(workload, str):
        try:
            workload = json.loads(workload)
        except json.JSONDecodeError as e:
            raise ProfileError(f"workload is not valid JSON: {e.msg} at column {e.colno}")
    if isinstance(workload, str):
        return get_profile(workload).workload
    if not isinstance(workload, dict):
        raise ProfileError("workload must be a JSON object or a profile name")
    return workload_from_dict(workload)


def _config_of(config: Any):
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as e:
            raise ConfigError(f"config is not valid JSON: {e.msg} at column {e.colno}")
    if not isinstance(config, dict):
        raise ConfigError("config must be a JSON object like "
                          '{"filesystem": "xfs", "mount": ["noatime"], "ag_count": 16}')
    return catalog.config_from_dict(config)


def predict_one(config: Any, workload: Any = None, profile: str | None = None,
                device: Any = None, db: str | None = None, scope: str = "system") -> dict:
    _check_scope(scope)
    cfg = _config_of(config)
    w = _workload_of(workload, profile)
    dev = resolve_device(device if isinstance(device, str) or device is None
                         else json.dumps(device))
    catalog.validate(cfg, dev.size_bytes)
    p = predict(get_model(db), cfg, w, dev, scope)
    warnings = [f"{r.option}: {r.reason}" for r in catalog.risks(cfg)]
    if cfg.fs == "f2fs" and not catalog.kernel_supports("f2fs"):
        warnings.append("f2fs: not supported by this machine's kernel; check the target host")
    return {"config": cfg.to_dict(), "workload": w.to_dict(), "device": dev.to_dict(),
            "predicted": p.to_dict(), "uncertainty": dict(p.uncertainty),
            "basis": dict(p.basis), "warnings": warnings}


def predict_batch(lines: Iterable[str], db: str | None = None,
                  scope: str = "system") -> Iterator[dict]:
    """JSON Lines in, one JSON object out per input line; a bad line yields an error object
    naming the line instead of stopping the batch."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise FsAdvisorError("each line must be a JSON object")
            unknown = set(req) - {"device", "config", "workload", "profile", "id"}
            if unknown:
                raise FsAdvisorError(f"unknown key(s) {sorted(unknown)}")
            out = predict_one(req.get("config"), req.get("workload"), req.get("profile"),
                              req.get("device"), db=db, scope=scope)
            if "id" in req:
                out["id"] = req["id"]
            yield out
        except json.JSONDecodeError as e:
            yield {"line": n, "error": f"not JSON: {e.msg}"}
        except FsAdvisorError as e:
            yield {"line": n, "error": str(e)}


def validate(db: str | None = None, folds: int = 5) -> dict[str, Any]:
    obs = _observations(db)
    report = cross_validate(obs, folds=folds)
    report["observations"] = len(obs)
    return report


def calibrate(db: str | None = None, out: str | Path | None = None) -> dict[str, Any]:
    """Fit on everything in the store and write the parameters with how they were fitted."""
    obs = _observations(db)
    t0 = time.perf_counter()
    m = fit(obs)
    took = time.perf_counter() - t0
    doc = {
        "how": "Bayesian linear model on log scale (fsadvisor/model.py): weighted ridge with the "
               "priors of models/priors.toml, noise sd re-estimated from residuals once; "
               "rows from models/devices.toml rooflines plus every store observation",
        "fitted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "data_hash": m.data_hash,
        "observations_used": m.n_observations,
        "equations": m.n_rows,
        "noise_sd_log": m.noise_sd,
        "fit_seconds": took,
        "coefficients": {n: {"mean": float(m.theta[i]), "sd": float(m.cov[i, i] ** 0.5),
                             "data": m.sources.get(n, [])}
                         for n, i in m.index.items()},
    }
    if out:
        Path(out).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return doc
