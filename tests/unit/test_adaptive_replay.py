"""The offline replay's judgment of the adaptive probe: the reference posterior of the true
means and the check that the model's missing terms are the reference's sampling noise."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import adaptive_replay as R  # noqa: E402


def _case(X, cov, mu0, measured, sd_run):
    S0 = X @ cov @ X.T
    m, S = R.reference_posterior(mu0, S0, measured, sd_run**2 / 3)
    from fsadvisor.predict import confidence as C

    return R.Case(mu0, X, cov, measured, sd_run, m, C._root(S), 0.05)


def test_reference_posterior_pools_cells_the_model_cannot_tell_apart():
    # two cells with the same design row (say xfs with two agcounts) measured 4% apart,
    # each mean with a 5% sampling error: the reference cannot say they differ, and its
    # P(the worse-measured one is within 1% of the best) is near 1, not 0
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    cov = np.eye(2)
    mu0 = np.zeros(3)
    measured = np.array([0.0, -0.04, -1.0])
    case = _case(X, cov, mu0, measured, np.full(3, 0.05 * np.sqrt(3)))
    assert abs(case.ref_mean[0] - case.ref_mean[1]) < 1e-9
    assert case.ref_mean[0] < 0 and case.ref_mean[0] > -0.04  # between the two: pooled
    assert R.p_within_ref(case, 1) > 0.99
    assert R.p_within_ref(case, 2) < 0.01


def test_reference_posterior_keeps_a_measured_difference_the_model_has_a_term_for():
    X = np.eye(2)
    cov = np.eye(2)
    case = _case(X, cov, np.zeros(2), np.array([0.0, -0.2]), np.full(2, 0.01))
    assert case.ref_mean[0] - case.ref_mean[1] > 0.19
    assert R.p_within_ref(case, 1) < 0.01


def _structure_ratio(extra_sd: float, seed: int = 0) -> float:
    # four groups of three cells that share a design row; the measured means carry the
    # sampling error sd/sqrt(3) and, optionally, a per-cell effect the model has no term for
    rng = np.random.default_rng(seed)
    X = np.kron(np.eye(4), np.ones((3, 1)))
    cov = np.eye(4)
    sd_run = np.full(12, 0.1)
    n = np.full(12, 3.0)
    ss = expect = 0.0
    for _ in range(200):
        truth = X @ rng.normal(0, 1, 4) + rng.normal(0, extra_sd, 12)
        measured = truth + rng.normal(0, 1, 12) * sd_run / np.sqrt(n)
        got = R.check_structure(_case(X, cov, np.zeros(12), measured, sd_run), n)
        assert got[2] == 8  # 12 cells, 4 rows: 8 directions the model says nothing about
        ss, expect = ss + got[0], expect + got[1]
    return ss / expect


def test_structure_check_is_one_when_differences_are_sampling_noise():
    assert 0.9 < _structure_ratio(0.0) < 1.1


def test_structure_check_shows_a_per_cell_effect_the_model_misses():
    # an extra per-cell sd of 0.1 against a mean's sampling sd of 0.058: ratio 1 + 3 = 4
    assert _structure_ratio(0.1) > 3


def test_posterior_of_cell_means_equals_one_update_per_run():
    # the "runs" noise mode rebuilds the posterior from each cell's mean run; with a fixed
    # noise that is the same posterior as one rank-one update per run
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4, 3))
    cov = np.eye(3) * 0.5
    case = _case(X, cov, np.zeros(4), np.zeros(4), np.full(4, 0.1))
    values = [[0.3, 0.1], [], [-0.2], [0.05, 0.0, 0.1]]
    noise = np.array([0.04, 0.04, 0.01, 0.09])
    mu, c = case.mu0, case.cov
    for i, v in enumerate(values):
        for y in v:
            g = c @ X[i]
            den = float(X[i] @ g) + noise[i]
            mu = mu + (X @ g) * (y - mu[i]) / den
            c = c - np.outer(g, g) / den
    got_mu, got_cov = R.posterior(case, values, noise)
    assert np.allclose(got_mu, mu) and np.allclose(got_cov, c)
