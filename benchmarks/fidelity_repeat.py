"""How well one measured matrix predicts another of the same device class: the ceiling of
fidelity.py's targets on that class.

fidelity.py judges the model on a held-out matrix by its cells' own repetitions: a pair is
"separable" when its means differ by more than 3 pooled standard errors, and a regret is
charged "beyond the noise" against such a cell. Those errors are the matrix's rep-to-rep
noise only. A second matrix of the same class, measured at another time on a fresh device
(a new loop file, another host state), shows what they leave out: treat matrix A's measured
means as a perfect model of A and score them on B with fidelity's own rules (median |IOPS
error|, separable pairs ordered right, worst per-workload regret), then B on A. A model
cannot be expected to beat what the class's own repeat measurement achieves.

    python benchmarks/fidelity_repeat.py [--model] [A.sql.gz|A.db] [B.sql.gz|B.db]

With --model it also fits the model raw-only on each matrix's device as fidelity.py does and
lists the cells where its error has the same sign and more than SYSTEMATIC in both: what the
model gets wrong on this class, as opposed to what one matrix's session happened to show.

Defaults: the two shipped disk-loop matrices. Deterministic (stored runs): load does not
matter.
"""

from __future__ import annotations

import math
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fidelity  # noqa: E402  (the benchmark beside this one: its store restore)

from fsadvisor.predict import validate  # noqa: E402
from fsadvisor.store import open_store  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
DEFAULTS = (DATA / "fidelity-diskloop.sql.gz", DATA / "fidelity-diskloop-2.sql.gz")


SYSTEMATIC = 0.15  # twice the class's rep-to-rep cv (5.6-7.5%)


def _store(path: str, workdir: str) -> str:
    return fidelity.restore_store(path, workdir) if path.endswith(".gz") else path


def _device(obs) -> str:
    return next(d for d in validate.eligible_devices(obs) if d.startswith("loop:"))


def _cells(path: str, workdir: str) -> list[validate.Cell]:
    obs = open_store(_store(path, workdir)).observations()
    return [c for c in validate.device_cells(obs, _device(obs)) if c.metric == "iops"]


def model_errors(path: str, workdir: str) -> tuple[dict[tuple, float], dict[str, str]]:
    """The raw-only model's signed IOPS error per cell of the matrix at ``path``, with the
    device as recommend reads it with this code (fidelity.py's raw-only fit), and each
    cell's configuration as a person reads it (its key -> FsConfig.label())."""
    # Imported here: only --model fits.
    from fsadvisor.predict.settings import ModelSettings
    from fsadvisor.service.device_figures import current_calibration

    db = _store(path, tempfile.mkdtemp(dir=workdir))
    store = open_store(db)
    store.ensure_seeded()
    obs = store.observations()
    dev = _device(obs)
    train = [o for o in obs if o.device_id != dev or validate._is_raw(o)]
    model = validate.fit(
        train, ModelSettings.load(db=db), {dev: current_calibration(store, dev)[0]}
    )
    device = validate._target_device(obs, dev)
    by_w: dict = {}
    for c in validate.device_cells(obs, dev):
        if c.metric == "iops":
            by_w.setdefault(c.workload, []).append(c)
    out, labels = {}, {}
    for w, group in by_w.items():
        for c, p in zip(group, validate.predict_many(model, [c.config for c in group], w, device)):
            out[validate._cell_key(c)] = p.iops / c.mean - 1.0
            labels[c.config.key()] = c.config.label()
    return out, labels


def systematic_lines(
    ea: dict[tuple, float], eb: dict[tuple, float], labels: dict[str, str]
) -> list[str]:
    """The cells whose error has the same sign and is over SYSTEMATIC in both matrices,
    largest first, each with its workload and its configuration as recommend prints it
    (FsConfig.label(), not the store's key)."""
    both = [
        (k, ea[k], eb[k])
        for k in ea
        if k in eb and ea[k] * eb[k] > 0 and min(abs(ea[k]), abs(eb[k])) > SYSTEMATIC
    ]
    return [
        f"    {x:+7.1%} {y:+7.1%}  {validate.workload_label(w)}: {labels[key]}"
        for (key, w), x, y in sorted(both, key=lambda t: -abs(t[1] + t[2]))
    ]


def score(model: list[validate.Cell], judged: list[validate.Cell]) -> dict:
    """fidelity's figures for ``model``'s means taken as predictions of ``judged``'s cells
    (the cells both matrices measured)."""
    pred = {validate._cell_key(c): c.mean for c in model}
    common = [c for c in judged if validate._cell_key(c) in pred]
    errors = [abs(pred[validate._cell_key(c)] / c.mean - 1.0) for c in common]
    sep, right = validate._pairs(common, pred)
    regret, beyond = validate._regret(common, pred)
    worst = max(regret, key=regret.get)
    return {
        "cells": len(common),
        "median": statistics.median(errors),
        "p90": sorted(errors)[math.ceil(0.9 * len(errors)) - 1],
        "pairs": (right / sep) if sep else math.nan,
        "separable": sep,
        "regret": regret[worst],
        "regret_workload": worst,
        "regret_beyond": beyond[worst],
        "regrets_over_5": sorted(
            ((w, r) for w, r in regret.items() if r > 0.05), key=lambda wr: -wr[1]
        ),
    }


def main(argv: list[str]) -> int:
    with_model = "--model" in argv
    argv = [x for x in argv if x != "--model"]
    a, b = (argv + [str(p) for p in DEFAULTS][len(argv) :])[:2]
    with tempfile.TemporaryDirectory() as ta, tempfile.TemporaryDirectory() as tb:
        ca, cb = _cells(a, ta), _cells(b, tb)
        (ea, la), (eb, lb) = (
            (model_errors(a, ta), model_errors(b, tb)) if with_model else (({}, {}), ({}, {}))
        )
    print(f"# fidelity_repeat.py {Path(a).name} {Path(b).name}")
    for name, model, judged in (("A -> B", ca, cb), ("B -> A", cb, ca)):
        s = score(model, judged)
        print(
            f"{name}: {s['cells']} common cells; median |IOPS error| {s['median']:.1%}, "
            f"p90 {s['p90']:.1%}; separable pairs ordered right {s['pairs']:.1%} of "
            f"{s['separable']}; worst regret {s['regret']:.1%} ({s['regret_workload']}; "
            f"{s['regret_beyond']:.1%} against a cell more than 3 standard errors better)"
        )
        for w, r in s["regrets_over_5"]:
            print(f"    regret {r:.1%}  {w}")
    if with_model:
        lines = systematic_lines(ea, eb, {**la, **lb})
        print(
            f"the raw-only model's error, same sign and over {SYSTEMATIC:.0%} in both matrices "
            f"({len(lines)} of {len(set(ea) & set(eb))} cells):"
        )
        for line in lines:
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
