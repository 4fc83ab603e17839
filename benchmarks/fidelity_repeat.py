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

    python benchmarks/fidelity_repeat.py [A.sql.gz|A.db] [B.sql.gz|B.db]

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


def _cells(path: str, workdir: str) -> list[validate.Cell]:
    db = fidelity.restore_store(path, workdir) if path.endswith(".gz") else path
    obs = open_store(db).observations()
    dev = next(d for d in validate.eligible_devices(obs) if d.startswith("loop:"))
    return [c for c in validate.device_cells(obs, dev) if c.metric == "iops"]


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
    a, b = (argv + [str(p) for p in DEFAULTS][len(argv) :])[:2]
    with tempfile.TemporaryDirectory() as ta, tempfile.TemporaryDirectory() as tb:
        ca, cb = _cells(a, ta), _cells(b, tb)
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
