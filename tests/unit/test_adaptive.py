"""Adaptive probing's pure parts (probe/adaptive.py) on synthetic posteriors, and the
service's checks that run before any device is touched (service/adaptive.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.errors import ConfigError
from fsadvisor.probe import adaptive as sel

TOL = -math.log(0.99)


def state(mu, sd, noise_sd=0.05, own_sd=None):
    """k candidates, one independent coefficient each (X = I): cov is diag(sd^2)."""
    k = len(mu)
    own = None if own_sd is None else np.full(k, own_sd ** 2)
    return sel.State(labels=[f"c{i}" for i in range(k)], mu=np.asarray(mu, float),
                     X=np.eye(k), cov=np.diag(np.asarray(sd, float) ** 2),
                     noise_var=noise_sd ** 2, tolerance=TOL, own_var=own)


def test_a_settled_decision_stops_without_measuring():
    s = state([0.5, 0.0, -0.2], [0.01, 0.01, 0.01])
    step = sel.next_step(s, [60, 60, 60], [0, 0, 0], target=0.95, spent_s=0, budget_s=None)
    assert step.choice is None and "settled" in step.reason and step.confidence >= 0.95


def test_overlapping_leaders_are_measured_and_far_ones_never():
    s = state([0.02, 0.0, -2.0], [0.2, 0.2, 0.2])
    step = sel.next_step(s, [60, 60, 60], [0, 0, 0], target=0.95, spent_s=0, budget_s=None)
    assert step.choice is not None and step.choice.index in (0, 1)
    assert all(o.index != 2 for o in step.ranked)  # 10 sd behind: cannot change the answer
    assert "P(wrong choice)" in step.choice.why()


def test_cheaper_cell_wins_at_equal_information():
    s = state([0.0, 0.0], [0.2, 0.2])
    step = sel.next_step(s, [120, 30], [0, 0], target=0.95, spent_s=0, budget_s=None)
    assert step.choice.index == 1


def test_the_more_uncertain_of_two_leaders_is_measured():
    s = state([0.01, 0.0], [0.02, 0.3])
    step = sel.next_step(s, [60, 60], [0, 0], target=0.95, spent_s=0, budget_s=None)
    assert step.choice.index == 1


def test_budget_stops_before_a_cell_that_does_not_fit():
    s = state([0.0, 0.0], [0.2, 0.2])
    step = sel.next_step(s, [60, 60], [0, 0], target=0.95, spent_s=100, budget_s=150)
    assert step.choice is None and "budget" in step.reason


def test_max_runs_caps_repetitions():
    s = state([0.0, 0.0], [0.2, 0.2])
    step = sel.next_step(s, [60, 60], [3, 3], target=0.95, spent_s=0, budget_s=None,
                         max_runs=3)
    assert step.choice is None and "measured the most times" in step.reason


def test_repeating_a_cell_lowers_its_value():
    s = state([0.0, 0.0], [0.2, 0.2])
    first = sel.options(s, [60, 60], [0, 0])[0]
    s2 = sel.State(**{**s.__dict__, "cov": s.after_run(first.index)})
    again = [o for o in sel.options(s2, [60, 60], [1, 0]) if o.index == first.index][0]
    assert again.shrink < first.shrink


def test_after_run_is_the_normal_update():
    s = state([0.0, 0.0], [0.2, 0.2], noise_sd=0.1)
    c = s.after_run(0)
    assert c[0, 0] == pytest.approx(1 / (1 / 0.04 + 1 / 0.01))
    assert c[1, 1] == pytest.approx(0.04)


def test_own_variance_makes_a_shared_level_measurable():
    # Two candidates that differ only by shared terms: one common coefficient with a huge
    # sd (the device level). Without own variance no run can tell them apart.
    X = np.array([[1.0], [1.0]])
    base = dict(labels=["a", "b"], mu=np.array([0.0, 0.0]), X=X, cov=np.array([[4.0]]),
                noise_var=0.0025, tolerance=TOL)
    blind = sel.State(**base)
    assert sel.options(blind, [60, 60], [0, 0]) == []
    seeing = sel.State(**base, own_var=np.array([0.01, 0.01]))
    assert sel.options(seeing, [60, 60], [0, 0])


@given(mu=st.lists(st.floats(-0.3, 0.3), min_size=2, max_size=6),
       sd=st.floats(0.005, 0.5), spent=st.floats(0, 500), budget=st.floats(1, 1000))
@settings(max_examples=30, deadline=None)
def test_a_choice_always_fits_the_budget_and_is_a_candidate(mu, sd, spent, budget):
    k = len(mu)
    s = state(mu, [sd] * k)
    cost = [30.0 + 10 * i for i in range(k)]
    step = sel.next_step(s, cost, [0] * k, target=0.95, spent_s=spent, budget_s=budget)
    assert 0.0 <= step.confidence <= 1.0
    if step.choice is not None:
        assert 0 <= step.choice.index < k
        assert spent + step.choice.cost_s <= budget
        assert step.confidence < 0.95


# ------------------------------------------------------------------ service checks

@given(st.text(max_size=12))
@settings(max_examples=60, deadline=None)
def test_parse_budget_never_crashes(text):
    from fsadvisor.service.adaptive import parse_budget
    try:
        v = parse_budget(text)
    except ConfigError:
        return
    assert v > 0 and math.isfinite(v)


@pytest.mark.parametrize("text,seconds", [("90", 90), ("90s", 90), ("3m", 180),
                                          ("1h30m", 5400), ("1.5m", 90)])
def test_parse_budget_units(text, seconds):
    from fsadvisor.service.adaptive import parse_budget
    assert parse_budget(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "0", "-3m", "3x", "m"])
def test_parse_budget_refuses(bad):
    from fsadvisor.service.adaptive import parse_budget
    with pytest.raises(ConfigError):
        parse_budget(bad)


def _request(tmp_path, **kw):
    from fsadvisor.service import probing
    return probing.ProbeRequest.make(None, scratch="1G", profile="fio-randwrite-4k-j1",
                                     filesystems="ext4,xfs", runtime_s=1, cooldown_s=0,
                                     dry_run=True, db=str(tmp_path / "s.db"), **kw)


def test_a_budget_too_small_for_the_calibration_is_refused_in_planning(tmp_path):
    from fsadvisor.service import adaptive as ad
    with pytest.raises(ConfigError, match="too small for even the device calibration"):
        ad.plan_adaptive(_request(tmp_path), budget="20s")


def test_adaptive_needs_a_profile_and_a_sane_target(tmp_path):
    from fsadvisor.service import adaptive as ad, probing
    req = probing.ProbeRequest.make(None, scratch="1G", dry_run=True, db=str(tmp_path / "s.db"))
    with pytest.raises(ConfigError, match="needs --profile"):
        ad.plan_adaptive(req)
    with pytest.raises(ConfigError, match="target-confidence"):
        ad.plan_adaptive(_request(tmp_path), target=1.0)


def test_dry_run_shows_calibration_and_first_choices(tmp_path):
    from fsadvisor.service import adaptive as ad
    setup = ad.plan_adaptive(_request(tmp_path), budget="10m")
    assert setup.calibration is not None  # a fresh store has no calibration
    lines = ad.dry_run_lines(setup, str(tmp_path / "s.db"))
    text = "\n".join(lines)
    assert "first: calibrate the device" in text and "budget 600 s" in text
    assert "#   1. " in text and "P(wrong choice)" in text


def test_adaptive_plan_round_trips_for_resume(tmp_path):
    from fsadvisor.service import adaptive as ad
    plan = ad.plan_adaptive(_request(tmp_path), budget="10m").plan
    back = ad.AdaptivePlan.from_dict(plan.to_dict())
    assert (back.target, back.budget_s, back.max_reps) == (plan.target, 600.0, plan.max_reps)
    assert back.configs == plan.configs and back.to_dict()["purpose"] == "adaptive"


def test_resume_picks_up_the_adaptive_plan_and_refuses_a_full_one(tmp_path):
    from dataclasses import replace
    from fsadvisor.probe.state import StateFile, state_path_for
    from fsadvisor.service import adaptive as ad, probing
    req = _request(tmp_path)
    plan = ad.plan_adaptive(req, budget="10m").plan
    sf = StateFile(state_path_for(probing.store_path(req.db)))
    state = sf.load()
    state.matrices["scratch"] = {"matrix_id": "m-1", "plan": plan.to_dict()}
    sf.save(state)
    again = ad.plan_adaptive(replace(req, resume=True), budget=None)
    assert isinstance(again.plan, ad.AdaptivePlan) and again.plan.matrix_id == "m-1"
    assert again.plan.budget_s == 600.0  # the budget it started with
    full = {**plan.to_dict()}
    full.pop("purpose")
    state.matrices["scratch"] = {"matrix_id": "m-2", "plan": full}
    sf.save(state)
    with pytest.raises(ConfigError, match="full matrix"):
        ad.plan_adaptive(replace(req, resume=True))


def test_pooled_sd_needs_two_degrees_of_freedom():
    from fsadvisor.service.adaptive import pooled_sd
    assert pooled_sd([[1.0, 1.2]]) is None
    assert pooled_sd([[1.0, 1.2], [2.0, 2.2], [5.0]]) == pytest.approx(
        math.sqrt((0.02 + 0.02) / 2))


def test_no_budget_means_at_most_the_full_matrix(tmp_path):
    from fsadvisor.service import adaptive as ad
    setup = ad.plan_adaptive(_request(tmp_path))
    assert setup.plan.budget_s == pytest.approx(setup.plan.full_estimate_s
                                                + setup.calibration_estimate_s)
