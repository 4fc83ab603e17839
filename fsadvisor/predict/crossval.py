"""Cross-validation by source table or row, and the empirical-Bayes choice of the prior width."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from fsadvisor.predict.fit import obs_rows, fit, measured_here, source_group
from fsadvisor.predict.settings import PRIOR_SCALES, ModelSettings

if TYPE_CHECKING:  # records.py: not built by a recommend from a cached fit
    from fsadvisor.records import Observation


def cross_validate(
    observations: Sequence[Observation],
    folds: int = 5,
    seed: int = 0,
    settings: ModelSettings | None = None,
    group_by: str = "source",
) -> dict[str, Any]:
    """k-fold cross-validation. ``group_by="source"`` holds out whole source tables at once,
    so a fold tests transfer to data from a study the model has not seen; ``"row"`` holds out
    random rows, testing interpolation within studies it has seen. Reports the held-out error
    of every equation (absolute levels and relative effects) against a prior-only model."""
    s = settings or ModelSettings.load()
    if group_by not in ("source", "row"):
        raise ValueError(f"group_by must be 'source' or 'row', not {group_by!r}")
    key = source_group if group_by == "source" else (lambda src: src)
    groups = sorted({key(o.source) for o in observations})
    rng = np.random.default_rng(seed)
    order = list(rng.permutation(len(groups)))
    k = max(2, min(folds, len(groups)))
    fold_of = {groups[j]: pos % k for pos, j in enumerate(order)}
    group = {o.source: key(o.source) for o in observations}
    errs: list[float] = []
    base_errs: list[float] = []
    per_metric: dict[str, list[float]] = {}
    for f in range(k):
        train = [o for o in observations if fold_of[group[o.source]] != f]
        test = [o for o in observations if fold_of[group[o.source]] == f]
        if not train or not test:
            continue
        m = fit(train, s)
        prior_only = fit([], s)
        for o in test:
            for r in obs_rows(o, s, m.device_params):
                if r.bound:
                    continue  # a bound is not a point value to score against
                pred, _ = m._mean_var(r.a)
                pred0, _ = prior_only._mean_var(r.a)
                e = abs(pred - r.b)
                errs.append(e)
                base_errs.append(abs(pred0 - r.b))
                per_metric.setdefault(o.metric, []).append(e)

    def summary(e: Iterable[float]) -> dict[str, float]:
        a = np.asarray(list(e))
        if not a.size:
            return {"n": 0}
        return {
            "n": int(a.size),
            "median_abs_log_error": float(np.median(a)),
            "median_factor": float(math.exp(np.median(a))),
            "p90_factor": float(math.exp(np.quantile(a, 0.9))),
        }

    return {
        "folds": k,
        "grouped_by": "source table" if group_by == "source" else "row",
        "prior_scale": s.prior_scale,
        "model": summary(errs),
        "prior_only": summary(base_errs),
        "per_metric": {m: summary(v) for m, v in sorted(per_metric.items())},
    }


def choose_prior_scale(
    observations: Sequence[Observation], folds: int = 5, settings: ModelSettings | None = None
) -> tuple[float, list[dict]]:
    """Empirical Bayes by cross-validation: the width of the configuration-effect priors that
    predicts held-out source tables best. Wide priors trust each study's effects; narrow ones
    say "effects seen in one study do not carry over"; the data choose."""
    base = settings or ModelSettings.load()
    table = []
    for scale in PRIOR_SCALES:
        rep = cross_validate(observations, folds=folds, settings=base.scaled(scale))
        table.append({"prior_scale": scale, **rep["model"]})
    best = min(
        (r for r in table if r.get("n")),
        key=lambda r: r["median_abs_log_error"],
        default={"prior_scale": 1.0},
    )
    return float(best["prior_scale"]), table


DEVICE_SDS = (0.05, 0.1, 0.2, 0.4)


def choose_device_sd(
    observations: Sequence[Observation],
    settings: ModelSettings,
    candidates: Sequence[float] = DEVICE_SDS,
) -> tuple[float | None, list[dict]]:
    """Empirical Bayes for how much one device's findings carry to another: the prior sd of a
    measured device's own deviations (priors.toml "d:") that predicts each measured device
    best from its raw runs and the other devices (leave-one-device-out, median |IOPS error|
    over devices). (None, []) unless two or more devices measured here are in the store."""
    # (validate builds Observation records: a warm `recommend` never needs them,
    # tests/unit/test_startup_imports.py)
    from fsadvisor.predict import validate

    here = {o.device_id for o in observations if measured_here(o)}
    devices = [d for d in validate.eligible_devices(observations) if d in here]
    if len(devices) < 2:
        return None, []
    table = []
    for sd in candidates:
        s = settings.with_device_sd(sd)
        errs = [
            r["iops"]["median_abs_error"]
            for r in validate.leave_devices_out(observations, devices, s, shares=(0.0,))
            if r.get("iops", {}).get("n")
        ]
        if errs:
            table.append(
                {
                    "device_sd": sd,
                    "median_abs_iops_error": float(np.median(errs)),
                    "devices": len(errs),
                }
            )
    if not table:
        return None, []
    best = min(table, key=lambda r: r["median_abs_iops_error"])
    return float(best["device_sd"]), table
