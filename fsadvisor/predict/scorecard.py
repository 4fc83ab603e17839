"""The model's accuracy as a recorded scorecard, and the gate that keeps it from getting worse.

``fsadvisor validate`` measures the model's held-out error three ways (held-out source tables,
held-out rows, leave-one-device-out with 0/10/20% of the device's cells). The figures that
say whether a change made the model better or worse are recorded in models/scorecard.json
with what they were measured on; tests/unit/test_scorecard.py measures them again and fails
when one is worse than recorded by more than its tolerance. A better figure passes and says
so; `python benchmarks/scorecard.py --write` records it. No output is pinned to its digits:
a model change that makes the advice better is free to move every number.

Tolerances (``TOLERANCE``): the validation is deterministic (fixed folds, no sampling), so a
figure only moves when the model or the data change, or by rounding on another BLAS (far
below these). Each tolerance is the smallest change the figure can show that matters:
- median factors (exp of the median |log error|): 0.01, one percentage point of typical error;
- p90 factors: 0.05, the tail of a few hundred rows moves in steps of that order;
- a held-out device's median |error|: 0.02; the share of separable pairs ordered right: 0.02
  (one pair in fifty); the largest regret over its workloads: 0.02 (two percent of ops/J),
  of the predicted best and of the ranking's answer (its #1 with the tie rule) alike.
"""

from __future__ import annotations

from typing import Any, Iterator

TOLERANCE: dict[str, float] = {
    "median_factor": 0.01,
    "p90_factor": 0.05,
    "median_abs_error": 0.02,
    "ordered_right": 0.02,
    "max_regret": 0.02,
    "recommended_max_regret": 0.02,
}
# Which way is better for each figure.
HIGHER_IS_BETTER = {"ordered_right"}


def figures(validation: dict[str, Any]) -> dict[str, float]:
    """The gated figures of a `validate` result, by a flat name."""
    out: dict[str, float] = {}
    for way in ("by_source_table", "by_row"):
        for who in ("model", "prior_only"):
            block = validation[way][who]
            for k in ("median_factor", "p90_factor"):
                out[f"{way}.{who}.{k}"] = float(block[k])
    for d in validation.get("by_device", []):
        where = f"device[{d['device']}].share{d['share_of_cells_given']:.1f}"
        for metric in ("iops", "ops_per_joule"):
            m = d.get(metric)
            if not m:
                continue
            for k in ("median_abs_error", "ordered_right", "max_regret"):
                if m.get(k) is not None:
                    out[f"{where}.{metric}.{k}"] = float(m[k])
            answer = (m.get("recommended") or {}).get("max_regret")
            if answer is not None:
                out[f"{where}.{metric}.recommended_max_regret"] = float(answer)
    return out


def _kind(name: str) -> str:
    return name.rsplit(".", 1)[1]


def compare(
    current: dict[str, float], recorded: dict[str, float]
) -> Iterator[tuple[str, float, float, str]]:
    """(name, now, recorded, verdict) for every recorded figure of the model (not the
    priors-only baseline, which no model change moves): "worse" beyond its tolerance,
    "better" beyond it, "same" within it, "missing" when it is no longer measured."""
    for name, was in sorted(recorded.items()):
        if ".prior_only." in name:
            continue
        if name not in current:
            yield name, float("nan"), was, "missing"
            continue
        now = current[name]
        kind = _kind(name)
        gain = (now - was) if kind in HIGHER_IS_BETTER else (was - now)
        tol = TOLERANCE[kind]
        verdict = "worse" if gain < -tol else "better" if gain > tol else "same"
        yield name, now, was, verdict
