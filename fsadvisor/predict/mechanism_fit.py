"""The shipped mechanism fit (models/mechanisms_fit.json): the mechanisms' coefficients fitted
on the shipped data, with their priors and what they were fitted on.

    python -m fsadvisor.predict.mechanism_fit [OUT]

A layer above the fit (predict/__init__.py): the mechanisms themselves (predict/mechanisms.py)
are below the features and know nothing of fitting. tests/unit/test_device_model.py holds the
shipped file to the current fit."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsadvisor.predict import mechanisms
from fsadvisor.predict.fit import FittedModel, fit
from fsadvisor.predict.settings import ModelSettings
from fsadvisor.infra.resources import data_dir
from fsadvisor.store import reference
from fsadvisor.store.datasets import load_observations

if TYPE_CHECKING:
    from fsadvisor.records import Observation


def shipped_observations() -> list[Observation]:
    """What the shipped model is fitted on: the seeds' tables (their bounds included) and
    every shipped reference matrix."""
    return load_observations(include=("upper-bound", "lower-bound")) + reference.load_observations()


def fit_shipped() -> FittedModel:
    """The model fitted on the shipped data alone, with the shipped calibration."""
    return fit(shipped_observations(), ModelSettings.load(use_store_calibration=False))


def fit_report(model, observations_used: int | None = None) -> dict[str, Any]:
    """The fitted mechanism parameters with their priors, what they were fitted on, and how
    much one device's own findings reach another device (the shared share of the pooling)."""
    params = {}
    for name in sorted(n for n in model.index if n.startswith("m:")):
        mean, sd = model.coef(name)
        pm, psd = mechanisms.prior(name) or (0.0, 0.0)
        why = next(
            (
                mechanisms.PRIORS[p][2]
                for p in sorted(mechanisms.PRIORS, key=len, reverse=True)
                if name.startswith(p)
            ),
            "",
        )
        params[name] = {
            "mean": round(mean, 4),
            "sd": round(sd, 4),
            "prior_mean": pm,
            "prior_sd": psd,
            "prior_source": why,
            "data": model.sources.get(name, []),
        }
    s = model.settings
    tau = s.prior("d:x")[1]
    pooling = {}
    for prefix in ("fs:", "opt:", "ag:"):
        sigma = s.prior(prefix + "x")[1]
        pooling[prefix] = {
            "shared_prior_sd": sigma,
            "device_prior_sd": tau,
            "share_one_device_moves_others": round(sigma**2 / (sigma**2 + tau**2), 4),
        }
    return {
        "how": (
            "Bayesian linear model on log scale (fsadvisor/predict/fit.py); each mechanism "
            "a feature computed from the device's own parameters with one shared "
            "coefficient (prior in fsadvisor/predict/mechanisms.py)"
        ),
        "fitted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "fitted_on": {
            "data_hash": model.data_hash,
            "observations": observations_used or model.n_observations,
            "equations": model.n_rows,
            "devices_with_own_terms": sorted(
                n[len("k:dev:") :] for n in model.index if n.startswith("k:dev:")
            ),
        },
        "prior_scale": s.prior_scale,
        "parameters": params,
        "pooling": pooling,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m fsadvisor.predict.mechanism_fit [OUT]``: fit on the shipped data (seeds and,
    when shipped, the reference matrix) and write the mechanism fit (default
    models/mechanisms_fit.json)."""
    args = sys.argv[1:] if argv is None else argv
    out = args[0] if args else str(data_dir("models") / "mechanisms_fit.json")
    obs = shipped_observations()
    model = fit(obs, ModelSettings.load(use_store_calibration=False))
    Path(out).write_text(json.dumps(fit_report(model, len(obs)), indent=1, sort_keys=True) + "\n")
    print(
        f"wrote {out}: {sum(1 for n in model.index if n.startswith('m:'))} mechanism "
        f"parameters from {len(obs)} observations"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
