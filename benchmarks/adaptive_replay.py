"""Benchmark: the adaptive probe's choices replayed on stored exhaustive matrices.

The live benchmark (adaptive_vs_full.py) costs an hour of device time per class and sees
each case once. This one replays the adaptive probe's decision rule (probe/adaptive.py) on
matrices already measured, many times, in a minute: for each device with raw-device runs
and filesystem cells in the store, and each of its workloads with >= 4 configurations,

  * the model is fitted without that device's filesystem cells (its raw calibration kept:
    what a calibrated device that was never probed looks like), and the candidates' posterior
    on it is laid out exactly as the probe's Chooser does (predict_many with the device's own
    deviations in the design);
  * a run of a chosen cell is drawn from that cell's measured mean and sd (log scale), and
    the posterior is updated with the linear model's own (Kalman) update instead of a refit;
  * the probe stops by its own rules (target confidence, expected loss, nothing worth a run,
    the budget: a share of the exhaustive matrix of 3 runs per configuration, every run
    costing the same);

and the regret of the final leader against the cells' measured means is printed with the
device time used, per policy: the probe's own rule ("probe": the drop of the sd of the
leader's contested differences per second, probe/adaptive.py options) and the knowledge
gradient in its place ("kg": the expected gain of the choice, Frazier et al. 2009). The truth is the
matrix's measured means, so a device whose cells scatter widely (the shipped reference
matrix's RAM-backed devices: cv 0.2-0.3 over 3 runs) has a noisy truth: read its regret
beside the cv printed on each line.

Usage:
    python benchmarks/adaptive_replay.py [--db STORE] [--seeds 12] [--shares 0.2,0.25,0.5,1]
(without --db: a fresh store of the shipped data, i.e. the reference matrix's devices.)
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile

import numpy as np

from fsadvisor.predict import validate
from fsadvisor.predict.fit import fit
from fsadvisor.predict.predict import predict_many
from fsadvisor.predict.rank import TIE_TOLERANCE
from fsadvisor.predict.settings import ModelSettings
from fsadvisor.probe import adaptive as sel
from fsadvisor.service.adaptive import MAX_REPS, Chooser
from fsadvisor.store import open_store

TOL = -math.log(1 - TIE_TOLERANCE)


def cases(obs, settings):
    for d in validate.eligible_devices(obs):
        cells = [c for c in validate.device_cells(obs, d) if c.metric == "ops_per_joule"]
        by_w: dict = {}
        for c in cells:
            by_w.setdefault(c.workload, []).append(c)
        model = fit([o for o in obs if o.device_id != d or validate._is_raw(o)], settings, None)
        dev = validate._target_device(obs, d)
        for w, cs in by_w.items():
            if len(cs) >= 4:
                yield d, w, cs, model, dev


def kg_step(st: sel.State, runs, spent, budget):
    """The probe's stop rules, but the cell with the largest knowledge gradient (all cells
    cost 1 here), where it is worth at least 0.05% of ops/J."""
    if st.confidence(S=st.S_choice()) >= 0.95 or st.expected_loss() <= sel.MAX_EXPECTED_LOSS:
        return None
    worth = [o for o in sel.options(st, [1.0] * len(runs), runs)
             if o.runs_so_far < MAX_REPS and o.kg >= 5e-4 and spent + 1 <= budget]
    return max(worth, key=lambda o: (o.kg, -o.index)) if worth else None


def replay(cs, model, dev, w, policy: str, share: float, seed: int
           ) -> tuple[float, float, float]:
    cfgs = [c.config for c in cs]
    truth = np.log([c.mean for c in cs])
    sd_run = np.maximum(np.array([(c.sd or 0.0) / c.mean for c in cs]), 0.02)
    design: dict = {}
    preds = predict_many(model, cfgs, w, dev, design_out=design, own_deviations=True)
    mu = np.log([p.ops_per_joule for p in preds])  # bytes/J ranks the same at one size
    X, cov = np.asarray(design["X"]), np.asarray(design["cov"])
    # the probe takes the larger of the model's noise and this matrix's own repetitions'
    noise = max(model.noise_sd_measured or model.noise_sd, float(np.median(sd_run)))
    full = 3 * len(cs)
    budget = share * full
    rng = np.random.default_rng(seed)
    runs = [0] * len(cs)
    spent = 0.0
    while True:
        st = sel.State(labels=[c.config.key() for c in cs], mu=mu, X=X, cov=cov,
                       noise_var=noise ** 2, tolerance=TOL)
        if policy == "probe":
            # the probe's rule, the leading filesystems' defaults first included
            step = sel.next_step(st, [1.0] * len(cs), runs, target=0.95, spent_s=spent,
                                 budget_s=budget, max_runs=MAX_REPS,
                                 defaults=Chooser.leading_defaults(st, cfgs, dev))
            choice = step.choice
        else:
            choice = kg_step(st, runs, spent, budget)
        if choice is None:
            break
        i = choice.index
        y = truth[i] + rng.normal(0.0, sd_run[i])
        v = cov @ X[i]
        den = float(X[i] @ v) + noise ** 2
        mu = mu + (X @ v) * (y - mu[i]) / den
        cov = cov - np.outer(v, v) / den
        runs[i] += 1
        spent += 1
    best = truth.max()
    # the confidence the probe states at its stop: P(its leader is within 1% of the best)
    return 1 - math.exp(truth[int(np.argmax(mu))] - best), spent / full, st.confidence()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", default=None)
    ap.add_argument("--seeds", type=int, default=12)
    ap.add_argument("--shares", default="0.2,0.25,0.5,1")
    a = ap.parse_args(argv)
    tmp = None
    db = a.db
    if db is None:
        tmp = tempfile.mkdtemp(prefix="fsadvisor-replay-")
        db = os.path.join(tmp, "replay.db")
    with open_store(db) as store:
        store.ensure_seeded()
        obs = store.observations()
    settings = ModelSettings.load(db=db)
    shares = [float(x) for x in a.shares.split(",")]
    policies = [(p, s) for s in shares for p in ("probe", "kg")]
    print(f"# {' '.join([os.path.basename(sys.argv[0]), *(argv or sys.argv[1:])])}")
    print("# per case: mean regret against the matrix's measured best / device time as a share "
          f"of the exhaustive matrix (3 runs per configuration), {a.seeds} replays each")
    print("# " + " | ".join(f"{p}@{s:.0%}" for p, s in policies))
    by_dev: dict = {}
    for d, w, cs, model, dev in cases(obs, settings):
        cv = float(np.median([(c.sd or 0.0) / c.mean for c in cs]))
        cells = []
        for p, s in policies:
            r = [replay(cs, model, dev, w, p, s, seed) for seed in range(a.seeds)]
            reg, t = float(np.mean([x[0] for x in r])), float(np.mean([x[1] for x in r]))
            by_dev.setdefault(d, {}).setdefault((p, s), []).append(
                (reg, t, float(np.mean([x[2] for x in r])),
                 float(np.mean([x[0] <= TIE_TOLERANCE for x in r]))))
            cells.append(f"{reg:5.1%}/{t:4.0%}")
        print(f"{d[:24]:24s} {validate.workload_label(w)[:28]:28s} k={len(cs):2d} cv={cv:.2f} "
              + " | ".join(cells), flush=True)
    print("# summary per device: mean regret, cases with regret <= 3%, mean device time, and "
          "the confidence stated at the stop (P(leader within 1% of the best)) against how "
          "often the leader was within 1% of the matrix's best")
    for d, res in by_dev.items():
        for (p, s), rows in res.items():
            regs = [r[0] for r in rows]
            print(f"{d[:40]:40s} {p:6s} budget {s:4.0%}: regret {np.mean(regs):5.1%} "
                  f"(<= 3% in {sum(r <= 0.03 for r in regs)} of {len(regs)}), time "
                  f"{np.mean([r[1] for r in rows]):4.0%}, stated confidence "
                  f"{np.mean([r[2] for r in rows]):.2f} vs hit rate {np.mean([r[3] for r in rows]):.2f}")
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
