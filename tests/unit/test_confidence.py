"""Decision confidence (predict/confidence.py): the sampler against closed forms, leaders,
determinism, and the ranking/recommend surfaces that carry it."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.predict import confidence as C


@given(gap=st.floats(-0.2, 0.2), sd=st.floats(0.01, 0.3), rho=st.floats(-0.9, 0.9))
@settings(max_examples=40, deadline=None)
def test_two_candidates_match_the_closed_form(gap, sd, rho):
    # var(a - b) = 2 s^2 (1 - rho): choose s so the difference has sd ``sd``
    s2 = sd**2 / (2 * (1 - rho))
    S = np.array([[s2, rho * s2], [rho * s2, s2]])
    p = C.p_best([gap, 0.0], S)
    assert p.sum() == pytest.approx(1.0)
    # 4000 draws: standard error <= 0.008, so 4 se is 0.032
    assert p[0] == pytest.approx(C.two_way(gap, sd), abs=0.032)


def test_identical_candidates_split_by_rank_and_singular_cov_is_fine():
    S = np.ones((3, 3)) * 0.01  # three candidates the model cannot tell apart: rank-1 cov
    p = C.p_best([0.0, 0.0, 0.0], S)
    assert p.tolist() == [1.0, 0.0, 0.0]  # exact ties go to the better-ranked entry


def test_deterministic_and_uncorrelated_symmetric():
    S = np.eye(3) * 0.04
    a, b = C.p_best([0, 0, 0], S), C.p_best([0, 0, 0], S)
    assert a.tolist() == b.tolist()
    assert a == pytest.approx([1 / 3] * 3, abs=0.03)


def test_tolerance_counts_near_ties_as_best():
    S = np.eye(2) * 1e-6  # practically certain means
    strict = C.p_best([0.0, 0.005], S)
    loose = C.p_best([0.0, 0.005], S, tolerance=0.01)
    assert strict[0] < 0.01 and loose[0] > 0.99


def test_leaders_exclude_far_candidates_and_keep_first():
    mu = np.array([0.0, 0.5, -0.01, -1.0])
    S = np.eye(4) * 0.01**2
    idx = C.leaders(mu, S, first=0)
    assert idx[0] == 0 and 2 in idx and 3 not in idx
    assert 1 in idx  # far above, but it is what beats #1


def test_decision_confidence_from_design_rows():
    # two coefficients; candidate rows pick them: the third shares the first's term
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    cov = np.diag([0.01, 0.01])
    c = C.decision_confidence(["a", "b", "a2"], [0.2, 0.0, 0.2], X, cov)
    assert c.labels[0] == "a"
    assert c.p_first == pytest.approx(C.two_way(0.2, math.sqrt(0.02)), abs=0.03)
    assert not c.tied
    d = c.to_dict()
    assert d["leaders"][0]["config"] == "a" and "Monte Carlo" in d["method"]
    assert c.sentence().startswith("P(best): a 0.92")  # one number per leader, #1 first


def test_tied_when_leaders_overlap():
    c = C.decision_confidence(["a", "b"], [0.001, 0.0], np.eye(2), np.eye(2) * 0.01)
    assert c.tied and c.p_first < 0.6


def test_recommendation_carries_confidence_and_settle(tmp_path, monkeypatch):
    from fsadvisor.service import advice

    db = str(tmp_path / "s.db")
    rec = advice.recommend("build-unpack", db=db)
    doc = rec.to_dict()
    conf = doc["confidence"]
    assert 0.0 <= conf["p_best_first"] <= 1.0
    assert conf["leaders"][0]["config"] == rec.ranked[0].config.label()
    # One number per leader, P(within the tolerance of the best): in every draw the best is
    # within it of itself, so together they cover at least 1; each is a probability.
    ps = [l["p_best"] for l in conf["leaders"]]
    assert sum(ps) >= 1.0 - 1e-9 and all(0.0 <= p <= 1.0 for p in ps)
    assert conf["p_best_first"] == ps[0]
    # the one tie rule: tied exactly when #1 shares its tie set
    assert conf["tied"] == (doc["lead"]["tied_with"] > 0)
    if conf["tied"]:
        assert conf["settle"] and conf["settle"][0]["config"] == rec.ranked[0].config.label()
        assert all(s["seconds"] > 0 and s["reps"] >= 1 for s in conf["settle"])


@pytest.mark.parametrize(
    "profile,device", [("oltp", None), ("log-append", None), ("build-unpack", "nvme:8G")]
)
def test_settle_cells_time_a_cell_as_the_probe_plan_does(tmp_path, profile, device):
    """settle_cells times a tie's cells from probe/timing.py without loading the probe's
    planning: its workload name, repetitions and seconds are those of a real Plan of the
    profile's cell on the same device (a read-free profile has no fill; a small device has
    a smaller data set)."""
    from fsadvisor.probe import plan as planmod
    from fsadvisor.probe.timing import default_size_bytes
    from fsadvisor.service import advice

    rec = advice.recommend(profile, device, db=str(tmp_path / "s.db"))
    spec = planmod.profile_workload(rec.profile)
    plan = planmod.Plan(
        device=rec.device.path,
        device_size_bytes=rec.device.size_bytes,
        configs=[],
        workloads=[spec],
        size_bytes=default_size_bytes(rec.device.size_bytes),
    )
    cells = advice.settle_cells(rec, min_p=0.0)
    assert cells and len(cells) >= min(4, len(rec.confidence.labels))
    # A plan's per-cell time depends on the workload and the plan, not the configuration.
    expected = plan.cell_estimate_s(planmod.Cell(None, "none", spec, 1)) * plan.reps
    for c in cells:
        assert (c["workload"], c["reps"], c["seconds"]) == (
            spec.name,
            plan.reps,
            round(expected, 1),
        )
    # after the leading filesystems' defaults, the leaders in the confidence's order
    from fsadvisor import catalog

    defaults = {
        catalog.default_config(fs, rec.device.size_bytes).label()
        for fs in ("ext4", "xfs", "btrfs", "f2fs")
    }
    leaders = [
        c["config"] for c in cells if c["p_best"] is not None and c["config"] not in defaults
    ]
    assert leaders == [k for k in rec.confidence.labels if k in leaders]


def test_recommend_text_has_the_confidence_line(tmp_path):
    from typer.testing import CliRunner
    import fsadvisor.cli.app as cli

    cli.register_all()
    out = CliRunner().invoke(
        cli.app, ["recommend", "-p", "build-unpack", "--db", str(tmp_path / "s.db")]
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    line = next(l for l in lines if l.startswith("confidence:"))
    first = re.match(
        r"Recommended: (.+?) —", next(l for l in lines if l.startswith("Recommended:"))
    )
    assert first, out.output
    # one P per configuration, #1's first and only once
    assert line.startswith(f"confidence: P(within 1% of the best): {first[1]} 0.")
    assert line.count(first[1]) == 1


def test_leaders_from_the_design_match_the_full_covariance():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 6))
    A = rng.normal(size=(6, 6))
    cov = A @ A.T * 0.001
    mu = rng.normal(scale=0.05, size=40)
    S = C.covariance(X, cov)
    for first in (0, 7, int(np.argmax(mu))):
        assert C._leaders_from_design(mu, X, cov, first) == C.leaders(mu, S, first)


@given(seed=st.integers(0, 2**64 - 1))
@settings(max_examples=10, deadline=None)
def test_standard_normal_draws_are_standard_and_reproducible(seed):
    z = C.standard_normal((4000, 6), seed)
    assert z.shape == (4000, 6) and np.isfinite(z).all()
    assert z.tolist() == C.standard_normal((4000, 6), seed).tolist()
    # 24,000 draws: the mean's se is 0.0065, the sd's 0.0046; columns uncorrelated
    # (se of a correlation 1/sqrt(4000) = 0.016); tails as N(0, 1) (P(|z| > 1.96) = 0.05)
    assert abs(z.mean()) < 0.04 and abs(z.std() - 1) < 0.03
    r = np.corrcoef(z.T)
    assert np.abs(r[np.triu_indices(6, 1)]).max() < 0.08
    assert abs(np.mean(np.abs(z) > 1.96) - 0.05) < 0.012
    assert z.tolist() != C.standard_normal((4000, 6), seed + 1).tolist()


def test_odd_number_of_draws():
    assert C.standard_normal((3, 1)).shape == (3, 1)


def test_decision_confidence_names_only_the_leaders():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    cov = np.diag([0.01, 0.01])
    asked = []

    def label(i):
        asked.append(i)
        return "abcd"[i]

    c = C.decision_confidence(label, [0.2, 0.0, 0.2, -5.0], X, cov)
    assert 3 not in asked and sorted(asked) == sorted(set(asked))  # the far one: never named
    assert c.labels[0] == "a" and len(c.labels) == 3


def test_the_factor_does_not_depend_on_the_eigenbasis_lapack_picks():
    """Where eigenvalues repeat (or nearly do), LAPACK may return any rotation of their
    eigenspace, and which one depended on the BLAS kernel: the eigen-factor V sqrt(w), and so
    the draws and P(best), changed with it. The symmetric root is the same matrix whatever
    the basis: it squares back to S, and relabelling the candidates relabels it."""
    rng = np.random.default_rng(7)
    V, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    w = np.array([0.0, 0.0, 0.5, 0.5, 0.5, 2.0])  # singular, and a repeated eigenvalue
    S = (V * w) @ V.T
    R = C._root(S)
    assert np.allclose(R @ R.T, S, atol=1e-10) and np.allclose(R, R.T)
    # another orthonormal basis of the 0.5-eigenspace: another eigen-factor, the same root
    V2 = V.copy()
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    V2[:, 2:5] = V[:, 2:5] @ Q
    F, F2 = V * np.sqrt(w), V2 * np.sqrt(w)
    assert np.allclose(F2 @ F2.T, S, atol=1e-10) and not np.allclose(F, F2, atol=1e-3)
    assert np.allclose(F2 @ V2.T, R, atol=1e-10)
    perm = rng.permutation(6)
    assert np.allclose(C._root(S[np.ix_(perm, perm)]), R[np.ix_(perm, perm)], atol=1e-10)


@pytest.mark.parametrize(
    "profile", ["oltp", "build-unpack", "filebench-fileserver-004", "log-append"]
)
def test_settling_a_tie_measures_the_defaults_of_every_leading_filesystem(profile, tmp_db):
    """The "to settle it" cells (and the headline's probe time built on them) always include
    the defaults of each filesystem among the leaders or tied with #1: what a variant has to
    beat to earn its settings, never only variants of one option."""
    from fsadvisor.service import advice

    rec = advice.recommend(profile, top=5)
    if rec.confidence is None or not rec.confidence.tied:
        pytest.skip(f"{profile}: #1 is not tied here")
    cells = [c["config"] for c in rec.confidence.settle]
    first = rec.ranked[0].label
    leading = {r.config.fs for r in rec.ranked if r.label == first}
    leading |= {k.split(",")[0].split()[0] for k in rec.confidence.labels}
    from fsadvisor import catalog

    for fs in leading:  # (btrfs's and f2fs's defaults carry an explicit nodiscard)
        assert catalog.default_config(fs, rec.device.size_bytes).label() in cells, (fs, cells)
    assert len(cells) == len(set(cells))
    ps = [c["p_best"] for c in rec.confidence.settle]
    assert all(p is None or 0.0 <= p <= 1.0 for p in ps)
