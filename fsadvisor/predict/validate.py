"""Leave-one-device-out validation: the question a user with a new drive asks.

Fit on everything except device D, give the fit only D's raw-device (calibration) runs, and
predict every filesystem cell measured on D. Optionally a share k of D's filesystem cells is
added to the fit too ("after a short probe"); the figures are then over the *other* cells only.
No figure comes from data the fit saw. Pure functions over observations, so
``fsadvisor validate`` and benchmark scripts share them.

Figures, per metric (IOPS; ops/J where D's cells have energy):
- median and p90 of |predicted / measured - 1| over D's held-out cells;
- separable pairs: two cells of one workload whose means differ by more than 3 pooled
  standard errors (sqrt(sd_a^2/n_a + sd_b^2/n_b)); the share the prediction orders right;
- regret per workload: 1 - measured(predicted winner) / measured(measured winner).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from fsadvisor.domain import Device, FsConfig, Plp, Workload
from fsadvisor.records import Observation
from fsadvisor.predict.design import difference_sd
from fsadvisor.predict.fit import fit
from fsadvisor.predict.predict import predict_many
from fsadvisor.predict.settings import ModelSettings

METRICS = ("iops", "ops_per_joule")
SEPARABLE_SE = 3.0  # a separable pair: means differ by more than 3 pooled standard errors
# (fitted model, a workload's candidate configurations, the workload, the device) -> the
# answer and the candidates it was chosen from (None: no candidate may be answered)
Pick = Callable[[Any, list[FsConfig], Workload, Device], "tuple[FsConfig, list[FsConfig]] | None"]


@dataclass(frozen=True)
class Cell:
    config: FsConfig
    workload: Workload
    metric: str
    mean: float
    sd: float | None
    n: int

    @property
    def se(self) -> float | None:
        if self.sd is None or self.n < 2:
            return None
        return self.sd / math.sqrt(self.n)


def _is_raw(o: Observation) -> bool:
    return o.config.fs == "raw"


def device_cells(observations: Sequence[Observation], device_id: str) -> list[Cell]:
    """D's absolute filesystem cells of the validated metrics (raw-device runs excluded)."""
    out = []
    for o in observations:
        if (
            o.device_id == device_id
            and not _is_raw(o)
            and o.relative_to is None
            and o.metric in METRICS
            and o.value > 0
        ):
            out.append(Cell(o.config, o.workload, o.metric, o.value, o.sd, max(int(o.n), 1)))
    return out


def eligible_devices(observations: Sequence[Observation], min_cells: int = 4) -> list[str]:
    """Devices with raw-device runs and at least ``min_cells`` filesystem IOPS cells."""
    raw = {o.device_id for o in observations if o.device_id and _is_raw(o)}
    counts: dict[str, int] = {}
    for o in observations:
        if o.device_id in raw and not _is_raw(o) and o.metric == "iops" and o.relative_to is None:
            counts[o.device_id] = counts.get(o.device_id, 0) + 1
    return sorted(d for d, c in counts.items() if c >= min_cells)


def _target_device(observations: Sequence[Observation], device_id: str) -> Device:
    kind = next(o.device_kind for o in observations if o.device_id == device_id)
    plp: Plp = next((o.device_plp for o in observations if o.device_id == device_id), "unknown")
    return Device(path=None, size_bytes=1 << 30, kind=kind, plp=plp, device_id=device_id)


def _cell_key(c: Cell | Observation) -> tuple:
    return (c.config.key(), c.workload)


def _pairs(cells: list[Cell], pred: dict[tuple, float]) -> tuple[int, int]:
    """(separable pairs, of those ordered right by ``pred``) within each workload."""
    by_w: dict[Workload, list[Cell]] = {}
    for c in cells:
        by_w.setdefault(c.workload, []).append(c)
    sep = right = 0
    for group in by_w.values():
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                if a.se is None or b.se is None:
                    continue
                if abs(a.mean - b.mean) <= SEPARABLE_SE * math.hypot(a.se, b.se):
                    continue
                sep += 1
                pa, pb = pred[_cell_key(a)], pred[_cell_key(b)]
                right += (pa - pb) * (a.mean - b.mean) > 0
    return sep, right


def _regret(
    cells: list[Cell],
    pred: dict[tuple, float],
    picks: dict[Workload, tuple[str, set[str]]] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """Per workload, the regret of the predicted best (or of ``picks``: the configuration
    key another rule chose per workload, and the keys it chose from, which are then the
    only cells it is judged against): against the measured best, and against the best cell
    separable from it (the pairs' rule: more than SEPARABLE_SE pooled standard errors
    better; 0 where no cell is). The second is what the matrix can charge the model with: a
    gap within its own repetitions' noise may be the noise."""
    by_w: dict[Workload, list[Cell]] = {}
    for c in cells:
        by_w.setdefault(c.workload, []).append(c)
    out, beyond = {}, {}
    for w, group in by_w.items():
        if picks is not None:
            if w not in picks:
                continue
            key, among = picks[w]
            group = [c for c in group if c.config.key() in among]
        if len(group) < 2:
            continue
        best = max(c.mean for c in group)
        if picks is None:
            chosen = max(group, key=lambda c: pred[_cell_key(c)])
        else:
            chosen = next(c for c in group if c.config.key() == key)
        out[workload_label(w)] = 1.0 - chosen.mean / best
        better = [
            c.mean
            for c in group
            if c.se is not None
            and chosen.se is not None
            and c.mean - chosen.mean > SEPARABLE_SE * math.hypot(c.se, chosen.se)
        ]
        beyond[workload_label(w)] = 1.0 - chosen.mean / max(better) if better else 0.0
    return out, beyond


def workload_label(w: Workload) -> str:
    parts = [
        w.rw,
        f"{w.bs_bytes // 1024}k" if w.bs_bytes >= 1024 else f"{w.bs_bytes}b",
        f"qd{w.iodepth}x{w.numjobs}",
    ]
    if w.fsync_every:
        parts.append(f"fsync{w.fsync_every}")
    if w.metadata_frac:
        parts.append(f"meta{w.create_frac:g}/{w.stat_frac:g}/{w.delete_frac:g}")
    if not w.direct:
        parts.append("buffered")
    return " ".join(parts)


def _summary(errs: list[float]) -> dict[str, Any]:
    if not errs:
        return {"n": 0}
    a = np.abs(np.asarray(errs))
    return {
        "n": int(a.size),
        "median_abs_error": float(np.median(a)),
        "p90_abs_error": float(np.quantile(a, 0.9)),
    }


def _split(
    observations: Sequence[Observation], device_id: str, share: float, seed: int
) -> tuple[list[Cell], set[tuple], list[Observation]]:
    """D's filesystem cells, the random ``share`` of them given to the fit (by ``seed``),
    and what the fit trains on: everything but D's other filesystem cells (its raw runs
    stay)."""
    cells_all = device_cells(observations, device_id)
    keys = sorted({_cell_key(c) for c in cells_all}, key=repr)
    rng = np.random.default_rng(seed)
    n_in = int(round(share * len(keys)))
    given = {keys[i] for i in rng.permutation(len(keys))[:n_in]} if n_in else set()
    train = [
        o for o in observations if o.device_id != device_id or _is_raw(o) or _cell_key(o) in given
    ]
    return cells_all, given, train


def leave_one_device_out(
    observations: Sequence[Observation],
    device_id: str,
    settings: ModelSettings | None = None,
    share: float = 0.0,
    seed: int = 0,
    device_params: dict | None = None,
    pick: Pick | None = None,
) -> dict[str, Any]:
    """Fit without D's filesystem cells (but with its raw runs and a random ``share`` of its
    filesystem cells), then score the predictions of D's remaining filesystem cells.

    ``pick``: the rule that names the answer among a workload's configurations, given or
    held out (the ranking's #1, with its tie rule: predict/rank.py sits above this module,
    so the caller passes it in); its regret in ops/J (what the ranking ranks by) is
    reported beside the predicted best's, as ``ops_per_joule.recommended``."""
    s = settings or ModelSettings.load()
    cells_all, given, train = _split(observations, device_id, share, seed)
    held = [c for c in cells_all if _cell_key(c) not in given]
    model = fit(train, s, device_params)
    device = _target_device(observations, device_id)
    pred: dict[str, dict[tuple, float]] = {m: {} for m in METRICS}
    by_w: dict[Workload, list[FsConfig]] = {}
    for c in held:
        by_w.setdefault(c.workload, [])
        if c.config not in by_w[c.workload]:
            by_w[c.workload].append(c.config)
    for w, cfgs in by_w.items():
        for cfg, p in zip(cfgs, predict_many(model, cfgs, w, device)):
            pred["iops"][(cfg.key(), w)] = p.iops
            pred["ops_per_joule"][(cfg.key(), w)] = p.ops_per_joule
    # The answer is chosen among every configuration the device has an ops/J cell of for the
    # workload (what it is judged in), given or held out, as a sysadmin's ranking after
    # measuring some of them would be, and judged against all of them.
    answered = [c for c in cells_all if c.metric == "ops_per_joule"]
    picks: dict[Workload, tuple[str, set[str]]] | None = None
    if pick is not None:
        picks = {}
        for w in by_w:
            cfgs = list(dict.fromkeys(c.config for c in answered if c.workload == w))
            answer = pick(model, cfgs, w, device) if len(cfgs) > 1 else None
            if answer is not None:
                picks[w] = (answer[0].key(), {c.key() for c in answer[1]})
    report: dict[str, Any] = {
        "device": device_id,
        "share_of_cells_given": share,
        "cells_given": len(given),
        "cells_held_out": len({_cell_key(c) for c in held}),
        "device_params": model.params_for(device).source,
    }
    for m in METRICS:
        cells = [c for c in held if c.metric == m]
        if not cells:
            continue
        errs = [pred[m][_cell_key(c)] / c.mean - 1.0 for c in cells]
        sep, right = _pairs(cells, pred[m])
        regrets, beyond = _regret(cells, pred[m])
        spread = [c.sd / c.mean for c in cells if c.sd is not None and c.mean]
        report[m] = {
            **_summary(errs),
            # per held-out cell ("<config key> | <workload>"): what a comparison
            # of two fits on the same cells needs (benchmarks/fidelity.py)
            "abs_error_by_cell": {
                f"{c.config.key()} | {c.workload.key()}": abs(e) for c, e in zip(cells, errs)
            },
            "separable_pairs": sep,
            "ordered_right": (right / sep) if sep else None,
            "regret_by_workload": regrets,
            "max_regret": max(regrets.values()) if regrets else None,
            "max_regret_beyond_noise": max(beyond.values()) if beyond else None,
            "rep_to_rep_cv_median": float(np.median(spread)) if spread else None,
        }
        if picks is not None and m == "ops_per_joule":  # what the ranking ranks by
            r_regrets, r_beyond = _regret(answered, pred[m], picks)
            report[m]["recommended"] = {
                "regret_by_workload": r_regrets,
                "max_regret": max(r_regrets.values()) if r_regrets else None,
                "max_regret_beyond_noise": max(r_beyond.values()) if r_beyond else None,
            }
    return report


def uncertainty_check(
    observations: Sequence[Observation],
    device_id: str,
    settings: ModelSettings | None = None,
    share: float = 0.0,
    seed: int = 0,
    device_params: dict | None = None,
) -> dict[str, Any]:
    """Whether the model's sd of a difference is borne out on a device it has not seen
    (fitted as leave_one_device_out fits it). For every pair of configurations measured with
    the same workload, at least one of them held out: z = (measured log ratio - predicted log
    ratio) / sqrt(the model's sd of that difference^2 + the two cells' own sampling
    variance). Calibrated, the rms of z is 1 and 68% / 95% of |z| are below 1 / 2. The tie
    rule reads this sd (a lead within 1 sd is a tie): too wide, and candidates far apart are
    "equal", so the answer falls to a measured or simpler one; too narrow, and a lead the
    data does not support is confident. In ops/J where the device has it, else IOPS."""
    s = settings or ModelSettings.load()
    cells_all, given, train = _split(observations, device_id, share, seed)
    metric = "ops_per_joule" if any(c.metric == "ops_per_joule" for c in cells_all) else "iops"
    model = fit(train, s, device_params)
    device = _target_device(observations, device_id)
    by_w: dict[Workload, list[Cell]] = {}
    for c in cells_all:
        if c.metric == metric:
            by_w.setdefault(c.workload, []).append(c)
    rows: list[dict[str, Any]] = []
    for w, group in by_w.items():
        if len(group) < 2:
            continue
        design: dict = {}
        preds = predict_many(model, [c.config for c in group], w, device, design_out=design)
        value = [p.ops_per_joule if metric == "ops_per_joule" else p.iops for p in preds]
        for i, a in enumerate(group):
            for j in range(i + 1, len(group)):
                b = group[j]
                if _cell_key(a) in given and _cell_key(b) in given:
                    continue
                error = math.log(a.mean / b.mean) - math.log(value[i] / value[j])
                sd = difference_sd(design, i, j)
                noise = math.hypot((a.se or 0.0) / a.mean, (b.se or 0.0) / b.mean)
                total = math.hypot(sd, noise)
                rows.append(
                    {
                        "workload": workload_label(w),
                        "pair": (a.config.key(), b.config.key()),
                        "error": error,
                        "sd": sd,
                        "z": error / total if total > 0 else 0.0,
                    }
                )
    z = np.array([float(r["z"]) for r in rows])
    errors = np.array([float(r["error"]) for r in rows])
    return {
        "device": device_id,
        "share_of_cells_given": share,
        "metric": metric,
        "pairs": len(rows),
        "median_abs_error": float(np.median(np.abs(errors))) if rows else None,
        "median_sd": float(np.median([float(r["sd"]) for r in rows])) if rows else None,
        "rms_z": float(np.sqrt(np.mean(z**2))) if rows else None,
        "within_1sd": float(np.mean(np.abs(z) < 1)) if rows else None,
        "within_2sd": float(np.mean(np.abs(z) < 2)) if rows else None,
        # pairs the model calls certain (sd of the difference < 1%: an option whose
        # mechanism does not act on the workload, so its effect is exactly zero) and what
        # was measured of them
        "certain_pairs": len(sure := [abs(float(r["error"])) for r in rows if r["sd"] < 0.01]),
        "certain_median_abs_error": float(np.median(sure)) if sure else None,
        "worst": sorted(rows, key=lambda r: -abs(float(r["z"])))[:5],
    }


def leave_devices_out(
    observations: Sequence[Observation],
    devices: Sequence[str] | None = None,
    settings: ModelSettings | None = None,
    shares: Sequence[float] = (0.0, 0.1, 0.2),
    seed: int = 0,
    device_params: dict | None = None,
    pick: Pick | None = None,
) -> list[dict[str, Any]]:
    out = []
    for d in devices if devices is not None else eligible_devices(observations):
        for k in shares:
            out.append(
                leave_one_device_out(observations, d, settings, k, seed, device_params, pick)
            )
    return out


def with_identity(device: Device, device_id: str) -> Device:
    return replace(device, device_id=device_id)
