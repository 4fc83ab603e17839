"""Adaptive probing: which cell to measure next, and when to stop. Pure numpy.

The decision is "which candidate has the highest expected ops/J on this device". Its
uncertainty is the model's posterior: theta ~ N(theta_hat, cov), candidate i's expected log
ops/J is x_i . theta (predict_many's design rows), so the candidates are jointly normal and
P(the leader is not the best) — P(wrong) — follows from predict/confidence.py.

What a measurement is worth: one more run of candidate i is, to first order, an observation
of x_i . theta with the model's per-run noise variance s^2. The normal-normal update of the
coefficients is rank one,

    cov' = cov - (cov x_i)(cov x_i)' / (x_i' cov x_i + s^2),

and it moves every candidate's mean by S[:, i] / sqrt(S[i, i] + s^2) times a standard normal:
candidates that share a filesystem or mechanism move together (the device's own deviations
from the shared effects are in the design from its first run on, so one ext4 run teaches
about every ext4 cell). A cell is scored by how much that update shrinks the sd of the
leader's difference with each challenger, weighted by the challenger's chance of beating it,
per second of device time. Its knowledge gradient -- how much better the best mean after the
run is expected to be than the best now (Frazier, Powell & Dayanik 2009), the choice's
expected gain -- is computed too and said in the why-line. Used as the score, it did no
better: replayed on stored matrices (`benchmarks/adaptive_replay.py`: a disk-backed loop
device, 9 configurations x 6 workloads, and the reference matrix's RAM loop and zram) at a
quarter of the exhaustive matrix's time, the shrink score gave up 1.9% / 8.1% / 10.3% of
ops/J on average and the knowledge gradient 2.6% / 9.0% / 11.6%; at a fifth on the disk
device 6.4% against 3.2%. Ten of the twelve device x budget comparisons favoured the shrink.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Collection, Sequence

import numpy as np

from fsadvisor.predict import confidence as C

# A run that shrinks the leader's contested differences by less than this (log units, i.e.
# 0.1% of ops/J, a tenth of rank.TIE_TOLERANCE) cannot change a decision made to 1%.
MIN_SHRINK = 1e-3
# Stop when choosing the leader is expected to give up at most this much ops/J against the
# true best (log units: 1%, rank.TIE_TOLERANCE). The target confidence alone asks for the
# leader to be within 1% of the best with probability 0.95 -- a resolution a noisy device
# cannot give when several configurations are equal, so the probe ran to its budget with
# nothing to gain (benchmarks/results/adaptive_vs_full-2026-11-24.txt: 96-115% of the full
# matrix's time). When the leaders are tied, choosing any of them costs little: the expected
# loss says so, P(best) does not.
MAX_EXPECTED_LOSS = 0.01
# Degrees of freedom of this device's own repetitions below which its run noise is not
# known (service/adaptive.pooled_sd says nothing below 2). Until then a posterior built from
# its runs rests on the model's noise figure, which on a loaded RAM-backed device is a sixth
# of what its runs scatter: replayed with only what its own runs say, the probe stopped
# "settled" after single runs at 13% of the matrix, stating 0.94 where its leader was within
# 1% of the best 0.47-0.56 of the time; repeating first, 0.74-0.80 against 0.57-0.62 at 20-21%
# (benchmarks/results/adaptive_replay-2026-11-27b.txt, --truth reference --noise runs).
MIN_NOISE_DF = 2


@dataclass(frozen=True)
class Option:
    """Measuring candidate ``index`` once more: P(wrong) now, expected after, its cost."""

    index: int
    label: str
    p_wrong_now: float
    p_wrong_after: float
    cost_s: float
    runs_so_far: int
    shrink: float = 0.0  # weighted drop of the sd of the leader's differences (log units)
    kg: float = 0.0  # knowledge gradient: expected gain of the best choice after the run (log)
    defaults_first: bool = False  # chosen as a leading filesystem's defaults (next_step)
    stand_in: bool = False  # ... or as its best leader, where its defaults are no candidate
    to_see_noise: bool = False  # a repetition before a stop: the run noise is not known yet
    name: str = ""  # what a person reads (``label`` is the configuration's key)
    run_sd: float = 0.0  # one run's sd (log) of this cell, from its own repetitions
    pooled_sd: float = 0.0  # the matrix's pooled run-to-run sd (log)

    @property
    def gain(self) -> float:
        return max(0.0, self.p_wrong_now - self.p_wrong_after)

    @property
    def value_per_s(self) -> float:
        return self.shrink / self.cost_s if self.cost_s > 0 else 0.0

    def why(self) -> str:
        who = self.name or self.label
        if self.defaults_first and self.stand_in:
            return (
                f"{who}: a first run of a leading filesystem whose defaults are not among "
                f"the candidates, its best-predicted configuration in their place, for "
                f"about {self.cost_s:.0f} s of device time"
            )
        if self.defaults_first:
            return (
                f"{who}: a first run of a leading filesystem's defaults, what every "
                f"variant of it has to beat to earn its settings, for about "
                f"{self.cost_s:.0f} s of device time"
            )
        if self.to_see_noise:
            return (
                f"{who}: run {self.runs_so_far + 1}, to see how much runs scatter on "
                f"this device before the order is trusted (so far the model's "
                f"{math.expm1(self.pooled_sd):.0%} is assumed), for about "
                f"{self.cost_s:.0f} s of device time"
            )
        rep = "a first run" if not self.runs_so_far else f"run {self.runs_so_far + 1}"
        if self.pooled_sd > 0 and self.run_sd > 1.5 * self.pooled_sd:
            rep += (
                f" (its runs scatter {math.expm1(self.run_sd):.0%}, more than the usual "
                f"{math.expm1(self.pooled_sd):.0%}: each teaches less)"
            )
        return (
            f"{who}: {rep} is expected to narrow the leaders' uncertainty the most per "
            f"second (chance the current leader is not within 1% of the best: "
            f"{self.p_wrong_now:.0%} now, {self.p_wrong_after:.0%} expected after; "
            f"expected gain of the final choice {math.expm1(self.kg):+.1%} ops/J) for "
            f"about {self.cost_s:.0f} s of device time"
        )


@dataclass(frozen=True)
class State:
    """The posterior of the candidates' expected log ops/J on this device."""

    labels: Sequence[str]
    mu: np.ndarray  # (k,) log ops/J
    X: np.ndarray  # (k, p) design rows
    cov: np.ndarray  # (p, p) coefficient posterior covariance
    noise_var: float  # one run's variance on log scale
    tolerance: float = 0.0  # log: within this of the best counts as best (rank.TIE_TOLERANCE)
    # Per-candidate variance the model's design does not show yet: this device's own
    # deviation from the shared effects (the fit's "d:<device>|" terms, prior sd from
    # priors.toml), shrunk by the runs of that cell already made. Before a device's first
    # run its candidates differ from each other only by shared effects, and a preposterior
    # on the design alone would say a run here can teach nothing about their order (one run
    # pins the unknown device level that all share). Only the choice uses it.
    own_var: np.ndarray | None = None
    names: Sequence[str] = ()  # what a person reads for each candidate (labels: its key)
    # One run's variance per candidate where its own repetitions say it scatters more (or
    # less) than the pooled ``noise_var``: a noisy cell's run teaches less, so its mean stays
    # contested longer and it is measured more often before the leaders part.
    cell_noise_var: np.ndarray | None = None

    def noise_of(self, i: int) -> float:
        return float(self.cell_noise_var[i]) if self.cell_noise_var is not None else self.noise_var

    def name(self, i: int) -> str:
        return self.names[i] if self.names else self.labels[i]

    @property
    def leader(self) -> int:
        return int(np.argmax(self.mu))

    def S(self, cov: np.ndarray | None = None) -> np.ndarray:
        return C.covariance(self.X, self.cov if cov is None else cov)

    def S_choice(self) -> np.ndarray:
        S = self.S()
        return S + np.diag(self.own_var) if self.own_var is not None else S

    def confidence(self, cov: np.ndarray | None = None, S: np.ndarray | None = None) -> float:
        """P(the leader is within ``tolerance`` of the best)."""
        S = self.S(cov) if S is None else S
        idx = C.leaders(self.mu, S, self.leader)
        p = C.p_best(
            self.mu[idx],
            S[np.ix_(idx, idx)],
            tolerance=self.tolerance if self.tolerance > 0 else None,
        )
        return float(p[0])

    def expected_loss(self) -> float:
        """What choosing the leader is expected to give up (log ops/J) against the best, over
        the leading group, with this device's not-yet-measured own deviations included
        (S_choice): before its first runs the shared effects alone would look surer than
        the device can be."""
        S = self.S_choice()
        idx = C.leaders(self.mu, S, self.leader)
        return C.expected_loss(self.mu[idx], S[np.ix_(idx, idx)], choice=0)

    def after_run(self, i: int, n: int = 1) -> np.ndarray:
        """The coefficient covariance after ``n`` more runs of candidate ``i`` (rank one)."""
        v = self.cov @ self.X[i]
        denom = float(self.X[i] @ v) + self.noise_of(i) / n
        return self.cov - np.outer(v, v) / denom if denom > 0 else self.cov


def _phi(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def expected_max_gain(a: np.ndarray, b: np.ndarray) -> float:
    """E[max_j (a_j + b_j Z)] - max_j a_j for Z ~ N(0, 1): what the best of lines a + bZ is
    worth above the best intercept (Frazier, Powell & Dayanik 2009, "The knowledge-gradient
    policy for correlated normal beliefs", INFORMS J. on Computing 21(4), Algorithm 1: the
    upper envelope of the lines, then sum_j (b_{j+1} - b_j) f(-|c_j|) over its breakpoints
    c_j, with f(z) = z Phi(z) + phi(z))."""
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    order = np.lexsort((a, b))  # by slope, and within a slope by intercept
    a, b = a[order], b[order]
    # Of equal slopes only the highest line can be on top. Only exactly equal ones: nearly
    # equal slopes cross far out in the tail, where f() is ~0, which is right.
    last = np.append(b[1:] != b[:-1], True)
    a, b = a[last], b[last]
    A, B, Cs = [float(a[0])], [float(b[0])], [-math.inf]
    for aj, bj in zip(a[1:].tolist(), b[1:].tolist()):  # Python floats: inf, not warnings
        while True:
            c = (A[-1] - aj) / (bj - B[-1])  # where line j overtakes the last kept one
            if c <= Cs[-1] and len(A) > 1:
                A.pop(), B.pop(), Cs.pop()
                continue
            break
        if c <= Cs[-1]:  # it overtakes the only kept line everywhere that line was on top
            A[-1], B[-1] = float(aj), float(bj)
            continue
        A.append(float(aj))
        B.append(float(bj))
        Cs.append(c)
    gain = 0.0
    for j in range(1, len(A)):
        z = -abs(Cs[j])
        if not math.isfinite(z) or z < -40:  # crossing beyond 40 sd: f(z) ~ 0
            continue
        gain += (B[j] - B[j - 1]) * (z * 0.5 * math.erfc(-z / math.sqrt(2)) + _phi(z))
    return max(gain, 0.0)


def options(state: State, cost_s: Sequence[float], runs: Sequence[int]) -> list[Option]:
    """The cells that could change the decision, best value per second first.

    The value of one more run of candidate i is how much it shrinks the sd of the leader's
    difference with each challenger j (S' after the rank-one update), weighted by
    P(j beats the leader). Unlike the one-step drop of P(wrong) (which is
    myopic: with three leaders tied, no single run moves it, and a greedy rule would stop
    with nothing settled) this keeps measuring the leader and its strongest challengers
    until their intervals part, and never spends time on a candidate too far behind to
    matter. P(wrong) before and after and the knowledge gradient (``expected_max_gain``:
    the ops/J the choice is expected to gain) are computed to say why."""
    S = state.S_choice()
    L = state.leader
    group = C.leaders(state.mu, S, L, max_leaders=len(state.mu))
    others = [j for j in group if j != L]
    if not others:
        return []
    d_var = np.array([S[L, L] + S[j, j] - 2 * S[L, j] for j in others])
    d_sd = np.sqrt(np.maximum(d_var, 1e-18))
    gap = state.mu[L] - state.mu[others]
    # P(j beats the leader by more than the tolerance), pairwise closed form
    w = np.array([1.0 - C.two_way(g + state.tolerance, sd) for g, sd in zip(gap, d_sd)])
    now = 1.0 - state.confidence(S=S)
    mu_g = state.mu[group]
    out = []
    for i in group:
        v = S[:, i]
        denom = S[i, i] + state.noise_of(i)
        if denom <= 0:
            continue
        S1 = S - np.outer(v, v) / denom
        d1 = np.array([S1[L, L] + S1[j, j] - 2 * S1[L, j] for j in others])
        shrink = float(np.sum(w * (d_sd - np.sqrt(np.maximum(d1, 1e-18)))))
        kg = expected_max_gain(mu_g, v[group] / math.sqrt(denom))
        out.append((kg, shrink, i, S1))
    out = [o for o in out if o[1] > 0]
    out.sort(key=lambda o: (-o[1] / max(float(cost_s[o[2]]), 1e-9), o[2]))
    res = []
    for k, (kg, shrink, i, S1) in enumerate(out):
        after = 1.0 - state.confidence(S=S1) if k < 3 else now
        res.append(
            Option(
                i,
                state.labels[i],
                now,
                after,
                float(cost_s[i]),
                int(runs[i]),
                shrink,
                kg,
                name=state.name(i),
                run_sd=math.sqrt(max(state.noise_of(i), 0.0)),
                pooled_sd=math.sqrt(max(state.noise_var, 0.0)),
            )
        )
    return res


@dataclass(frozen=True)
class Step:
    """What to do next: ``choice`` (None: stop) and why."""

    choice: Option | None
    confidence: float
    reason: str
    ranked: tuple[Option, ...] = ()


def noise_unseen(runs: Sequence[int], noise_df: float | None = None) -> bool:
    """The device has runs but too few repetitions to say how much one run scatters, so a
    posterior built from them rests on an assumed noise (``noise_df``: the degrees of
    freedom behind the noise figure, when the caller knows it otherwise; by default those
    of the repetitions in ``runs``)."""
    if noise_df is None:
        noise_df = repetition_df(runs)
    return any(runs) and noise_df < MIN_NOISE_DF


def repetition_df(runs: Sequence[int]) -> int:
    """Degrees of freedom the repetitions in ``runs`` give a pooled run-to-run sd."""
    return sum(max(int(r) - 1, 0) for r in runs)


def _see_noise(
    state: State,
    cost_s: Sequence[float],
    runs: Sequence[int],
    conf: float,
    spent_s: float,
    budget_s: float | None,
    max_runs: int | None,
) -> Option | None:
    """The repetition to make before a stop while the noise is unseen: the best-placed cell
    already measured (its second run tells the noise and contests the top at once)."""
    for i in np.argsort(-np.asarray(state.mu), kind="stable"):
        i = int(i)
        if (
            runs[i]
            and (max_runs is None or runs[i] < max_runs)
            and (budget_s is None or spent_s + cost_s[i] <= budget_s)
        ):
            return Option(
                index=i,
                label=state.labels[i],
                p_wrong_now=1.0 - conf,
                p_wrong_after=1.0 - conf,
                cost_s=float(cost_s[i]),
                runs_so_far=int(runs[i]),
                to_see_noise=True,
                name=state.name(i),
                pooled_sd=math.sqrt(max(state.noise_var, 0.0)),
            )
    return None


def next_step(
    state: State,
    cost_s: Sequence[float],
    runs: Sequence[int],
    *,
    target: float,
    spent_s: float,
    budget_s: float | None,
    max_runs: int | None = None,
    max_loss: float = MAX_EXPECTED_LOSS,
    defaults: Sequence[int] = (),
    stand_ins: Collection[int] = frozenset(),
    noise_df: float | None = None,
) -> Step:
    """Stop at the target confidence, when choosing the leader is expected to cost at most
    ``max_loss`` (log ops/J) against the best, when nothing left is worth its time, or when
    the best cell no longer fits in the budget; else, first, a not yet measured cell of
    ``defaults`` (the defaults of the leading filesystems: settling a tie starts from what a
    variant must beat, never only variants of one option; ``stand_ins`` are those of them
    that stand in for defaults the candidates lack), then the cell with the most value
    per second (among those below ``max_runs`` repetitions). No stop but the budget's while
    the device's run noise is unseen (``noise_unseen``): a repetition first; and the runs
    the budget has left for those repetitions go to them, so a probe that ends on its budget
    states a confidence from the noise it saw."""
    conf = state.confidence()
    # Settled only when it holds with this device's not-yet-measured own deviations counted
    # (S_choice): the shared effects alone can look sure of an order this device may not keep.
    sure = conf if state.own_var is None else state.confidence(S=state.S_choice())
    unseen = noise_unseen(runs, noise_df)
    loss = state.expected_loss()
    if unseen and (sure >= target or loss <= max_loss):
        again = _see_noise(state, cost_s, runs, conf, spent_s, budget_s, max_runs)
        if again is not None:
            return Step(again, conf, again.why())
    if sure >= target:
        return Step(None, conf, f"settled: confidence {sure:.3f} >= target {target:g}")
    if loss <= max_loss:
        return Step(
            None,
            conf,
            f"settled: choosing the leader is expected to give up "
            f"{math.expm1(loss):.2%} of ops/J against the best (<= "
            f"{math.expm1(max_loss):.0%}; confidence {conf:.3f}: the "
            "leaders are within the measurement's resolution)",
        )
    for i in defaults:
        if runs[i] == 0 and (budget_s is None or spent_s + cost_s[i] <= budget_s):
            return Step(
                Option(
                    index=i,
                    label=state.labels[i],
                    p_wrong_now=1.0 - conf,
                    p_wrong_after=1.0 - conf,
                    cost_s=cost_s[i],
                    runs_so_far=0,
                    defaults_first=True,
                    stand_in=i in stand_ins,
                    name=state.name(i),
                ),
                conf,
                f"{state.name(i)}: a leading filesystem's "
                + (
                    "best-predicted configuration first (its defaults are not a candidate)"
                    if i in stand_ins
                    else "defaults first"
                ),
            )
    ranked = [
        o for o in options(state, cost_s, runs) if max_runs is None or o.runs_so_far < max_runs
    ]
    worth = [o for o in ranked if o.shrink >= MIN_SHRINK]
    if not worth and unseen:
        again = _see_noise(state, cost_s, runs, conf, spent_s, budget_s, max_runs)
        if again is not None:
            return Step(again, conf, again.why())
    if not worth:
        return Step(
            None,
            conf,
            f"no cell left that can raise the confidence ({conf:.3f}) "
            "measurably: the leaders are equal within the measurement "
            "noise (or measured the most times allowed)",
            tuple(ranked),
        )
    fits = [o for o in worth if budget_s is None or spent_s + o.cost_s <= budget_s]
    if fits and unseen and budget_s is not None:
        # The budget's last runs: while the device's run-to-run scatter is unseen, the
        # answer's confidence would rest on the model's noise figure (replayed on noisy
        # matrices it stated 0.76 where 0.38 came true), so they see it first.
        df = noise_df if noise_df is not None else repetition_df(runs)
        rep = [cost_s[i] for i, r in enumerate(runs) if r]
        if budget_s - spent_s - fits[0].cost_s < (MIN_NOISE_DF - df) * min(rep):
            again = _see_noise(state, cost_s, runs, conf, spent_s, budget_s, max_runs)
            if again is not None:
                return Step(again, conf, again.why())
    if not fits:
        return Step(
            None,
            conf,
            f"budget: {spent_s:.0f} s of {budget_s:.0f} s spent, the next "
            f"cell needs about {min(o.cost_s for o in worth):.0f} s",
            tuple(ranked),
        )
    return Step(fits[0], conf, fits[0].why(), tuple(ranked))
