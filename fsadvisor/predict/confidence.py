"""Decision confidence: how likely is the recommended configuration to be the true best?

The model's posterior over its coefficients is normal (theta ~ N(theta_hat, cov), fit.py),
and a candidate's expected log ops/J is linear in them (its design row x: x . theta), so the
leaders' expected log ops/J are jointly normal with mean ``mu`` and covariance
``X cov X'`` — correlated, because candidates share most of their terms (same device, same
workload, often the same filesystem). P(candidate i is the best) = P(z_i = max z).

Why Monte Carlo and not an analytic formula: for two candidates it is Phi(gap / sd of the
difference), but for k > 2 correlated normals P(argmax = i) is a (k-1)-dimensional normal
orthant probability with no closed form (Clark's moment-matching of the max is biased
exactly when leaders are close, which is when the number matters). Sampling k <= 8 leaders
4000 times costs well under a millisecond, and its standard error is at most
sqrt(0.25 / 4000) = 0.008 — finer than any figure shown (two digits). The seed is fixed so
the same store gives the same number on every run (a recommendation must not flicker).

The normal draws come from numpy's default generator (PCG64) seeded with that fixed seed.

Pure numpy; the ranking (predict/rank.py) and the adaptive probe (predict/adaptive.py) call it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Sequence

import numpy as np
from numpy.typing import ArrayLike

from fsadvisor.predict.design import DesignRows, row_variances

DRAWS = 4000
SEED = 20261124
# Only candidates within this many sd (of their difference with the leader) can still be
# the best with a probability that shows in two digits: P(z > 3.5) = 0.0002.
LEADER_SD = 3.5
MAX_LEADERS = 8
NAMED = 4  # leaders a sentence names with their P (the rest are counted)
# Below this P(#1 is best) the leaders are called tied and recommend says what would settle
# it. 0.9: a one-in-ten chance of a wrong pick is the most a "best" claim should hide.
CONFIDENT = 0.9


@dataclass
class Confidence:
    """P(best) of the leading group; ``labels[0]`` is the ranking's #1.

    One number per configuration, from one sample: with a ``tolerance`` (a ranking's,
    TIE_TOLERANCE), P(this leader is within it of the best) -- "best" as the ranking means
    it, where a simpler configuration within the tolerance of a busier one is preferred; these
    overlap (two equal leaders can both be within 1%), so they need not sum to 1. Without a
    tolerance, the strict P(this leader is the best), which sums to 1."""

    labels: list[str]
    p_best: list[float]
    tolerance: float = 0.0
    method: str = f"Monte Carlo, {DRAWS} draws of the joint posterior (fixed seed)"
    settle: list[dict[str, Any]] = field(default_factory=list)  # cells that would decide a tie
    # Distinct configurations in the ranking's tie set (rank._order, the answer's one tie
    # rule); None outside a ranking, where "tied" falls back on P(#1) < CONFIDENT.
    tie_set: int | None = None

    @property
    def p_first(self) -> float:
        return self.p_best[0] if self.p_best else 1.0

    @property
    def tied(self) -> bool:
        if self.tie_set is not None:
            return self.tie_set > 1
        return self.p_first < CONFIDENT

    @property
    def settled(self) -> bool:
        """#1 is the best, or within the tolerance of it, with probability >= CONFIDENT:
        measuring the tie could not change the pick by more than the tolerance."""
        return self.p_first >= CONFIDENT

    def to_dict(self) -> dict[str, Any]:
        return {
            "p_best_first": round(self.p_first, 4),
            "tied": self.tied,
            "settled": self.settled,
            "tolerance": round(math.expm1(self.tolerance), 4),
            "method": self.method,
            "leaders": [
                {"config": k, "p_best": round(p, 4)} for k, p in zip(self.labels, self.p_best)
            ],
            "settle": list(self.settle),
        }

    @property
    def what(self) -> str:
        """What ``p_best`` is, in the words every front end prints beside it."""
        return (
            f"P(within {math.expm1(self.tolerance):.0%} of the best)"
            if self.tolerance
            else "P(best)"
        )

    def sentence(self, shown: Collection[str] | None = None) -> str:
        """The leaders' P, #1's first, at most NAMED of them; with ``shown`` (the labels a
        list shows) only leaders in it are named, the others counted as outside it. A
        label holds commas ("xfs, noatime, sched none"): leaders are parted by semicolons."""
        what = self.what
        if len(self.labels) == 1:
            return f"{what}: {self.labels[0]} {self.p_first:.2f}"
        pairs = list(zip(self.labels, self.p_best))
        inside = [kp for kp in pairs if shown is None or kp[0] in shown]
        parts = [f"{k} {p:.2f}" for k, p in inside[:NAMED]]
        rest = len(inside) - NAMED
        if rest > 0:
            parts.append(
                f"{rest} more leader{'s' if rest != 1 else ''}"
                + (" in the list" if shown is not None else "")
            )
        outside = len(pairs) - len(inside)
        if outside:
            parts.append(
                f"{outside}{' more' if parts else ''} leader{'s' if outside != 1 else ''} "
                "outside the shown list"
            )
        return f"{what}: " + "; ".join(parts)


def standard_normal(shape: tuple[int, int], seed: int = SEED) -> np.ndarray:
    """Independent N(0, 1) draws, the same for the same seed on every machine."""
    return np.random.default_rng(seed).standard_normal(shape)


def covariance(X: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Joint posterior covariance of the rows' expected log ops/J."""
    S = X @ cov @ X.T
    return (S + S.T) / 2


def p_best(
    mu: ArrayLike,
    S: np.ndarray,
    draws: int = DRAWS,
    seed: int = SEED,
    tolerance: float | None = None,
) -> np.ndarray:
    """P(each entry of a N(mu, S) vector is the largest), by sampling (module docstring).
    With ``tolerance``: P(each entry is within it of the largest) (these overlap: they
    need not sum to 1)."""
    m = np.asarray(mu, dtype=float)
    k = len(m)
    if k == 0:
        return np.zeros(0)
    if k == 1:
        return np.ones(1)
    z = _sample(m, S, draws, seed)
    return _within(z, tolerance) if tolerance is not None else _wins(z)


def _root(S: np.ndarray) -> np.ndarray:
    """The symmetric square root of S (R = V sqrt(w) V', R R' = S).

    Why not Cholesky: S is often singular (two candidates the model cannot tell apart have
    identical rows), and clipping tiny negative eigenvalues is exact there. Why not the
    eigen-factor V sqrt(w) itself: where eigenvalues repeat (the singular part, candidates
    with the same posterior), LAPACK may return any rotation of that eigenspace, and which
    one depends on the BLAS kernel, so the same seed gave other draws and another P(best) on
    another CPU (0.036 against 0.0437 on oltp: sampling error, but a flicker). The symmetric
    root does not depend on the basis: the same S gives the same draws on every machine up to
    rounding."""
    w, V = np.linalg.eigh(np.asarray(S, dtype=float))
    w = np.where(w > 1e-12 * max(float(w.max()), 1e-300), w, 0.0)  # rounding, not variance
    R = (V * np.sqrt(w)) @ V.T
    return (R + R.T) / 2


def _sample(mu: np.ndarray, S: np.ndarray, draws: int, seed: int) -> np.ndarray:
    return standard_normal((draws, len(mu)), seed) @ _root(S) + mu


def _within(z: np.ndarray, tolerance: float) -> np.ndarray:
    return np.mean(z >= z.max(axis=1, keepdims=True) - tolerance, axis=0)


def _wins(z: np.ndarray) -> np.ndarray:
    # Exact ties in a draw (identical rows) go to the first, i.e. the better-ranked entry.
    # (within float noise of the factorisation).
    top = z >= z.max(axis=1, keepdims=True) - 1e-12
    return np.bincount(np.argmax(top, axis=1), minlength=z.shape[1]) / z.shape[0]


def expected_loss(
    mu: ArrayLike, S: np.ndarray, choice: int = 0, draws: int = DRAWS, seed: int = SEED
) -> float:
    """E[max_j z_j - z_choice] for z ~ N(mu, S): how much, in the units of ``mu`` (log ops/J:
    a share of ops/J), choosing ``choice`` is expected to give up against the true best. Small
    both when the choice is clearly best and when the leaders are tied -- the quantity a
    regret goal is about, which P(best) is not (sampled like :func:`p_best`)."""
    m = np.asarray(mu, dtype=float)
    if len(m) < 2:
        return 0.0
    z = _sample(m, S, draws, seed)
    return float(np.mean(z.max(axis=1) - z[:, choice]))


def leaders(
    mu: ArrayLike, S: np.ndarray, first: int = 0, max_leaders: int = MAX_LEADERS
) -> list[int]:
    """Indices of the candidates that can still beat (or be beaten by) ``first``: within
    LEADER_SD sd of their difference with it, best mean first, ``first`` always first."""
    m = np.asarray(mu, dtype=float)
    d = np.diag(S)
    var = d + d[first] - 2 * S[:, first]
    sd = np.sqrt(np.maximum(var, 1e-18))
    close = [
        i
        for i in np.argsort(-m, kind="stable")
        if i != first and (m[first] - m[i]) <= LEADER_SD * sd[i]
    ]
    return [first] + [int(i) for i in close[: max_leaders - 1]]


def _leaders_from_design(
    mu: ArrayLike,
    X: np.ndarray | DesignRows,
    cov: np.ndarray,
    first: int,
    q: np.ndarray | None = None,
    eligible: np.ndarray | None = None,
) -> list[int]:
    """``leaders`` without the full n x n covariance (a ranking has ~1000 candidates): only
    the diagonal (``q``, when the caller has it) and the first's column are needed."""
    m = np.asarray(mu, dtype=float)
    if q is None:
        q = row_variances(X, cov)
    col = X @ (cov @ X[first])
    sd = np.sqrt(np.maximum(q + q[first] - 2 * col, 1e-18))
    close = [
        i
        for i in np.argsort(-m, kind="stable")
        if i != first
        and (m[first] - m[i]) <= LEADER_SD * sd[i]
        and (eligible is None or eligible[i])
    ]
    return [first] + [int(i) for i in close[: MAX_LEADERS - 1]]


def decision_confidence(
    labels: Sequence[str] | Callable[[int], str],
    log_values: Sequence[float],
    X: np.ndarray | DesignRows,
    cov: np.ndarray,
    first: int = 0,
    tolerance: float = 0.0,
    q: np.ndarray | None = None,
    tie_set: int | None = None,
    eligible: np.ndarray | None = None,
) -> Confidence:
    """Confidence that candidate ``first`` (the ranking's #1, not necessarily the highest
    mean: ties go to the simpler configuration) is the best of all candidates (rows of
    ``X``). Candidates beyond LEADER_SD are left out of the sampling; together they could
    take at most 0.0002 each. ``labels`` names candidate i (a list, or a function of i:
    a ranking of 1,000+ candidates then spells out only the few leaders' labels); ``q``
    the rows' x cov x' when the caller has them already; ``eligible``: which candidates
    may be leaders (a ranking leaves out the busier twins of a candidate it cannot tell apart
    from them)."""
    if not isinstance(X, DesignRows):  # a ranking's factored design stays factored
        X = np.asarray(X, dtype=float)
    cov = np.asarray(cov, dtype=float)
    idx = _leaders_from_design(log_values, X, cov, first, q, eligible)
    mu = np.asarray(log_values, dtype=float)[idx]
    sub = covariance(X[idx], cov)
    p = p_best(mu, sub, tolerance=tolerance if tolerance > 0 else None)
    label = labels if callable(labels) else labels.__getitem__
    return Confidence(
        labels=[label(i) for i in idx],
        p_best=[float(x) for x in p],
        tolerance=tolerance,
        tie_set=tie_set,
    )


def p_wrong(mu: ArrayLike, S: np.ndarray, choice: int | None = None) -> float:
    """P(the chosen entry — by default the highest mean — is not the best)."""
    m = np.asarray(mu, dtype=float)
    c = int(np.argmax(m)) if choice is None else choice
    return float(1.0 - p_best(m, S)[c])


def two_way(gap: float, sd: float) -> float:
    """P(a is better than b) for a log gap with the sd of the difference (the k=2 closed
    form; a check on the sampler, and what the tests compare it with)."""
    if sd <= 0:
        return 1.0 if gap > 0 else 0.5 if gap == 0 else 0.0
    return 0.5 * (1 + math.erf(gap / (sd * math.sqrt(2))))
